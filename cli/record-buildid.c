/*
 * tally record: build-ids of the DSOs that samples hit (the BUILD_ID feature), so a
 * reader can tell whether the binaries it finds are the ones that ran, and the
 * build-id cache filled with them, so that it can still find them after a rebuild.
 *
 * perf re-reads its whole file at the end to find the hit DSOs. We watch the records
 * as they are written instead, through a session that keeps maps and dsos but loads no
 * symbols: side-band records build the maps, each sample's ip marks the dso it falls
 * in. At the end the build-id of each hit dso (every dso with --buildid-all, and the
 * vdso always, as perf) is read once, listed in BUILD_ID in the order perf lists them
 * (the dsos' creation order), and the files are copied into the cache: binaries, the
 * vdso image, the kernel's kallsyms.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/buildid-cache.h>
#include <tally/session.h>
#include "cmd.h"
#include "record.h"

struct buildid_tracker {
	struct tally_session *s;	/* maps and dsos only (no symbols) */
	size_t ip_off, tid_off;		/* offsets of ip and pid/tid in samples (0: none) */
	struct record_debuginfod *debuginfod;	/* --debuginfod (NULL: none; the record's) */
};

int buildid_tracker__new(struct buildid_tracker **out, const struct record *r)
{
	struct tally_session_opts so = { .no_symbols = true };
	struct buildid_tracker *bt = calloc(1, sizeof(*bt));
	uint64_t t = r->ev[0].attr.sample_type;

	*out = NULL;
	if (!bt)
		return -ENOMEM;
	bt->debuginfod = r->debuginfod;
	if (tally_session__new(&bt->s, &so)) {
		free(bt);
		return -ENOMEM;
	}
	/* every event shares one sample_type, or IDENTIFIER puts the id first (set_sample_id) */
	bt->ip_off = 8 + ((t & PERF_SAMPLE_IDENTIFIER) ? 8 : 0);
	bt->tid_off = bt->ip_off + ((t & PERF_SAMPLE_IP) ? 8 : 0);
	if (!(t & PERF_SAMPLE_IP) || !(t & PERF_SAMPLE_TID))
		bt->ip_off = 0;	/* cannot attribute samples */
	*out = bt;
	return 0;
}

void buildid_tracker__delete(struct buildid_tracker *bt)
{
	if (!bt)
		return;
	tally_session__delete(bt->s);
	free(bt);
}

void buildid_tracker__record(struct buildid_tracker *bt, const struct perf_event_header *h)
{
	uint32_t pid, tid;
	uint64_t ip;

	if (h->type != PERF_RECORD_SAMPLE) {
		tally_session__process(bt->s, h);
		return;
	}
	if (!bt->ip_off || h->size < bt->tid_off + 8)
		return;
	memcpy(&ip, (const char *)h + bt->ip_off, 8);
	memcpy(&pid, (const char *)h + bt->tid_off, 4);
	memcpy(&tid, (const char *)h + bt->tid_off + 4, 4);
	tally_session__mark_hit(bt->s, (pid_t)pid, (pid_t)tid,
				h->misc & PERF_RECORD_MISC_CPUMODE_MASK, ip);
}

static int count_dso(void *arg, struct tally_dso *d)
{
	(void)d;
	(*(size_t *)arg)++;
	return 0;
}

struct dso_list {
	struct tally_dso **v;
	size_t nr;
};

static int collect(void *arg, struct tally_dso *d)
{
	struct dso_list *l = arg;

	l->v[l->nr++] = d;
	return 0;
}

/* The session's dsos, in creation order (malloc'd array). */
static int session_dsos(struct tally_session *s, struct tally_dso ***out, size_t *nr)
{
	struct dso_list l = { 0 };
	size_t n = 0;

	tally_session__for_each_dso(s, count_dso, &n);
	l.v = calloc(n ? n : 1, sizeof(*l.v));
	if (!l.v)
		return -ENOMEM;
	tally_session__for_each_dso(s, collect, &l);
	*out = l.v;
	*nr = l.nr;
	return 0;
}

/* What kind of file a dso is, for its id and its place in the cache. */
enum dso_kind { DSO_FILE, DSO_KERNEL, DSO_MODULE, DSO_VDSO, DSO_OTHER };

