/*
 * tally archive [FILE]: the tarball perf 6.1's `perf archive` makes, FILE.tar.bz2
 * (FILE defaults to perf.data), holding what the build-id cache has for the binaries
 * FILE's samples hit: each one's .build-id link and its entry (elf, debug, probes;
 * the kernel's kallsyms; the vdso), paths relative to the cache. Unpacked into the
 * cache of the machine where the report is made (tar xf FILE.tar.bz2 -C ~/.debug), it
 * lets perf or tally there name the functions.
 *
 * perf archive is a shell script around `perf buildid-list --with-hits` and `tar cjf`;
 * tally writes the tar and the bzip2 stream itself (lib/format/tar.c, libbz2), so no
 * tar program is needed. The tarball is written beside FILE under a temporary name and
 * renamed into place when complete: a failed run leaves no half archive. Entries the
 * cache lacks or that fail its checks (a dangling link, a truncated copy, another
 * owner) are left out, each with a warning; perf's tar would stop at the first of those
 * or pack a damaged copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/buildid-cache.h>
#include <tally/data.h>
#include <tally/session.h>

#include "cmd.h"
#include "options.h"
#include "report-common.h"

struct archive_opts {
	bool force;
};

#define CLI_OPTS struct archive_opts
static const struct cli_opt archive_options[] = {
	OPT_BOOL('f', "force", force, "read a file another user owns"),
	OPT_VERBOSE("name each entry packed"),
	OPT_END(),
};

static const char *const archive_usage[] = { "archive [<options>] [FILE]", NULL };

struct id_list {
	struct tally_build_id *v;
	size_t nr;
	bool hits;	/* only the dsos samples hit */
};

static int collect(void *arg, struct tally_dso *d)
{
	struct id_list *l = arg;
	const struct tally_build_id *id = tally_dso__bid(d);

	if ((l->hits && !tally_dso__hit(d)) || !id->size)
		return 0;
	for (size_t i = 0; i < l->nr; i++)
		if (tally_build_id__equal(&l->v[i], id))
			return 0;
	l->v[l->nr++] = *id;
	return 0;
}

static int count(void *arg, struct tally_dso *d)
{
	(void)d;
	(*(size_t *)arg)++;
	return 0;
}

static void skipped(void *arg, const struct tally_build_id *id, const char *why)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE];

	(void)arg;
	cli_warn("left out %s: %s", tally_build_id__hex(id, hex), why);
}

/* The build-ids of the binaries FILE's samples hit (buildid-list --with-hits). */
static int hit_ids(const char *input, bool force, struct id_list *l)
{
	struct tally_session *s;
	struct tally_data *d;
	bool hits = true;
	size_t n = 0;
	int status = 1;

	if (report_buildid_session(&d, &s, input, force, &hits))
		return 1;
	tally_session__for_each_dso(s, count, &n);
	l->v = calloc(n ? n : 1, sizeof(*l->v));
	l->hits = hits;
	if (l->v) {
		tally_session__for_each_dso(s, collect, l);
		status = 0;
	} else {
		cli_error("out of memory");
	}
	tally_session__delete(s);
	tally_data__delete(d);
	return status;
}

static int archive_exec(void *opts, const struct cli_args *args)
{
	struct tally_buildid_cache *c = NULL;
	struct id_list ids = { 0 };
	const char *input = args->argc ? args->argv[0] : "perf.data";
	char out[4096], tmp[4200];
	size_t packed = 0;
	int fd = -1, err, status = 1;

	if (!strcmp(input, "-"))
		return cli_usage_error(&cmd_archive, "give a file, not a pipe: the tarball is "
				       "written beside it");
	if (hit_ids(input, ((struct archive_opts *)opts)->force, &ids))
		return 1;
	if (!ids.nr) {
		cli_error("archive: no build-ids found in %s (recorded with -B, or no samples)",
			  input);
		goto out;
	}
	if (tally_buildid_cache__new(&c, NULL)) {
		cli_error("out of memory");
		goto out;
	}
	snprintf(out, sizeof(out), "%s.tar.bz2", input);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out);
	fd = mkstemp(tmp);
	if (fd < 0) {
		cli_error("cannot create %s: %s", out, strerror(errno));
		goto out;
	}
	fchmod(fd, 0644);
	err = tally_buildid_cache__archive(c, ids.v, ids.nr, fd, skipped, NULL, &packed);
	if (!err && fsync(fd) && errno != EINVAL)
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	if (!err && !packed) {
		cli_error("archive: the build-id cache %s has none of the %zu binaries %s needs "
			  "(recorded with -N, or on another machine?)", tally_buildid_cache__dir(c),
			  ids.nr, input);
		unlink(tmp);
		goto out;
	}
	if (err || rename(tmp, out)) {
		cli_error("writing %s failed: %s", out, strerror(err ? -err : errno));
		unlink(tmp);
		goto out;
	}
	printf("Now please run:\n\n$ tar xvf %s -C ~/.debug\n\n"
	       "wherever you need to run 'tally report' or 'perf report' on.\n", out);
	status = 0;
out:
	tally_buildid_cache__delete(c);
	free(ids.v);
	return status;
}

const struct cli_command cmd_archive = {
	.name = "archive",
	.summary = "Create archive with object files with build-ids found in perf.data file",
	.usage = archive_usage,
	.footer = " Packs what the build-id cache holds for the binaries FILE's samples hit into\n"
		  " FILE.tar.bz2 (FILE: perf.data by default).\n",
	.opts = archive_options,
	.max_args = 1,
	.args_hint = "(one file at a time)",
	.size = sizeof(struct archive_opts),
	.exec = archive_exec,
};
