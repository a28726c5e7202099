/*
 * Histograms: samples aggregated into entries by sort keys (comm, pid, dso, sym, cpu),
 * with self and children ("cumulative") periods and a call-chain tree per entry, sorted
 * the way perf 6.1 sorts its report. What `tally report` and `tally top` print is made
 * here; so can annotate, diff, flame graphs or an exporter of another program.
 *
 *   tally_hists__new(&hs, session, nr_events, &opts);
 *   for each record, in time order (tally_data__for_each with TALLY_DATA_ORDERED):
 *       side-band -> tally_session__process(session, hdr);
 *       sample    -> tally_hists__add_sample(hs, evidx, &sample, period);
 *   tally_hists__finish(hs);
 *   h = tally_hists__hist(hs, evidx); tally_hist__sort(h, children);
 *   entries = tally_hist__sorted(h, &nr);   (heaviest first; entries[i]->chain: the tree)
 *
 * Entries live in an open-addressing hash keyed by the selected sort keys only, so
 * `--sort dso` merges every symbol of a dso into one row. Strings (comms, dso names)
 * are interned: hists that share a tally_strpool compare entries by pointer.
 */
#ifndef TALLY_HIST_H
#define TALLY_HIST_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tally/callchain.h>
#include <tally/session.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_cpumap;
struct tally_dso;
struct tally_sample;
struct tally_session;
struct tally_symbol;
struct tally_thread;

/* Columns of perf's report: value columns first, then the sort keys. */
enum tally_hist_col {
	TALLY_HIST_OVERHEAD,	/* self period percent (Overhead / Self) */
	TALLY_HIST_CHILDREN,	/* children period percent */
	TALLY_HIST_SAMPLES,	/* self sample count */
	TALLY_HIST_PERIOD,	/* self period */
	TALLY_HIST_COMM,
	TALLY_HIST_PID,		/* the thread (perf's Pid:Command) */
	TALLY_HIST_DSO,
	TALLY_HIST_SYM,
	TALLY_HIST_CPU,
	TALLY_HIST_TRACE,	/* a tracepoint sample's fields as its format prints them
				 * (perf's "Trace output") */
	TALLY_HIST_SRCLINE,	/* the sample's source line, "file:line" (perf's srcline) */
	TALLY_HIST_SRCFILE,	/* its source file (perf's srcfile) */
	TALLY_HIST_PARENT,	/* the first function of the sample's chain, in the chain's
				 * order, whose name matches the parent pattern (perf's
				 * parent, "[other]" when none) */
	TALLY_HIST_TIME,	/* the sample's time, rounded down to the time quantum
				 * (perf's time key) */
	TALLY_HIST_NR_COLS
};

static inline bool tally_hist_col__is_key(enum tally_hist_col c)
{
	return c >= TALLY_HIST_COMM && c < TALLY_HIST_NR_COLS;
}

/* perf's name of a sort key or -F field ("overhead", "overhead_children", "sample",
 * "period", "comm", "pid", "tid", "dso", "sym", "symbol", "cpu", "trace", "srcline",
 * "srcfile", "parent", "time"); -1 if unknown. */
TALLY_API int tally_hist_col__parse(const char *name);

/* Interned strings: equal strings, equal pointers. */
struct tally_strpool;
TALLY_API struct tally_strpool *tally_strpool__new(void);
TALLY_API void tally_strpool__delete(struct tally_strpool *p);
/* The pool's copy of s (NULL: out of memory). */
TALLY_API const char *tally_strpool__intern(struct tally_strpool *p, const char *s);

/* One row. Read-only for callers: the hists own it. */
struct tally_hist_entry {
	const char *comm;	/* interned: the thread's comm at the first sample */
	const struct tally_thread *thread;	/* the pid column prints its latest comm */
	int32_t pid, tid, cpu;	/* cpu -1: the sample had none */
	const struct tally_dso *dso;	/* NULL: [unknown] */
	const char *dso_name;		/* name shown (perf's short name) */
	const char *dso_key;		/* interned short name: rows merge by it, as in perf */
	const struct tally_symbol *sym;	/* NULL: unresolved, show ip */
	uint64_t ip;		/* the address (dso-relative for a self row inside a map) */
	const char *trace;	/* interned trace output of a tracepoint sample; NULL: N/A */
	/* interned, with the srcline/srcfile keys only (else NULL): the source line as
	 * perf prints it ("file:line"; without DWARF "sym+OFFSET" in decimal, "dso[addr]"
	 * without a symbol, "??:0" outside any map) and the file ("" when unknown) */
	const char *srcline, *srcfile;
	/* interned, with the parent key only: the parent function's name (NULL: none,
	 * perf's "[other]") */
	const char *parent;
	uint64_t time;		/* with the time key only: the first sample's time rounded
				 * down to the quantum (ns) */
	char level;		/* perf's cpumode letter: '.', 'k', 'g', 'u', 'H' */
	uint8_t depth;		/* hierarchy view (tally_hist__sort_hierarchy): the key this
				 * row is of (0: the first); a row above the last key sums the
				 * rows under it and carries the other keys of the first of
				 * them, as perf's */

