/*
 * tally top --stdio with --hierarchy or --column-widths: the table as perf top prints it
 * then. --hierarchy: one level per sort key, each sorted by overhead and indented 3
 * columns deeper; the levels are the library's (tally_hist__sort_hierarchy, called by
 * top__sort). --column-widths: each column at its given width, keys cut to it. The lines
 * are report's (hist_fprintf, as perf top and perf report share one printer); top cuts
 * them to the rows it shows.
 */
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "top.h"

int top_print_report_table(const struct top *t, FILE *fp, size_t rows, size_t width)
{
	enum tally_hist_col cols[TOP_MAX_COLS];
	struct hist_print_opts ho = {
		.cols = cols,
		.nr_cols = top_columns(t, cols),
		.children = t->children,
		.percent_limit = t->o->percent_limit,
		.relative = t->o->relative,
		.hierarchy = t->o->hierarchy,
		.user_widths = t->o->col_widths.w,
		.nr_user_widths = t->o->col_widths.nr,
		.dso_list = t->o->filter.dsos != NULL,
		.cc = { .mode = t->o->callgraph ? CC_GRAPH : CC_NONE, .min_percent = 0.5 },
	};
	size_t nm = top__nr_members(t);
	uint64_t *totals = malloc(nm * sizeof(*totals));
	char *text = NULL, *p;
	size_t len = 0;
	FILE *m;
	int err;

	if (!totals)
		return -1;
	for (size_t k = 0; k < nm; k++)
		totals[k] = top_member_total(t, k);
	ho.member_totals = totals;
	m = open_memstream(&text, &len);
	if (!m) {
		free(totals);
		return -1;
	}
	err = hist_fprintf(top__hist(t), m, &ho);
	free(totals);
	if (fclose(m) || err) {
		free(text);
		return -1;
	}
	p = text;
	for (size_t n = 0; n < rows && *p; n++) {
		size_t l = strcspn(p, "\n");

		/* the rows cut as perf cuts them (call graph lines are not) */
		fwrite(p, 1, width && l >= width && !t->o->callgraph ? width - 1 : l, fp);
		fputc('\n', fp);
		p += l + (p[l] == '\n');
	}
	free(text);
	return 0;
}
