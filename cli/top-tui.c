/*
 * tally top's full-screen view (ncurses): the PerfTop header, a scrolling table with
 * a highlighted row, and, with -g, the callers of the highlighted symbol on Enter.
 *
 * Keys: q quits; arrows, PgUp/PgDn, Home/End move; K and U toggle kernel and user
 * symbols; z toggles zeroing instead of decay; Tab switches events; Enter shows the
 * callers (with -g), Esc/Left/Backspace go back. The table is rebuilt at every
 * refresh, so the callers view remembers the entry by its key, not by pointer.
 */
#include <curses.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "top.h"

/* ncurses is loaded when the full-screen view starts, not linked: no other command
 * maps it (half a megabyte of every command's peak RSS, and start-up relocations).
 * The names below are its functions and variables through the loaded library. */
#define NCURSES_SONAME "libncursesw.so.6"
#define NC_FUNCS(X) X(newterm) X(set_term) X(cbreak) X(noecho) X(nonl) X(keypad) \
	X(nodelay) X(curs_set) X(set_escdelay) X(endwin) X(delscreen) X(waddnstr) \
	X(wattr_on) X(wattr_off) X(werase) X(wgetch) X(whline) X(wmove) X(wrefresh)
#define NC_VARS(X) X(stdscr) X(COLS) X(LINES)
#define NC_FIELD(name) __typeof__(&name) name;
static struct {
	NC_FUNCS(NC_FIELD)
	NC_VARS(NC_FIELD)
} nc;

static bool nc_load(void)
{
	void *h;

	if (nc.newterm)
		return true;
	h = dlopen(NCURSES_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		cli_error("cannot load %s for the terminal view (%s); use --stdio",
			  NCURSES_SONAME, dlerror());
		return false;
	}
#define NC_SYM(name) *(void **)&nc.name = dlsym(h, #name);
	NC_FUNCS(NC_SYM)
	NC_VARS(NC_SYM)
#define NC_MISSING(name) !nc.name ||
	if (NC_FUNCS(NC_MISSING) NC_VARS(NC_MISSING) false) {
		memset(&nc, 0, sizeof(nc));
		dlclose(h);
		cli_error("%s lacks a function the terminal view needs; use --stdio",
			  NCURSES_SONAME);
		return false;
	}
	return true;	/* kept open: its code runs until exit */
}

#define newterm nc.newterm
#define set_term nc.set_term
#define cbreak nc.cbreak
#define noecho nc.noecho
#define nonl nc.nonl
#define keypad nc.keypad
#define nodelay nc.nodelay
#define curs_set nc.curs_set
#define set_escdelay nc.set_escdelay
#define endwin nc.endwin
#define delscreen nc.delscreen
#define waddnstr nc.waddnstr
#define wattr_on nc.wattr_on
#define wattr_off nc.wattr_off
#define werase nc.werase
#define wgetch nc.wgetch
#define whline nc.whline
#define wmove nc.wmove
#define wrefresh nc.wrefresh
#undef stdscr
#undef COLS
#undef LINES
#define stdscr (*nc.stdscr)
#define COLS (*nc.COLS)
#define LINES (*nc.LINES)

struct top_tui {
	SCREEN *screen;
	size_t sel;		/* selected row among the visible entries */
	size_t first;		/* first visible row on screen */
	bool callers;		/* showing the callers of the remembered entry */
	size_t callers_first;	/* scroll position in the callers view */
	/* the entry whose callers are shown, by key */
	struct tally_hist_entry key;
	char *key_comm;
	bool zero;
};

/* 0; -1: the terminal cannot be used; -2: ncurses cannot be loaded (said on stderr) */
int top_tui__new(struct top_tui **out)
{
	struct top_tui *ui = calloc(1, sizeof(*ui));

	if (!ui)
		return -1;
	if (!nc_load()) {
		free(ui);
		return -2;
	}
	/* newterm, not initscr: initscr exits the process when TERM is unusable */
	ui->screen = newterm(NULL, stdout, stdin);
	if (!ui->screen) {
		free(ui);
		return -1;
	}
	set_term(ui->screen);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	*out = ui;
	return 0;
}

void top_tui__delete(struct top_tui *ui)
{
	if (!ui)
		return;
	endwin();
	delscreen(ui->screen);
	free(ui->key_comm);
	free(ui);
}

