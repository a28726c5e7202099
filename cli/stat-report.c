/*
 * tally stat report: print the counts stored in a perf.data file by `perf stat record`
 * or `tally stat record` (STAT_CONFIG, THREAD_MAP, CPU_MAP, EVENT_UPDATE, STAT and
 * STAT_ROUND records), in the same formats as tally stat. The header names the
 * recorded command line, or 'pipe' when reading a stream, as perf does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "options.h"
#include "stat.h"
#include <tally/counter.h>
#include <tally/data.h>
#include <tally/format.h>

/* One STAT record: an event's count on one CPU (value) and thread (map index). */
struct stat_entry {
	int ev;
	int cpu, thread;
	uint64_t val, ena, run;
};

struct report {
	struct stat_evsel *ev;
	int nr_ev;
	struct stat_entry *ent;
	size_t nr_ent, cap_ent;
	/* THREAD_MAP */
	int *tids;
	char (*comms)[16];
	size_t nr_threads;
	double wall_ns;
	bool have_round;
};

/* The data reader maps an id to its event; keep that with the report. */
struct walk {
	struct report *rp;
	struct tally_data *d;
};

static int on_walk(void *arg, const struct perf_event_header *h,
		   const struct tally_record_ctx *ctx)
{
	struct walk *wk = arg;
	struct report *rp = wk->rp;
	const uint64_t *u = (const uint64_t *)(h + 1);
	size_t n;
	int e;

	(void)ctx;
	if (h->size < sizeof(*h))
		return 0;
	n = (h->size - sizeof(*h)) / sizeof(uint64_t);
	switch (h->type) {
	case TALLY_RECORD_STAT:
		if (n < 5)
			break;
		e = tally_data__event_of_id(wk->d, u[0]);
		if (e < 0 || e >= rp->nr_ev)
			break;
		if (rp->nr_ent == rp->cap_ent) {
			size_t cap = rp->cap_ent ? rp->cap_ent * 2 : 64;
			struct stat_entry *ne = realloc(rp->ent, cap * sizeof(*ne));

			if (!ne)
				return -ENOMEM;
			rp->ent = ne;
			rp->cap_ent = cap;
		}
		{
			struct stat_entry *x = &rp->ent[rp->nr_ent++];
			uint32_t cpu, thr;

			memcpy(&cpu, &u[1], 4);
			memcpy(&thr, (const char *)&u[1] + 4, 4);
			x->ev = e;
			x->cpu = (int)cpu;
			x->thread = (int)thr;
			x->val = u[2];
			x->ena = u[3];
			x->run = u[4];
		}
		break;
	case TALLY_RECORD_THREAD_MAP:
		/* nr, then {u64 pid, char comm[16]} */
		if (n < 1 || rp->tids)
			break;
		{
			uint64_t nr = u[0];
			size_t room = (n - 1) / 3;

			if (nr > room)
				nr = room;
			rp->tids = calloc((size_t)nr + 1, sizeof(*rp->tids));
			rp->comms = calloc((size_t)nr + 1, sizeof(*rp->comms));
			if (!rp->tids || !rp->comms)
				return -ENOMEM;
			for (uint64_t i = 0; i < nr; i++) {
				rp->tids[i] = (int)u[1 + 3 * i];
				memcpy(rp->comms[i], &u[2 + 3 * i], 15);
			}
			rp->nr_threads = (size_t)nr;
		}
		break;
	case TALLY_RECORD_EVENT_UPDATE:
		if (n < 3)
			break;
		e = tally_data__event_of_id(wk->d, u[1]);
		if (e < 0 || e >= rp->nr_ev)
			break;
		if (u[0] == TALLY_EVENT_UPDATE_UNIT) {
			size_t len = (n - 2) * sizeof(uint64_t);
			char *unit = strndup((const char *)&u[2], len);

			if (unit) {
				free(rp->ev[e].unit_buf);
				rp->ev[e].unit_buf = unit;
				rp->ev[e].unit = unit;
			}
		} else if (u[0] == TALLY_EVENT_UPDATE_SCALE) {
			double sc;

			memcpy(&sc, &u[2], sizeof(sc));
			if (sc > 0)
				rp->ev[e].scale = sc;
		}
		break;
	case TALLY_RECORD_STAT_ROUND:
		if (n >= 2) {
			rp->wall_ns = (double)u[1];
			rp->have_round = true;
		}
		break;
	default:
		break;
	}
	return 0;
}

/* CMDLINE: u32 nr, then nr x (u32 len, len bytes NUL-padded). */
static void cmdline_text(struct tally_data *d, char *buf, size_t len)
{
	const void *raw;
	size_t rlen, pos = 0, off = 4;
	uint32_t nr;

	buf[0] = 0;
	if (tally_data__feature(d, TALLY_FEAT_CMDLINE, &raw, &rlen) < 0 || rlen < 4)
		return;
	memcpy(&nr, raw, 4);
	for (uint32_t i = 0; i < nr && off + 4 <= rlen && pos < len; i++) {
		uint32_t sl;

		memcpy(&sl, (const char *)raw + off, 4);
		off += 4;
		if (sl > rlen - off)
			break;
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%.*s", i ? " " : "", (int)sl,
					(const char *)raw + off);
		off += sl;
	}
	if (pos >= len)
		buf[len - 1] = 0;
}

