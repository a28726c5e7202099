/*
 * tally stat printers: perf 6.1's human ("std"), CSV and JSON lines, byte for byte,
 * and tally's strict JSON document.
 *
 * The field widths and quirks below were measured against perf 6.1 on this project's
 * machine (see tests/cli/test-stat-format.sh, which compares shapes with perf in the
 * same run): a counted line is value %18 + unit + name %-32 + a 35-column metric
 * area; <not counted>/<not supported> lines pad the name to 25; CSV keeps a constant
 * field count (empty metric fields); JSON prints "(null)" as the metric unit of a
 * counted event without a metric, as 6.1 does.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/convert.h>

#include "stat.h"

#define METRIC_LEN 35

/* ---- metrics ----------------------------------------------------------------- */

static const struct stat_row *row_of(const struct stat_row *rows, int nr_ids, int e, int a)
{
	return &rows[(size_t)e * (size_t)nr_ids + (size_t)a];
}

/* Sum of the rows of kind k in bucket a; *n = how many there were. A <not counted>
 * row is there with 0, as in perf, whose runtime stats take every reading: a miss ratio
 * over a <not counted> denominator prints 0.00%. Clocks average (perf's runtime stats
 * keep a mean when several clocks update them). */
static double kind_total(const struct stat_evsel *ev, int nr_ev, int nr_ids,
			 const struct stat_row *rows, enum stat_kind k, int a, int cg, int *n)
{
	double sum = 0;

	*n = 0;
	for (int e = 0; e < nr_ev; e++) {
		const struct stat_row *r = row_of(rows, nr_ids, e, a);

		/* perf keeps these per cgroup too */
		if (ev[e].kind != k || ev[e].cgroup != cg || !ev[e].supported || !r->present)
			continue;
		sum += r->counted ? r->val : 0;
		(*n)++;
	}
	return *n ? sum / (k == K_CLOCK ? *n : 1) : 0;
}

static struct stat_metric ratio_pct(const struct stat_evsel *ev, int nr_ev, int nr_ids,
				    const struct stat_row *rows, int a, int cg, double avg,
				    enum stat_kind den, const char *unit)
{
	struct stat_metric m = { NULL, unit, 0 };
	int n;
	double total = kind_total(ev, nr_ev, nr_ids, rows, den, a, cg, &n);

	if (!n)
		return m;
	m.fmt = "%7.2f%%";
	m.val = total ? avg / total * 100.0 : 0;
	return m;
}

struct stat_metric stat_metric(const struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
			       int nr_ids, const struct stat_row *rows, int e, int a)
{
	struct stat_metric m = { NULL, NULL, 0 };
	const struct stat_row *r = row_of(rows, nr_ids, e, a);
	double avg = r->val * ev[e].scale, total;
	int n, cg = ev[e].cgroup;

	switch (ev[e].kind) {
	case K_CLOCK:
		m.unit = "CPUs utilized";
		if (o->walltime_ns > 0) {
			m.fmt = "%8.3f";
			m.val = avg / (o->walltime_ns * ev[e].scale);
		}
		return m;
	case K_INSTRUCTIONS:
		m.unit = "insn per cycle";
		total = kind_total(ev, nr_ev, nr_ids, rows, K_CYCLES, a, cg, &n);
		if (total) {
			m.fmt = "%7.2f ";
			m.val = avg / total;
		}
		return m;
	case K_CYCLES:
		total = kind_total(ev, nr_ev, nr_ids, rows, K_CLOCK, a, cg, &n);
		if (total) {
			m.fmt = "%8.3f";
			m.unit = "GHz";
			m.val = avg / total;
		}
		return m;
	case K_BRANCH_MISSES:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_BRANCHES, "of all branches");
	case K_CACHE_MISSES:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_CACHE_REFS, "of all cache refs");
	case K_L1D_MISSES:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_L1D_LOADS,
				 "of all L1-dcache accesses");
	case K_L1I_MISSES:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_L1I_LOADS,
				 "of all L1-icache accesses");
	case K_LLC_MISSES:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_LLC_LOADS,
				 "of all LL-cache accesses");
	case K_DTLB_MISSES:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_DTLB_LOADS,
				 "of all dTLB cache accesses");
	case K_ITLB_MISSES:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_ITLB_LOADS,
				 "of all iTLB cache accesses");
	case K_STALLED_FE:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_CYCLES, "frontend cycles idle");
	case K_STALLED_BE:
		return ratio_pct(ev, nr_ev, nr_ids, rows, a, cg, avg, K_CYCLES, "backend cycles idle");
	case K_NONE:
		return m;
	default:
		break;
	}
	total = kind_total(ev, nr_ev, nr_ids, rows, K_CLOCK, a, cg, &n);
	if (n) {
		double ratio = 0;
		static const char *const units[] = { "/sec", "K/sec", "M/sec", "G/sec" };
		int u = 0;

		if (total) {
			ratio = 1e9 * avg / total;
			while (u < 3 && ratio > 1000.0) {
				ratio /= 1000.0;
				u++;
			}
		}
		m.fmt = "%8.3f";
		m.unit = units[u];
		m.val = ratio;
	}
	return m;
}

