/*
 * tally record --debuginfod[=URLS]: debug files of the binaries samples hit, fetched
 * from debuginfod servers into the build-id cache beside each binary's copy ("debug"
 * next to "elf"), for report and annotate to read later, as perf's record with
 * debuginfod support. URLS as DEBUGINFOD_URLS spells them (space-separated); without
 * them ("system", perf's word) DEBUGINFOD_URLS itself; without the option nothing is
 * fetched, as perf 6.1 (which empties DEBUGINFOD_URLS then). A local debug file from
 * /usr/lib/debug/.build-id is used first (the cache does that).
 *
 * The client is elfutils' libdebuginfod.so.1, loaded when needed: tally does not need
 * it to build or run, and says so in one line when it is not installed. Its own cache
 * and timeouts follow its variables (DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/buildid-cache.h>

#include "cmd.h"
#include "record.h"

/* libdebuginfod's ABI (elfutils debuginfod.h) */
typedef struct debuginfod_client debuginfod_client;
struct record_debuginfod {
	void *lib;		/* never dlclose()d (see record_debuginfod__delete) */
	debuginfod_client *client;
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*end)(debuginfod_client *);
	const char *urls;
	size_t fetched, missing, failed;
	int last_err;
};

int record_debuginfod__new(struct record_debuginfod **out, const char *urls)
{
	struct record_debuginfod *d;

	*out = NULL;
	if (!urls)
		return 0;
	if (strcmp(urls, "system") && setenv("DEBUGINFOD_URLS", urls, 1)) {
		cli_error("--debuginfod: %s", strerror(errno));
		return -1;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		cli_error("out of memory");
		return -1;
	}
	d->urls = getenv("DEBUGINFOD_URLS");
	d->lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		cli_error("--debuginfod needs elfutils' libdebuginfod.so.1 (Debian: apt install "
			  "libdebuginfod1): %s", dlerror());
		free(d);
		return -1;
	}
	*(void **)&d->begin = dlsym(d->lib, "debuginfod_begin");
	*(void **)&d->find_debuginfo = dlsym(d->lib, "debuginfod_find_debuginfo");
	*(void **)&d->end = dlsym(d->lib, "debuginfod_end");
	if (!d->begin || !d->find_debuginfo || !d->end || !(d->client = d->begin())) {
		cli_error("--debuginfod: libdebuginfod.so.1 cannot start a client");
		record_debuginfod__delete(d, true);
		return -1;
	}
	*out = d;
	return 0;
}

/* Copy the fetched file (FD) to PATH. 0 or -errno. */
static int copy_fd(int fd, const char *path)
{
	char buf[65536];
	ssize_t n = 0;
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), err = 0;

	if (out < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_SET) < 0)	/* the client may leave it at its end */
		err = -errno;
	while (!err && (n = read(fd, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			err = -EIO;
	if (!err && n < 0)
		err = -errno;
	if (close(out) && !err)
		err = -errno;
	if (err)
		unlink(path);
	return err;
}

void record_debuginfod__fetch(struct record_debuginfod *d, struct tally_buildid_cache *c,
			      const struct tally_build_id *id, const char *name)
{
	char elf[PATH_MAX], dst[PATH_MAX + 8], *got = NULL;
	int fd;

	if (!d || !d->urls || !*d->urls ||
	    !tally_buildid_cache__find(c, id, name, TALLY_BUILDID_DEBUG, dst, sizeof(dst), NULL, 0) ||
	    tally_buildid_cache__find(c, id, name, TALLY_BUILDID_ELF, elf, sizeof(elf), NULL, 0))
		return;	/* no server, a debug file already, or no entry to put it in */
	fd = d->find_debuginfo(d->client, id->data, (int)id->size, &got);
	if (fd < 0) {
		if (fd == -ENOENT)
			d->missing++;
		else
			d->failed++, d->last_err = fd;
		if (verbose)
			fprintf(stderr, "tally record: debuginfod: no debug file for %s: %s\n", name,
				strerror(-fd));
		return;
	}
	snprintf(dst, sizeof(dst), "%s/debug", dirname(elf));
	d->last_err = copy_fd(fd, dst);
	close(fd);
	if (d->last_err) {
		d->failed++;
	} else {
		d->fetched++;
		if (verbose)
			fprintf(stderr, "tally record: debuginfod: %s -> %s\n", got ? got : name, dst);
	}
	free(got);
}

void record_debuginfod__delete(struct record_debuginfod *d, bool quiet)
{
	if (!d)
		return;
	if (!quiet && d->urls && *d->urls) {
		char tail[256] = "";

		if (d->failed)
			snprintf(tail, sizeof(tail), ", %zu failed (%s)", d->failed,
				 strerror(-d->last_err));
		fprintf(stderr, "[ tally record: debuginfod: %zu debug files fetched into the "
			"build-id cache, %zu not on the servers%s ]\n", d->fetched, d->missing, tail);
	} else if (!quiet && d->client) {
		fprintf(stderr, "[ tally record: debuginfod: no server (DEBUGINFOD_URLS is "
			"empty): nothing fetched ]\n");
	}
	if (d->client)
		d->end(d->client);
	/* the library stays loaded: libcurl under it keeps global state (set up by its
	 * constructor) that unloading would leak, and it is not meant to be unloaded */
	free(d);
}
