/*
 * Call-chain trees for report: one tree per histogram entry, built from the frames of
 * every sample that landed in the entry, printed the way perf 6.1 prints them
 * (graph / fractal / flat / folded, thresholds, caller or callee order).
 *
 * The tree is a trie with one frame per node. perf keeps a radix tree whose nodes hold
 * runs of frames; a run ends exactly where some chain ended or two chains diverged,
 * which is where a trie node has own hits or more than one child, so the printer
 * recovers perf's runs by walking single-child, hit-less nodes.
 */
#ifndef TALLY_CLI_CALLCHAIN_H
#define TALLY_CLI_CALLCHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct tally_dso;
struct tally_symbol;

/* One resolved frame. Frames are the same function when they have the same symbol (dso
 * and start address), or, without a symbol, the same dso and address. */
struct cc_frame {
	const char *dso_key;	/* interned dso long name (dso objects may be per process) */
	const struct tally_dso *dso;
	const struct tally_symbol *sym;
	uint64_t ip;		/* address printed for an unresolved frame */
};

/* Bulk allocation of nodes: a report builds millions and frees them all at once. Nodes
 * and kids arrays have a block each in use (lane 0 and 1), so nodes stay 64-byte aligned;
 * blocks are fresh anonymous mappings (zero-filled) that grow as the report does. */
struct cc_arena {
	struct cc_block *blocks;
	char *cur[2];
	size_t left[2];
	size_t next_size;
};

void cc_arena_free(struct cc_arena *a);

/* 64 bytes: a report with call graphs builds millions of these. One kid is held
 * directly (most nodes have at most one); more are in an array of nr_kids rounded up to
 * a power of two, which grows when nr_kids reaches one. Use cc_kid() to read them. */
struct cc_node {
	struct cc_frame f;
	uint64_t hits;		/* chains that ended here */
	uint64_t cumul;		/* hits of this node and everything below */
	union {
		struct cc_node *one;	/* nr_kids == 1 */
		struct cc_node **kids;	/* nr_kids >= 2 */
	};
	uint32_t nr_kids;
	uint32_t hint;		/* index of the kid matched last: chains repeat */
};

static inline struct cc_node *cc_kid(const struct cc_node *n, uint32_t i)
{
	return n->nr_kids == 1 ? n->one : n->kids[i];
}

enum cc_mode { CC_NONE, CC_GRAPH, CC_FRACTAL, CC_FLAT, CC_FOLDED };

/* A fresh root (its frame is unused). */
void cc_root_init(struct cc_node *root);
/* Free everything under a tree built without an arena (root itself is caller-owned).
 * Trees built in an arena are freed with it: just cc_root_init their roots. */
void cc_root_free(struct cc_node *root);
/* Add one chain of n frames (frames[0] first from the root) with weight period; new
 * nodes come from arena (NULL: malloc each node and kids array). */
int cc_append(struct cc_node *root, struct cc_arena *arena, const struct cc_frame *frames,
	      size_t n, uint64_t period);

/*
 * A log of chains to append later: report defers its trees to the end of the file,
 * when the totals show which entries can print a branch at all (most of a system-wide
 * file's entries cannot, and their trees would be most of the nodes). Frames are
 * interned to 32-bit ids; records are 32-bit words in one growing mapping.
 */
struct cc_log {
	uint32_t *w;
	size_t nr, cap;			/* words */
	struct cc_frame *frames;	/* by id */
	uint32_t nr_frames, cap_frames;
	uint32_t *slots;		/* id + 1 by frame hash; 2 x cap_frames */
	struct cc_log_rec {
		uint32_t off1;		/* word offset + 1 of a record (0: empty) */
		uint32_t hash;
	} *recs;			/* records by content, power of two */
	uint32_t recs_cap, nr_recs;
};

/* The id of a frame (equal in all four fields: equal id); -ENOMEM or 0. */
int cc_log__intern(struct cc_log *l, const struct cc_frame *f, uint32_t *id);
/* n words at the end of the log, or NULL. */
uint32_t *cc_log__append(struct cc_log *l, size_t n);
/* The record of size words just appended: its words 2 and 3 are a period (low, high
 * 32 bits). If an equal record (in all other words) is in the log, the period is added
 * to it and this one dropped. *at: the word offset of the record that now holds the
 * period (stays valid until cc_log__release). 0 or -ENOMEM. */
int cc_log__commit(struct cc_log *l, size_t size, size_t *at);
/* Add period to the record at word offset at (from cc_log__commit). */
static inline void cc_log__add_period(struct cc_log *l, size_t at, uint64_t period)
{
	uint32_t *o = l->w + at;
	uint64_t p = (o[2] | (uint64_t)o[3] << 32) + period;

	o[2] = (uint32_t)p;
	o[3] = (uint32_t)(p >> 32);
}
/* Drop words [from, to) (multiples of 1024): read once, never needed again. */
void cc_log__release(struct cc_log *l, size_t from, size_t to);
void cc_log__exit(struct cc_log *l);

struct cc_print_opts {
	enum cc_mode mode;
	double min_percent;	/* hide branches below this percent (default 0.5) */
	uint64_t total;		/* total period of the report (graph percentages) */
	uint64_t parent;	/* the entry's period (self, or children with --children) */
	bool skip_first;	/* --sort sym: the first frame repeats the entry's symbol */
	unsigned print_limit;	/* at most this many chains (0 = all) */
};

/* Print the tree under root; returns nonzero on allocation failure. */
int cc_print(FILE *fp, struct cc_node *root, const struct cc_print_opts *o);

/* Name of a frame as perf prints it in a graph: the symbol or the address in hex. */
const char *cc_frame_name(const struct cc_frame *f, char *buf, size_t len);

#endif