/* The second metric of instructions: stalled cycles per insn, when stalls were counted. */
static bool stalled_metric(const struct stat_evsel *ev, int nr_ev, int nr_ids,
			   const struct stat_row *rows, int e, int a, struct stat_metric *m)
{
	int n1, n2;
	double fe = kind_total(ev, nr_ev, nr_ids, rows, K_STALLED_FE, a, ev[e].cgroup, &n1);
	double be = kind_total(ev, nr_ev, nr_ids, rows, K_STALLED_BE, a, ev[e].cgroup, &n2);
	double total = fe > be ? fe : be, avg = row_of(rows, nr_ids, e, a)->val;

	if (ev[e].kind != K_INSTRUCTIONS || !total || !avg)
		return false;
	m->fmt = "%7.2f ";
	m->unit = "stalled cycles per insn";
	m->val = total / avg;
	return true;
}

/* ---- prefixes ---------------------------------------------------------------- */

static void interval_prefix(const struct stat_out *o, char *buf, size_t len)
{
	buf[0] = 0;
	if (o->summary_line) {
		if (o->fmt == FMT_CSV)
			snprintf(buf, len, "%16s%s", o->csv_summary_word ? "summary" : "", o->sep);
		return;
	}
	if (!o->interval)
		return;
	if (o->fmt == FMT_JSON)
		snprintf(buf, len, "\"interval\" : %lu.%09lu, ", (unsigned long)o->ts.tv_sec,
			 (unsigned long)o->ts.tv_nsec);
	else
		snprintf(buf, len, "%6lu.%09lu%s", (unsigned long)o->ts.tv_sec,
			 (unsigned long)o->ts.tv_nsec, o->fmt == FMT_CSV ? o->sep : " ");
}

void stat_print_aggr_prefix(const struct stat_out *o, const struct stat_aggr_id *id, int nr,
			    FILE *f)
{
	bool csv = o->fmt == FMT_CSV;
	const char *sep = csv ? o->sep : " ";

	if (o->fmt == FMT_JSON) {
		switch (o->aggr) {
		case AGGR_NONE:
			fprintf(f, "\"cpu\" : \"%d\", ", id->cpu);
			break;
		case AGGR_CORE:
			fprintf(f, "\"core\" : \"S%d-D%d-C%d\", \"aggregate-number\" : %d, ",
				id->socket, id->die, id->core, nr);
			break;
		case AGGR_DIE:
			fprintf(f, "\"die\" : \"S%d-D%d\", \"aggregate-number\" : %d, ", id->socket,
				id->die, nr);
			break;
		case AGGR_SOCKET:
			fprintf(f, "\"socket\" : \"S%d\", \"aggregate-number\" : %d, ", id->socket, nr);
			break;
		case AGGR_NODE:
			fprintf(f, "\"node\" : \"N%d\", \"aggregate-number\" : %d, ", id->node, nr);
			break;
		case AGGR_THREAD:
			fprintf(f, "\"thread\" : \"%s-%d\", ", id->comm, id->tid);
			break;
		default:
			break;
		}
		return;
	}
	switch (o->aggr) {
	case AGGR_NONE:
		fprintf(f, "CPU%*d%s", csv ? 0 : -7, id->cpu, sep);
		break;
	case AGGR_CORE:
		fprintf(f, "S%d-D%d-C%*d%s%*d%s", id->socket, id->die, csv ? 0 : -8, id->core, sep,
			csv ? 0 : 4, nr, sep);
		break;
	case AGGR_DIE:
		fprintf(f, "S%d-D%*d%s%*d%s", id->socket, csv ? 0 : -8, id->die, sep, csv ? 0 : 4,
			nr, sep);
		break;
	case AGGR_SOCKET:
		fprintf(f, "S%*d%s%*d%s", csv ? 0 : -5, id->socket, sep, csv ? 0 : 4, nr, sep);
		break;
	case AGGR_NODE:
		fprintf(f, "N%*d%s%*d%s", csv ? 0 : -5, id->node, sep, csv ? 0 : 4, nr, sep);
		break;
	case AGGR_THREAD:
		if (csv)
			fprintf(f, "%s-%d%s", id->comm, id->tid, sep);
		else
			fprintf(f, "%16s-%-8d ", id->comm, id->tid);
		break;
	default:
		break;
	}
}