static enum dso_kind dso_kind(const struct tally_dso *d)
{
	const char *n = tally_dso__name(d), *l = tally_dso__long_name(d);

	if (!strcmp(n, "[kernel.kallsyms]"))
		return DSO_KERNEL;
	if (!strcmp(n, "[vdso]"))
		return DSO_VDSO;
	if (tally_dso__is_kernel(d))
		return l[0] == '/' ? DSO_MODULE : DSO_OTHER;
	return n[0] == '/' && strncmp(n, "/tmp/perf-", 10) ? DSO_FILE : DSO_OTHER;
}

/* The dso's build-id as the files here say: the ELF note, the kernel's notes (a
 * module's in /sys/module, else its .ko), the vdso image. */
static int read_build_id(const struct tally_dso *d, enum dso_kind kind, struct tally_build_id *id)
{
	char notes[512];
	const void *image;
	size_t size;

	switch (kind) {
	case DSO_KERNEL:
		return tally_build_id__running_kernel(id);
	case DSO_VDSO:
		return tally_vdso_image(&image, &size) ? -ENOENT :
		       tally_build_id__from_elf_mem(id, image, size);
	case DSO_MODULE:
		snprintf(notes, sizeof(notes), "/sys/module/%.*s/notes/.note.gnu.build-id",
			 (int)strlen(tally_dso__name(d)) - 2, tally_dso__name(d) + 1);
		if (!tally_build_id__from_notes(id, notes))
			return 0;
		return tally_build_id__from_elf(id, tally_dso__long_name(d));
	case DSO_FILE:
		return tally_build_id__from_elf(id, tally_dso__name(d));
	default:
		return -ENODATA;
	}
}

static int cache_dso(struct tally_buildid_cache *c, const struct tally_dso *d, enum dso_kind kind,
		     const struct tally_build_id *id)
{
	const void *image;
	size_t size;

	switch (kind) {
	case DSO_KERNEL:
		return tally_buildid_cache__add_kallsyms(c, id, NULL);
	case DSO_VDSO:
		if (tally_vdso_image(&image, &size))
			return -ENOENT;
		return tally_buildid_cache__add_vdso(c, id, image, size);
	case DSO_MODULE:
		return tally_buildid_cache__add_file(c, tally_dso__long_name(d), id);
	case DSO_FILE:
		return tally_buildid_cache__add_file(c, tally_dso__name(d), id);
	default:
		return 0;
	}
}

int buildid_tracker__write(struct buildid_tracker *bt, struct tally_writer *w,
			   const struct record_opts *o)
{
	struct tally_buildid_cache *cache = NULL;
	struct tally_dso **dsos = NULL;
	int err, cerr = 0, first_cerr = 0;
	const char *first_name = NULL;
	size_t nr = 0;

	err = session_dsos(bt->s, &dsos, &nr);
	if (!err && !o->no_buildid_cache)
		err = tally_buildid_cache__new(&cache, NULL);
	for (size_t i = 0; !err && i < nr; i++) {
		struct tally_dso *d = dsos[i];
		enum dso_kind kind = dso_kind(d);
		struct tally_build_id id;

		if (kind == DSO_OTHER || (!tally_dso__hit(d) && !o->buildid_all && kind != DSO_VDSO))
			continue;
		if (read_build_id(d, kind, &id) || !id.size)
			continue;	/* no note, or the file is gone: nothing to vouch for */
		err = tally_writer__add_build_id(w, -1, id.data, id.size, tally_dso__long_name(d),
						 kind == DSO_KERNEL || kind == DSO_MODULE);
		if (!err && cache) {
			cerr = cache_dso(cache, d, kind, &id);
			if (!cerr && kind == DSO_FILE)
				record_debuginfod__fetch(bt->debuginfod, cache, &id, tally_dso__name(d));
			if (cerr && cerr != -EPERM && !first_cerr) {
				first_cerr = cerr;
				first_name = tally_dso__long_name(d);
			}
		}
	}
	if (first_cerr && !o->quiet)
		cli_warn("could not copy %s into the build-id cache %s: %s", first_name,
			 tally_buildid_cache__dir(cache), strerror(-first_cerr));
	tally_buildid_cache__delete(cache);
	free(dsos);
	return err;
}
