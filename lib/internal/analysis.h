/*
 * The analysis layer's insides (lib/analysis/): what its files share and what the unit
 * tests look at. The public face is tally/hist.h, tally/callchain.h, tally/sample-memo.h.
 */
#ifndef TALLY_INTERNAL_ANALYSIS_H
#define TALLY_INTERNAL_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/callchain.h>
#include <tally/hist.h>
#include <tally/sample-memo.h>

#include "internal/strpool.h"

/* ---- call-chain trees (callchain.c) ---- */

/* Bulk allocation of nodes: a report builds millions and frees them all at once. Nodes
 * and kids arrays have a block each in use (lane 0 and 1), so nodes stay 64-byte aligned;
 * blocks are fresh anonymous mappings (zero-filled) that grow as the report does. */
struct tly_cc_arena {
	struct tly_cc_block *blocks;
	char *cur[2];
	size_t left[2];
	size_t next_size;
};

void tly_cc_arena__exit(struct tly_cc_arena *a);
/* tally_cc_root__append with nodes from arena (NULL: malloc'd, as the public one). */
int tly_cc_append(struct tally_cc_node *root, struct tly_cc_arena *arena,
		  const struct tally_cc_frame *frames, size_t n, uint64_t period);
/* Decay a malloc'd tree's weights by 7/8 (or to 0); branches reaching 0 are freed. */
void tly_cc_decay(struct tally_cc_node *n, bool zero);

/*
 * A log of chains to append later (TALLY_TREES_DEFER): frames are interned to 32-bit
 * ids; records are 32-bit words in one growing mapping.
 */
struct tly_cc_log {
	/* the records (the rows side of a pipelined hists: tally_hists__pipeline_start) */
	uint32_t *w;
	size_t nr, cap;			/* words */
	struct tly_cc_log_rec {
		uint32_t off1;		/* word offset + 1 of a record (0: empty) */
		uint32_t hash;
	} *recs;			/* records by content, power of two */
	uint32_t recs_cap, nr_recs;
	/* the frames (the resolving side): a cache line of their own */
	_Alignas(64) struct tally_cc_frame *frames;	/* by id */
	uint32_t nr_frames, cap_frames;
	uint32_t *slots;		/* id + 1 by frame hash; 2 x cap_frames */
};

/* The id of a frame (equal in all four fields: equal id); -ENOMEM or 0. */
int tly_cc_log__intern(struct tly_cc_log *l, const struct tally_cc_frame *f, uint32_t *id);
/* n words at the end of the log, or NULL. */
uint32_t *tly_cc_log__append(struct tly_cc_log *l, size_t n);
/* The record of size words just appended: its words 2 and 3 are a period (low, high
 * 32 bits). If an equal record (in all other words) is in the log, the period is added
 * to it and this one dropped. *at: the word offset of the record that now holds the
 * period (stays valid until tly_cc_log__drop). 0 or -ENOMEM. */
int tly_cc_log__commit(struct tly_cc_log *l, size_t size, size_t *at);
/* Add period to the record at word offset at (from tly_cc_log__commit). */
static inline void tly_cc_log__add_period(struct tly_cc_log *l, size_t at, uint64_t period)
{
	uint32_t *o = l->w + at;
	uint64_t p = (o[2] | (uint64_t)o[3] << 32) + period;

	o[2] = (uint32_t)p;
	o[3] = (uint32_t)(p >> 32);
}
/* Give back words [from, to) (multiples of 1024): read once, never needed again. */
void tly_cc_log__drop(struct tly_cc_log *l, size_t from, size_t to);
void tly_cc_log__exit(struct tly_cc_log *l);

/* ---- interned strings (strpool.c) ---- */

/* The public pool is the library's one string pool (internal/strpool.h): its names
 * never move, so the pointers it hands out stay valid until it is freed. */
struct tally_strpool {
	struct tly_strpool ids;
};

/* Fold v into hash h (row keys, frame keys). */
static inline uint64_t tly_hash_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* FNV-1a of a string, as the pool hashes it (for keys compared across pools). */
uint64_t tly_str_hash(const char *s);

/* ---- one event's histogram (hist.c) ---- */

