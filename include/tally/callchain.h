/*
 * Call-chain trees: the chains of many samples merged into one tree of frames, each
 * node weighted by the periods of the chains through it (cumul) and ending at it (hits).
 * Histogram entries carry one (tally/hist.h); a program may build its own.
 *
 * The tree is a trie with one frame per node. perf keeps a radix tree whose nodes hold
 * runs of frames; a run ends exactly where some chain ended or two chains diverged,
 * which is where a trie node has hits or more than one kid, so perf's runs are the
 * chains of single-kid, hit-less nodes.
 */
#ifndef TALLY_CALLCHAIN_H
#define TALLY_CALLCHAIN_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_dso;
struct tally_symbol;

/* The frames of an inlined function (tally_addr_loc.inlined) have a symbol of their own
 * in rows and graphs (tally_hists), spanning the symbol they are inlined in and named
 * as perf prints them: "NAME (inlined)" ("NAME LINE (inlined)" in graphs keyed by
 * address or line). */
#define TALLY_INLINED_SUFFIX " (inlined)"
TALLY_API bool tally_symbol__is_inlined(const struct tally_symbol *s);
/* strcmp of the names of a and b without that suffix (perf compares inlined functions
 * by their names). */
TALLY_API int tally_symbol__name_cmp(const struct tally_symbol *a, const struct tally_symbol *b);

/* One frame. Frames are the same function when they have the same symbol (same dso_key
 * and start address; an inlined function's, the same symbol object), or, without a
 * symbol, the same dso_key and address (and the same dso object when dso_key is
 * NULL). */
struct tally_cc_frame {
	const char *dso_key;	/* interned dso name: dso objects may be per process */
	const struct tally_dso *dso;
	const struct tally_symbol *sym;
	uint64_t ip;		/* the address, shown for a frame without a symbol */
};

/* 64 bytes: a report with call graphs builds millions of these. Read kids with
 * tally_cc_node__kid(); the root's frame is unused. */
struct tally_cc_node {
	struct tally_cc_frame f;
	uint64_t hits;		/* period of the chains that ended here */
	uint64_t cumul;		/* period of the chains through here (hits included) */
	union {				/* private: use tally_cc_node__kid */
		struct tally_cc_node *one;	/* nr_kids == 1 */
		struct tally_cc_node **kids;	/* nr_kids >= 2 */
	};
	uint32_t nr_kids;
	uint32_t hint;		/* private: the kid matched last */
};

static inline struct tally_cc_node *tally_cc_node__kid(const struct tally_cc_node *n, uint32_t i)
{
	return n->nr_kids == 1 ? n->one : n->kids[i];
}

/* Are a and b the same function (see struct tally_cc_frame)? */
TALLY_API bool tally_cc_frame__same(const struct tally_cc_frame *a, const struct tally_cc_frame *b);
/* The frame as perf names it in a graph: the symbol, or the address in hex (in buf). */
TALLY_API const char *tally_cc_frame__name(const struct tally_cc_frame *f, char *buf, size_t len);

/* An empty tree (root is the caller's). */
TALLY_API void tally_cc_root__init(struct tally_cc_node *root);
/* Add one chain of n frames (frames[0] next to the root) with weight period. 0 or
 * -ENOMEM (the tree is still whole: some nodes of this chain may be missing). */
TALLY_API int tally_cc_root__append(struct tally_cc_node *root, const struct tally_cc_frame *frames,
				    size_t n, uint64_t period);
/* Free a tree built with tally_cc_root__append; root is left empty. */
TALLY_API void tally_cc_root__exit(struct tally_cc_node *root);

/* Depth-first walk, kids in the order they were first added. fn gets the path from the
 * root's first kid down to the node (path[depth - 1] is the node); a nonzero return
 * stops the walk and is returned. Paths deeper than 1024 frames are cut there. */
typedef int (*tally_cc_walk_fn)(void *arg, const struct tally_cc_node *const *path,
				size_t depth);
TALLY_API int tally_cc_root__walk(const struct tally_cc_node *root, tally_cc_walk_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