/* The entries shown, in order (hidden ones skipped). */
static size_t visible(const struct top *t, struct tally_hist_entry ***out)
{
	size_t nr;
	struct tally_hist_entry *const *sorted = tally_hist__sorted(top__hist(t), &nr);
	struct tally_hist_entry **v = malloc((nr ? nr : 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v || !sorted)
		return 0;
	for (size_t k = 0; k < nr; k++)
		if (!top_entry_hidden(t, sorted[k]))
			v[n++] = sorted[k];
	return n;
}

static void draw_status(int rows, const char *msg)
{
	attron(A_REVERSE);
	mvhline(rows - 1, 0, ' ', COLS);
	mvaddnstr(rows - 1, 0, msg, COLS);
	attroff(A_REVERSE);
}

static void column_header(const struct top *t, const struct top_widths *w, char *buf,
			  size_t len)
{
	enum tally_hist_col cols[TOP_MAX_COLS];
	size_t n = 0, nr = top_columns(t, cols);
	/* the group view: a value's header over its members' cells */
	int nm = (int)top__nr_members(t);

	buf[0] = '\0';
	for (size_t i = 0; i < nr && n < len; i++) {
		switch (cols[i]) {
		case TALLY_HIST_CHILDREN:
			n += (size_t)snprintf(buf + n, len - n, "  %*s", 8 * nm, "Children");
			break;
		case TALLY_HIST_OVERHEAD:
			n += (size_t)snprintf(buf + n, len - n, "  %*s", 8 * nm,
					      t->children && !t->nr_fields ? "Self" : "Overhead");
			break;
		case TALLY_HIST_SAMPLES:
			n += (size_t)snprintf(buf + n, len - n, "  %*s", 12 * nm, "Samples");
			break;
		case TALLY_HIST_PERIOD:
			n += (size_t)snprintf(buf + n, len - n, "  %*s", 12 * nm, "Period");
			break;
		case TALLY_HIST_COMM:
			n += (size_t)snprintf(buf + n, len - n, "  %-*s", w->comm, "Command");
			break;
		case TALLY_HIST_PID:
			n += (size_t)snprintf(buf + n, len - n, "  %-*s", w->pid, "    Pid:Command");
			break;
		case TALLY_HIST_DSO:
			n += (size_t)snprintf(buf + n, len - n, "  %-*s", w->dso, "Shared Object");
			break;
		case TALLY_HIST_SYM:
			n += (size_t)snprintf(buf + n, len - n, "  %s", "Symbol");
			break;
		case TALLY_HIST_CPU:
			n += (size_t)snprintf(buf + n, len - n, "  %s", "CPU");
			break;
		default:
			break;
		}
	}
}

static struct tally_hist_entry *find_key(struct top_tui *ui, struct top *t)
{
	size_t nr;
	struct tally_hist_entry *const *sorted = tally_hist__sorted(top__hist(t), &nr);

	for (size_t k = 0; k < nr; k++) {
		struct tally_hist_entry *e = sorted[k];

		if (e->dso == ui->key.dso && e->sym == ui->key.sym && e->level == ui->key.level &&
		    (e->sym || e->ip == ui->key.ip) && e->tid == ui->key.tid &&
		    e->cpu == ui->key.cpu && !strcmp(e->comm, ui->key_comm))
			return e;
	}
	return NULL;
}

static void draw_callers(struct top_tui *ui, struct top *t, int rows)
{
	struct tally_hist_entry *e = find_key(ui, t);
	char *text = NULL, *line, *save = NULL;
	size_t len = 0, i = 0;
	FILE *fp = open_memstream(&text, &len);
	struct top_widths w;
	char row[1024];
	int y = 2;

	if (!fp)
		return;
	if (e) {
		top_widths(t, SIZE_MAX, &w);
		top_format_row(t, e, &w, row, sizeof(row));
		fprintf(fp, "%s\n", row);
		if (e->chain.nr_kids)
			top_print_callers(t, e, fp);
		else
			fputs("\n  (no call chains for this entry yet)\n", fp);
	} else {
		fputs("  (this entry has decayed away)\n", fp);
	}
	fclose(fp);
	attron(A_BOLD);
	mvaddnstr(1, 0, "Callers of the selected symbol (Esc/Left: back)", COLS);
	attroff(A_BOLD);
	for (line = strtok_r(text, "\n", &save); line && y < rows - 1;
	     line = strtok_r(NULL, "\n", &save), i++) {
		if (i < ui->callers_first)
			continue;
		mvaddnstr(y++, 0, line, COLS);
	}
	if (i < ui->callers_first && i)
		ui->callers_first = i - 1;
	free(text);
}

void top_tui__draw(struct top_tui *ui, struct top *t)
{
	int rows = LINES;
	struct tally_hist_entry **v = NULL;
	size_t n, avail = rows > 3 ? (size_t)rows - 3 : 1;
	struct top_widths w;
	char line[4096];

	erase();
	top_header(t, line, sizeof(line));
	attron(A_BOLD);
	mvaddnstr(0, 0, line, COLS);
	attroff(A_BOLD);
	if (ui->callers) {
		draw_callers(ui, t, rows);
		draw_status(rows, " Up/Down/PgUp/PgDn scroll   Esc/Left back   q quit");
		refresh();
		return;
	}
	n = visible(t, &v);
	if (ui->sel >= n)
		ui->sel = n ? n - 1 : 0;
	if (ui->sel < ui->first)
		ui->first = ui->sel;
	if (ui->sel >= ui->first + avail)
		ui->first = ui->sel - avail + 1;
	top_widths(t, n, &w);
	/* room for the column titles */
	if (w.comm < 7)
		w.comm = 7;
	if (w.dso < 13)
		w.dso = 13;
	column_header(t, &w, line, sizeof(line));
	attron(A_UNDERLINE);
	mvaddnstr(1, 0, line, COLS);
	attroff(A_UNDERLINE);
	for (size_t r = 0; r < avail && ui->first + r < n; r++) {
		size_t k = ui->first + r;

		top_format_row(t, v[k], &w, line, sizeof(line));
		if (k == ui->sel)
			attron(A_REVERSE);
		mvaddnstr(2 + (int)r, 0, line, COLS);
		if (k == ui->sel) {
			int len = (int)strlen(line);

			if (len < COLS)
				mvhline(2 + (int)r, len, ' ', COLS - len);
			attroff(A_REVERSE);
		}
	}
	if (!n)
		mvaddnstr(3, 2, "(no samples yet)", COLS - 2);
	snprintf(line, sizeof(line),
		 " q quit  arrows/PgUp/PgDn scroll  K kernel:%s  U user:%s  z %s%s",
		 t->hide_kernel ? "hidden" : "shown", t->hide_user ? "hidden" : "shown",
		 ui->zero ? "zeroing" : "decaying",
		 t->o->callgraph ? "  Enter callers" : "");
	draw_status(rows, line);
	free(v);
	refresh();
}

static void remember(struct top_tui *ui, struct top *t)
{
	struct tally_hist_entry **v = NULL;
	size_t n = visible(t, &v);

	if (ui->sel < n) {
		free(ui->key_comm);
		ui->key = *v[ui->sel];
		ui->key_comm = strdup(v[ui->sel]->comm);
		ui->callers = ui->key_comm != NULL;
		ui->callers_first = 0;
	}
	free(v);
}

int top_tui__keys(struct top_tui *ui, struct top *t)
{
	int ch, page = LINES > 4 ? LINES - 4 : 1;
	bool redraw = false;

	while ((ch = getch()) != ERR) {
		size_t *pos = ui->callers ? &ui->callers_first : &ui->sel;

		redraw = true;
		switch (ch) {
		case 'q':
		case 'Q':
		case 3:	/* ^C in raw-ish modes */
			return 1;
		case KEY_UP:
		case 'k':
			if (*pos)
				(*pos)--;
			break;
		case KEY_DOWN:
		case 'j':
			(*pos)++;
			break;
		case KEY_PPAGE:
			*pos = *pos > (size_t)page ? *pos - (size_t)page : 0;
			break;
		case KEY_NPAGE:
		case ' ':
			*pos += (size_t)page;
			break;
		case KEY_HOME:
			*pos = 0;
			break;
		case KEY_END:
			*pos = SIZE_MAX / 2;
			break;
		case 'K':
			t->hide_kernel = !t->hide_kernel;
			break;
		case 'U':
			t->hide_user = !t->hide_user;
			break;
		case 'z':
			ui->zero = !ui->zero;
			break;
		case '\t':	/* the next event; in the group view the next group */
			t->cur = (t->cur + top__nr_members(t)) % t->nr_ev;
			top__sort(t);
			ui->callers = false;
			break;
		case '\n':
		case '\r':
		case KEY_ENTER:
		case KEY_RIGHT:
			if (!ui->callers && t->o->callgraph)
				remember(ui, t);
			break;
		case KEY_RESIZE:
			break;	/* redrawn below at the new size */
		case 27:	/* Esc */
		case KEY_LEFT:
		case KEY_BACKSPACE:
		case 127:
			ui->callers = false;
			break;
		default:
			break;
		}
	}
	if (redraw)
		top_tui__draw(ui, t);
	return 0;
}

bool top_tui__zero(const struct top_tui *ui)
{
	return ui && ui->zero;
}