struct tally_hist {
	enum tally_hist_col keys[TALLY_HIST_NR_COLS];	/* sort keys, in order */
	size_t nr_keys;
	struct tally_hist_entry **table;	/* open addressing, power of two */
	uint64_t *hashes;		/* the entries' hashes beside them (0: empty slot) */
	size_t cap, nr;
	struct tally_hist_entry **sorted;	/* after a sort */
	size_t nr_sorted;
	struct tally_hist_entry **levels;	/* hierarchy: the rows above the entries
						 * (and their group members), owned */
	size_t nr_levels, cap_levels;
	struct tally_strpool *pool;	/* shared (not freed with the hist) */
	struct tally_hist_totals totals;
	bool trees;		/* entries carry call-chain trees */
	bool arena_trees;	/* their nodes are in an arena (freed with it) */
	bool caller;		/* chains are stored root first */
	bool no_depth_ties;	/* no trees kept (report -g none): perf's caller-above-callee
				 * tie break has no depths to compare */
	size_t nr_members;	/* group view: columns per value (1 = no group) */
	size_t group_sort_idx;	/* tally_hist__group_sort_idx (0: the leader) */
	/* the entries' memory: blocks of them, freed with the hist */
	struct tly_entry_block *blocks;
	size_t block_left;	/* entries not yet handed out in blocks */
};

int tly_hist__init(struct tally_hist *h, const enum tally_hist_col *keys, size_t nr_keys,
		   struct tally_strpool *pool);
void tly_hist__exit(struct tally_hist *h);
/* Find the entry matching tmpl on the sort keys, or insert a copy of tmpl (counters and
 * tree empty). tmpl's strings must be the pool's. NULL: out of memory. */
struct tally_hist_entry *tly_hist__findnew(struct tally_hist *h,
					   const struct tally_hist_entry *tmpl);
/* tly_rb_order on rows: v[0..n) put in the tree's in-order. 0 or -ENOMEM. */
int tly_rb_sort_rows(struct tally_hist_entry **v, size_t n,
		     bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx);
/* v[0..n), in the input trees' order, into perf's output tree's (hist-order.c), by the
 * values of order[] then the keys. 0: done; 1: not done here (group view, or a key
 * other than comm, pid, dso, sym, cpu); -ENOMEM. */
int tly_hist__out_order(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			const enum tally_hist_col *order, size_t nr_order);
/* The output tree's keys of v[0..n) (in creation order: v[j]->seq == j) made on a thread
 * of their own while the caller puts v in the input trees' order (NULL: not made). */
struct tly_out_prep;
struct tly_out_prep *tly_out_prep__start(const struct tally_hist *h, struct tally_hist_entry *const *v,
					 size_t n, const enum tally_hist_col *order, size_t nr_order);
/* tly_hist__out_order with those keys (op NULL or not made: 1, as for a key not done) */
int tly_out_prep__finish(struct tly_out_prep *op, struct tally_hist_entry **v, size_t n);
void tly_out_prep__delete(struct tly_out_prep *op);
/* An entry's value in an output column (children, samples, else the period). */
uint64_t tly_hist_entry__value(const struct tally_hist_entry *e, enum tally_hist_col c);
/* Insert 0..n) in order into a red-black tree (the kernel's, as perf uses it) where
 * goes_left(new, existing) sends a row left; perm[0..n): its in-order walk. */
int tly_rb_order(size_t n, bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx,
		 size_t *perm);
/* v[0..n), in insertion order, into the order of perf's input and collapsed trees by a
 * stable sort (hist-order.c). 0: done; 1: perf's comparator is not consistent on these
 * rows or keys (the trees must be emulated); -ENOMEM. */
int tly_hist__in_order(const struct tally_hist *h, struct tally_hist_entry **v, size_t n);
/* Decay (tally_hists__decay) one hist with malloc'd trees. */
int tly_hist__decay(struct tally_hist *h, bool zero);

/* ---- the sample memo (sample-memo.c) ---- */

/* One remembered sample; its chain and nr_words words of payload follow it. */
struct tly_memo_ent {
	uint64_t hash;
	uint64_t gen;		/* the session's generation when made */
	uint16_t nr_chain;
	uint8_t cpumode;
	uint8_t kernel;		/* the key has kernel addresses */
	int32_t pid, tid, cpu;
	uint16_t evidx;
	uint16_t pad;
	uint32_t nr_words;
	uint64_t ip;
	/* uint64_t chain[nr_chain]; uint64_t payload[nr_words]; */
};

struct tally_sample_memo {
	uint64_t *w;			/* entries, one after another */
	size_t nr, cap;			/* words */
	uint32_t *slots;		/* word offset + 1 of an entry, by hash (0: empty) */
	uint32_t nr_slots, cap_slots;
	uint64_t lookups, hits;
	uint64_t trial_hits;		/* hits before the current trial */
	size_t max_words;		/* budget */
	unsigned min_hit_pct;		/* hits it must have in each trial */
	bool off;			/* turned off: samples rarely repeat */
	uint32_t epoch;			/* + 1 each time every entry is forgotten */
};

#endif
