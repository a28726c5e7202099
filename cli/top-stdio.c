/*
 * tally top's table: the PerfTop header line, the rows in perf top's --stdio shape
 * ("    58.39%  hot   [.] spin"), and the call graph of an entry's callers. The
 * terminal view formats its rows with the same functions, so both views agree.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cmd.h"
#include "top.h"

int top_header(const struct top *t, char *buf, size_t len)
{
	const struct top_event *ev = &t->ev[t->cur];
	double secs = t->interval_secs > 0 ? t->interval_secs : 1.0;
	uint64_t samples = 0, kernel = 0;
	double irqs, kpct;
	char rate[48] = "", target[160];
	size_t n;

	/* as perf: the rate of every event's samples; the period or frequency only when
	 * there is one event */
	for (size_t i = 0; i < t->nr_ev; i++) {
		samples += t->ev[i].shown_samples;
		kernel += t->ev[i].shown_kernel;
	}
	irqs = (double)samples / secs;
	kpct = samples ? 100.0 * (double)kernel / (double)samples : 0;
	if (t->nr_ev == 1 && ev->attr.freq)
		snprintf(rate, sizeof(rate), "%" PRIu64 "Hz ", (uint64_t)ev->attr.sample_freq);
	else if (t->nr_ev == 1)
		snprintf(rate, sizeof(rate), "%" PRIu64 " ", (uint64_t)ev->attr.sample_period);
	if (t->o->uid)	/* perf names the user, not its processes */
		n = (size_t)snprintf(target, sizeof(target), "(uid: %s", t->o->uid);
	else if (t->o->pid)
		n = (size_t)snprintf(target, sizeof(target), "(target_pid: %s", t->o->pid);
	else if (t->o->tid)
		n = (size_t)snprintf(target, sizeof(target), "(target_tid: %s", t->o->tid);
	else
		n = (size_t)snprintf(target, sizeof(target), "(all");
	if (n < sizeof(target)) {
		if (t->o->cpu_list)
			snprintf(target + n, sizeof(target) - n, ", CPU%s: %s)",
				 t->cpus->nr > 1 ? "s" : "", t->o->cpu_list);
		else if (t->o->tid || t->o->pid)
			snprintf(target + n, sizeof(target) - n, ")");
		else
			snprintf(target + n, sizeof(target) - n, ", %zu CPU%s)", t->cpus->nr,
				 t->cpus->nr > 1 ? "s" : "");
	}
	return snprintf(buf, len,
			"   PerfTop:%8.0f irqs/sec  kernel:%4.1f%%  exact: %4.1f%% lost: %" PRIu64
			"/%" PRIu64 " drop: 0/0 [%s%s],  %s",
			irqs, kpct, 0.0, t->lost_shown, t->lost, rate, ev->name, target);
}

/* What percentages are of: every sample, or with --percentage relative those the
 * filters kept (perf's --percentage). */