void stat_print_interval_header(struct stat_out *o)
{
	static const char *const hdr[] = {
		[AGGR_GLOBAL] = "#           time",
		[AGGR_NONE] = "#           time CPU    ",
		[AGGR_THREAD] = "#           time             comm-pid     ",
		[AGGR_CORE] = "#           time core            cpus",
		[AGGR_DIE] = "#           time die          cpus",
		[AGGR_SOCKET] = "#           time socket cpus",
		[AGGR_NODE] = "#           time node   cpus",
	};
	const char *pad = o->aggr == AGGR_NONE ? "                counts" :
			  "             counts";

	fprintf(o->f, "%s%s %*s events\n", hdr[o->aggr], pad, o->unit_width, "unit");
}

/* ---- lines ------------------------------------------------------------------- */

static void std_metric(FILE *f, const struct stat_metric *m)
{
	char buf[64];
	int n;

	if (!m->unit || !m->fmt) {
		fprintf(f, "%-*s", METRIC_LEN, "");
		return;
	}
	snprintf(buf, sizeof(buf), m->fmt, m->val);
	n = fprintf(f, " # %s", buf);
	fprintf(f, " %-*s", METRIC_LEN - n - 1, m->unit);
}

static void csv_metric(const struct stat_out *o, FILE *f, const struct stat_metric *m)
{
	char buf[64], *vals, *end;

	if (!m->unit || !m->fmt) {
		fprintf(f, "%s%s", o->sep, o->sep);
		return;
	}
	snprintf(buf, sizeof(buf), m->fmt, m->val);
	for (vals = buf; *vals == ' '; vals++)
		;
	for (end = vals; isdigit((unsigned char)*end) || *end == '.'; end++)
		;
	*end = 0;
	fprintf(f, "%s%s%s%s", o->sep, vals, o->sep, m->unit);
}

/* -G/--for-each-cgroup: the event's cgroup ("" for one without) */
static const char *cgroup_name(const struct stat_out *o, const struct stat_evsel *c)
{
	return c->cgroup >= 0 && o->cgroups ? o->cgroups[c->cgroup].name : "";
}

/* The CSV and JSON "pcnt-running": perf 6.1 divides the integer times (66.00, where
 * the std line shows 66.67%). */
static double pcnt(const struct stat_row *r)
{
	uint64_t run = (uint64_t)r->run, ena = (uint64_t)r->ena;

	return run != ena && ena ? (double)(100 * run / ena) : 100.0;
}

