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

/* Bulk allocation of nodes: a report builds millions and frees them all at once. */
struct cc_arena {
	struct cc_block *blocks;
	char *cur;
	size_t left;
};

void cc_arena_free(struct cc_arena *a);

struct cc_node {
	struct cc_arena *arena;	/* root only: allocate from it (NULL: malloc each node) */
	struct cc_frame f;
	uint64_t hits;		/* chains that ended here */
	uint64_t cumul;		/* hits of this node and everything below */
	uint64_t count;		/* number of chains through here */
	struct cc_node **kids;
	uint32_t nr_kids, cap_kids;
	uint32_t hint;		/* index of the kid matched last: chains repeat */
};

enum cc_mode { CC_NONE, CC_GRAPH, CC_FRACTAL, CC_FLAT, CC_FOLDED };

/* A fresh root (its frame is unused). */
void cc_root_init(struct cc_node *root);
/* Free everything under root (root itself is caller-owned; arena nodes stay until
 * cc_arena_free). */
void cc_root_free(struct cc_node *root);
/* Add one chain of n frames (frames[0] first from the root) with weight period. */
int cc_append(struct cc_node *root, const struct cc_frame *frames, size_t n, uint64_t period);

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
