/*
 * TRACING_DATA: the tracefs format files readers need to decode tracepoint samples'
 * raw data, in the layout perf calls "tracing0.6":
 *
 *   "\027\bD" "tracing" "0.6\0"     magic + version
 *   u8 big_endian; u8 sizeof(long); u32 page_size
 *   "header_page\0"  u64 size; events/header_page
 *   "header_event\0" u64 size; events/header_event
 *   u32 nr; { u64 size; events/ftrace/X/format }[nr]   (ftrace events used: none here)
 *   u32 nr_systems; { "system\0"; u32 nr; { u64 size; events/system/event/format }[nr] }
 *   u32 size; kallsyms          (perf 6.1 writes 0 bytes)
 *   u32 size; printk_formats
 *   u64 size; saved_cmdlines
 *
 * Only the systems and events of the file's tracepoint attrs are included. The event
 * of a tracepoint attr is found by its id (attr.config = events/S/E/id).
 */
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/tracefs.h>
#include <tally/writer.h>
#include "internal/util.h"
#include "internal/writer.h"

struct tp {
	char sys[128], name[128];
};

/* The event named "sys:name[:modifiers]" if its id is ID (the usual case: no scan). */
static bool tracepoint_by_name(const char *root, const char *evname, uint64_t id, struct tp *out)
{
	const char *colon = evname ? strchr(evname, ':') : NULL;
	const char *end;
	char path[PATH_MAX];
	size_t ls, ln;
	uint64_t v;

	if (!colon)
		return false;
	end = strchr(colon + 1, ':');
	ls = (size_t)(colon - evname);
	ln = end ? (size_t)(end - colon - 1) : strlen(colon + 1);
	if (!ls || !ln || ls >= sizeof(out->sys) || ln >= sizeof(out->name) ||
	    memchr(evname, '/', ls + 1 + ln))
		return false;
	memcpy(out->sys, evname, ls);
	out->sys[ls] = '\0';
	memcpy(out->name, colon + 1, ln);
	out->name[ln] = '\0';
	if (snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, out->sys, out->name) >=
	    (int)sizeof(path))
		return false;
	return !tly_read_file_u64(path, &v) && v == id;
}

struct tp_by_id {
	uint64_t id;
	struct tp *out;
};

static int tp_id_cb(const char *sys, const char *name, uint64_t id, void *arg)
{
	struct tp_by_id *want = arg;

	if (id != want->id || strlen(sys) >= sizeof(want->out->sys) ||
	    strlen(name) >= sizeof(want->out->name))
		return 0;
	strcpy(want->out->sys, sys);
	strcpy(want->out->name, name);
	return 1;
}

/* Find the system/event whose id is ID (a scan of events/). */
static int find_tracepoint(uint64_t id, struct tp *out)
{
	struct tp_by_id want = { id, out };
	int err = tally_tracepoint__for_each(NULL, NULL, NULL, tp_id_cb, &want);

	return err == 1 ? 0 : err ? err : -ENOENT;
}

/* Append a file with its size as a u64 (SIZE64) or u32 prefix. */
static int put_file(struct tly_buf *b, const char *path, bool size64, bool optional)
{
	char *data = NULL;
	size_t len = 0;
	int err = tly_read_file_all(path, &data, &len);

	if (err) {
		if (!optional)
			return err;
		len = 0;
	}
	err = size64 ? tly_feat__u64(b, len) : tly_feat__u32(b, (uint32_t)len);
	if (!err && len)
		err = tly_buf__append(b, data, len);
	free(data);
	return err;
}

static int cmp_tp(const void *a, const void *b)
{
	const struct tp *x = a, *y = b;
	int c = strcmp(x->sys, y->sys);

	return c ? c : strcmp(x->name, y->name);
}