	uint64_t period, nr_samples;		/* self */
	uint64_t period_acc, nr_samples_acc;	/* self + callees (children mode) */
	/* the self period by the samples' cpumode: kernel, user, guest kernel, guest user
	 * (perf's --show-cpu-utilization) */
	uint64_t period_sys, period_us, period_guest_sys, period_guest_us;
	struct tally_cc_node chain;	/* the chains through this row (trees on) */
	uint32_t max_depth;	/* longest chain added (perf's caller-above-callee tie break) */
	/* group view: the same row in the other members' hists ([0] unused; NULL: none) */
	struct tally_hist_entry **members;
	/* private */
	uint64_t hash;
	uint32_t id;
	uint32_t seq;		/* creation order: the order perf inserts it into its input tree */
};

/* One event's histogram, and the set of them a file's samples go to. */
struct tally_hist;
struct tally_hists;

struct tally_hist_totals {
	uint64_t period, nr_samples;		/* every sample of the event */
	uint64_t filtered_period, nr_filtered;	/* the samples the filter kept */
};

TALLY_API const struct tally_hist_totals *tally_hist__totals(const struct tally_hist *h);
TALLY_API size_t tally_hist__nr_entries(const struct tally_hist *h);
/* Does h keep call-chain trees in its entries? */
TALLY_API bool tally_hist__has_trees(const struct tally_hist *h);

/* Sort entries for output: by children period (children) then self period, heaviest
 * first, ties broken as perf breaks them. 0 or -ENOMEM. When the caller may run on more
 * than one CPU (tally_cpumap__nr_usable) the sort of a large table may run part of its work on a thread of its own, started
 * and joined within the call (h must not change meanwhile; the result is the same). */
TALLY_API int tally_hist__sort(struct tally_hist *h, bool children);
/* Sort by these value columns in order (heaviest first), then the sort keys (-F). */
TALLY_API int tally_hist__sort_by(struct tally_hist *h, const enum tally_hist_col *order,
				  size_t nr);
/* perf's --hierarchy: a row per distinct value of the first key, under each a row per
 * distinct value of the second key among its entries, and so on down to the entries
 * themselves (depth nr_keys - 1); siblings ordered as perf orders them (self period,
 * then the keys, ties as its trees break them). tally_hist__sorted gives the rows
 * depth first, each followed by the rows under it. Call after tally_hist__link_member
 * for a group. 0 or -ENOMEM. */
TALLY_API int tally_hist__sort_hierarchy(struct tally_hist *h);
/* The entries in the order of the last sort (*nr of them: entries added since are not
 * there), valid until the next sort, add or decay. */
TALLY_API struct tally_hist_entry *const *tally_hist__sorted(const struct tally_hist *h,
							     size_t *nr);
/* The entry of h with like's sort keys, or NULL (like may be from another hist that
 * shares h's strpool). */
TALLY_API struct tally_hist_entry *tally_hist__find(struct tally_hist *h,
						    const struct tally_hist_entry *like);

/* Group view: link every entry of member (index idx >= 1 of nr in the group) into
 * leader's entries' members[idx], adding empty leader rows for keys only the member
 * has. Call for each member before sorting the leader. 0 or -ENOMEM. */
TALLY_API int tally_hist__link_member(struct tally_hist *leader, struct tally_hist *member,
				      size_t idx, size_t nr);
/* Undo tally_hist__link_member: every row of leader forgets its members and
 * tally_hist__nr_members is 1 again (NULL: nothing to do). The rows the linking added
 * for keys only a member had stay, empty (0 periods: tally_hists__decay drops them).
 * Call it before a member hist decays or is deleted apart from its leader, and before
 * linking a group again (live views: every refresh, as members gain rows);
 * tally_hists__decay drops the links of the hists it decays itself. */
TALLY_API void tally_hist__unlink_members(struct tally_hist *leader);
/* perf's --group-sort-idx: rows of a group sort by member idx's value first, then the
 * other members' after the leader (not the leader's); idx 0 or not a member: by the
 * leader's, as usual. */
