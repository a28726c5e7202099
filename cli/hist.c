/*
 * perf 6.1's --stdio report table of a histogram (tally/hist.h): column names and
 * widths, the "# " header and dotted rule, "[.]"/"[k]" symbol levels, group columns,
 * and each row's call graph.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tally/session.h>

#include "fmt.h"
#include "hist.h"

static const char *sym_name(const struct tally_hist_entry *e)
{
	return e->sym && e->sym->name ? e->sym->name : NULL;
}

/* Rows far apart in memory, read in the sorted order: their lines asked for ahead, in
 * three steps (the row, its symbol, the symbol's name), each from a row whose pointer
 * the step before brought in. Without it, a large report's passes over its rows wait
 * for memory at every row. */
#define AHEAD 8

static inline void prefetch_rows(struct tally_hist_entry *const *v, size_t k, size_t n)
{
	const struct tally_hist_entry *e;

	if (k + 3 * AHEAD < n) {	/* a row is some 280 bytes: its keys, values, tree root */
		const char *r = (const char *)v[k + 3 * AHEAD];

		for (size_t off = 0; off < sizeof(*e); off += 64)
			__builtin_prefetch(r + off);
	}
	if (k + 2 * AHEAD < n && (e = v[k + 2 * AHEAD])->sym)
		__builtin_prefetch(e->sym);
	if (k + AHEAD < n && (e = v[k + AHEAD])->sym && e->sym->name)
		__builtin_prefetch(e->sym->name);
}

static const struct tally_hist_entry *member(const struct tally_hist_entry *e, size_t k)
{
	return k == 0 ? e : e->members ? e->members[k] : NULL;
}

/* Headers aligned right; perf's "    Pid:Command" carries its own indent and is left
 * aligned like the other key columns. */
static bool col_right(enum tally_hist_col c)
{
	return c <= TALLY_HIST_PERIOD || c == TALLY_HIST_CPU || c > TALLY_HIST_NR_COLS;
}

/* HIST_COL_SYS, HIST_COL_USR: is c one, and its period of e */
static bool cpu_util_col(enum tally_hist_col c)
{
	return c == HIST_COL_SYS || c == HIST_COL_USR;
}

static uint64_t cpu_util_period(const struct tally_hist_entry *e, enum tally_hist_col c)
{
	return !e ? 0 : c == HIST_COL_SYS ? e->period_sys : e->period_us;
}

static const char *col_header(enum tally_hist_col c, bool self)
{
	if (cpu_util_col(c))
		return c == HIST_COL_SYS ? "sys" : "usr";
	switch (c) {
	case TALLY_HIST_OVERHEAD:
		return self ? "Self" : "Overhead";
	case TALLY_HIST_CHILDREN:
		return "Children";
	case TALLY_HIST_SAMPLES:
		return "Samples";
	case TALLY_HIST_PERIOD:
		return "Period";
	case TALLY_HIST_COMM:
		return "Command";
	case TALLY_HIST_PID:
		return "    Pid:Command";
	case TALLY_HIST_DSO:
		return "Shared Object";
	case TALLY_HIST_SYM:
		return "Symbol";
	case TALLY_HIST_CPU:
		return "CPU";
	case TALLY_HIST_TRACE:
		return "Trace output";
	case TALLY_HIST_SRCLINE:
		return "Source:Line";
	case TALLY_HIST_SRCFILE:
		return "Source File";
	case TALLY_HIST_PARENT:
		return "Parent symbol";
	case TALLY_HIST_TIME:
		return "Time";
	default:
		return "";
	}
}