static void print_line(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
		       const struct stat_aggr_id *id, int nr_ids, const struct stat_row *rows,
		       int e, int a)
{
	const struct stat_evsel *c = &ev[e];
	const struct stat_row *r = row_of(rows, nr_ids, e, a);
	FILE *f = o->f;
	char ip[64];
	bool ok = c->supported && r->counted;
	const char *bad = !c->supported ? "<not supported>" : "<not counted>";
	struct stat_metric m = { NULL, NULL, 0 }, m2;
	double uval = r->val * c->scale;
	bool fractional = floor(c->scale) != c->scale;
	int nr = c->supported ? r->nr : 1;

	interval_prefix(o, ip, sizeof(ip));
	if (ok)
		m = stat_metric(o, ev, nr_ev, nr_ids, rows, e, a);

	if (o->fmt == FMT_JSON) {
		fputc('{', f);
		fputs(ip, f);
		stat_print_aggr_prefix(o, &id[a], nr, f);
		if (ok)
			fprintf(f, "\"counter-value\" : \"%f\", ", uval);
		else
			fprintf(f, "\"counter-value\" : \"%s\", ", bad);
		fputs("\"unit\" : ", f);
		tally_json_string(f, c->supported ? c->unit : "", 0);
		fputs(", \"event\" : ", f);
		tally_json_string(f, c->name, 0);
		fputs(", ", f);
		if (o->cgroup_column) {
			fputs("\"cgroup\" : ", f);
			tally_json_string(f, cgroup_name(o, c), 0);
			fputs(", ", f);
		}
		if (o->run_count > 1)
			fprintf(f, "\"variance\" : %.2f, ", r->variance);
		fprintf(f, "\"event-runtime\" : %" PRIu64 ", \"pcnt-running\" : %.2f, ",
			(uint64_t)r->run, pcnt(r));
		if (ok)
			fprintf(f, "\"metric-value\" : %f, \"metric-unit\" : \"%s\"}\n", m.val,
				m.unit ? m.unit : "(null)");
		else
			fputs("\"metric-value\" : 0.000000, \"metric-unit\" : \"\"}\n", f);
		return;
	}
	if (o->fmt == FMT_CSV) {
		fputs(ip, f);
		stat_print_aggr_prefix(o, &id[a], nr, f);
		if (ok)
			fprintf(f, fractional ? "%.2f%s" : "%.0f%s", uval, o->sep);
		else
			fprintf(f, "%s%s", bad, o->sep);
		fprintf(f, "%s%s%s", c->supported ? c->unit : "", o->sep, c->name);
		if (o->cgroup_column)
			fprintf(f, "%s%s", o->sep, cgroup_name(o, c));
		if (o->run_count > 1)
			fprintf(f, "%s%.2f%%", o->sep, r->variance);
		fprintf(f, "%s%" PRIu64 "%s%.2f", o->sep, (uint64_t)r->run, o->sep, pcnt(r));
		csv_metric(o, f, &m);
		fputc('\n', f);
		return;
	}
	/* std */
	fputs(ip, f);
	stat_print_aggr_prefix(o, &id[a], nr, f);
	if (ok) {
		if (fractional)
			fprintf(f, o->big_num ? "%'18.2f " : "%18.2f ", uval);
		else
			fprintf(f, o->big_num ? "%'18.0f " : "%18.0f ", uval);
		fprintf(f, "%-*s %-32s", o->unit_width, c->unit, c->name);
		if (o->cgroup_column)
			fprintf(f, " %s", cgroup_name(o, c));
		std_metric(f, &m);
		if (stalled_metric(ev, nr_ev, nr_ids, rows, e, a, &m2)) {
			fputc('\n', f);
			fputs(ip, f);
			stat_print_aggr_prefix(o, &id[a], nr, f);
			if (o->aggr == AGGR_NONE)
				fputs("        ", f);
			fprintf(f, "%49s", "");
			std_metric(f, &m2);
		}
	} else {
		fprintf(f, "%18s %-*s %-25s", bad, o->unit_width, c->supported ? c->unit : "",
			c->name);
		if (o->cgroup_column)
			fprintf(f, " %s", cgroup_name(o, c));
		fprintf(f, "%-*s", METRIC_LEN, "");
	}
	if (o->run_count > 1 && r->variance != 0)
		fprintf(f, "  ( +-%6.2f%% )", r->variance);
	if (c->supported && r->run != r->ena && r->ena)
		fprintf(f, "  (%.2f%%)", 100.0 * r->run / r->ena);
	fputc('\n', f);
}

/* Strict JSON: one object per row inside the document's "counters" array. Numbers
 * are printed in the C locale by the caller's uselocale(). */
