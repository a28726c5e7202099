/*
 * tally top: what the files of the top command share.
 *
 * cmd-top.c parses options and runs the refresh loop; top-sample.c opens the events,
 * drains the rings in time order into the session and the histograms, and decays
 * them between refreshes; top-stdio.c prints one table per refresh (--stdio) and
 * formats rows for the terminal view; top-tui.c is the ncurses screen.
 */
#ifndef TALLY_CLI_TOP_H
#define TALLY_CLI_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/perf_event.h>

#include <tally/cpumap.h>
#include <tally/record.h>
#include <tally/ring.h>
#include <tally/session.h>

#include <tally/hist.h>

#include "callchain.h"
#include "options.h"
#include "report-common.h"

enum top_ui { TOP_UI_AUTO, TOP_UI_STDIO, TOP_UI_TUI };

struct top_opts {
	const char **events;	/* -e, in order */
	size_t nr_events;
	const char *pid, *tid, *cpu_list;
	bool all_cpus;
	uint64_t count;		/* -c: fixed period (0: use -F) */
	unsigned freq;		/* -F (default 4000) */
	bool callgraph;		/* -g */
	bool dwarf;		/* --call-graph dwarf: user regs and stack, unwound */
	unsigned stack_size;	/* --call-graph dwarf,SIZE (0: 8192) */
	int children;		/* --children/--no-children; -1 = default (on with -g) */
	bool hide_kernel, hide_user;
	const char *sort;	/* -s (default "dso,sym") */
	double delay;		/* -d seconds between refreshes */
	unsigned mmap_pages;	/* -m (0: default) */
	enum top_ui ui;
	long iterations;	/* --iterations (0: until q / SIGINT) */
	int entries;		/* -E (0: fit the terminal, or 25 when not a terminal) */
	bool zero;		/* -z: zero instead of decay */
	double percent_limit;
	unsigned max_stack;
	bool show_nr_samples;	/* -n */
	bool show_total_period;	/* --show-total-period */
	bool relative;		/* --percentage relative: of what the filters keep */
	bool no_inherit;	/* -i: new threads of -p/-t are not followed */
	const char *kallsyms;	/* --kallsyms */
	struct sample_filter_opts filter;	/* --comms, --dsos, --symbols */
	const char *fields;	/* --fields */
	const char *uid;	/* -u: a user name or uid */
	char *uid_pids;		/* -u: its processes, as a -p list (malloc'd) */
	int count_filter;	/* --count-filter: rows with more samples only */
	int realtime;		/* --realtime: SCHED_FIFO priority */
	bool force;		/* -f: accepted (no file to check) */
	const char *vmlinux;	/* -k: read as a kallsyms file */
	bool ignore_vmlinux, demangle_kernel, no_bpf_event;
	int nr_thread_synth;	/* --num-thread-synthesize */
	unsigned proc_map_timeout;	/* --proc-map-timeout */
	bool hierarchy;		/* --hierarchy: one level per sort key (--stdio) */
	const char *switch_on, *switch_off;	/* --switch-on/--switch-off (evswitch) */
	bool show_on_off;	/* --show-on-off-events */
	const char *ignore_callees;	/* --ignore-callees: the regex */
	bool raw_trace;		/* --raw-trace: accepted (top has no trace key) */
	struct cli_widths col_widths;	/* -w/--column-widths (--stdio) */
	char **cgroups;		/* -G: the n-th name for the n-th event; one for all */
	bool all_cgroups;	/* --all-cgroups: CGROUP in samples, cgroup records */
	bool namespaces;	/* --namespaces: NAMESPACES records */
	bool group;		/* --group: every event in the first one's group */
	int group_sort_idx;	/* --group-sort-idx: the group's rows by this member */
};

struct top_event {
	struct perf_event_attr attr;
	char *name;
	struct tally_sample_layout layout;
	int leader;		/* index of its group's leader (its own: a leader or alone) */
	int nr_members;		/* on a leader: the group's size, its members after it */
	uint64_t interval_samples, interval_kernel;	/* being counted */
	uint64_t shown_samples, shown_kernel;		/* of the last finished interval */
};

struct top_rec {
	uint64_t time;
	size_t seq;		/* arrival order, ties keep it */
	size_t off;		/* into top.batch */
};