static size_t col_min_width(enum tally_hist_col c)
{
	if (cpu_util_col(c))
		return 8;
	switch (c) {
	case TALLY_HIST_OVERHEAD:
	case TALLY_HIST_CHILDREN:
		return 8;
	case TALLY_HIST_SAMPLES:
	case TALLY_HIST_PERIOD:
		return 12;
	default:
		return 0;
	}
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static const char *thread_comm(const struct tally_hist_entry *e)
{
	const char *c = e->thread ? tally_thread__comm(e->thread) : NULL;

	return c ? c : e->comm;
}

/* The group's cells of a value column, side by side; at a --column-widths width u
 * (0: none) each member's is u wide, as a single value's (print_user_cell). */
static void print_value_cell(struct fmt_buf *fp, size_t nr_members, const struct tally_hist_entry *e,
			     enum tally_hist_col c, const struct hist_print_opts *o, uint64_t total,
			     size_t u)
{
	int wp = u ? (int)u - 2 : 7, wn = u ? (int)u - 1 : 12;

	for (size_t k = 0; k < nr_members; k++) {
		const struct tally_hist_entry *m = member(e, k);
		uint64_t t = k == 0 ? total : o->member_totals ? o->member_totals[k] : 0;

		if (u)
			fb_putc(fp, ' ');
		if (cpu_util_col(c)) {
			fb_pct(fp, pct(cpu_util_period(m, c), t), wp);
			continue;
		}
		switch (c) {
		case TALLY_HIST_OVERHEAD:
			fb_pct(fp, pct(m ? m->period : 0, t), wp);
			break;
		case TALLY_HIST_CHILDREN:
			fb_pct(fp, pct(m ? m->period_acc : 0, t), wp);
			break;
		case TALLY_HIST_SAMPLES:
			fb_u64_pad(fp, m ? m->nr_samples : 0, wn);
			break;
		case TALLY_HIST_PERIOD:
			fb_u64_pad(fp, m ? m->period : 0, wn);
			break;
		default:
			break;
		}
	}
}

/* The time key's text: seconds and microseconds, or nanoseconds when the column is 16
 * wide (--ns). */
static void time_text(char *buf, size_t len, uint64_t t, int w)
{
	if (w >= 16)
		snprintf(buf, len, "%" PRIu64 ".%09" PRIu64, t / UINT64_C(1000000000), t % UINT64_C(1000000000));
	else
		snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, t / UINT64_C(1000000000),
			 t % UINT64_C(1000000000) / 1000);
}

/* A cell at width w, as perf prints it (inlined in the table's rows: print_cell). */
static inline __attribute__((always_inline)) void cell(struct fmt_buf *fp,
							const struct tally_hist_entry *e,
							enum tally_hist_col c, int w, uint64_t total,
							bool last)
{
	if (cpu_util_col(c)) {
		fb_pct(fp, pct(cpu_util_period(e, c), total), w - 1);
		return;
	}
	switch (c) {
	case TALLY_HIST_OVERHEAD:	/* perf's " %*.2f%%": a space even past 999% */
		fb_putc(fp, ' ');
		fb_pct(fp, pct(e->period, total), w - 2);
		break;
	case TALLY_HIST_CHILDREN:
		fb_putc(fp, ' ');
		fb_pct(fp, pct(e->period_acc, total), w - 2);
		break;
	case TALLY_HIST_SAMPLES:
		fb_u64_pad(fp, e->nr_samples, w);
		break;
	case TALLY_HIST_PERIOD:
		fb_u64_pad(fp, e->period, w);
		break;
	case TALLY_HIST_COMM:
		/* as perf: the width comes from the threads' current comms (cell_len), so
		 * an entry's older comm ("perf-exec" before the exec) is cut to it */
		fb_str_left(fp, e->comm, (size_t)w, (size_t)w);
		break;
	case TALLY_HIST_PID:
		fb_printf(fp, "%7d:%-*s", e->tid, w - 8, thread_comm(e));
		break;
	case TALLY_HIST_DSO:
		fb_str_left(fp, e->dso_name, (size_t)w, 0);
		break;
	case TALLY_HIST_SYM: {
		const char lv[4] = { '[', e->level, ']', ' ' };
		int n = 4;

		fb_put(fp, lv, 4);
		if (sym_name(e)) {
			size_t len = strlen(sym_name(e));

			fb_put(fp, sym_name(e), len);
			n += (int)len;
		} else {
			n += (int)fb_addr16(fp, e->ip);	/* "%-#.16" PRIx64 */
		}
		if (!last && n < w)
			fb_spaces(fp, (size_t)(w - n));
		break;
	}
	case TALLY_HIST_CPU:
		fb_printf(fp, "%*.*d", w, 3, e->cpu);
		break;
	case TALLY_HIST_TRACE:	/* the last column is not padded, as perf's; the text cut to
				 * the width (see lazy_uncounted) */
		fb_str_left(fp, e->trace ? e->trace : "N/A", last ? 0 : (size_t)w,
			    w > 0 ? (size_t)w : 0);
		break;
	case TALLY_HIST_SRCLINE:	/* as perf: not padded when last, cut to the width */
		fb_str_left(fp, e->srcline ? e->srcline : "", last ? 0 : (size_t)w,
			    w > 0 ? (size_t)w : 0);
		break;
	case TALLY_HIST_SRCFILE:
		fb_str_left(fp, e->srcfile ? e->srcfile : "", last ? 0 : (size_t)w, 0);
		break;
	case TALLY_HIST_PARENT:	/* padded also when last, as perf */
		fb_str_left(fp, e->parent ? e->parent : "[other]", (size_t)w, 0);
		break;
	case TALLY_HIST_TIME: {	/* seconds.microseconds (--ns: nanoseconds), not padded last */
		char t[48];

		time_text(t, sizeof(t), e->time, w);
		fb_str_left(fp, t, last ? 0 : (size_t)w, 0);
		break;
	}
	default:
		break;
	}
}

