/*
 * perf 6.1's --stdio report table of a histogram: the columns, their headers and
 * widths, percent limits, group columns and each row's call graph. The histogram itself
 * (entries, sort keys, order) is the library's (tally/hist.h).
 */
#ifndef TALLY_CLI_HIST_H
#define TALLY_CLI_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tally/hist.h>

#include "callchain.h"

/* Value columns of the command only, past the library's (perf's
 * --show-cpu-utilization): the self period of kernel and of user samples. */
#define HIST_COL_SYS ((enum tally_hist_col)(TALLY_HIST_NR_COLS + 1))
#define HIST_COL_USR ((enum tally_hist_col)(TALLY_HIST_NR_COLS + 2))

struct hist_print_opts {
	const enum tally_hist_col *cols;	/* columns in output order */
	size_t nr_cols;
	bool children;
	bool overhead_is_self;		/* name the Overhead column "Self" (children mode) */
	bool header;			/* column headers (not -q) */
	bool elide[TALLY_HIST_NR_COLS];	/* columns hidden because a filter pins them */
	double percent_limit;
	bool relative;			/* --percentage relative */
	struct cc_print_opts cc;	/* mode CC_NONE: no call chains */
	const uint64_t *member_totals;	/* group view: total period of each member */
	const char *symbol_filter;	/* --symbol-filter: only symbols containing it (rows
					 * hidden, totals kept, as perf) */
	bool hierarchy;			/* perf's --hierarchy (tally_hist__sort_hierarchy) */
	const unsigned *user_widths;	/* --column-widths: column i's width (0: its own) */
	size_t nr_user_widths;
	bool socket_filter_on;		/* --socket-filter: only rows whose (first) cpu is */
	int32_t socket_filter;		/* on this socket */
	const int32_t *cpu_socket;	/* the socket of each cpu (NULL: none known) */
	size_t nr_cpu_socket;
	bool ns;			/* --ns: the time key in nanoseconds */
	bool exclude_other;		/* -x: rows without a parent hidden (as
					 * --symbol-filter's) */
	const char *sep;		/* -t/--field-separator: columns joined by it (NULL:
					 * aligned with two spaces) */
	bool dso_list;			/* -d/--dsos given: no 16-wide dso column for rows
					 * without a symbol (perf's rule, see hist_fprintf) */
};

/* The sorted entries of h (tally_hist__sort first) as perf's table. 0 or -ENOMEM. */
int hist_fprintf(struct tally_hist *h, FILE *fp, const struct hist_print_opts *o);

#endif
