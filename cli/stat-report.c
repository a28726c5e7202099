/*
 * tally stat report: print the counts stored in a perf.data file by `perf stat record`
 * or `tally stat record` (STAT_CONFIG, THREAD_MAP, CPU_MAP, EVENT_UPDATE, STAT and
 * STAT_ROUND records), in the same formats as tally stat. The header names the
 * recorded command line, or 'pipe' when reading a stream, as perf does.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "stat.h"
#include "tally/counter.h"
#include "tally/data.h"
#include "tally/format.h"

struct report {
	struct stat_evsel *ev;
	int nr_ev;
	struct stat_row *rows;	/* global aggregation: one row per event */
	uint64_t *val, *ena, *run;
	bool *seen;
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
		rp->val[e] += u[2];
		rp->ena[e] += u[3];
		rp->run[e] += u[4];
		rp->seen[e] = true;
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
	free(rp->rows);
	free(rp->val);
	free(rp->ena);
	free(rp->run);
	free(rp->seen);
}

int cmd_stat_report(int argc, char **argv)
{
	static const char usage[] =
		"\n usage: tally stat report [-i FILE|-] [-x SEP | -j]\n\n"
		"    -i, --input <file>    perf.data file to read (default perf.data; - = stdin)\n"
		"    -x, --field-separator <sep>  CSV output\n"
		"    -j, --json            JSON lines output\n\n";
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "field-separator", required_argument, NULL, 'x' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = "perf.data", *sep = NULL;
	bool json = false;
	struct tally_data *d = NULL;
	struct tally_data_error derr;
	struct report rp;
	struct walk wk;
	struct stat_out out;
	struct stat_aggr_id id;
	int c, err, ret = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+i:x:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': path = optarg; break;
		case 'x': sep = optarg; break;
		case 'j': json = true; break;
		case 'h':
			cli_usage(stdout, usage);
			return 0;
		default:
			cli_error("unknown option '%s'", argv[optind - 1]);
			cli_usage(stderr, usage);
			return 129;
		}
	}
	memset(&derr, 0, sizeof(derr));
	err = tally_data__open(&d, path, NULL, &derr);
	if (err) {
		cli_error("cannot read '%s': %s%s%s", path, derr.msg[0] ? derr.msg : strerror(-err),
			  err == -ENOENT ? " (record one with 'tally stat record')" : "", "");
		return 1;
	}
	if (!tally_data__has_feature(d, TALLY_FEAT_STAT) && !tally_data__is_pipe(d)) {
		cli_error("'%s' was not written by stat record (no STAT feature); use 'tally report'",
			  path);
		tally_data__delete(d);
		return 1;
	}
	memset(&rp, 0, sizeof(rp));
	rp.nr_ev = (int)tally_data__nr_events(d);
	rp.ev = calloc((size_t)rp.nr_ev + 1, sizeof(*rp.ev));
	rp.rows = calloc((size_t)rp.nr_ev + 1, sizeof(*rp.rows));
	rp.val = calloc((size_t)rp.nr_ev + 1, sizeof(uint64_t));
	rp.ena = calloc((size_t)rp.nr_ev + 1, sizeof(uint64_t));
	rp.run = calloc((size_t)rp.nr_ev + 1, sizeof(uint64_t));
	rp.seen = calloc((size_t)rp.nr_ev + 1, sizeof(bool));
	if (!rp.ev || !rp.rows || !rp.val || !rp.ena || !rp.run || !rp.seen) {
		free_report(&rp);
		tally_data__delete(d);
		return 1;
	}
	for (int e = 0; e < rp.nr_ev; e++) {
		const struct tally_data_event *de = tally_data__event(d, (size_t)e);

		rp.ev[e].attr = de->attr;
		rp.ev[e].name = strdup(de->name ? de->name : "?");
		rp.ev[e].leader = de->leader;
		stat_evsel_classify(&rp.ev[e]);
		rp.ev[e].unit = "";	/* EVENT_UPDATE says which have units */
		rp.ev[e].scale = 1.0;
		if (!rp.ev[e].name) {
			free_report(&rp);
			tally_data__delete(d);
			return 1;
		}
	}
	wk.rp = &rp;
	wk.d = d;
	err = tally_data__for_each(d, 0, on_walk, &wk, &derr);
	if (err < 0) {
		cli_error("reading '%s' failed at offset %#llx: %s", path,
			  (unsigned long long)derr.offset, derr.msg[0] ? derr.msg : strerror(-err));
		ret = 1;
		goto out;
	}
	for (int e = 0; e < rp.nr_ev; e++) {
		struct stat_row *r = &rp.rows[e];

		/* an event with no STAT record failed to open when it was recorded */
		rp.ev[e].supported = rp.seen[e];
		r->present = true;
		r->nr = 1;
		r->ena = (double)rp.ena[e];
		r->run = (double)rp.run[e];
		r->counted = rp.seen[e] && rp.run[e] && rp.ena[e];
		r->val = r->counted ? (double)tally_scale(rp.val[e], rp.ena[e], rp.run[e]) : 0;
	}
	memset(&out, 0, sizeof(out));
	memset(&id, 0, sizeof(id));
	out.f = stderr;
	out.fmt = json ? FMT_JSON : sep ? FMT_CSV : FMT_STD;
	out.aggr = AGGR_GLOBAL;
	out.sep = sep ? sep : " ";
	out.big_num = true;
	out.unit_width = 4;
	out.run_count = 1;
	out.walltime_ns = rp.wall_ns;
	if (out.fmt == FMT_STD) {
		char cmd[4096];

		if (tally_data__is_pipe(d))
			snprintf(cmd, sizeof(cmd), "pipe");
		else
			cmdline_text(d, cmd, sizeof(cmd));
		fprintf(out.f, "\n Performance counter stats for '%s':\n\n", cmd);
	}
	stat_print_rows(&out, rp.ev, rp.nr_ev, &id, 1, rp.rows);
	if (out.fmt == FMT_STD)
		fprintf(out.f, "\n %17.9f seconds time elapsed\n\n", rp.wall_ns / 1e9);
	if (cli_finish_output(stderr, "standard error"))
		ret = 1;
out:
	free_report(&rp);
	tally_data__delete(d);
	return ret;
}