static void print_cell(struct fmt_buf *fp, const struct tally_hist_entry *e, enum tally_hist_col c, int w,
		       uint64_t total, bool last)
{
	cell(fp, e, c, w, total, last);
}

static size_t cell_len(const struct tally_hist_entry *e, enum tally_hist_col c)
{
	switch (c) {
	case TALLY_HIST_COMM:
		return strlen(thread_comm(e));
	case TALLY_HIST_PID:
		return 8 + strlen(thread_comm(e));
	case TALLY_HIST_DSO:
		return strlen(e->dso_name);
	case TALLY_HIST_SYM:
		return 4 + (sym_name(e) ? strlen(sym_name(e)) : 18);
	case TALLY_HIST_CPU:
		return 3;	/* perf's column is 3 wide whatever the entries (-001, 1000) */
	case TALLY_HIST_TRACE:
		return e->trace ? strlen(e->trace) : 3;
	case TALLY_HIST_SRCLINE:
		return e->srcline ? strlen(e->srcline) : 0;
	case TALLY_HIST_SRCFILE:
		return e->srcfile ? strlen(e->srcfile) : 0;
	case TALLY_HIST_PARENT:
		return e->parent ? strlen(e->parent) : 7;
	case TALLY_HIST_TIME:
		return 0;	/* perf's column is 12 wide (16 with --ns): hist_fprintf */
	default:
		return 0;
	}
}

/* --symbol-filter: perf hides the rows whose symbol does not contain the string (and
 * those without a symbol); they take no part in the column widths either. */
/* --socket-filter: is e's row of another socket (perf: its first sample's cpu's)? */
static bool other_socket(const struct tally_hist_entry *e, const struct hist_print_opts *o)
{
	int32_t sock = -1;

	if (!o->socket_filter_on)
		return false;
	if (e->cpu >= 0 && o->cpu_socket && (size_t)e->cpu < o->nr_cpu_socket)
		sock = o->cpu_socket[e->cpu];
	return sock != o->socket_filter;
}

static inline bool filtered_out(const struct tally_hist_entry *e, const struct hist_print_opts *o)
{
	if (other_socket(e, o))
		return true;
	if (o->exclude_other && !e->parent)
		return true;	/* -x: perf hides the rows without a parent the same way */
	return o->symbol_filter && (!sym_name(e) || !strstr(sym_name(e), o->symbol_filter));
}

/* -t: a cell as perf 6.1 prints it with a field separator: values at their narrowest
 * behind one space, keys as without it but with the separator's first character made a
 * '.', every cell but the last padded to its column's width. */
static void print_cell_sep(struct fmt_buf *fp, size_t nr_members, const struct tally_hist_entry *e,
			   enum tally_hist_col c, const struct hist_print_opts *o, uint64_t total,
			   size_t width, bool last)
{
	size_t at = fp->len, len;

	if (!tally_hist_col__is_key(c)) {
		for (size_t k = 0; k < nr_members; k++) {
			const struct tally_hist_entry *m = member(e, k);
			uint64_t t = k == 0 ? total : o->member_totals ? o->member_totals[k] : 0;

			fb_putc(fp, ' ');
			if (cpu_util_col(c)) {
				fb_pct(fp, pct(cpu_util_period(m, c), t), 0);
				continue;
			}
			switch (c) {
			case TALLY_HIST_OVERHEAD:
				fb_pct(fp, pct(m ? m->period : 0, t), 0);
				break;
			case TALLY_HIST_CHILDREN:
				fb_pct(fp, pct(m ? m->period_acc : 0, t), 0);
				break;
			case TALLY_HIST_SAMPLES:
				fb_u64_pad(fp, m ? m->nr_samples : 0, 0);
				break;
			default:
				fb_u64_pad(fp, m ? m->period : 0, 0);
				break;
			}
		}
	} else {
		print_cell(fp, e, c, (int)width, total, last);
	}
	if (fp->oom)
		return;
	len = fp->len - at;
	if (tally_hist_col__is_key(c))
		for (char *t = fp->p + at; (t = memchr(t, o->sep[0], (size_t)(fp->p + fp->len - t))); t++)
			*t = '.';
	if (!last && len < width)
		fb_spaces(fp, width - len);
}

