/*
 * tally report's parts: the options and the flow (cmd-report.c), the pass over the
 * records into the library's histograms (report-sample.c), the perf.data header
 * (report-header.c), -D and --stats (report-dump.c), the columns and the printed
 * report (report-print.c).
 */
#ifndef TALLY_CLI_REPORT_H
#define TALLY_CLI_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/cpumap.h>
#include <tally/data.h>
#include <tally/record.h>
#include <tally/hist.h>
#include <tally/session.h>

#include "callchain.h"
#include "hist.h"
#include "options.h"
#include "report-common.h"

struct report_opts {
	const char *input;
	const char *sort;
	const char *fields;
	int children;		/* -1 default, 0 no, 1 yes */
	enum cc_mode cc_mode;
	bool cc_set;
	int cc_order;		/* -1 default, 0 callee, 1 caller */
	double cc_min_percent;
	unsigned cc_print_limit;
	enum tally_cc_key cc_key;	/* -g function / address / srcline */
	bool full_source_path;
	bool inline_frames;	/* --inline (default on, as perf) */
	double percent_limit;
	bool show_nr_samples;
	bool show_total_period;
	bool quiet;
	bool header;
	bool header_only;
	bool stats;
	bool dump_raw;
	bool relative;
	bool force;
	bool stdio, tui;
	int group;		/* -1 default (on when the file has groups), 0, 1 */
	unsigned max_stack;
	struct sample_filter_opts filter;	/* -c, -d, -S, --pid, --tid, -C */
	bool hide_unresolved;	/* -U */
	const char *time;	/* --time START,STOP */
	uint64_t time_start, time_end;
	const char *symbol_filter;	/* --symbol-filter */
	bool skip_empty;	/* --skip-empty (perf's default): no section for an event
				 * without samples */
	bool show_info;		/* -I */
	bool ns;		/* --ns: only the time sort key (which tally lacks) uses it */
	int samples;		/* --samples: perf's TUI keeps them; stdio shows nothing */
	const char *kallsyms, *symfs;
	bool show_threads;	/* -T: the READ records' per-thread counts after the report */
	const char *pretty;	/* --pretty raw: -T's values one cell per thread and event */
	bool tasks, mmaps;	/* --tasks, --mmaps: the threads (and maps) instead */
	const char *field_sep;	/* -t */
	bool raw_trace;		/* --raw-trace: the trace key's fields as name=value */
	bool disable_order;	/* --disable-order: records as the file has them */
	bool ignore_vmlinux;	/* --ignore-vmlinux: -k's file is not used */
	const char *vmlinux;	/* -k (read as a kallsyms file) */
	bool modules;		/* --modules: module symbols come from kallsyms either way */
	bool show_ref_cg;	/* --show-ref-call-graph: only files with PERF_SAMPLE_READ
				 * have reference events, which tally refuses */
	bool demangle;		/* --no-demangle: C++ symbols by their linkage names */
	bool demangle_kernel;	/* --demangle-kernel: kernel symbols come from kallsyms,
				 * which perf does not demangle either */
	const char *parent;	/* -p: the parent pattern (adds the parent key) */
	bool exclude_other;	/* -x: only rows with a parent */
	const char *ignore_callees;	/* --ignore-callees: the regex */
	int group_sort_idx;	/* --group-sort-idx: sort groups by this member */
	bool show_cpu_util;	/* --show-cpu-utilization: sys and usr columns */
	int socket_filter;	/* --socket-filter: only rows of this socket (-1: all) */
	uint64_t time_quantum;	/* --time-quantum: the time key's quantum, ns (0: 100 ms) */
	struct cli_widths col_widths;	/* --column-widths (0: automatic) */
	bool hierarchy;		/* --hierarchy: a level per sort key */
	const char *switch_on, *switch_off;	/* --switch-on/--switch-off (evswitch) */
	bool show_on_off;	/* --show-on-off-events */
};

struct report {
	struct report_opts *o;
	struct tally_data *data;
	struct tally_session *session;
	struct tally_hists *hists;	/* one histogram per event */
	uint64_t *nr_samples_seen;	/* per event (--stats) */
	uint64_t *lost_samples_ev;	/* per event: LOST_SAMPLES' counts (--stats) */
	size_t nr_ev;
	bool children;
	bool use_chains;	/* resolve call chains (children, trees) */
	bool build_trees;	/* keep call-chain trees (not with -g none) */
	bool caller;		/* chain order */
	bool group_view;	/* event groups print as one section */
	bool children_cols;	/* Children column and order (children, unless -F says not) */
	enum tally_hist_col order[TALLY_HIST_NR_COLS];	/* -F: value columns sort in their order */
	size_t nr_order;
	struct script_trace *trace;	/* the file's tracepoint formats, for the trace key */
	uint64_t lost_samples;
	uint64_t type_counts[128];
	uint64_t nr_records;
	struct read_values *values;	/* -T */
	struct evswitch sw;	/* --switch-on, --switch-off */
	int32_t *cpu_socket;	/* --socket-filter: each cpu's socket (the file's topology) */
	size_t nr_cpu_socket;
};

/* One record of the pass (report-sample.c): side-band to the session, samples to the
 * histograms; -D dumps it first, --stats only counts. */
int report__on_record(void *arg, const struct perf_event_header *hdr,
		      const struct tally_record_ctx *ctx);
/* -D: one record as perf report -D prints it (report-dump.c). */
void report__dump_record(struct report *r, const struct perf_event_header *hdr,
			 const struct tally_record_ctx *ctx);
/* -T (report-tasks.c): a READ record of event evidx into the per-thread values, and
 * their table as perf prints it at the end of the report. 0 or -ENOMEM. */
int report__read_value(struct report *r, const struct perf_event_header *hdr, int evidx);
void report__print_values(const struct report *r);
void report__values_free(struct read_values *v);
/* --tasks, --mmaps: the threads as a tree of parents, with their maps for --mmaps.
 * 0, -ENOMEM, or 1 (error printed). */
int report__print_tasks(struct report *r);
/* -D and --stats: the record counts after the pass. */
void report__print_stats(struct report *r);
/* Columns and sort keys from -s / -F / -n and the children mode (report-print.c). */
int report__setup_columns(struct report *r, enum tally_hist_col *keys, size_t *nr_keys,
			  enum tally_hist_col *cols, size_t *nr_cols);
/* Every event's section: header, rows and call graphs. 0 or -ENOMEM. */
int report__print(struct report *r, const enum tally_hist_col *cols, size_t nr_cols);

#endif
