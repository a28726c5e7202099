/*
 * tally stat --metric-only: a header of metric units, then one line per bucket of the
 * metric values alone, in perf 6.1's std, CSV and JSON shapes (measured against perf
 * on this project's machine, see tests/cli/test-stat-options.sh).
 *
 * perf's rules: rates (/sec) and CPUs utilized are left out of std and CSV (perf's
 * valid_only_metric); an "of all ..." unit is prefixed with the event name; a cell is 20
 * wide (wider for a longer unit) plus a space; an event not supported or not counted
 * leaves an empty cell; the header indent is perf's per aggregation mode. Which units the
 * header names: with -A every event's, as CPU 0's metrics give them (JSON keeps the rates
 * and CPUs utilized there); otherwise those that have a value in the first bucket (perf 6.1 on a machine
 * without hardware counters prints no unit there).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "stat.h"

#define METRIC_ONLY_LEN 20

static bool valid_only(const char *unit)
{
	return unit && !strstr(unit, "/sec") && !strstr(unit, "CPUs utilized");
}

/* perf's fixunit: "of all branches" → "branch-misses of all branches" */
static const char *full_unit(const struct stat_evsel *e, const char *unit, char *buf,
			     size_t len)
{
	if (strncmp(unit, "of all", 6))
		return unit;
	snprintf(buf, len, "%s %s", e->name, unit);
	return buf;
}

static const struct stat_row *row(const struct stat_row *rows, int nr_ids, int e, int a)
{
	return &rows[(size_t)e * (size_t)nr_ids + (size_t)a];
}

/* Does event e name its metric in the header? */
static bool in_header(const struct stat_out *o, const struct stat_evsel *ev, int e,
		      const struct stat_metric *m, const struct stat_row *r)
{
	if (!m->unit || ev[e].shown_with >= 0)
		return false;
	if ((o->fmt != FMT_JSON || o->aggr != AGGR_NONE) && !valid_only(m->unit))
		return false;
	return o->aggr == AGGR_NONE || (ev[e].supported && r->counted && m->fmt);
}

static void print_header(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
			 int nr_ids, const struct stat_row *rows)
{
	static const int indent[] = {
		[AGGR_GLOBAL] = 0, [AGGR_NONE] = 6, [AGGR_THREAD] = 24, [AGGR_CORE] = 24,
		[AGGR_DIE] = 18, [AGGR_SOCKET] = 12, [AGGR_NODE] = 6,
	};
	static const char *const csv_head[] = {
		[AGGR_GLOBAL] = "", [AGGR_NONE] = "cpu,", [AGGR_THREAD] = "comm-pid,",
		[AGGR_CORE] = "core,cpus,", [AGGR_DIE] = "die,cpus", [AGGR_SOCKET] = "socket,cpus",
		[AGGR_NODE] = "node,",
	};
	bool first = true;

	if (o->fmt == FMT_JSON)
		fprintf(o->f, "{%*s", o->interval ? 0 : indent[o->aggr], "");
	else if (o->fmt == FMT_CSV)
		fprintf(o->f, "%s%s", o->interval ? " time," : "", csv_head[o->aggr]);
	else if (o->interval)
		fputs("#           time ", o->f);
	else
		fprintf(o->f, "%*s", indent[o->aggr], "");
	for (int e = 0; nr_ids && e < nr_ev; e++) {
		struct stat_metric m = stat_metric(o, ev, nr_ev, nr_ids, rows, e, 0);
		char buf[512];
		const char *unit;

		if (!in_header(o, ev, e, &m, row(rows, nr_ids, e, 0)))
			continue;
		unit = full_unit(&ev[e], m.unit, buf, sizeof(buf));
		if (strstr(unit, "/sec"))
			unit = "/sec";	/* perf names it from a zero value: no K/M/G */
		if (o->fmt == FMT_JSON)
			fprintf(o->f, "%s\"unit\" : \"%s\"", first ? "" : ", ", unit);
		else if (o->fmt == FMT_CSV)
			fprintf(o->f, "%s%s", unit, o->sep);
		else
			fprintf(o->f, "%*s ", METRIC_ONLY_LEN, unit);
		first = false;
	}
	fputs(o->fmt == FMT_JSON ? "}\n" : "\n", o->f);
}