/* "# " and the column names, then (without a separator) the dotted rule and "#". */
static void print_header(FILE *fp, const enum tally_hist_col *cols, const size_t *widths,
			 size_t nr, const struct hist_print_opts *o)
{
	fputs("# ", fp);
	for (size_t i = 0; i < nr; i++) {
		const char *hd = col_header(cols[i], o->overhead_is_self);

		if (i)
			fputs(o->sep ? o->sep : "  ", fp);
		if (col_right(cols[i]))
			fprintf(fp, "%*s", (int)widths[i], hd);
		else	/* perf cuts a key's header to its column */
			fprintf(fp, "%-*.*s", (int)widths[i], (int)widths[i], hd);
	}
	if (o->sep) {	/* perf: no rule under the names with a separator */
		fputc('\n', fp);
		return;
	}
	fputs("\n# ", fp);
	for (size_t i = 0; i < nr; i++) {
		if (i)
			fputs("  ", fp);
		for (size_t j = 0; j < widths[i]; j++)
			fputc('.', fp);
	}
	fputs("\n#\n", fp);
}

/* A key's cell in the hierarchy view: as in the table, without its leading spaces,
 * padded only where perf's own format pads it (comm, dso, pid, parent). */
static void hierarchy_key(struct fmt_buf *fp, const struct tally_hist_entry *e,
			  enum tally_hist_col c, size_t width)
{
	size_t at = fp->len, lead;

	print_cell(fp, e, c, (int)width, 0, true);
	if (fp->oom)
		return;
	lead = strspn(fp->p + at, " ");
	memmove(fp->p + at, fp->p + at + lead, fp->len - at - lead + 1);
	fp->len -= lead;
}

static void spaces(FILE *fp, size_t n, char c)
{
	while (n--)
		fputc(c, fp);
}

/* A hierarchy row hidden by -x or --symbol-filter, as perf 6.1 hides them: -x by the
 * parent the row has (a row above the entries has its first entry's); the symbol filter
 * hides the rows above the symbol's level and those at or below it whose symbol does
 * not match. sym_depth: the symbol key's level (-1: not a key). */
static bool hier_filtered(const struct tally_hist_entry *e, const struct hist_print_opts *o,
			  int sym_depth)
{
	if ((o->exclude_other && !e->parent) || other_socket(e, o))
		return true;
	if (!o->symbol_filter)
		return false;
	return sym_depth < 0 || e->depth < sym_depth || !sym_name(e) ||
	       !strstr(sym_name(e), o->symbol_filter);
}

/* Is e shown (percent limit, -x, --symbol-filter)? */
static bool shown(const struct tally_hist_entry *e, const struct hist_print_opts *o,
		  uint64_t total, int sym_depth)
{
	if (hier_filtered(e, o, sym_depth))
		return false;
	return !(o->percent_limit > 0 && pct(e->period, total) < o->percent_limit);
}

/* What the hierarchy's header and rows need beside the columns. */
struct hier_layout {
	size_t values;		/* width of the value columns, with their gaps */
	size_t rule;		/* dots under the keys' names */
	size_t indent;		/* 3 per level below the first */
	int sym_depth;		/* the symbol key's level (-1: none) */
};

static void hier_layout(struct hier_layout *l, const enum tally_hist_col *cols,
			const size_t *widths, size_t nr, size_t nr_keys)
{
	size_t hlen = 0;

	*l = (struct hier_layout){ .indent = nr_keys ? (nr_keys - 1) * 3 : 0, .sym_depth = -1 };
	for (size_t i = 0, d = 0; i < nr; i++) {
		const char *hd = col_header(cols[i], false);

		if (!tally_hist_col__is_key(cols[i])) {
			l->values += (l->values ? 2 : 0) + widths[i];
			continue;
		}
		if (cols[i] == TALLY_HIST_SYM)
			l->sym_depth = (int)d;
		hlen += (d ? 3 : 0) + strlen(hd + strspn(hd, " "));
		if (d * 3 + widths[i] > l->rule)
			l->rule = d * 3 + widths[i];
		d++;
	}
	if (hlen > l->rule)
		l->rule = hlen;
}