int tally_writer__set_tracing_data(struct tally_writer *w)
{
	static const char magic[] = "\027\bDtracing0.6";	/* includes the NUL */
	const struct perf_event_attr *attr;
	struct tly_buf b = {0};
	struct tp *tps = NULL;
	size_t i, j, nr = 0, nr_ev = tally_writer__nr_events(w);
	const char *name;
	char root[PATH_MAX - 512], path[PATH_MAX];
	int err = 0;
	uint16_t one = 1;

	for (i = 0; i < nr_ev; i++) {
		tly_writer__event(w, i, &attr, &name);
		if (attr->type == PERF_TYPE_TRACEPOINT)
			nr++;
	}
	if (!nr)
		return 0;
	err = tally_tracefs__find(NULL, root, sizeof(root));
	if (err)
		return err;
	tps = calloc(nr, sizeof(*tps));
	if (!tps)
		return -ENOMEM;
	for (i = 0, nr = 0; !err && i < nr_ev; i++) {
		tly_writer__event(w, i, &attr, &name);
		if (attr->type != PERF_TYPE_TRACEPOINT)
			continue;
		if (!tracepoint_by_name(root, name, attr->config, &tps[nr]))
			err = find_tracepoint(attr->config, &tps[nr]);
		nr++;
	}
	if (err)
		goto out;
	qsort(tps, nr, sizeof(*tps), cmp_tp);

	err = tly_buf__append(&b, magic, sizeof(magic));
	if (!err) {
		uint8_t big = *(uint8_t *)&one == 0, lsize = sizeof(long);

		err = tly_buf__append(&b, &big, 1);
		if (!err)
			err = tly_buf__append(&b, &lsize, 1);
		if (!err)
			err = tly_feat__u32(&b, (uint32_t)sysconf(_SC_PAGESIZE));
	}
	if (!err)
		err = tly_buf__append(&b, "header_page", sizeof("header_page"));
	snprintf(path, sizeof(path), "%s/events/header_page", root);
	if (!err)
		err = put_file(&b, path, true, false);
	if (!err)
		err = tly_buf__append(&b, "header_event", sizeof("header_event"));
	snprintf(path, sizeof(path), "%s/events/header_event", root);
	if (!err)
		err = put_file(&b, path, true, false);
	if (!err)
		err = tly_feat__u32(&b, 0);	/* ftrace internal events: none used */
	if (!err) {
		uint32_t nsys = 0;

		for (i = 0; i < nr; i++)
			nsys += !i || strcmp(tps[i].sys, tps[i - 1].sys);
		err = tly_feat__u32(&b, nsys);
	}
	for (i = 0; !err && i < nr; i = j) {
		uint32_t cnt = 0;

		for (j = i; j < nr && !strcmp(tps[j].sys, tps[i].sys); j++)
			cnt += j == i || strcmp(tps[j].name, tps[j - 1].name);
		err = tly_buf__append(&b, tps[i].sys, strlen(tps[i].sys) + 1);
		if (!err)
			err = tly_feat__u32(&b, cnt);
		for (j = i; !err && j < nr && !strcmp(tps[j].sys, tps[i].sys); j++) {
			if (j > i && !strcmp(tps[j].name, tps[j - 1].name))
				continue;
			snprintf(path, sizeof(path), "%s/events/%s/%s/format", root, tps[j].sys,
				 tps[j].name);
			err = put_file(&b, path, true, false);
		}
		while (j < nr && !strcmp(tps[j].sys, tps[i].sys))
			j++;
	}
	if (!err)
		err = tly_feat__u32(&b, 0);	/* kallsyms: none, as perf 6.1 */
	snprintf(path, sizeof(path), "%s/printk_formats", root);
	if (!err)
		err = put_file(&b, path, false, true);
	snprintf(path, sizeof(path), "%s/saved_cmdlines", root);
	if (!err)
		err = put_file(&b, path, true, true);
	if (!err)
		err = tally_writer__set_feature(w, TALLY_FEAT_TRACING_DATA, b.data, b.len);
out:
	free(tps);
	tly_buf__exit(&b);
	return err;
}
