/*
 * tally buildid-cache: manage the build-id cache (perf's ~/.debug, shared with perf):
 *   -a FILE,...   add ELF files under their build-ids
 *   -r FILE,...   remove the entry of each file's current build-id
 *   -p PATH,...   purge every entry cached for a path (all its builds)
 *   -P            purge the whole cache
 *   -u FILE,...   update: replace each file's entry with the file as it is now
 *   -l            list the entries whose file (or kernel) still has that build-id
 *   -M FILE       list the binaries a perf.data file names that the cache lacks
 *   -k DIR/kcore  copy a kcore (with its kallsyms and modules) into the cache
 *   -f            with -k: copy even when the same kcore is there; with -M: read a file
 *                 another user owns
 *
 * Lists are comma separated and done in sorted order, as perf does; the operations run
 * in perf's order (add, remove, purge, purge-all, list, missing, update, kcore). -v
 * says what each one did in perf's words. Unlike perf, which always exits 0, a file
 * that cannot be added or updated makes the exit status 1 (a file that was not in the
 * cache is no error for -r and -p).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/buildid-cache.h>
#include <tally/data.h>
#include <tally/session.h>

#include "cmd.h"
#include "options.h"
#include "report-common.h"

struct buildid_cache_opts {
	const char *add, *remove, *purge, *update, *missing, *kcore;
	bool purge_all, list, force;
};

#define CLI_OPTS struct buildid_cache_opts
static const struct cli_opt buildid_cache_options[] = {
	OPT_STRING('a', "add", add, "file list", "file(s) to add"),
	OPT_STRING('k', "kcore", kcore, "file", "kcore file to add"),
	OPT_STRING('r', "remove", remove, "file list", "file(s) to remove"),
	OPT_STRING('p', "purge", purge, "file list", "file(s) to remove (remove old caches too)"),
	OPT_BOOL('P', "purge-all", purge_all, "purge all cached files"),
	OPT_BOOL('l', "list", list, "list all cached files"),
	OPT_STRING('M', "missing", missing, "file", "to find missing build ids in the cache"),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_STRING('u', "update", update, "file list", "file(s) to update"),
	OPT_VERBOSE("be more verbose"),
	OPT_END(),
};

static const char *const buildid_cache_usage[] = { "buildid-cache [<options>]", NULL };

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A comma-separated list, sorted and without repeats (perf's strlist). */
static char **split_list(const char *s, size_t *nr)
{
	char *copy = strdup(s), *save = NULL, **v;
	size_t n = 1, k = 0;

	if (!copy)
		return NULL;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		free(copy);
		return NULL;
	}
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		v[k++] = t;
	if (k)
		qsort(v, k, sizeof(*v), str_cmp);
	n = 0;
	for (size_t i = 0; i < k; i++)
		if (!n || strcmp(v[n - 1], v[i]))
			v[n++] = v[i];
	v[n] = copy;	/* owned: freed by free_list */
	*nr = n;
	return v;
}

static void free_list(char **v, size_t nr)
{
	if (v)
		free(v[nr]);
	free(v);
}

static const char *ok(int err)
{
	return err ? "FAIL" : "Ok";
}

/* FILE's build-id, or a warning that it has none ("couldn't WHAT FILE: why"). */
static int file_id(const char *file, const char *what, struct tally_build_id *id)
{
	int err = tally_build_id__from_elf(id, file);

	if (!err)
		return 0;
	if (verbose)
		fprintf(stderr, "Couldn't read a build-id in %s\n", file);
	cli_warn("couldn't %s %s: %s", what, file,
		 err == -ENODATA ? "it has no build-id note" :
		 err == -ENOEXEC ? "not an ELF file" : strerror(-err));
	return 1;
}

static int add_one(struct tally_buildid_cache *c, const char *file)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE];
	struct tally_build_id id;
	int err;

	if (file_id(file, "add", &id))
		return 1;
	err = tally_buildid_cache__add_file(c, file, &id);
	if (verbose)
		fprintf(stderr, "Adding %s %s: %s\n", tally_build_id__hex(&id, hex), file, ok(err));
	if (err) {
		cli_warn("couldn't add %s to %s: %s", file, tally_buildid_cache__dir(c), strerror(-err));
		return 1;
	}
	return 0;
}

static int remove_one(struct tally_buildid_cache *c, const char *file)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE];
	struct tally_build_id id;
	int err;

	if (file_id(file, "remove", &id))
		return 1;
	err = tally_buildid_cache__remove(c, &id);
	if (verbose)
		fprintf(stderr, "Removing %s %s: %s\n", tally_build_id__hex(&id, hex), file, ok(err));
	if (err == -ENOENT) {
		if (verbose)
			fprintf(stderr, "%s wasn't in the cache\n", file);
		return 0;
	}
	if (err) {
		cli_warn("couldn't remove %s: %s", file, strerror(-err));
		return 1;
	}
	return 0;
}

static int update_one(struct tally_buildid_cache *c, const char *file)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE];
	struct tally_build_id id;
	int err;

	if (file_id(file, "update", &id))
		return 1;
	err = tally_buildid_cache__remove(c, &id);
	if (err == -ENOENT)
		err = 0;
	if (!err)
		err = tally_buildid_cache__add_file(c, file, &id);
	if (verbose)
		fprintf(stderr, "Updating %s %s: %s\n", tally_build_id__hex(&id, hex), file, ok(err));
	if (err) {
		cli_warn("couldn't update %s: %s", file, strerror(-err));
		return 1;
	}
	return 0;
}

static int purge_one(struct tally_buildid_cache *c, const char *path)
{
	int n = tally_buildid_cache__purge(c, path);

	if (verbose)
		fprintf(stderr, "Purging %s: %s\n", path, ok(n < 0 && n != -ENOENT));
	if (n < 0 && n != -ENOENT) {
		cli_warn("couldn't purge %s: %s", path, strerror(-n));
		return 1;
	}
	return 0;
}