/* The value as perf's CSV and JSON print it: the number's digits without padding. */
static void digits(const struct stat_metric *m, char *buf, size_t len)
{
	char *s = buf, *end;

	buf[0] = 0;
	if (m->fmt)
		snprintf(buf, len, m->fmt, m->val);
	while (*s == ' ')
		s++;
	for (end = s; isdigit((unsigned char)*end) || *end == '.'; end++)
		;
	*end = 0;
	memmove(buf, s, (size_t)(end - s) + 1);
}

static void print_cell(struct stat_out *o, const struct stat_evsel *e,
		       const struct stat_metric *m)
{
	char val[64], ubuf[512];
	const char *unit = m->unit ? full_unit(e, m->unit, ubuf, sizeof(ubuf)) : "";
	int width = METRIC_ONLY_LEN;

	if (m->unit && !valid_only(m->unit))
		return;
	if (o->fmt == FMT_STD) {
		val[0] = 0;
		if (m->fmt)
			snprintf(val, sizeof(val), m->fmt, m->val);
		if ((int)strlen(unit) > width)
			width = (int)strlen(unit) + 1;
		fprintf(o->f, "%*s ", width, val);
		return;
	}
	digits(m, val, sizeof(val));
	if (o->fmt == FMT_CSV)
		fprintf(o->f, "%s%s", val, o->sep);
	else
		fprintf(o->f, "{\"metric-value\" : \"%s\"}", val);
}

/* The CPUs of a bucket, as its first event counted them (1 if it is not supported, as
 * perf 6.1 prints it). */
static int first_nr(const struct stat_evsel *ev, int nr_ev, int nr_ids,
		    const struct stat_row *rows, int a)
{
	for (int e = 0; e < nr_ev; e++)
		if (ev[e].shown_with < 0 && row(rows, nr_ids, e, a)->present)
			return ev[e].supported ? row(rows, nr_ids, e, a)->nr : 1;
	return 1;
}

void stat_print_metric_only(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
			    const struct stat_aggr_id *ids, int nr_ids,
			    const struct stat_row *rows)
{
	if (!o->interval || o->nr_headers_printed % 25 == 0)
		print_header(o, ev, nr_ev, nr_ids, rows);
	if (o->interval)
		o->nr_headers_printed++;
	for (int a = 0; a < nr_ids; a++) {
		if (o->interval && o->fmt == FMT_JSON)
			fprintf(o->f, "{\"interval\" : %lu.%09lu}", (unsigned long)o->ts.tv_sec,
				(unsigned long)o->ts.tv_nsec);
		else if (o->interval)
			fprintf(o->f, "%6lu.%09lu%s", (unsigned long)o->ts.tv_sec,
				(unsigned long)o->ts.tv_nsec, o->fmt == FMT_CSV ? o->sep : " ");
		else if (o->fmt == FMT_JSON && o->aggr != AGGR_GLOBAL)
			fputc('{', o->f);
		stat_print_aggr_prefix(o, &ids[a], first_nr(ev, nr_ev, nr_ids, rows, a), o->f);
		for (int e = 0; e < nr_ev; e++) {
			const struct stat_row *r = row(rows, nr_ids, e, a);
			struct stat_metric m = { "", "", 0 };

			if (!r->present || ev[e].shown_with >= 0)
				continue;
			if (ev[e].supported && r->counted) {
				m = stat_metric(o, ev, nr_ev, nr_ids, rows, e, a);
				if (!m.unit)
					continue;	/* an event without a metric */
			} else {
				m.fmt = NULL;	/* perf's empty cell */
			}
			print_cell(o, &ev[e], &m);
		}
		fputc('\n', o->f);
	}
}
