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
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <linux/perf_event.h>

#include <tally/stat.h>

#include "control.h"
#include "workload.h"

struct cli_command;

/* The library's modes (tally/stat.h) by shorter names. */
enum stat_aggr {
	AGGR_GLOBAL = TALLY_AGGR_GLOBAL, AGGR_NONE = TALLY_AGGR_NONE,
	AGGR_THREAD = TALLY_AGGR_THREAD, AGGR_CORE = TALLY_AGGR_CORE, AGGR_DIE = TALLY_AGGR_DIE,
	AGGR_SOCKET = TALLY_AGGR_SOCKET, AGGR_NODE = TALLY_AGGR_NODE,
};
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
	const char *filter;	/* --filter: set on its fds after open */
	bool name_set;		/* name= term: --no-merge keeps the name */
	int shown_with;		/* the event whose line shows this one's counts, or -1 */
	int cgroup;		/* -G/--for-each-cgroup: index in stat_run.cgroups, or -1 */
};

/* A cgroup events count in (stat-cgroup.c): its name as shown, its open directory. */
struct stat_cgroup {
	char *name;
	int fd;
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
	/* -G/--for-each-cgroup: a cgroup column after the event name (names: cgroups) */
	bool cgroup_column;
	const struct stat_cgroup *cgroups;
	bool metric_only;	/* --metric-only (stat-metric-only.c) */
};

/* Print the rows of one report (a run, an interval). rows[e * nr_ids + a]. */
void stat_print_rows(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
		     const struct stat_aggr_id *ids, int nr_ids, const struct stat_row *rows);
/* The bucket's prefix of a line (CPU0, S0-D0-C1 and its CPUs…), in o's format. */
void stat_print_aggr_prefix(const struct stat_out *o, const struct stat_aggr_id *id, int nr,
			    FILE *f);
/* --metric-only: the header of metric units, then a line of metric values per bucket. */
void stat_print_metric_only(struct stat_out *o, const struct stat_evsel *ev, int nr_ev,
			    const struct stat_aggr_id *ids, int nr_ids,
			    const struct stat_row *rows);
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
extern const struct cli_command cmd_stat_report;

/* Fill attr/unit/scale/kind for a known event name (legacy hardware, software and
 * cache names perf accepts). 0, or -ENOENT for an unknown name. */
int stat_event_lookup(const char *name, struct perf_event_attr *attr);
/* kind/unit/scale for an attr. */
void stat_evsel_classify(struct stat_evsel *ev);

/* ---- the stat command's state, shared by its files ---------------------------------- */

struct stat_opts {
	char **event_specs;
	const char **spec_filters;	/* --filter of each -e (NULL: none) */
	int nr_event_specs;
	int detail;
	bool system_wide;
	bool no_inherit;
	enum stat_aggr aggr;
	const char *cpu_list, *pid_list, *tid_list;
	int repeat;
	long interval_ms;
	long interval_count;
	bool summary, no_csv_summary;
	long timeout_ms, delay_ms;
	const char *csv_sep;
	bool json, strict_json;
	const char *output;
	bool append;
	int log_fd;
	int big_num;		/* -1: default (on) */
	bool null_run;
	bool no_merge;		/* --no-merge: one line per PMU of a merged name */
	bool quiet;		/* --quiet: count (and stat record), print nothing */
	bool all_user, all_kernel;	/* --all-user / --all-kernel: every event's mode */
	bool table;		/* --table: each run's time (with -r) */
	const char *pre, *post;	/* --pre, --post: shell commands around each run */
	bool interval_clear;	/* --interval-clear: clear the screen before each interval */
	const char *sysfs;	/* --sysfs: PMUs and tracepoints under this root (tests) */
	/* -G lists in order, each with the number of -e before it */
	struct stat_cgroup_arg {
		int after;
		const char *names;
	} *cgroup_args;
	int nr_cgroup_args;
	const char *for_each_cgroup;	/* --for-each-cgroup LIST */
	const char *control;	/* --control fd:CTL[,ACK] | fifo:CTL[,ACK] */
	bool sync;		/* -S: sync() before each run */
	bool metric_only;	/* --metric-only: metrics alone */
	bool group;		/* -g: all events in one group */
	bool scale;		/* --no-scale: multiplexed counts as read */
	const char *refused;	/* the long name of an option tally refuses (stat-refused.c) */
	char **argv;		/* the workload */
	int argc;
	const char *record_path;	/* tally stat record -o PATH ("-": stdout) */
	bool record_path_set;
	char **cmdline;			/* the whole command line, for CMDLINE */
	int cmdline_argc;
};


/* State of one counting session. */
/* -r: a row's values over the runs so far. */
struct stat_acc {
	struct tally_stat_mean val, ena, run;
	int counted;		/* runs in which it counted */
};

