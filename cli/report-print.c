/*
 * tally report's output: which columns and sort keys -s/-F/-n/--show-total-period and
 * the children mode give, and each event's section printed through the histogram
 * printer (headers, rows, call graphs) as perf 6.1's --stdio report.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tally/data.h>
#include <tally/format.h>
#include <tally/hist.h>
#include <tally/record.h>
#include <tally/session.h>

#include "cmd.h"
#include "report.h"
#include "script-trace.h"

/* -p: perf adds the parent key after the others (once). */
static void add_parent_key(struct report *r, enum tally_hist_col *keys, size_t *nr_keys,
			   enum tally_hist_col *cols, size_t *nr_cols)
{
	if (!r->o->parent)
		return;
	for (size_t i = 0; i < *nr_keys; i++)
		if (keys[i] == TALLY_HIST_PARENT)
			return;
	if (*nr_keys < TALLY_HIST_NR_COLS)
		keys[(*nr_keys)++] = TALLY_HIST_PARENT;
	if (!r->o->fields && *nr_cols < TALLY_HIST_NR_COLS * 2)
		cols[(*nr_cols)++] = TALLY_HIST_PARENT;
}

/* Columns and sort keys from -s / -F / -n and the children mode. */
int report__setup_columns(struct report *r, enum tally_hist_col *keys, size_t *nr_keys,
			  enum tally_hist_col *cols, size_t *nr_cols)
{
	const char *sort = r->o->sort ? r->o->sort : "comm,dso,sym";
	bool all_tp = r->nr_ev > 0;

	/* perf 6.1 sorts a file of tracepoints only by their fields by default */
	for (size_t i = 0; i < r->nr_ev; i++)
		all_tp &= tally_data__event(r->data, i)->attr.type == PERF_TYPE_TRACEPOINT;
	if (!r->o->sort && all_tp)
		sort = "trace";
	char **l;
	size_t n;

	*nr_keys = *nr_cols = 0;
	if (r->o->fields) {
		l = strlist_parse(r->o->fields, &n);
		if (!l)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			int c = tally_hist_col__parse(l[i]);

			if (c < 0) {
				cli_error("-F: unknown field '%s' (use overhead, overhead_children, "
					  "sample, period, comm, pid, tid, dso, sym, cpu, trace, "
					  "parent)", l[i]);
				strlist_free(l);
				return -EINVAL;
			}
			if (*nr_cols < TALLY_HIST_NR_COLS * 2)
				cols[(*nr_cols)++] = (enum tally_hist_col)c;
			if (tally_hist_col__is_key((enum tally_hist_col)c) && !r->o->sort && *nr_keys < TALLY_HIST_NR_COLS)
				keys[(*nr_keys)++] = (enum tally_hist_col)c;
		}
		strlist_free(l);
		if (!r->o->sort) {
			add_parent_key(r, keys, nr_keys, cols, nr_cols);
			return 0;
		}
	}
	l = strlist_parse(sort, &n);
	if (!l)
		return -ENOMEM;
	if (!r->o->fields) {
		if (r->children)
			cols[(*nr_cols)++] = TALLY_HIST_CHILDREN;
		cols[(*nr_cols)++] = TALLY_HIST_OVERHEAD;
		if (r->o->show_cpu_util) {	/* perf: the split of the self period */
			cols[(*nr_cols)++] = HIST_COL_SYS;
			cols[(*nr_cols)++] = HIST_COL_USR;
		}
		if (r->o->show_nr_samples)
			cols[(*nr_cols)++] = TALLY_HIST_SAMPLES;
		if (r->o->show_total_period)
			cols[(*nr_cols)++] = TALLY_HIST_PERIOD;
	}
	for (size_t i = 0; i < n; i++) {
		int c = tally_hist_col__parse(l[i]);

		if (c < 0 || !tally_hist_col__is_key((enum tally_hist_col)c)) {
			cli_error("--sort: unknown key '%s' (use comm, pid, tid, dso, sym, cpu, "
				  "trace, srcline, srcfile, parent)", l[i]);
			strlist_free(l);
			return -EINVAL;
		}
		if (*nr_keys < TALLY_HIST_NR_COLS)
			keys[(*nr_keys)++] = (enum tally_hist_col)c;
		if (!r->o->fields && *nr_cols < TALLY_HIST_NR_COLS * 2)
			cols[(*nr_cols)++] = (enum tally_hist_col)c;
	}
	strlist_free(l);
	add_parent_key(r, keys, nr_keys, cols, nr_cols);
	return 0;
}

static unsigned long convert_unit(unsigned long v, char *unit)
{
	*unit = ' ';
	if (v > 1000) {
		v /= 1000;
		*unit = 'K';
	}
	if (v > 1000) {
		v /= 1000;
		*unit = 'M';
	}
	if (v > 1000) {
		v /= 1000;
		*unit = 'G';
	}
	return v;
}

/* A filter of a single comm, dso or symbol: perf names it above the report and leaves
 * its column out (not its level with --hierarchy). */
static void elide_filtered(const struct report *r, struct hist_print_opts *po)
{
	po->elide[TALLY_HIST_COMM] = strlist_len(r->o->filter.comms) == 1;
	po->elide[TALLY_HIST_DSO] = strlist_len(r->o->filter.dsos) == 1;
	po->elide[TALLY_HIST_SYM] = strlist_len(r->o->filter.syms) == 1;
	if (po->elide[TALLY_HIST_COMM])
		printf("# comm: %s\n", r->o->filter.comms[0]);
	if (po->elide[TALLY_HIST_DSO])
		printf("# dso: %s\n", r->o->filter.dsos[0]);
	if (po->elide[TALLY_HIST_SYM])
		printf("# symbol: %s\n", r->o->filter.syms[0]);
	if (r->o->hierarchy)
		memset(po->elide, 0, sizeof(po->elide));
}