static void print_strict(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
			 const struct stat_aggr_id *id, int nr_ids, const struct stat_row *rows,
			 int e, int a)
{
	const struct stat_evsel *c = &ev[e];
	const struct stat_row *r = row_of(rows, nr_ids, e, a);
	FILE *f = o->f;
	bool ok = c->supported && r->counted;
	struct stat_metric m = { NULL, NULL, 0 };

	fputs(o->strict_first ? "\n    {" : ",\n    {", f);
	o->strict_first = false;
	if (o->interval)
		fprintf(f, "\"interval\": %lu.%09lu, ", (unsigned long)o->ts.tv_sec,
			(unsigned long)o->ts.tv_nsec);
	switch (o->aggr) {
	case AGGR_NONE:
		fprintf(f, "\"cpu\": %d, ", id[a].cpu);
		break;
	case AGGR_CORE:
		fprintf(f, "\"socket\": %d, \"die\": %d, \"core\": %d, \"cpus\": %d, ",
			id[a].socket, id[a].die, id[a].core, r->nr);
		break;
	case AGGR_DIE:
		fprintf(f, "\"socket\": %d, \"die\": %d, \"cpus\": %d, ", id[a].socket, id[a].die,
			r->nr);
		break;
	case AGGR_SOCKET:
		fprintf(f, "\"socket\": %d, \"cpus\": %d, ", id[a].socket, r->nr);
		break;
	case AGGR_NODE:
		fprintf(f, "\"node\": %d, \"cpus\": %d, ", id[a].node, r->nr);
		break;
	case AGGR_THREAD:
		fputs("\"comm\": ", f);
		tally_json_string(f, id[a].comm, 0);
		fprintf(f, ", \"tid\": %d, ", id[a].tid);
		break;
	default:
		break;
	}
	fputs("\"event\": ", f);
	tally_json_string(f, c->name, 0);
	if (o->cgroup_column) {
		fputs(", \"cgroup\": ", f);
		tally_json_string(f, cgroup_name(o, c), 0);
	}
	fputs(", \"unit\": ", f);
	tally_json_string(f, c->unit, 0);
	fprintf(f, ", \"status\": \"%s\"", !c->supported ? "not supported" :
					    !r->counted ? "not counted" : "counted");
	if (ok) {
		m = stat_metric(o, ev, nr_ev, nr_ids, rows, e, a);
		fprintf(f, ", \"value\": %.17g, \"count\": %.17g", r->val * c->scale, r->val);
	} else {
		fputs(", \"value\": null, \"count\": null", f);
	}
	fprintf(f, ", \"time-enabled\": %.0f, \"time-running\": %.0f, \"pcnt-running\": %.2f",
		r->ena, r->run, r->run != r->ena && r->ena ? 100.0 * r->run / r->ena : 100.0);
	if (o->run_count > 1)
		fprintf(f, ", \"variance-pct\": %.4f", r->variance);
	if (m.unit && m.fmt && isfinite(m.val)) {
		fprintf(f, ", \"metric-value\": %.6f, \"metric-unit\": ", m.val);
		tally_json_string(f, m.unit, 0);
	} else {
		fputs(", \"metric-value\": null, \"metric-unit\": null", f);
	}
	fputc('}', f);
}

/* perf 6.1's cmp_val: the difference of the u64 counts as an int (it wraps past 2^31,
 * and perf's order with it). */
static int cmp_thread_rows(const void *x, const void *y, void *arg)
{
	const struct stat_row *er = arg;
	uint64_t a = (uint64_t)er[*(const int *)x].val, b = (uint64_t)er[*(const int *)y].val;

	return (int)(uint32_t)(b - a);
}

void stat_print_rows(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
		     const struct stat_aggr_id *ids, int nr_ids, const struct stat_row *rows)
{
	void (*line)(struct stat_out *, const struct stat_evsel *, int,
		     const struct stat_aggr_id *, int, const struct stat_row *, int, int);
	bool event_major = o->aggr == AGGR_NONE || o->aggr == AGGR_THREAD ||
			   o->aggr == AGGR_GLOBAL;

	if (o->metric_only) {
		stat_print_metric_only(o, ev, nr_ev, ids, nr_ids, rows);
		return;
	}
	line = o->fmt == FMT_STRICT ? print_strict : print_line;
	if (o->fmt == FMT_STD && o->interval && !o->summary_line) {
		if (o->nr_headers_printed % 25 == 0)
			stat_print_interval_header(o);
		o->nr_headers_printed++;
	}
	if (event_major) {
		int *order = calloc((size_t)nr_ids + 1, sizeof(*order));

		for (int e = 0; e < nr_ev; e++) {
			int n = 0;

			if (!order) {	/* no memory for sorting: print in map order */
				for (int a = 0; a < nr_ids; a++)
					if (row_of(rows, nr_ids, e, a)->present)
						line(o, ev, nr_ev, ids, nr_ids, rows, e, a);
				continue;
			}
			for (int a = 0; a < nr_ids; a++)
				if (row_of(rows, nr_ids, e, a)->present)
					order[n++] = a;
			/* perf lists threads busiest first, with its comparator */
			if (o->aggr == AGGR_THREAD && n > 1) {
				const struct stat_row *er = row_of(rows, nr_ids, e, 0);

				qsort_r(order, (size_t)n, sizeof(*order), cmp_thread_rows, (void *)er);
			}
			for (int i = 0; i < n; i++)
				line(o, ev, nr_ev, ids, nr_ids, rows, e, order[i]);
		}
		free(order);
	} else {
		for (int a = 0; a < nr_ids; a++)
			for (int e = 0; e < nr_ev; e++)
				if (row_of(rows, nr_ids, e, a)->present)
					line(o, ev, nr_ev, ids, nr_ids, rows, e, a);
	}
}