struct top {
	const struct top_opts *o;
	struct top_event *ev;
	size_t nr_ev;
	struct tally_cpumap *cpus;
	struct tally_threadmap *threads;
	bool system_wide;
	struct tally_sampler *sampler;	/* the fds and their rings */
	size_t ring_pages;
	unsigned freq;			/* -F, capped at the kernel's maximum */
	struct tally_session *session;
	struct tally_hists *hists;	/* one per event, decayed between refreshes */
	struct tally_hist_filter filter;
	struct evswitch sw;		/* --switch-on, --switch-off */
	int *cgroup_fds;		/* -G: each event's cgroup (-1: none) */
	/* one drain's worth of records, copied out of the rings and sorted by time */
	char *batch;
	size_t batch_len, batch_cap;
	struct top_rec *recs;
	size_t nr_recs, cap_recs;
	/* statistics */
	uint64_t lost, lost_interval, lost_shown;
	uint64_t total_samples;
	double interval_secs;		/* length of the last interval */
	/* view state */
	bool group_view;		/* perf's group view: a column per member ({a,b}, --group) */
	size_t cur;			/* event shown (a group's leader in the group view) */
	bool hide_kernel, hide_user;
	bool children;
	enum tally_hist_col keys[TALLY_HIST_NR_COLS];
	size_t nr_keys;
	enum tally_hist_col fields[TALLY_HIST_NR_COLS];	/* --fields, in order */
	size_t nr_fields;
};

#define TOP_MAX_COLS (TALLY_HIST_NR_COLS * 2)

/* The shown event's histogram. Its entries as last sorted (top__sort) come from
 * tally_hist__sorted: the table grows while samples arrive between sorts. */
static inline struct tally_hist *top__hist(const struct top *t)
{
	return tally_hists__hist(t->hists, t->cur);
}

/* The events shown as one row each: the shown event and, in the group view, its
 * group's members after it (1: the event alone). perf 6.1's top --hierarchy shows the
 * leader's columns only, so does tally's. */
static inline size_t top__nr_members(const struct top *t)
{
	return t->group_view && !t->o->hierarchy && t->ev[t->cur].nr_members > 1
		       ? (size_t)t->ev[t->cur].nr_members : 1;
}

/* top-sample.c */
/* Open events and rings and read what already runs; t is zeroed with keys set. */
int top__open(struct top *t, const struct top_opts *o);
void top__close(struct top *t);
/* Move everything the rings hold into the session and histograms. */
int top__drain(struct top *t);
/* At a refresh: the interval's counts become the ones the header shows. */
void top__end_interval(struct top *t);
/* Between refreshes: samples decay by 7/8 (or are zeroed with -z). */
void top__decay(struct top *t, bool zero);
/* Sort the shown event's entries for display (after top__drain); in the group view
 * its members are linked to it first (a column each). */
int top__sort(struct top *t);

/* top-stdio.c */
/* "   PerfTop:  N irqs/sec  kernel:x% ..." (no newline). --stdio cuts it to
 * TOP_HEADER_MAX characters, as perf does. */
#define TOP_HEADER_MAX 159
int top_header(const struct top *t, char *buf, size_t len);
/* What group member k's percentages are of (k 0: the shown event). */
uint64_t top_member_total(const struct top *t, size_t k);
/* Whether entry e is hidden by the kernel/user toggles or the percent limit. */
bool top_entry_hidden(const struct top *t, const struct tally_hist_entry *e);
/* One table row into buf (no newline); widths from top_widths(). */
struct top_widths {
	int comm, pid, dso, sym;
};
void top_widths(const struct top *t, size_t max_rows, struct top_widths *w);
/* The columns of a row: --fields' in their order, else Children (children mode),
 * Overhead, Samples (-n), Period (--show-total-period) and the sort keys. Fills cols
 * (TOP_MAX_COLS room), returns how many. */
size_t top_columns(const struct top *t, enum tally_hist_col *cols);
void top_format_row(const struct top *t, const struct tally_hist_entry *e,
		    const struct top_widths *w, char *buf, size_t len);
/* The callers of e as a call graph (caller first), to fp. */
int top_print_callers(const struct top *t, struct tally_hist_entry *e, FILE *fp);
/* One --stdio refresh: header, rule, table. */
int top_stdio_refresh(struct top *t, FILE *fp, bool clear);

/* top-hierarchy.c */
/* The table by report's printer (--hierarchy, --column-widths), at most ROWS lines,
 * each cut to WIDTH - 1 characters (WIDTH 0: not cut). 0 or -1. */
int top_print_report_table(const struct top *t, FILE *fp, size_t rows, size_t width);

/* top-tui.c */
struct top_tui;
int top_tui__new(struct top_tui **out);
void top_tui__delete(struct top_tui *ui);
/* Draw the current view. */
void top_tui__draw(struct top_tui *ui, struct top *t);
/* Handle pending keys; returns 1 to quit, 0 otherwise. */
int top_tui__keys(struct top_tui *ui, struct top *t);
/* Whether the user switched to zeroing instead of decay (z); false for NULL. */
bool top_tui__zero(const struct top_tui *ui);

#endif