/* The value columns' names, then the keys' joined by " / "; the rule under them. */
static void hier_header(FILE *fp, const struct hist_print_opts *o, const enum tally_hist_col *cols,
			const size_t *widths, size_t nr, const struct hier_layout *l)
{
	bool first = true;

	fputs("# ", fp);
	spaces(fp, l->indent, ' ');
	for (size_t i = 0; i < nr; i++)
		if (!tally_hist_col__is_key(cols[i]))
			fprintf(fp, "%*s  ", (int)widths[i], col_header(cols[i], o->overhead_is_self));
	for (size_t i = 0; i < nr; i++) {
		const char *hd = col_header(cols[i], false);

		if (!tally_hist_col__is_key(cols[i]))
			continue;
		fprintf(fp, "%s%s", first ? "" : " / ", hd + strspn(hd, " "));
		first = false;
	}
	fputs("\n# ", fp);
	spaces(fp, l->indent, '.');
	first = true;
	for (size_t i = 0; i < nr; i++) {
		if (tally_hist_col__is_key(cols[i]))
			continue;
		if (!first)
			fputs("..", fp);
		first = false;
		spaces(fp, widths[i], '.');
	}
	fputs("  ", fp);
	spaces(fp, l->rule, '.');
	fputs("\n#\n", fp);
}

/* One row: its values indented by its level, then its own key. */
static int hier_row(FILE *fp, struct tally_hist *h, const struct tally_hist_entry *e,
		    const struct hist_print_opts *o, const enum tally_hist_col *cols,
		    const size_t *widths, size_t nr, const struct hier_layout *l, uint64_t total,
		    struct fmt_buf *line)
{
	size_t nr_members = tally_hist__nr_members(h), key = nr;

	for (size_t i = 0, kd = 0; i < nr && key == nr; i++)	/* this row's key */
		if (tally_hist_col__is_key(cols[i]) && kd++ == e->depth)
			key = i;
	if (key == nr)
		return 0;
	fb_spaces(line, 2 + e->depth * 3u);
	for (size_t i = 0; i < nr; i++) {
		if (tally_hist_col__is_key(cols[i]))
			continue;
		if (nr_members > 1)
			print_value_cell(line, nr_members, e, cols[i], o, total, 0);
		else
			print_cell(line, e, cols[i], (int)widths[i], total, false);
		fb_put(line, "  ", 2);
	}
	fb_spaces(line, l->indent);
	hierarchy_key(line, e, cols[key], widths[key]);
	fb_putc(line, '\n');
	return fb_flush(line, fp) ? 0 : -ENOMEM;
}

/*
 * perf's --hierarchy: the value columns indented 3 more per level, then the row's own
 * key; the headers are the value columns' and the keys' names joined by " / ", ruled as
 * wide as the deepest key reaches. A row whose rows below are all hidden says so
 * ("no entry >= LIMIT%"); the entries (last key) carry the call graphs.
 */
static int hierarchy_fprintf(struct tally_hist *h, FILE *fp, const struct hist_print_opts *o,
			     const enum tally_hist_col *cols, const size_t *widths, size_t nr,
			     size_t nr_keys)
{
	const struct tally_hist_totals *t = tally_hist__totals(h);
	uint64_t total = o->relative ? t->filtered_period : t->period;
	size_t nr_sorted;
	struct tally_hist_entry *const *sorted = tally_hist__sorted(h, &nr_sorted);
	struct hier_layout l;
	struct fmt_buf line = { 0 };
	int err = 0;

	hier_layout(&l, cols, widths, nr, nr_keys);
	if (o->header)
		hier_header(fp, o, cols, widths, nr, &l);
	for (size_t k = 0; k < nr_sorted && !err; k++) {
		struct tally_hist_entry *e = sorted[k];
		size_t d = e->depth;
		bool below = false;

		if (!shown(e, o, total, l.sym_depth))
			continue;
		err = hier_row(fp, h, e, o, cols, widths, nr, &l, total, &line);
		if (err)
			break;
		if (d + 1 < nr_keys) {
			/* the rows right below: is any of them shown? */
			for (size_t j = k + 1; j < nr_sorted && sorted[j]->depth > d && !below; j++)
				below = sorted[j]->depth == d + 1 && shown(sorted[j], o, total, l.sym_depth);
			if (!below) {
				spaces(fp, 2 + (d + 1) * 3 + l.values + 2 + l.indent, ' ');
				fprintf(fp, "no entry >= %.2f%%\n", o->percent_limit);
			}
		} else if (o->cc.mode != CC_NONE && tally_hist__has_trees(h)) {
			struct cc_print_opts cc = o->cc;

			cc.total = total;	/* perf: --percentage relative counts here */
			cc.parent = e->period;
			err = cc_print(fp, &e->chain, &cc);
		}
	}
	free(line.p);
	return err;
}