TALLY_API void tally_hist__group_sort_idx(struct tally_hist *h, size_t idx);
/* Members per row (1 unless linked). */
TALLY_API size_t tally_hist__nr_members(const struct tally_hist *h);

/* Which samples count in entries (all NULL / 0: every sample). Samples the filter drops
 * still count in the totals' period and nr_samples, except for cpus: samples of other
 * cpus are dropped before anything counts them (perf does the same). */
struct tally_hist_filter {
	const char *const *comms;	/* NULL-terminated lists */
	const char *const *dsos;	/* short or long name */
	const char *const *syms;
	const pid_t *pids;
	size_t nr_pids;
	const pid_t *tids;
	size_t nr_tids;
	const struct tally_cpumap *cpus;
	bool hide_unresolved;		/* perf's -U: samples whose ip has no symbol count
					 * nowhere, not even in the totals */
	uint64_t time_start, time_end;	/* perf's --time: only samples with start <= time
					 * <= end count at all (0: no bound) */
};

/* What makes two call-chain frames one node (perf's -g function/address/srcline). */
enum tally_cc_key {
	TALLY_CC_KEY_FUNCTION,	/* the function */
	TALLY_CC_KEY_ADDRESS,	/* the address: frames are named "sym file:line", or
				 * "sym +OFFSET" without a source line */
	TALLY_CC_KEY_SRCLINE,	/* the source line ("sym file:line"), the function where
				 * there is none */
};

/* The filter's questions, for programs that filter samples themselves (perf script's
 * --cpu, --comms, --pid, --tid, --dsos, --symbols): does f keep a sample of these cpus,
 * of this thread (comm: its thread's name; asked before resolving it), at this
 * resolved location (dso by short or long name, symbol by name)? f NULL keeps all. */
TALLY_API bool tally_hist_filter__keeps_cpu(const struct tally_hist_filter *f,
					    const struct tally_sample *smp);
/* --time: is the sample's time within f's span (or f has none)? */
TALLY_API bool tally_hist_filter__keeps_time(const struct tally_hist_filter *f,
					     const struct tally_sample *smp);
/* -U: does f keep a sample of session s (its ip resolved to a symbol, or f does not
 * ask)? */
TALLY_API bool tally_hist_filter__keeps_resolved(const struct tally_hist_filter *f,
						 struct tally_session *s,
						 const struct tally_sample *smp);
TALLY_API bool tally_hist_filter__keeps_thread(const struct tally_hist_filter *f,
					       const struct tally_sample *smp, const char *comm);
TALLY_API bool tally_hist_filter__keeps_loc(const struct tally_hist_filter *f,
					    const struct tally_addr_loc *loc);

enum tally_hist_trees {
	TALLY_TREES_NONE,	/* no call-chain trees */
	TALLY_TREES_BUILD,	/* every sample's chain goes into its entries' trees */
	TALLY_TREES_DEFER,	/* chains are logged and only entries at least
				 * tree_min_percent of the total get trees, at finish:
				 * much less memory on big files, the same trees where
				 * a graph prints branches */
};

struct tally_hists_opts {
	const enum tally_hist_col *keys;	/* sort keys, in order (default comm,dso,sym) */
	size_t nr_keys;
	bool callchains;	/* resolve call chains (children and trees need them) */
	bool children;		/* every function on a chain gets the period in period_acc */
	bool caller;		/* trees root first (caller order); else callee first */
	enum tally_hist_trees trees;
	double tree_min_percent;	/* TALLY_TREES_DEFER's threshold */
	bool relative;		/* ... of the filtered total instead of the total */
	unsigned max_stack;	/* frames kept per chain (perf's --max-stack): the innermost
				 * ones, or the outermost with caller (0: all; for none,
				 * leave callchains off) */
	bool decay;		/* tally_hists__decay will be used (live views): trees are
				 * built node by node so they can shrink, no sample memo */
	enum tally_cc_key cc_key;	/* frames of the trees */
	bool full_source_path;	/* source lines name the whole path, not the file's base */
	const char *kernel_name;	/* dso_name of the kernel's rows (NULL: its short
					 * name, "[kernel.kallsyms]") */
	const struct tally_hist_filter *filter;	/* NULL: every sample */
	/* The parent key's pattern, a POSIX extended regex matched against the names of the
	 * chain's functions (perf's -p; NULL: perf's default, "^sys_|^do_page_fault"). A
	 * pattern regcomp refuses makes tally_hists__new fail with -EINVAL. */
	const char *parent_pattern;
	bool exclude_other;	/* perf's -x: samples without a parent (all of them when
				 * the parent is not a key) count in the totals' period
				 * and nr_samples only, not in the filtered ones; their
				 * rows (parent NULL) are there, for the printer to hide */
	/* perf's --ignore-callees, a POSIX extended regex (NULL: none): the last function
	 * of the chain, in its order (o.caller), whose name matches takes the sample as its
	 * self row, and the frames before it in that order leave the chain. A pattern
	 * regcomp refuses makes tally_hists__new fail with -EINVAL. */
	const char *ignore_callees;
	uint64_t time_quantum;	/* the time key's quantum in ns (0: perf's 100 ms) */
	struct tally_strpool *pool;	/* shared by several hists (NULL: one of its own) */
	/* The TALLY_HIST_TRACE key's text of a sample of event evidx (perf formats the
	 * tracepoint's fields, which needs the file's formats: the caller's business), in
	 * a malloc'd string the hists take; NULL: N/A. Unset: every row N/A. Samples with
	 * this key are not memoized (each has its own fields). */
	char *(*trace_text)(void *arg, size_t evidx, const struct tally_sample *smp);
	void *trace_arg;
};