struct stat_run {
	struct stat_opts *opts;
	struct stat_evsel *ev;
	int nr_ev;
	struct tally_cpumap *cpus;
	struct tally_threadmap *threads;
	struct tally_topology *topo;
	struct tally_counters *set;
	int *set_idx;		/* ev index → counters index */
	struct stat_aggr_id *ids;
	int nr_ids;
	struct tally_stat_buckets *buckets;	/* pair → bucket (ids[] in the same order) */
	struct stat_row *rows;	/* nr_ev x nr_ids */
	struct tally_count *prev;	/* -I: last reading per (event, pair) */
	struct tally_count *cur;	/* -I: this interval's readings per (event, pair) */
	struct stat_out out;
	/* -r accumulators per row */
	struct stat_acc *acc;
	struct tally_stat_mean wall;
	double *wall_runs;	/* --table: each run's wall time (ns) */
	int nr_runs_done;
	struct timespec start;
	double last_wall_ns;
	double span_ns;		/* what the rows cover: the run or the interval (duration_time) */
	bool stopped_workload;	/* --timeout / --interval-count ended the command */
	struct rusage ru;	/* the workload's, from wait4 */
	bool have_ru;
	double ru_user_mean, ru_sys_mean;	/* user_time / system_time (ns), mean over runs */
	int nr_ru;
	int exit_status;
	bool workload_ran;
	struct stat_cgroup *cgroups;	/* -G/--for-each-cgroup, opened */
	int nr_cgroups;
	int nr_cgroup_slots;	/* -G names so far, empty ones too (perf's nr_cgroups) */
	struct cli_control ctl;	/* --control */
};

/* Events (stat-events.c): -e specs, or the defaults with -d levels, with perf stat's attr
 * policy; then which events show on one line (--no-merge: each its own). 0, a positive
 * exit status (message printed) or -errno. */
int stat_run__build_events(struct stat_run *r);
int stat_run__plan_merges(struct stat_run *r);
/* Cgroups (stat-cgroup.c): the -G lists given after the first nr_specs -e; then
 * --for-each-cgroup's copies of the event list. 0, 129 (message printed) or -errno. */
int stat_run__cgroups_after_spec(struct stat_run *r, int nr_specs);
int stat_run__expand_cgroups(struct stat_run *r);
void stat_run__free_cgroups(struct stat_run *r);
/* --control (stat-control.c; the descriptors: control.h): run the commands waiting on
 * the control descriptor (false: it is closed, stop polling it). */
bool stat_run__control(struct stat_run *r);
/* Options tally refuses (stat-refused.c): the callback notes which; stat_refuse says
 * what is missing in one line and returns 1. */
struct cli_opt;
int stat_opt_refused(void *opts, const struct cli_opt *opt, const char *arg, bool unset);
int stat_refuse(const struct stat_opts *o);
/* Targets and buckets (stat-aggr.c): the CPUs and threads counted, and the buckets the
 * aggregation mode makes of them. 0 or an exit status (message printed). */
int stat_run__build_targets(struct stat_run *r, pid_t workload_pid);
int stat_run__build_buckets(struct stat_run *r);
/* /proc/TID/comm, or "" */
void stat_read_comm(pid_t tid, char *buf, size_t len);
/* The readings (the change since the last interval with delta) into r->rows. */
void stat_run__reduce(struct stat_run *r, bool delta);
/* Counting (stat-run.c). */
void stat_install_signals(void);
/* The signal that stopped the run, or 0. */
int stat_got_signal(void);
int stat_run__open_counters(struct stat_run *r);
/* One run: fork (when there is a command), open, count, read. 0 or an exit code. */
int stat_run__once(struct stat_run *r, int *child_status);
/* perf's "Events STATE" line on stderr (not with --quiet). */
void stat_events_note(const struct stat_run *r, const char *state);
double stat_ts_ns(const struct timespec *t);
struct timespec stat_now(void);
struct timespec stat_ts_sub(struct timespec a, struct timespec b);
/* -r (stat-repeat.c): fold this run into the running mean; the averaged rows. */
void stat_run__accumulate(struct stat_run *r);
void stat_run__averaged_rows(struct stat_run *r);
/* stat record (stat-record.c): the run as perf's STAT records. 0 or an exit status. */
int stat_run__write_data(struct stat_run *r);
/* Output framing (stat-output.c). */
FILE *stat_open_output(struct stat_opts *o, bool *owned);
void stat_target_text(struct stat_opts *o, char *buf, size_t len);
void stat_run__print_report(struct stat_run *r);
void stat_run__print_interval(struct stat_run *r, struct timespec t);

#endif