/* --column-widths: column i's width (0: none given). */
static size_t user_width(const struct hist_print_opts *o, size_t i)
{
	return i < o->nr_user_widths ? o->user_widths[i] : 0;
}

/* A cell at a --column-widths width u, as perf prints it: a value at u (a percent in
 * u - 1, both behind a space) then padded to its column, a key cut to u. */
static void print_user_cell(struct fmt_buf *fp, const struct tally_hist_entry *e,
			    enum tally_hist_col c, size_t u, size_t width, uint64_t total, bool last)
{
	size_t at = fp->len, len;

	if (c == TALLY_HIST_OVERHEAD || c == TALLY_HIST_CHILDREN || cpu_util_col(c)) {
		fb_putc(fp, ' ');
		fb_pct(fp, pct(cpu_util_col(c) ? cpu_util_period(e, c) :
			       c == TALLY_HIST_CHILDREN ? e->period_acc : e->period, total),
		       (int)u - 2);
	} else if (c == TALLY_HIST_SAMPLES || c == TALLY_HIST_PERIOD) {
		fb_putc(fp, ' ');
		fb_u64_pad(fp, c == TALLY_HIST_SAMPLES ? e->nr_samples : e->period, (int)u - 1);
	} else {
		print_cell(fp, e, c, (int)u, total, last);
	}
	if (fp->oom)
		return;
	len = fp->len - at;
	/* perf cuts comm, dso and a symbol's name to the width (not an address; the name
	 * after its "[.] ", so not under 4) */
	if (tally_hist_col__is_key(c) && c != TALLY_HIST_PID && c != TALLY_HIST_CPU &&
	    (c != TALLY_HIST_SYM || (sym_name(e) && u >= 4)) && len > u) {
		len = u;
		fp->len = at + u;
		fp->p[fp->len] = 0;
	}
	if (!tally_hist_col__is_key(c) && len < width)
		fb_spaces(fp, width - len);
}

struct group_key {
	char *text;	/* the cells of the keys before the trace or srcline key */
	size_t k;	/* the entry's place in sorted */
};

static int group_key_cmp(const void *a, const void *b)
{
	return strcmp(((const struct group_key *)a)->text, ((const struct group_key *)b)->text);
}

/*
 * perf 6.1 makes a row's trace output and source line text only when it compares the
 * row with another on that key, and sizes the column over the texts made by then; a
 * text made later, to print it, is cut to that width. Rows are compared on a key when
 * they are equal on the keys before it (its group), while the samples go into perf's
 * first tree: a group holding one sample makes none (an event of one sample under
 * --sort trace prints "comm=migrati"); in children mode each sample's own row is
 * compared with its call chain's first frame, so every row counts. Sets bit 1 << c of
 * (*uncounted)[k] for those rows of sorted and key c (TRACE or SRCLINE), the array
 * allocated when first needed (it stays NULL for a table without those keys, such as
 * report's default one); 0 or -ENOMEM.
 */
static int lazy_uncounted(struct tally_hist_entry *const *sorted, size_t nr_sorted,
			  const enum tally_hist_col *cols, size_t nr,
			  const struct hist_print_opts *o, enum tally_hist_col c, uint32_t **uncounted)
{
	struct group_key *g;
	size_t ci = nr;
	int err = 0;

	for (size_t i = 0; i < nr && ci == nr; i++)
		if (cols[i] == c)
			ci = i;
	if (ci == nr || o->children || o->hierarchy || !nr_sorted)
		return 0;
	if (!*uncounted && !(*uncounted = calloc(nr_sorted, sizeof(**uncounted))))
		return -ENOMEM;
	g = calloc(nr_sorted, sizeof(*g));
	if (!g)
		return -ENOMEM;
	for (size_t k = 0; k < nr_sorted && !err; k++) {
		struct fmt_buf b = { 0 };

		g[k].k = k;
		fb_put(&b, "", 0);	/* an empty text, at least */
		for (size_t i = 0; i < ci; i++) {
			if (!tally_hist_col__is_key(cols[i]))
				continue;
			print_cell(&b, sorted[k], cols[i], 0, 0, true);
			fb_putc(&b, '\x1f');
		}
		g[k].text = b.p;
		if (b.oom)
			err = -ENOMEM;
	}
	if (!err) {
		qsort(g, nr_sorted, sizeof(*g), group_key_cmp);
		for (size_t a = 0, b; a < nr_sorted; a = b) {
			uint64_t n = 0;

			for (b = a; b < nr_sorted && !strcmp(g[a].text, g[b].text); b++)
				n += sorted[g[b].k]->nr_samples;
			for (size_t j = a; j < b && n < 2; j++)
				(*uncounted)[g[j].k] |= 1u << c;
		}
	}
	for (size_t k = 0; k < nr_sorted; k++)
		free(g[k].text);
	free(g);
	return err;
}