static uint64_t top_total(const struct top *t)
{
	const struct tally_hist_totals *tot = tally_hist__totals(top__hist(t));

	return t->o->relative ? tot->filtered_period : tot->period;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

uint64_t top_member_total(const struct top *t, size_t k)
{
	const struct tally_hist_totals *tot =
		tally_hist__totals(tally_hists__hist(t->hists, t->cur + k));

	return t->o->relative ? tot->filtered_period : tot->period;
}

/* Group member k's row of e (0: e itself; NULL: the member has none). */
static const struct tally_hist_entry *member(const struct tally_hist_entry *e, size_t k)
{
	return k == 0 ? e : e->members ? e->members[k] : NULL;
}

/* Whether perf top has dropped e by now: hidden by -K/-U (perf deletes those rows at
 * each refresh) or decayed to nothing (for every group member). */
static bool entry_gone(const struct top *t, const struct tally_hist_entry *e)
{
	uint64_t v = t->children ? e->period_acc : e->period;
	bool kernel = e->level == 'k' || e->level == 'g';

	if (t->hide_kernel && kernel)
		return true;
	if (t->hide_user && !kernel)
		return true;
	/* the group view shows a row any member has (as perf: "0.00%  0.04%") */
	for (size_t k = 1; !v && k < top__nr_members(t); k++) {
		const struct tally_hist_entry *m = member(e, k);

		v = m ? (t->children ? m->period_acc : m->period) : 0;
	}
	return !v;
}

bool top_entry_hidden(const struct top *t, const struct tally_hist_entry *e)
{
	uint64_t total = top_total(t);
	uint64_t v = t->children ? e->period_acc : e->period;

	if (entry_gone(t, e))
		return true;
	if (t->o->count_filter > 0 &&
	    (t->children ? e->nr_samples_acc : e->nr_samples) <= (uint64_t)t->o->count_filter)
		return true;
	return t->o->percent_limit > 0 && pct(v, total) < t->o->percent_limit;
}

static const char *sym_name(const struct tally_hist_entry *e)
{
	return e->sym && e->sym->name ? e->sym->name : NULL;
}

/* As perf top: the widths over the first max_rows entries it still has, those under
 * --percent-limit (or --count-filter) too though not shown, and at least the column
 * titles' perf does not print ("Command", "Pid:Command", "Shared Object", "Symbol");
 * a row without a symbol makes the dso column at least an address's 16 digits wide
 * (not with --dsos). */
void top_widths(const struct top *t, size_t max_rows, struct top_widths *w)
{
	size_t rows = 0, nr;
	struct tally_hist_entry *const *sorted = tally_hist__sorted(top__hist(t), &nr);
	bool unresolved = false;

	w->comm = 7;
	w->pid = 15;	/* "%7d:" and the Command */
	w->dso = 13;
	w->sym = 6;
	for (size_t k = 0; k < nr && rows < max_rows; k++) {
		const struct tally_hist_entry *e = sorted[k];
		int l;

		if (entry_gone(t, e))
			continue;
		rows++;
		if ((l = (int)strlen(e->comm)) > w->comm)
			w->comm = l;
		if (8 + l > w->pid)
			w->pid = 8 + l;
		if ((l = (int)strlen(e->dso_name)) > w->dso)
			w->dso = l;
		l = 4 + (sym_name(e) ? (int)strlen(sym_name(e)) : 18);
		if (l > w->sym)
			w->sym = l;
		unresolved |= !sym_name(e);
	}
	if (unresolved && !t->o->filter.dsos && w->dso < 16)
		w->dso = 16;
}

size_t top_columns(const struct top *t, enum tally_hist_col *cols)
{
	size_t n = 0;

	if (t->nr_fields) {
		memcpy(cols, t->fields, t->nr_fields * sizeof(*cols));
		return t->nr_fields;
	}
	if (t->children)
		cols[n++] = TALLY_HIST_CHILDREN;
	cols[n++] = TALLY_HIST_OVERHEAD;
	if (t->o->show_nr_samples)
		cols[n++] = TALLY_HIST_SAMPLES;
	if (t->o->show_total_period)
		cols[n++] = TALLY_HIST_PERIOD;
	for (size_t i = 0; i < t->nr_keys; i++)
		cols[n++] = t->keys[i];
	return n;
}

void top_format_row(const struct top *t, const struct tally_hist_entry *e,
		    const struct top_widths *w, char *buf, size_t len)
{
	uint64_t total = top_total(t);
	enum tally_hist_col cols[TOP_MAX_COLS];
	size_t n = 0, nr = top_columns(t, cols), nm = top__nr_members(t);
	/* without --fields the Samples and Period columns follow the children mode */
	bool acc = t->children && !t->nr_fields;

#define PUT(...)                                                              \
	do {                                                                  \
		if (n < len)                                                  \
			n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__); \
	} while (0)

	buf[0] = '\0';
	for (size_t i = 0; i < nr; i++) {
		bool last = i + 1 == nr;

		if (nm > 1 && !tally_hist_col__is_key(cols[i])) {
			/* the group view: the column's cell of each member, side by side */
			PUT("  ");
			for (size_t k = 0; k < nm; k++) {
				const struct tally_hist_entry *m = member(e, k);
				uint64_t tot = k ? top_member_total(t, k) : total;

				switch (cols[i]) {
				case TALLY_HIST_CHILDREN:
					PUT("%7.2f%%", pct(m ? m->period_acc : 0, tot));
					break;
				case TALLY_HIST_OVERHEAD:
					PUT("%7.2f%%", pct(m ? m->period : 0, tot));
					break;
				case TALLY_HIST_SAMPLES:
					PUT("%12" PRIu64, !m ? 0 : acc ? m->nr_samples_acc : m->nr_samples);
					break;
				case TALLY_HIST_PERIOD:
					PUT("%12" PRIu64, !m ? 0 : acc ? m->period_acc : m->period);
					break;
				default:
					break;
				}
			}
			continue;
		}
		switch (cols[i]) {
		case TALLY_HIST_CHILDREN:
			PUT("  %7.2f%%", pct(e->period_acc, total));
			break;
		case TALLY_HIST_OVERHEAD:
			PUT("  %7.2f%%", pct(e->period, total));
			break;
		case TALLY_HIST_SAMPLES:
			PUT("  %12" PRIu64, acc ? e->nr_samples_acc : e->nr_samples);
			break;
		case TALLY_HIST_PERIOD:
			PUT("  %12" PRIu64, acc ? e->period_acc : e->period);
			break;
		case TALLY_HIST_COMM:	/* as perf: padded also when last (the symbol not) */
			PUT("  %-*s", w->comm, e->comm);
			break;
		case TALLY_HIST_PID:
			PUT("  %7d:%-*s", e->tid, w->pid - 8, e->comm);
			break;
		case TALLY_HIST_DSO:
			PUT("  %-*s", w->dso, e->dso_name);
			break;
		case TALLY_HIST_SYM:
			if (sym_name(e))
				PUT("  [%c] %-*s", e->level, last ? 0 : w->sym - 4, sym_name(e));
			else
				PUT("  [%c] %#0*" PRIx64 "%*s", e->level, 18, e->ip,
				    last ? 0 : w->sym - 22, "");
			break;
		case TALLY_HIST_CPU:
			PUT("  %3.3d", e->cpu);
			break;
		default:
			break;
		}
	}
#undef PUT
}