/* A histogram per event (evidx 0 .. nr_events - 1) of samples resolved in session.
 * opts: NULL for the defaults. 0 or -errno (-EINVAL for bad keys). */
TALLY_API int tally_hists__new(struct tally_hists **out, struct tally_session *session,
			       size_t nr_events, const struct tally_hists_opts *opts);
TALLY_API void tally_hists__delete(struct tally_hists *hs);
TALLY_API struct tally_hist *tally_hists__hist(struct tally_hists *hs, size_t evidx);

/* Add a sample of event evidx weighing period (tally_sample__period()). Resolves its ip
 * and chain in the session, which must have seen every side-band record before it.
 * Equal samples (same thread, cpu where it is a key, ip and chain) are resolved once
 * while the session's generation says their answer holds. 0 or -ENOMEM. */
TALLY_API int tally_hists__add_sample(struct tally_hists *hs, size_t evidx,
				      const struct tally_sample *smp, uint64_t period);
/* Add samples on two threads from here on: tally_hists__add_sample resolves each
 * sample on the caller's thread (in order with the session's side-band records, as
 * always) and a thread of the hists adds it to the rows, children and chain log
 * meanwhile. Not with opts.decay or trees built per sample (TALLY_TREES_BUILD), nor
 * with one CPU usable (tally_cpumap__nr_usable): then samples are added on the
 * caller's thread as before. Until tally_hists__pipeline_end, read nothing of the
 * hists (rows, totals) and call no function on them but tally_hists__add_sample;
 * tally_hists__finish, tally_hists__finish_start and tally_hists__delete end the
 * pipeline themselves. A failure of the thread's (-ENOMEM) comes back from a later
 * tally_hists__add_sample or from tally_hists__pipeline_end. 1: the thread runs, 0:
 * samples are added here, -ENOMEM, -EINVAL (hs NULL). */
TALLY_API int tally_hists__pipeline_start(struct tally_hists *hs);
/* Wait for the thread of tally_hists__pipeline_start to add every sample given, and
 * end it. 0 (also without one), or the first error of the thread's (-ENOMEM; -EINVAL:
 * hs NULL). */
TALLY_API int tally_hists__pipeline_end(struct tally_hists *hs);
/* After the last sample: build deferred trees. 0 or -ENOMEM (-EINVAL: hs NULL). Once
 * done, a call does nothing; it waits for tally_hists__finish_start's thread. */
TALLY_API int tally_hists__finish(struct tally_hists *hs);
/* tally_hists__finish begun on a thread of its own when that pays (a large deferred log,
 * more than one CPU usable: tally_cpumap__nr_usable), else done here. Meanwhile only
 * tally_hist__sort and tally_hist__sort_by may be called (they read no trees); call
 * tally_hists__finish before anything else, such as printing call graphs (the
 * trees). 0 or -ENOMEM (of the work done here; a thread's error comes from
 * tally_hists__finish). */
TALLY_API int tally_hists__finish_start(struct tally_hists *hs);

/* Age every hist (live views between refreshes): periods and counts * 7/8, or 0 when
 * zero; entries and branches that reach 0 go. Groups are unlinked (link them again
 * before the next sort) and tally_hist__group_sort_idx is reset. Needs opts.decay.
 * 0 or -ENOMEM. */
TALLY_API int tally_hists__decay(struct tally_hists *hs, bool zero);

#ifdef __cplusplus
}
#endif
#endif