/* The columns' widths over the entries that will be shown (widths[] holding the headers'
 * and minimum widths); the number of sorted entries up to the last shown. uncounted:
 * the rows' keys whose text perf leaves out of the width (see lazy_uncounted). */
static size_t entry_widths(struct tally_hist_entry *const *sorted, size_t nr_sorted,
			   const enum tally_hist_col *cols, size_t nr, size_t *widths,
			   const struct hist_print_opts *o, uint64_t total, int sym_depth,
			   const uint32_t *uncounted)
{
	size_t nshow = 0, keys[TALLY_HIST_NR_COLS * 2], nr_keys = 0;
	bool unresolved = false;

	for (size_t i = 0; i < nr; i++)	/* a value's cell_len is 0: no width of its own */
		if (tally_hist_col__is_key(cols[i]))
			keys[nr_keys++] = i;
	for (size_t k = 0; k < nr_sorted; k++) {
		const struct tally_hist_entry *e = sorted[k];
		uint64_t v = o->children ? e->period_acc : e->period;

		prefetch_rows(sorted, k, nr_sorted);
		if (o->hierarchy ? hier_filtered(e, o, sym_depth) : filtered_out(e, o))
			continue;
		/* perf sizes columns over every entry, shown or under --percent-limit */
		if (!(o->percent_limit > 0 && pct(v, total) < o->percent_limit))
			nshow = k + 1;
		for (size_t j = 0; j < nr_keys; j++) {
			size_t i = keys[j], l = cell_len(e, cols[i]);

			if (uncounted &&
			    (uncounted[k] & (1u << cols[i])))
				continue;
			if (cols[i] == TALLY_HIST_PID && l < 8 + 7)
				l = 8 + 7;
			if (l > widths[i])
				widths[i] = l;
		}
		if (!sym_name(e))
			unresolved = true;
	}
	/* perf: a row without a symbol widens the dso column to an address's 16 digits,
	 * unless a separator, --column-widths or --dsos is given */
	for (size_t i = 0; i < nr && unresolved && !o->sep && !o->nr_user_widths && !o->dso_list; i++)
		if (cols[i] == TALLY_HIST_DSO && widths[i] < 16)
			widths[i] = 16;
	for (size_t i = 0; i < nr; i++)	/* perf's time column: 12 wide, 16 with --ns */
		if (cols[i] == TALLY_HIST_TIME)
			widths[i] = o->ns ? 16 : 12;
	return nshow;
}

/* A row's cells in any table but the common one: with a separator, a group's members
 * side by side, or --column-widths. */
static void row_cells(struct fmt_buf *line, const struct tally_hist_entry *e,
		      const enum tally_hist_col *cols, const size_t *widths, size_t nr,
		      size_t nr_members, const struct hist_print_opts *o, uint64_t total)
{
	for (size_t i = 0; i < nr; i++) {
		if (i)
			fb_puts(line, o->sep ? o->sep : "  ");
		if (o->sep) {
			print_cell_sep(line, nr_members, e, cols[i], o, total, widths[i],
				       i + 1 == nr);
		} else if (nr_members > 1 && !tally_hist_col__is_key(cols[i])) {
			size_t u = user_width(o, i);

			print_value_cell(line, nr_members, e, cols[i], o, total, u);
			/* padded to the column after the cells (-w narrower than the
			 * members' default cells) */
			if (u && widths[i] > nr_members * u)
				fb_spaces(line, widths[i] - nr_members * u);
		} else if (user_width(o, i)) {
			print_user_cell(line, e, cols[i], user_width(o, i), widths[i], total,
					i + 1 == nr);
		} else {
			print_cell(line, e, cols[i], (int)widths[i], total, i + 1 == nr);
		}
	}
}

