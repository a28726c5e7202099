/*
 * tally top --hierarchy --stdio: the table as perf top prints it with --hierarchy, one
 * level per sort key, each sorted by overhead and indented 3 columns deeper. The levels
 * are the library's (tally_hist__sort_hierarchy, called by top__sort) and the lines are
 * report's (hist_fprintf, as perf top and perf report share one printer); top cuts them
 * to the rows it shows.
 */
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "top.h"

int top_print_hierarchy(const struct top *t, FILE *fp, size_t rows)
{
	enum tally_hist_col cols[TOP_MAX_COLS];
	struct hist_print_opts ho = {
		.cols = cols,
		.nr_cols = top_columns(t, cols),
		.children = t->children,
		.percent_limit = t->o->percent_limit,
		.relative = t->o->relative,
		.hierarchy = true,
		.cc = { .mode = t->o->callgraph ? CC_GRAPH : CC_NONE, .min_percent = 0.5 },
	};
	char *text = NULL, *p;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int err;

	if (!m)
		return -1;
	err = hist_fprintf(top__hist(t), m, &ho);
	if (fclose(m) || err) {
		free(text);
		return -1;
	}
	p = text;
	for (size_t n = 0; n < rows && *p; n++)
		p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');
	fwrite(text, 1, (size_t)(p - text), fp);
	free(text);
	return 0;
}
