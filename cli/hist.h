/*
 * Histograms for report: samples aggregated into entries by sort keys (comm, pid,
 * dso, sym, cpu), with self and children ("cumulative") periods and a call-chain tree
 * per entry, then sorted and printed as perf 6.1's --stdio table.
 *
 * Entries live in an open-addressing hash keyed by the selected sort keys only, so
 * `--sort dso` merges every symbol of a dso into one row.
 */
#ifndef TALLY_CLI_HIST_H
#define TALLY_CLI_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "callchain.h"

struct tally_dso;
struct tally_symbol;
struct tally_thread;

/* Columns: the first ones are value columns, the rest are sort keys. */
enum hist_col {
	HC_OVERHEAD,		/* self period percent (Overhead / Self) */
	HC_CHILDREN,		/* children period percent */
	HC_SAMPLE,		/* -n: self sample count */
	HC_PERIOD,		/* self period */
	HC_COMM,
	HC_PID,			/* Pid:Command (perf's thread column) */
	HC_DSO,
	HC_SYM,
	HC_CPU,
	HC_TRACE,		/* a tracepoint sample's formatted fields (perf's "Trace output") */
	HC_NR
};

static inline bool hist_col_is_key(enum hist_col c)
{
	return c >= HC_COMM;
}

/* Parse a sort key or -F field name; returns -1 if unknown. */
int hist_col_parse(const char *name);

/* Interned strings: equal strings, equal pointers (comms, dso names). */
struct strpool {
	char **v;
	size_t cap, nr;
};

const char *strpool__intern(struct strpool *p, const char *s);
void strpool__exit(struct strpool *p);

struct hist_entry {
	const char *comm;	/* interned: the comm at sample time (comm key) */
	const struct tally_thread *thread;	/* pid key prints its latest comm, like perf */
	int32_t pid, tid, cpu;
	const struct tally_dso *dso;	/* NULL: [unknown] */
	const char *dso_name;		/* short name */
	const char *dso_key;		/* interned short name: rows merge by it, as in perf */
	const struct tally_symbol *sym; /* NULL: print ip */
	uint64_t ip;
	const char *trace;	/* interned "Trace output" of a tracepoint sample; NULL: N/A */
	char level;		/* '.', 'k', 'g', 'u', 'H' */

	uint64_t period, nr_samples;		/* self */
	uint64_t period_acc, nr_samples_acc;	/* self + callees (children mode) */
	struct cc_node chain;
	uint32_t max_depth;	/* longest chain appended (perf's caller-above-callee tie break) */
	/* group view: the same row in the other members' hists ([0] unused; NULL: none) */
	struct hist_entry **members;
	uint64_t hash;
	uint32_t id;		/* for the user (report: index of deferred trees); 0 on insert */
	uint32_t seq;		/* creation order: the order perf inserts it into its input tree */
};

struct hists {
	enum hist_col keys[HC_NR];	/* sort keys, in order */
	size_t nr_keys;
	struct hist_entry **table;	/* open addressing, power of two */
	uint64_t *hashes;		/* the entries' hashes beside them (0: empty slot) */
	size_t cap, nr;
	struct hist_entry **sorted;	/* after hists__sort */
	struct strpool *pool;	/* shared by all hists of a report, or own_pool */
	struct strpool own_pool;
	uint64_t total_period, nr_samples;		/* all samples of the event */
	uint64_t filtered_period, nr_filtered_samples;	/* samples kept by filters */
	bool callchains;	/* entries carry call-chain trees */
	struct cc_arena *arena;	/* their nodes come from here (NULL: malloc'd, freed by exit) */
	bool caller;		/* chains are stored root first */
	bool no_depth_ties;	/* chains not kept (report -g none): perf's caller-above-callee
				 * tie break has no depths to compare */
	size_t nr_members;	/* group view: columns per value (1 = no group) */
};

/* Group view: link every entry of member (index idx >= 1 of nr in the group) into
 * leader, creating empty leader rows for keys only the member has. Both hists must share
 * a strpool. Call before hists__sort(leader). */
int hists__link_member(struct hists *leader, struct hists *member, size_t idx, size_t nr);

/* Entries keyed by keys; strings interned in a pool of its own. */
int hists__init(struct hists *h, const enum hist_col *keys, size_t nr_keys);
/* Same, with a pool shared by several hists (their entries can then be compared). */
int hists__init_shared(struct hists *h, const enum hist_col *keys, size_t nr_keys,
		       struct strpool *pool);
void hists__exit(struct hists *h);

/* Intern a comm string (never NULL on success). */
const char *hists__comm(struct hists *h, const char *comm);

/* Find the entry matching tmpl on the sort keys, or insert a copy of tmpl (counters zero).
 * A tmpl with a dso but no dso_key gets the dso's short name as key. */
struct hist_entry *hists__findnew(struct hists *h, const struct hist_entry *tmpl);

/* Sort entries for output: by children period (children mode) then self period,
 * heaviest first, ties by sort keys. */
int hists__sort(struct hists *h, bool children);
/* Sort by these value columns in order (heaviest first), then the sort keys (-F order). */
int hists__sort_by(struct hists *h, const enum hist_col *order, size_t nr_order);

struct hists_print_opts {
	const enum hist_col *cols;	/* columns in output order */
	size_t nr_cols;
	bool children;
	bool overhead_is_self;		/* name the Overhead column "Self" (children mode) */
	bool header;			/* column headers (not -q) */
	bool elide[HC_NR];		/* columns hidden because a filter pins them */
	double percent_limit;
	bool relative;			/* --percentage relative */
	struct cc_print_opts cc;	/* mode CC_NONE: no call chains */
	const char *field_sep;		/* -t */
	const uint64_t *member_totals;	/* group view: total period of each member */
};

int hists__fprintf(struct hists *h, FILE *fp, const struct hists_print_opts *o);

#endif