int hist_fprintf(struct tally_hist *h, FILE *fp, const struct hist_print_opts *o)
{
	const struct tally_hist_totals *t = tally_hist__totals(h);
	uint64_t total = o->relative ? t->filtered_period : t->period;
	size_t nr_members = tally_hist__nr_members(h), nr_sorted;
	struct tally_hist_entry *const *sorted = tally_hist__sorted(h, &nr_sorted);
	enum tally_hist_col cols[TALLY_HIST_NR_COLS * 2];
	size_t widths[TALLY_HIST_NR_COLS * 2], nr = 0, nshow = 0, nr_keys = 0;
	int err = 0, sym_depth = -1;
	uint32_t *uncounted = NULL;
	struct fmt_buf line = { 0 };
	bool plain;	/* no separator, group or --column-widths */

	for (size_t i = 0; i < o->nr_cols && nr < TALLY_HIST_NR_COLS * 2; i++)
		if (o->cols[i] >= TALLY_HIST_NR_COLS || !o->elide[o->cols[i]])
			cols[nr++] = o->cols[i];
	for (size_t i = 0; i < nr; i++) {
		if (cols[i] == TALLY_HIST_SYM)
			sym_depth = (int)nr_keys;
		nr_keys += tally_hist_col__is_key(cols[i]);
	}
	for (size_t i = 0; i < nr; i++) {
		size_t minw = col_min_width(cols[i]) * (tally_hist_col__is_key(cols[i]) ? 1 : nr_members);

		widths[i] = strlen(col_header(cols[i], o->overhead_is_self)) > minw
				    ? strlen(col_header(cols[i], o->overhead_is_self)) : minw;
	}
	if (lazy_uncounted(sorted, nr_sorted, cols, nr, o, TALLY_HIST_TRACE, &uncounted) ||
	    lazy_uncounted(sorted, nr_sorted, cols, nr, o, TALLY_HIST_SRCLINE, &uncounted)) {
		free(uncounted);
		return -ENOMEM;
	}
	nshow = entry_widths(sorted, nr_sorted, cols, nr, widths, o, total, sym_depth, uncounted);
	free(uncounted);
	for (size_t i = 0; i < nr; i++) {	/* --column-widths: keys at that, values at least */
		size_t u = user_width(o, i), hl = strlen(col_header(cols[i], o->overhead_is_self));

		if (u)
			widths[i] = tally_hist_col__is_key(cols[i]) ? u : u > hl ? u : hl;
		/* a group's value column: at least its members' default cells (perf's) */
		if (u && nr_members > 1 && !tally_hist_col__is_key(cols[i]) &&
		    widths[i] < nr_members * col_min_width(cols[i]))
			widths[i] = nr_members * col_min_width(cols[i]);
	}
	if (o->hierarchy)
		return hierarchy_fprintf(h, fp, o, cols, widths, nr, nr_keys);
	if (o->header)
		print_header(fp, cols, widths, nr, o);
	plain = !o->sep && nr_members <= 1 && !o->nr_user_widths;
	for (size_t k = 0; k < nshow && !err; k++) {
		struct tally_hist_entry *e = sorted[k];
		uint64_t v = o->children ? e->period_acc : e->period;

		prefetch_rows(sorted, k, nshow);
		if ((o->percent_limit > 0 && pct(v, total) < o->percent_limit) || filtered_out(e, o))
			continue;
		if (!o->sep)
			fb_put(&line, "  ", 2);
		for (size_t i = 0; i < nr && plain; i++) {	/* the common table */
			if (i)
				fb_put(&line, "  ", 2);
			cell(&line, e, cols[i], (int)widths[i], total, i + 1 == nr);
		}
		if (!plain)
			row_cells(&line, e, cols, widths, nr, nr_members, o, total);
		fb_putc(&line, '\n');
		if (o->cc.mode != CC_NONE && tally_hist__has_trees(h)) {
			struct cc_print_opts cc = o->cc;

			cc.total = t->period;	/* perf: of all samples, also with --percentage relative */
			cc.hit_total = o->relative ? t->filtered_period : 0;	/* its threshold not */
			cc.parent = v;
			err = cc_print_buf(&line, &e->chain, &cc);
		}
		/* written in pieces of some 64 KiB: a stdio call per row costs more than
		 * formatting it */
		if (line.oom || line.len >= 1u << 16)
			err = fb_flush(&line, fp) ? err : -ENOMEM;
	}
	if (!fb_flush(&line, fp) && !err)
		err = -ENOMEM;
	free(line.p);
	return err;
}