static void free_report(struct report *rp)
{
	for (int i = 0; i < rp->nr_ev; i++) {
		free(rp->ev[i].name);
		free(rp->ev[i].unit_buf);
	}
	free(rp->ev);
	free(rp->ent);
	free(rp->tids);
	free(rp->comms);
}

/* Bucket key of an entry for the chosen aggregation. */
static int entry_key(const struct stat_entry *x, enum stat_aggr aggr)
{
	return aggr == AGGR_NONE ? x->cpu : aggr == AGGR_THREAD ? x->thread : 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Buckets (sorted keys) and rows[e * nr_ids + a] from the STAT entries. */
static int build_rows(struct report *rp, enum stat_aggr aggr, struct stat_aggr_id **ids_out,
		      int *nr_ids_out, struct stat_row **rows_out)
{
	int *keys = calloc(rp->nr_ent + 1, sizeof(int)), nk = 0;
	struct stat_aggr_id *ids;
	struct stat_row *rows;
	uint64_t *acc;

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < rp->nr_ent; i++)
		keys[nk++] = entry_key(&rp->ent[i], aggr);
	if (!nk)
		keys[nk++] = 0;
	qsort(keys, (size_t)nk, sizeof(int), cmp_int);
	{
		int u = 0;

		for (int i = 0; i < nk; i++)
			if (!u || keys[u - 1] != keys[i])
				keys[u++] = keys[i];
		nk = u;
	}
	ids = calloc((size_t)nk, sizeof(*ids));
	rows = calloc((size_t)nk * (size_t)rp->nr_ev + 1, sizeof(*rows));
	acc = calloc((size_t)nk * (size_t)rp->nr_ev * 3 + 1, sizeof(uint64_t));
	if (!ids || !rows || !acc) {
		free(keys);
		free(ids);
		free(rows);
		free(acc);
		return -ENOMEM;
	}
	for (int a = 0; a < nk; a++) {
		ids[a].cpu = keys[a];
		ids[a].thread_idx = keys[a];
		ids[a].nr = 1;
		if (aggr == AGGR_THREAD) {
			bool known = keys[a] >= 0 && (size_t)keys[a] < rp->nr_threads;

			ids[a].tid = known ? rp->tids[keys[a]] : -1;
			snprintf(ids[a].comm, sizeof(ids[a].comm), "%s",
				 known && rp->comms[keys[a]][0] ? rp->comms[keys[a]] : "?");
		}
	}
	for (size_t i = 0; i < rp->nr_ent; i++) {
		const struct stat_entry *x = &rp->ent[i];
		int key = entry_key(x, aggr);
		int *hit = bsearch(&key, keys, (size_t)nk, sizeof(int), cmp_int);
		size_t k = ((size_t)x->ev * (size_t)nk + (size_t)(hit - keys)) * 3;

		acc[k] += x->val;
		acc[k + 1] += x->ena;
		acc[k + 2] += x->run;
		rows[k / 3].present = true;
		rows[k / 3].nr++;
	}
	for (int e = 0; e < rp->nr_ev; e++) {
		bool seen = false;

		for (int a = 0; a < nk; a++)
			seen |= rows[(size_t)e * (size_t)nk + (size_t)a].present;
		/* an event with no STAT record failed to open when it was recorded */
		rp->ev[e].supported = seen;
		for (int a = 0; a < nk; a++) {
			struct stat_row *r = &rows[(size_t)e * (size_t)nk + (size_t)a];
			uint64_t *v = &acc[((size_t)e * (size_t)nk + (size_t)a) * 3];

			if (!seen && a == 0)
				r->present = true;	/* one <not supported> line */
			r->ena = (double)v[1];
			r->run = (double)v[2];
			r->counted = seen && v[1] && v[2];
			r->val = r->counted ? (double)tally_scale(v[0], v[1], v[2]) : 0;
			if (!r->nr)
				r->nr = 1;
		}
	}
	free(keys);
	free(acc);
	*ids_out = ids;
	*nr_ids_out = nk;
	*rows_out = rows;
	return 0;
}

struct stat_report_opts {
	const char *input;
	const char *sep;
	bool json;
	enum stat_aggr aggr;
};

/* The file's events, as stat_evsel (EVENT_UPDATE says which have units). 0 or -ENOMEM. */
static int load_events(struct report *rp, struct tally_data *d)
{
	rp->nr_ev = (int)tally_data__nr_events(d);
	rp->ev = calloc((size_t)rp->nr_ev + 1, sizeof(*rp->ev));
	if (!rp->ev)
		return -ENOMEM;
	for (int e = 0; e < rp->nr_ev; e++) {
		const struct tally_data_event *de = tally_data__event(d, (size_t)e);

		rp->ev[e].attr = de->attr;
		rp->ev[e].name = strdup(de->name ? de->name : "?");
		rp->ev[e].leader = de->leader;
		stat_evsel_classify(&rp->ev[e]);
		rp->ev[e].unit = "";
		rp->ev[e].scale = 1.0;
		if (!rp->ev[e].name)
			return -ENOMEM;
	}
	return 0;
}

