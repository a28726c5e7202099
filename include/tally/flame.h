/*
 * Flame-graph folding: call stacks with weights folded into a tree, one node per
 * distinct path of frames from the root, each with the weight and the number of the
 * stacks through it.
 *
 * A flame graph draws this tree: the root at the bottom, a frame's callees on top of
 * it, each frame as wide as its weight. A differential graph (FlameGraph's difffolded)
 * folds two profiles into one tree, series 0 (the old) and 1 (the new), so each node
 * knows both weights. Frames are told apart by name and kind (the same function name
 * as user and as kernel code are two frames); siblings come out in name order, as
 * FlameGraph sorts them. The tree also writes FlameGraph's folded text
 * (stackcollapse's "a;b;c 12" lines), which every flame-graph tool reads.
 */
#ifndef TALLY_FLAME_H
#define TALLY_FLAME_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tally/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Node kinds beyond the frame kinds of enum tally_frame_kind (session.h): a process's
 * name (the first frame above the root, as FlameGraph's stackcollapse puts it) and the
 * root ("all"). */
enum {
	TALLY_FLAME_PROCESS = TALLY_FRAME_NR_KINDS,
	TALLY_FLAME_ROOT,
	TALLY_FLAME_NR_KINDS
};

/* One frame of a stack to fold: NULL name is "[unknown]". */
struct tally_flame_frame {
	const char *name;
	unsigned kind;		/* enum tally_frame_kind or TALLY_FLAME_PROCESS */
};

struct tally_flame;

TALLY_API int tally_flame__new(struct tally_flame **out);
TALLY_API void tally_flame__delete(struct tally_flame *f);

/* Fold one stack into series (0, or 1 for the new profile of a differential graph):
 * frames[0] is the innermost (the sampled function), frames[nr - 1] the outermost,
 * which sits on the root. Every node on the path gains weight in its value and one in
 * its samples. The names are copied. *leaf (may be NULL) gets the innermost node's id,
 * for __add_to. 0, -EINVAL (series > 1, kind out of range), -ENOMEM. */
TALLY_API int tally_flame__add(struct tally_flame *f, unsigned series,
			       const struct tally_flame_frame *frames, size_t nr, uint64_t weight,
			       uint32_t *leaf);
/* Fold a stack again that __add gave node as its leaf (callers that remember what a
 * sample folded to skip the names). 0, or -EINVAL for an unknown node or series. */
TALLY_API int tally_flame__add_to(struct tally_flame *f, unsigned series, uint32_t node,
				  uint64_t weight);

/* A node as the walk shows it. */
struct tally_flame_node {
	uint32_t id;
	uint32_t parent;	/* the root's is its own id (0) */
	unsigned depth;		/* the root: 0 */
	const char *name;	/* "all" for the root */
	unsigned kind;		/* enum tally_frame_kind, TALLY_FLAME_PROCESS or _ROOT */
	uint64_t value[2];	/* summed weights per series */
	uint64_t samples[2];	/* stacks through it per series */
	uint32_t nr_children;
};

TALLY_API size_t tally_flame__nr_nodes(const struct tally_flame *f);
/* The root's value and samples of a series: the totals of what was folded. */
TALLY_API uint64_t tally_flame__total(const struct tally_flame *f, unsigned series);
TALLY_API uint64_t tally_flame__total_samples(const struct tally_flame *f, unsigned series);

/* Every node in depth-first preorder (the root first, then each child's subtree),
 * children by name (byte order), then kind. fn returns 0 to go on; nonzero stops the
 * walk and is returned. -ENOMEM when the order cannot be built. */
typedef int (*tally_flame_fn)(void *arg, const struct tally_flame_node *n);
TALLY_API int tally_flame__walk(struct tally_flame *f, tally_flame_fn fn, void *arg);

enum {
	TALLY_FLAME_FOLDED_PERIOD = 1 << 0,	/* weights, not sample counts */
	TALLY_FLAME_FOLDED_KINDS = 1 << 1,	/* stackcollapse-perf --all's suffixes:
						 * _[k] kernel, _[i] inlined, _[j] JIT */
	TALLY_FLAME_FOLDED_DIFF = 1 << 2,	/* difffolded's "stack old new" lines */
};
/* FlameGraph's folded text of one series (series 1 also gives the new column of
 * _DIFF): "process;outer;...;inner COUNT" per distinct stack that ends in a node of
 * its own, lines sorted by byte order, as stackcollapse-perf prints them. In names ';'
 * becomes ':' and in process names ' ' becomes '_' (stackcollapse's rules). 0 or
 * -errno (-EIO: fp failed). */
TALLY_API int tally_flame__write_folded(struct tally_flame *f, unsigned series, unsigned flags,
					FILE *fp);

#ifdef __cplusplus
}
#endif
#endif
