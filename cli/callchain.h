/*
 * perf 6.1's --stdio renderings of call-chain trees (graph, fractal, flat, folded),
 * shared by report and top. The trees are the library's (tally/callchain.h).
 */
#ifndef TALLY_CLI_CALLCHAIN_H
#define TALLY_CLI_CALLCHAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tally/callchain.h>

enum cc_mode { CC_NONE, CC_GRAPH, CC_FRACTAL, CC_FLAT, CC_FOLDED };

struct cc_print_opts {
	enum cc_mode mode;
	double min_percent;	/* hide branches below this percent (default 0.5) */
	uint64_t total;		/* total period of the report (graph percentages) */
	uint64_t hit_total;	/* what min_percent is a share of (0: total); perf's
				 * --percentage relative: the samples the filters kept */
	uint64_t parent;	/* the entry's period (self, or children with --children) */
	bool skip_first;	/* --sort sym: the first frame repeats the entry's symbol */
	unsigned print_limit;	/* at most this many chains (0 = all) */
	bool by_line;		/* -g srcline: frames named "sym file:line" (tie order) */
	bool by_function;	/* -g function (the default): frames are functions */
};

/* Print the tree under root; returns nonzero on allocation failure. */
int cc_print(FILE *fp, struct tally_cc_node *root, const struct cc_print_opts *o);

struct fmt_buf;

/* cc_print's text appended to b (fmt.h; b->oom when it ran out of memory). */
int cc_print_buf(struct fmt_buf *b, struct tally_cc_node *root, const struct cc_print_opts *o);

#endif