int top_print_callers(const struct top *t, struct tally_hist_entry *e, FILE *fp)
{
	struct cc_print_opts o = {
		.mode = CC_GRAPH,
		.min_percent = 0.5,
		.total = top_total(t),
		.parent = t->children ? e->period_acc : e->period,
	};

	return cc_print(fp, &e->chain, &o);
}

/* perf's window: $LINES and $COLUMNS when both are set and not 0, else the size of
 * the terminal on stdout, else 25 x 80. */
static void window_size(FILE *fp, unsigned *rows, unsigned *cols)
{
	const char *l = getenv("LINES"), *c = getenv("COLUMNS");
	struct winsize ws;

	if (l && c) {
		*rows = (unsigned short)atoi(l);
		*cols = (unsigned short)atoi(c);
		if (*rows && *cols)
			return;
	}
	if (ioctl(fileno(fp), TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
		return;
	}
	*rows = 25;
	*cols = 80;
}

int top_stdio_refresh(struct top *t, FILE *fp, bool clear)
{
	struct top_widths w;
	size_t shown = 0, nr, rows, width;
	struct tally_hist_entry *const *sorted = tally_hist__sorted(top__hist(t), &nr);
	unsigned wrows, wcols;
	char line[4096];

	/* as perf: the header line, a rule one column short of the window, an empty line
	 * and the window's rows less 5 (or -E's), each cut one more column short */
	window_size(fp, &wrows, &wcols);
	width = wcols - 1;
	rows = t->o->entries > 0 ? (size_t)t->o->entries : wrows > 5 ? wrows - 5 : 1;
	if (clear)	/* perf's is a line of its own */
		fputs("\033[H\033[2J\n", fp);
	top_header(t, line, TOP_HEADER_MAX + 1);
	fprintf(fp, "%s\n", line);
	fprintf(fp, "%-*.*s\n\n", (int)width, (int)width,
		"----------------------------------------------------------------------"
		"----------------------------------------------------------------------"
		"-------------------------------------------------------------------");
	if (t->o->hierarchy || t->o->col_widths.nr)
		return top_print_report_table(t, fp, rows, width) || fflush(fp) ? -1 : 0;
	top_widths(t, rows, &w);
	for (size_t k = 0; k < nr && shown < rows; k++) {
		struct tally_hist_entry *e = sorted[k];

		if (top_entry_hidden(t, e))
			continue;
		shown++;
		top_format_row(t, e, &w, line, sizeof(line));
		if (width && strlen(line) >= width)
			line[width - 1] = '\0';
		fprintf(fp, "%s\n", line);
		if (t->o->callgraph && e->chain.nr_kids) {
			if (top_print_callers(t, e, fp))
				return -1;
		}
	}
	return fflush(fp) ? -1 : 0;
}