/* "# Samples: 4K of event 'E'", the event count, the socket filtered on. */
static void section_header(const struct report *r, uint64_t nr, size_t nm, const char *name,
			   uint64_t period)
{
	char unit;
	unsigned long n = convert_unit((unsigned long)nr, &unit);

	printf("# Samples: %lu%c of event%s '%s'", n, unit, nm > 1 ? "s" : "", name);
	if (r->o->time)	/* perf names the slice */
		printf(" (time slices: %s)", r->o->time);
	putchar('\n');
	printf("# Event count (approx.): %" PRIu64 "\n", period);
	if (r->o->socket_filter >= 0)
		printf("# Processor Socket: %d\n", r->o->socket_filter);
	printf("#\n");
}

int report__print(struct report *r, const enum tally_hist_col *cols, size_t nr_cols)
{
	struct hist_print_opts po = {
		.cols = cols,
		.nr_cols = nr_cols,
		.children = r->children_cols,
		.overhead_is_self = r->children && !r->o->fields,
		.header = !r->o->quiet,
		.percent_limit = r->o->percent_limit,
		.symbol_filter = r->o->symbol_filter,
		.exclude_other = r->o->exclude_other,
		.ns = r->o->ns,
		.socket_filter_on = r->o->socket_filter >= 0,
		.socket_filter = r->o->socket_filter,
		.cpu_socket = r->cpu_socket,
		.nr_cpu_socket = r->nr_cpu_socket,
		.hierarchy = r->o->hierarchy,
		.user_widths = r->o->col_widths.w,
		.nr_user_widths = r->o->col_widths.nr,
		.sep = r->o->field_sep,
		.dso_list = r->o->filter.dsos != NULL,
		.relative = r->o->relative,
		.cc = {
			.mode = r->use_chains ? r->o->cc_mode : CC_NONE,
			.min_percent = r->o->cc_min_percent,
			.print_limit = r->o->cc_print_limit,
			.by_line = r->o->cc_key == TALLY_CC_KEY_SRCLINE,
			.by_function = r->o->cc_key == TALLY_CC_KEY_FUNCTION,
			.skip_first = !r->o->fields && r->o->sort && !strncmp(r->o->sort, "sym", 3),
		},
	};
	int err = 0;

	elide_filtered(r, &po);
	if (!r->o->quiet)
		printf("#\n# Total Lost Samples: %" PRIu64 "\n#\n", r->lost_samples);
	for (size_t i = 0; i < r->nr_ev; i++) {
		struct tally_hist *h = tally_hists__hist(r->hists, i);
		const struct tally_data_event *ev = tally_data__event(r->data, i);
		uint64_t nr = 0, nr_all = 0, period = 0, totals[64];
		size_t nm = 1;
		char name[1024];

		if (r->group_view && ev->leader != (int)i)
			continue;	/* a group member: printed in its leader's section */
		if (r->group_view && ev->nr_members > 1)
			nm = (size_t)ev->nr_members < 64 && i + (size_t)ev->nr_members <= r->nr_ev
				     ? (size_t)ev->nr_members : 1;
		snprintf(name, sizeof(name), "%s", ev->name ? ev->name : "unknown");
		if (nm > 1) {
			size_t off = (size_t)snprintf(name, sizeof(name), "anon group {");

			for (size_t k = 0; k < nm && off < sizeof(name); k++) {
				const struct tally_data_event *m = tally_data__event(r->data, i + k);

				off += (size_t)snprintf(name + off, sizeof(name) - off, "%s %s",
							k ? "," : "", m->name ? m->name : "unknown");
			}
			if (off < sizeof(name))
				snprintf(name + off, sizeof(name) - off, " }");
		}
		for (size_t k = 0; k < nm; k++) {
			struct tally_hist *m = tally_hists__hist(r->hists, i + k);
			const struct tally_hist_totals *t = tally_hist__totals(m);

			nr += r->o->relative ? t->nr_filtered : t->nr_samples;
			nr_all += t->nr_samples;
			totals[k] = r->o->relative ? t->filtered_period : t->period;
			period += totals[k];
			if (k && tally_hist__link_member(h, m, k, nm))
				return -ENOMEM;
		}
		if (!nr_all && r->o->skip_empty)	/* perf: of all samples, filtered or not */
			continue;
		po.member_totals = totals;
		if (nm > 1 && r->o->group_sort_idx > 0)
			tally_hist__group_sort_idx(h, (size_t)r->o->group_sort_idx);
		if (r->o->hierarchy ? tally_hist__sort_hierarchy(h)
		    : r->nr_order ? tally_hist__sort_by(h, r->order, r->nr_order)
				  : tally_hist__sort(h, r->children_cols))
			return -ENOMEM;
		if (tally_hists__finish(r->hists))	/* the trees, built meanwhile */
			return -ENOMEM;
		if (!r->o->quiet)
			section_header(r, nr, nm, name, period);
		err = hist_fprintf(h, stdout, &po);
		if (err)
			return err;
		printf("\n\n");
	}
	if (!r->o->quiet)
		printf("#\n# (Tip: Sort by the call chain root with --children and -g caller)\n#\n");
	return 0;
}
