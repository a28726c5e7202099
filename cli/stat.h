/*
 * tally stat internals shared by cmd-stat.c and the printers (stat-print.c) and the
 * default event sets (stat-events.c).
 *
 * The flow: cmd-stat.c opens a tally_counters set, reads it, and reduces the per
 * (cpu, thread) readings into rows: one value per event and aggregation id (the
 * whole run, a CPU, a core, a socket, a thread…). The printers turn rows into perf
 * 6.1's human, CSV and JSON lines, or tally's strict JSON document.
 */
#ifndef TALLY_CLI_STAT_H
#define TALLY_CLI_STAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <linux/perf_event.h>

enum stat_aggr { AGGR_GLOBAL, AGGR_NONE, AGGR_THREAD, AGGR_CORE, AGGR_DIE, AGGR_SOCKET,
		 AGGR_NODE };
enum stat_fmt { FMT_STD, FMT_CSV, FMT_JSON, FMT_STRICT };

/* What an event is, for the derived metrics perf prints next to it. */
enum stat_kind {
	K_OTHER, K_NONE, K_CLOCK, K_CYCLES, K_INSTRUCTIONS, K_BRANCHES, K_BRANCH_MISSES,
	K_CACHE_REFS, K_CACHE_MISSES, K_STALLED_FE, K_STALLED_BE,
	K_L1D_LOADS, K_L1D_MISSES, K_L1I_LOADS, K_L1I_MISSES, K_LLC_LOADS, K_LLC_MISSES,
	K_DTLB_LOADS, K_DTLB_MISSES, K_ITLB_LOADS, K_ITLB_MISSES,
};

struct stat_evsel {
	char *name;
	struct perf_event_attr attr;
	int leader;		/* index of the group leader (itself if none) */
	const char *unit;	/* "msec" for clocks, else "" */
	double scale;		/* 1e-6 for clocks (ns → msec), else 1 */
	enum stat_kind kind;
	bool supported;		/* opened; false prints <not supported> */
	int tool;		/* enum tally_tool_event: duration_time etc. (not opened) */
	char *unit_buf;		/* owned unit from a sysfs alias ("Joules") */
	/* perf's merging of one name's events over several PMUs (uncore_imc_0, _1 …) */
	char *pmu_name;		/* the sysfs PMU for sysfs_pmu events, else NULL */
	bool merge;		/* the parser expanded a name over PMUs (auto_merge_stats) */
	bool name_set;		/* name= term: --no-merge keeps the name */
	int shown_with;		/* the event whose line shows this one's counts, or -1 */
};

/* One aggregation bucket: what the prefix of a line names. */
struct stat_aggr_id {
	int cpu, core, die, socket, node;
	int thread_idx;
	int tid;
	char comm[32];
	int nr;			/* CPUs in the bucket (for the "cpus" column) */
};

/* One printed row: an event in one bucket. */
struct stat_row {
	double val;		/* count, scaled for multiplexing (not by evsel scale) */
	double ena, run;	/* time enabled / running (ns) */
	double variance;	/* -r: relative stddev of the mean, percent */
	bool counted;		/* false: <not counted> */
	bool present;		/* false: the bucket has no reading for it (thread with zeros) */
	int nr;			/* CPUs that contributed */
};

struct stat_out {
	FILE *f;
	enum stat_fmt fmt;
	enum stat_aggr aggr;
	const char *sep;	/* CSV separator */
	bool big_num;
	int unit_width;
	int run_count;		/* -r */
	bool interval;		/* -I: lines start with the timestamp */
	struct timespec ts;	/* the timestamp of this interval */
	double walltime_ns;	/* for "CPUs utilized" */
	bool summary_line;	/* --summary block in CSV/JSON: prefix "summary" */
	bool csv_summary_word;	/* false with --no-csv-summary */
	int nr_headers_printed;	/* interval header every 25 intervals */
	/* strict JSON: state of the document */
	bool strict_first;
};

/* Print the rows of one report (a run, an interval). rows[e * nr_ids + a]. */
void stat_print_rows(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
		     const struct stat_aggr_id *ids, int nr_ids, const struct stat_row *rows);
/* The std interval header line ("#           time …"), for -I. */
void stat_print_interval_header(struct stat_out *o);
/* Formatted metric of one row, as perf computes it. For tests. Returns false if the
 * event has no metric. */
struct stat_metric {
	const char *fmt;	/* NULL: the metric has no value (blank in std) */
	const char *unit;	/* NULL: no metric at all */
	double val;
};
struct stat_metric stat_metric(const struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
			       int nr_ids, const struct stat_row *rows, int e, int a);

/* tally stat report (cli/stat-report.c). */
int cmd_stat_report(int argc, char **argv);

/* Fill attr/unit/scale/kind for a known event name (legacy hardware, software and
 * cache names perf accepts). 0, or -ENOENT for an unknown name. */
int stat_event_lookup(const char *name, struct perf_event_attr *attr);
/* kind/unit/scale for an attr. */
void stat_evsel_classify(struct stat_evsel *ev);

#endif