/* Run FN on each file of the comma-separated LIST; the number that failed. */
static int each(struct tally_buildid_cache *c, const char *list,
		int (*fn)(struct tally_buildid_cache *, const char *))
{
	size_t nr = 0;
	char **v = split_list(list, &nr);
	int failed = 0;

	if (!v) {
		cli_error("out of memory");
		return 1;
	}
	for (size_t i = 0; i < nr; i++)
		failed += fn(c, v[i]);
	free_list(v, nr);
	return failed;
}

static int show_removed(void *arg, const struct tally_buildid_cache_entry *e)
{
	(void)arg;
	if (verbose)
		fprintf(stderr, "Removing %s (%s): Ok\n", e->name ? e->name : "?", e->hex);
	return 0;
}

static int purge_all(struct tally_buildid_cache *c)
{
	int n;

	if (verbose)
		tally_buildid_cache__for_each(c, show_removed, NULL);
	n = tally_buildid_cache__purge_all(c);
	if (verbose)
		fprintf(stderr, "Purged all: %s\n", ok(n < 0));
	if (n < 0) {
		cli_warn("couldn't purge %s: %s", tally_buildid_cache__dir(c), strerror(-n));
		return 1;
	}
	return 0;
}

static int list_one(void *arg, const struct tally_buildid_cache_entry *e)
{
	(void)arg;
	if (tally_buildid_cache__entry_current(e))
		printf("%s %s\n", e->hex, e->name);
	return 0;
}

struct missing_ctx {
	struct tally_buildid_cache *c;
};

/* perf's -M: the dsos of the file's BUILD_ID list with no copy in the cache; a copy
 * that is there but wrong gets a warning instead of a line. */
static int missing_one(void *arg, struct tally_dso *d)
{
	struct missing_ctx *m = arg;
	const struct tally_build_id *id = tally_dso__bid(d);
	const char *name = tally_dso__long_name(d);
	enum tally_buildid_kind kind = TALLY_BUILDID_ELF;
	char hex[TALLY_BUILD_ID_HEX_SIZE], path[4096], why[8192];
	int err;

	if (!id->size)
		return 0;
	if (!strcmp(name, "[kernel.kallsyms]"))
		kind = TALLY_BUILDID_KALLSYMS;
	else if (!strcmp(name, "[vdso]"))
		kind = TALLY_BUILDID_VDSO;
	err = tally_buildid_cache__find(m->c, id, name, kind, path, sizeof(path), why, sizeof(why));
	if (err == -ENOENT)
		printf("%-40s %s\n", tally_build_id__hex(id, hex), name);
	else if (err)
		cli_warn("problems with the cached copy of %s: %s; consider removing it from the "
			 "cache (tally buildid-cache -p %s)", name, why, name);
	return 0;
}

static int missing(struct tally_buildid_cache *c, const struct buildid_cache_opts *o)
{
	struct missing_ctx m = { c };
	struct tally_session *s;
	struct tally_data *d;

	if (report_buildid_session(&d, &s, o->missing, o->force, false))
		return 1;
	tally_session__for_each_dso(s, missing_one, &m);
	tally_session__delete(s);
	tally_data__delete(d);
	return 0;
}

static int add_kcore(struct tally_buildid_cache *c, const struct buildid_cache_opts *o)
{
	char dir[4096];
	int err = tally_buildid_cache__add_kcore(c, o->kcore, o->force, dir, sizeof(dir));

	if (err) {
		cli_warn("couldn't add %s: %s", o->kcore,
			 err == -EINVAL ? "expected a file named kcore, an ELF core file, beside "
					  "its kallsyms and modules" : strerror(-err));
		return 1;
	}
	if (verbose)
		fprintf(stderr, "kcore added to build-id cache directory %s\n", dir);
	return 0;
}

static int buildid_cache_exec(void *opts, const struct cli_args *args)
{
	struct buildid_cache_opts o = *(struct buildid_cache_opts *)opts;
	struct tally_buildid_cache *c = NULL;
	int failed = 0, ret;

	(void)args;
	if (!o.add && !o.remove && !o.purge && !o.update && !o.missing && !o.kcore &&
	    !o.purge_all && !o.list)
		return cli_usage_error(&cmd_buildid_cache, "say what to do (-a, -r, -p, -P, -u, -l, "
				       "-M or -k)");
	if (tally_buildid_cache__new(&c, NULL)) {
		cli_error("the build-id cache directory name is too long (see --buildid-dir)");
		return 1;
	}
	if (o.add)
		failed += each(c, o.add, add_one);
	if (o.remove)
		failed += each(c, o.remove, remove_one);
	if (o.purge)
		failed += each(c, o.purge, purge_one);
	if (o.purge_all)
		failed += purge_all(c);
	if (o.list) {
		ret = tally_buildid_cache__for_each(c, list_one, NULL);
		if (ret) {
			cli_error("cannot read %s/.build-id: %s", tally_buildid_cache__dir(c),
				  strerror(-ret));
			failed++;
		}
	}
	if (o.missing)
		failed += missing(c, &o);
	if (o.update)
		failed += each(c, o.update, update_one);
	if (o.kcore)
		failed += add_kcore(c, &o);
	tally_buildid_cache__delete(c);
	return failed ? 1 : 0;
}

const struct cli_command cmd_buildid_cache = {
	.name = "buildid-cache",
	.summary = "Manage build-id cache.",
	.usage = buildid_cache_usage,
	.opts = buildid_cache_options,
	.size = sizeof(struct buildid_cache_opts),
	.exec = buildid_cache_exec,
};