static void print_counts(const struct stat_report_opts *o, struct report *rp,
			 struct tally_data *d, const struct stat_aggr_id *ids, int nr_ids,
			 const struct stat_row *rows)
{
	struct stat_out out;

	memset(&out, 0, sizeof(out));
	out.f = stderr;
	out.fmt = o->json ? FMT_JSON : o->sep ? FMT_CSV : FMT_STD;
	out.aggr = o->aggr;
	out.sep = o->sep ? o->sep : " ";
	out.big_num = true;
	out.unit_width = 4;
	out.run_count = 1;
	out.walltime_ns = rp->wall_ns;
	if (out.fmt == FMT_STD) {
		char cmd[4096];

		if (tally_data__is_pipe(d))
			snprintf(cmd, sizeof(cmd), "pipe");
		else
			cmdline_text(d, cmd, sizeof(cmd));
		fprintf(out.f, "\n Performance counter stats for '%s':\n\n", cmd);
	}
	stat_print_rows(&out, rp->ev, rp->nr_ev, ids, nr_ids, rows);
	if (out.fmt == FMT_STD)
		fprintf(out.f, "\n %17.9f seconds time elapsed\n\n", rp->wall_ns / 1e9);
}

/* Open the file; it must hold stat counts. 0 or 1 (message printed). */
static int open_stat_data(struct tally_data **d, const char *path)
{
	struct tally_data_error derr;
	int err;

	memset(&derr, 0, sizeof(derr));
	err = tally_data__open(d, path, NULL, &derr);
	if (err) {
		cli_error("cannot read '%s': %s%s", path, derr.msg[0] ? derr.msg : strerror(-err),
			  err == -ENOENT ? " (record one with 'tally stat record')" : "");
		return 1;
	}
	if (!tally_data__has_feature(*d, TALLY_FEAT_STAT) && !tally_data__is_pipe(*d)) {
		cli_error("'%s' was not written by stat record (no STAT feature); use 'tally report'",
			  path);
		tally_data__delete(*d);
		return 1;
	}
	return 0;
}

static int stat_report_exec(void *opts, const struct cli_args *args)
{
	struct stat_report_opts *o = opts;
	struct stat_aggr_id *ids = NULL;
	struct stat_row *rows = NULL;
	int nr_ids = 0, err, ret = 1;
	struct tally_data *d = NULL;
	struct tally_data_error derr;
	struct report rp;
	struct walk wk;

	(void)args;
	if (open_stat_data(&d, o->input))
		return 1;
	memset(&rp, 0, sizeof(rp));
	memset(&derr, 0, sizeof(derr));
	if (load_events(&rp, d))
		goto oom;
	wk.rp = &rp;
	wk.d = d;
	err = tally_data__for_each(d, 0, on_walk, &wk, &derr);
	if (err < 0) {
		cli_error("reading '%s' failed at offset %#llx: %s", o->input,
			  (unsigned long long)derr.offset, derr.msg[0] ? derr.msg : strerror(-err));
		goto out;
	}
	if (build_rows(&rp, o->aggr, &ids, &nr_ids, &rows))
		goto oom;
	print_counts(o, &rp, d, ids, nr_ids, rows);
	ret = cli_finish_output(stderr, "standard error") ? 1 : 0;
	goto out;
oom:
	cli_error("out of memory");
out:
	free(ids);
	free(rows);
	free_report(&rp);
	tally_data__delete(d);
	return ret;
}

#define CLI_OPTS struct stat_report_opts
static const struct cli_opt stat_report_options[] = {
	OPT_STRING('i', "input", input, "file", "input file name (default perf.data; - = stdin)"),
	OPT_SET_ENUM('A', "no-aggr", aggr, enum stat_aggr, AGGR_NONE, "disable CPU count aggregation"),
	OPT_SET_ENUM(0, "per-thread", aggr, enum stat_aggr, AGGR_THREAD, "aggregate counts per thread"),
	OPT_STRING('x', "field-separator", sep, "separator", "print counts with custom separator"),
	OPT_BOOL('j', "json-output", json, "print counts in JSON format"),
	OPT_END(),
};

static const char *const stat_report_usage[] = { "stat report [<options>]", NULL };

static int stat_report_init(void *opts)
{
	((struct stat_report_opts *)opts)->input = "perf.data";
	return 0;
}

const struct cli_command cmd_stat_report = {
	.name = "stat report",
	.flags = CLI_LOCALE,
	.summary = "Print the counts of a perf.data written by stat record",
	.usage = stat_report_usage,
	.opts = stat_report_options,
	.size = sizeof(struct stat_report_opts),
	.init = stat_report_init,
	.exec = stat_report_exec,
};
