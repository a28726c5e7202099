/*
 * tally top: a live profile of the whole system (or of -p/-t tasks), refreshed every
 * -d seconds, with perf top's options and table. A full-screen view when stdin and
 * stdout are a terminal, one table per refresh with --stdio; --iterations N stops
 * after N refreshes in either mode, so scripts and CI can use it.
 *
 * The loop sleeps in poll() on the rings (the kernel wakes us when one is half full)
 * and on the keyboard, drains the rings when they signal and at every refresh, then
 * shows the table and lets it decay.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally/ring.h>
#include <tally/sampler.h>

#include "cmd.h"
#include "options.h"
#include "target.h"
#include "top.h"

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* -m: a page count, or a size with K/M/G; must come out a power of two. */
static int parse_pages(const char *s, unsigned *pages)
{
	long psz = sysconf(_SC_PAGESIZE);
	char *end;
	unsigned long long v;

	errno = 0;
	if (!*s || *s == '-')
		return -1;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end) {
		unsigned long long mult;

		switch (*end) {
		case 'k': case 'K': mult = 1ull << 10; break;
		case 'm': case 'M': mult = 1ull << 20; break;
		case 'g': case 'G': mult = 1ull << 30; break;
		default: return -1;
		}
		if (end[1] && strcasecmp(end + 1, "b"))
			return -1;
		v = v * mult / (unsigned long long)psz;
	}
	if (!v || v > (1u << 20) || (v & (v - 1)))
		return -1;
	*pages = (unsigned)v;
	return 0;
}

static int parse_sort(const char *s, struct top *t)
{
	size_t nr = 0;
	char **keys = strlist_parse(s, &nr);

	if (!keys) {
		cli_error("out of memory");
		return -1;
	}
	t->nr_keys = 0;
	for (size_t i = 0; i < nr; i++) {
		int c = tally_hist_col__parse(keys[i]);

		if (c < 0 || !tally_hist_col__is_key((enum tally_hist_col)c) || t->nr_keys >= TALLY_HIST_NR_COLS) {
			cli_error("unknown sort key '%s' (known: comm, pid, tid, dso, sym, cpu)",
				  keys[i]);
			strlist_free(keys);
			return -1;
		}
		t->keys[t->nr_keys++] = (enum tally_hist_col)c;
	}
	strlist_free(keys);
	if (!t->nr_keys) {
		cli_error("--sort needs at least one key");
		return -1;
	}
	return 0;
}

/* --fields: the row's columns in their order; the keys among them sort unless -s did. */
static int parse_fields(const struct top_opts *o, struct top *t)
{
	size_t nr = 0;
	char **l = strlist_parse(o->fields, &nr);
	bool keys_from_sort = o->sort != NULL;

	if (!l) {
		cli_error("out of memory");
		return -1;
	}
	if (!keys_from_sort)
		t->nr_keys = 0;
	for (size_t i = 0; i < nr; i++) {
		int c = tally_hist_col__parse(l[i]);

		if (c < 0 || c == TALLY_HIST_TRACE || c == TALLY_HIST_SRCLINE ||
		    c == TALLY_HIST_SRCFILE || t->nr_fields >= TALLY_HIST_NR_COLS) {
			cli_error("--fields: unknown field '%s' (use overhead, overhead_children, "
				  "sample, period, comm, pid, dso, sym, cpu)", l[i]);
			strlist_free(l);
			return -1;
		}
		t->fields[t->nr_fields++] = (enum tally_hist_col)c;
		if (!keys_from_sort && tally_hist_col__is_key((enum tally_hist_col)c))
			t->keys[t->nr_keys++] = (enum tally_hist_col)c;
	}
	strlist_free(l);
	if (!t->nr_keys) {
		cli_error("--fields: name at least one sort key (comm, pid, dso, sym, cpu)");
		return -1;
	}
	return 0;
}

/* ---- options ------------------------------------------------------------------------ */

static int opt_event(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct top_opts *o = opts;
	const char **ev = realloc(o->events, (o->nr_events + 1) * sizeof(*ev));

	(void)opt, (void)unset;
	if (!ev) {
		cli_error("out of memory");
		return -1;
	}
	o->events = ev;
	o->events[o->nr_events++] = arg;
	return 0;
}

static int opt_call_graph(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct top_opts *o = opts;

	(void)opt;
	if (unset) {
		o->callgraph = false;
		return 0;
	}
	o->dwarf = false;
	o->stack_size = 0;
	if (arg && !strncmp(arg, "dwarf", 5) && (!arg[5] || arg[5] == ',')) {
		/* dwarf[,SIZE]: as perf, a second term is the stack size */
		const char *sz = arg + 6;
		char *end;
		unsigned long v;

		if (arg[5]) {
			errno = 0;
			v = strtoul(sz, &end, 0);
			if (*sz < '0' || *sz > '9' || errno || (*end && *end != ',') || !v ||
			    v > 65528) {
				cli_error("--call-graph=%s: incorrect stack dump size (max 65528): %.*s",
					  arg, (int)strcspn(sz, ","), sz);
				return -1;
			}
			o->stack_size = (unsigned)((v + 7) & ~7ul);
		}
		o->dwarf = true;
	} else if (arg && strncmp(arg, "fp", 2) && strncmp(arg, "graph", 5) &&
		   strncmp(arg, "caller", 6)) {
		cli_error("--call-graph=%s: tally top records call graphs by frame pointers (fp) or "
			  "with copies of the user stack (dwarf[,SIZE])", arg);
		return -1;
	}
	o->callgraph = true;
	return 0;
}

static int opt_ignore_callees(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	((struct top_opts *)opts)->ignore_callees = arg;
	return cli_check_regex("--ignore-callees", arg);
}

static int opt_mmap_pages(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	if (parse_pages(arg, &((struct top_opts *)opts)->mmap_pages)) {
		cli_error("-m needs a power-of-two number of pages or a size like 512K, not '%s'",
			  arg);
		return -1;
	}
	return 0;
}

static int opt_delay(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct top_opts *o = opts;
	char *end;

	(void)opt, (void)unset;
	o->delay = strtod(arg, &end);
	if (*end || end == arg || !(o->delay >= 0.01 && o->delay <= 86400)) {
		cli_error("-d needs a refresh delay in seconds (0.01 or more), not '%s'", arg);
		return -1;
	}
	return 0;
}

static int opt_percentage(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct top_opts *o = opts;

	(void)opt, (void)unset;
	if (strcmp(arg, "relative") && strcmp(arg, "absolute")) {
		cli_error("--percentage: 'relative' or 'absolute', not '%s'", arg);
		return -1;
	}
	o->relative = !strcmp(arg, "relative");
	return 0;
}

/* -u: a user name or a uid. */
static int opt_uid(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct top_opts *o = opts;

	(void)opt, (void)unset;
	o->uid = arg;
	return 0;
}

#define CLI_OPTS struct top_opts
static const struct cli_opt top_options[] = {
	OPT_CALLBACK('e', "event", "event", "event selector. use 'tally list' to list available "
		     "events (default: cycles, cpu-clock without a hardware PMU)", opt_event),
	OPT_U64('c', "count", count, "n", "event period to sample", CLI_RANGED(1, 1.8e19)),
	OPT_UINT('F', "freq", freq, "n", "profile at this frequency", CLI_RANGED(1, 1000000)),
	OPT_BOOL('a', "all-cpus", all_cpus, "system-wide collection from all CPUs"),
	OPT_STRLIST('G', "cgroup", cgroups, "name", "monitor event in cgroup name only"),
	OPT_STRING('C', "cpu", cpu_list, "cpu", "list of cpus to monitor"),
	OPT_STRING('p', "pid", pid, "pid", "profile events on existing process id"),
	OPT_STRING('t', "tid", tid, "tid", "profile events on existing thread id"),
	OPT_CALLBACK_NOARG('g', NULL, "enables call-graph recording and display", opt_call_graph),
	OPT_CALLBACK(0, "call-graph",
		     "record_mode[,record_size],print_type,threshold[,print_limit],order,sort_key[,branch]",
		     "setup and enables call-graph (stack chain/backtrace): fp (frame pointers) or "
		     "dwarf[,SIZE] (user stacks unwound with the binaries' CFI)", opt_call_graph, .flags = CLI_NEG),
	OPT_CALLBACK(0, "ignore-callees", "regex",
		     "ignore callees of these functions in call graphs", opt_ignore_callees),
	OPT_SET(0, "children", children, 1,
		"Accumulate callchains of children and show total overhead as well"),
	OPT_UINT(0, "max-stack", max_stack, "n",
		 "Set the maximum stack depth when parsing the callchain. Default: 127",
		 CLI_RANGED(0, 1024)),
	OPT_BOOL('K', "hide_kernel_symbols", hide_kernel, "hide kernel symbols"),
	OPT_BOOL('U', "hide_user_symbols", hide_user, "hide user symbols"),
	OPT_STRING('s', "sort", sort, "key[,key2...]",
		   "sort by key(s): pid, comm, dso, symbol, cpu (default dso,sym)"),
	OPT_BOOL(0, "hierarchy", hierarchy, "Show entries in a hierarchy"),
	OPT_WIDTHS('w', "column-widths", col_widths,
		   "don't try to adjust column width, use these fixed values"),
	OPT_EVSWITCH(switch_on, switch_off, show_on_off),
	OPT_BOOL(0, "raw-trace", raw_trace, "Show raw trace event output (do not use print fmt or "
		 "plugins; tally top has no trace sort key: nothing to change)"),
	OPT_BOOL('n', "show-nr-samples", show_nr_samples, "Show a column with the number of samples"),
	OPT_BOOL(0, "show-total-period", show_total_period, "Show a column with the sum of periods"),
	OPT_CALLBACK(0, "percentage", "relative|absolute",
		     "How to display percentage of filtered entries", opt_percentage),
	OPT_STRLIST(0, "comms", filter.comms, "comm[,comm...]", "only consider symbols in these comms"),
	OPT_STRLIST(0, "dsos", filter.dsos, "dso[,dso...]", "only consider symbols in these dsos"),
	OPT_STRLIST(0, "symbols", filter.syms, "symbol[,symbol...]", "only consider these symbols"),
	OPT_REFUSED('b', "branch-any", NULL, CLI_ARG_NONE, "sample any taken branches",
		    CLI_NO_LBR("-b/--branch-any")),
	OPT_REFUSED('j', "branch-filter", "branch filter mask", CLI_ARG_REQUIRED,
		    "branch stack filter modes", CLI_NO_LBR("-j/--branch-filter")),
	OPT_REFUSED(0, "stitch-lbr", NULL, CLI_ARG_NONE, "Enable LBR callgraph stitching approach",
		    CLI_NO_LBR("--stitch-lbr")),
	OPT_REFUSED(0, "objdump", "path", CLI_ARG_REQUIRED,
		    "objdump binary to use for disassembly and annotations",
		    "--objdump: tally disassembles with capstone, never objdump"),
	OPT_REFUSED(0, "asm-raw", NULL, CLI_ARG_NONE,
		    "Display raw encoding of assembly instructions (default)",
		    CLI_NO_ANNOTATE_TUI("top", "--asm-raw")),
	OPT_REFUSED('M', "disassembler-style", "disassembler style", CLI_ARG_REQUIRED,
		    "Specify disassembler style (e.g. -M intel for intel syntax)",
		    CLI_NO_ANNOTATE_TUI("top", "-M")),
	OPT_REFUSED(0, "source", NULL, CLI_ARG_NONE,
		    "Interleave source code with assembly code (default)",
		    CLI_NO_ANNOTATE_TUI("top", "--source")),
	OPT_REFUSED(0, "prefix", "prefix", CLI_ARG_REQUIRED,
		    "Add prefix to source file path names in programs (with --prefix-strip)",
		    CLI_NO_ANNOTATE_TUI("top", "--prefix")),
	OPT_REFUSED(0, "prefix-strip", "N", CLI_ARG_REQUIRED,
		    "Strip first N entries of source file path name in programs (with --prefix)",
		    CLI_NO_ANNOTATE_TUI("top", "--prefix-strip")),
	OPT_REFUSED(0, "sym-annotate", "symbol name", CLI_ARG_REQUIRED, "symbol to annotate",
		    CLI_NO_ANNOTATE_TUI("top", "--sym-annotate")),
	OPT_BOOL(0, "all-cgroups", all_cgroups, "Record cgroup events"),
	OPT_BOOL(0, "namespaces", namespaces, "Record namespaces events"),
	OPT_BOOL(0, "group", group, "put the counters into a counter group"),
	OPT_INT(0, "group-sort-idx", group_sort_idx, "n",
		"Sort the output by the event at the index n in group. If n is invalid, sort by "
		"the first event. WARNING: should be used on grouped events."),
	OPT_REFUSED(0, "overwrite", NULL, CLI_ARG_NONE, "Use a backward ring buffer, default: no",
		    "--overwrite (backward rings) is not implemented in tally top"),
	OPT_BOOL('i', "no-inherit", no_inherit, "child tasks do not inherit counters"),
	OPT_STRING(0, "kallsyms", kallsyms, "file", "kallsyms pathname"),
	OPT_DOUBLE(0, "percent-limit", percent_limit, "percent",
		   "Don't show entries under that percent", CLI_RANGED(0, 100)),
	OPT_CALLBACK('d', "delay", "n", "number of seconds to delay between refreshes", opt_delay),
	OPT_INT('E', "entries", entries, "n", "display this many functions",
		CLI_RANGED(1, 1000000)),
	OPT_BOOL('z', "zero", zero, "zero history across updates"),
	OPT_CALLBACK('m', "mmap-pages", "pages", "number of mmap data pages (a power of two, or "
		     "a size such as 512K)", opt_mmap_pages),
	OPT_SET_ENUM(0, "stdio", ui, enum top_ui, TOP_UI_STDIO, "Use the stdio interface"),
	OPT_SET_ENUM(0, "tui", ui, enum top_ui, TOP_UI_TUI, "Use the TUI interface"),
	OPT_LONG(0, "iterations", iterations, "n", "stop after n refreshes",
		 CLI_RANGED(1, 1000000000)),
	OPT_VERBOSE("be more verbose (show counter open errors, etc)"),
	OPT_STRING(0, "fields", fields, "key[,keys...]",
		   "output field(s): overhead overhead_children sample period and the sort keys "
		   "(comm pid dso sym cpu)"),
	OPT_CALLBACK('u', "uid", "user", "user to profile (its processes when top starts)",
		     opt_uid),
	OPT_INT('f', "count-filter", count_filter, "n",
		"Only display functions with more events than this"),
	OPT_INT('r', "realtime", realtime, "priority", "collect data with this RT SCHED_FIFO priority",
		CLI_RANGED(1, 99)),
	OPT_BOOL(0, "force", force, "don't complain, do it"),
	OPT_STRING('k', "vmlinux", vmlinux, "file", "vmlinux pathname (read as a kallsyms file)"),
	OPT_BOOL(0, "ignore-vmlinux", ignore_vmlinux, "don't load vmlinux even if found"),
	OPT_BOOL(0, "demangle-kernel", demangle_kernel,
		 "Enable kernel symbol demangling (kallsyms names are never mangled C++)"),
	OPT_ACCEPTED_SYNTH("top"),
	OPT_REFUSED('D', "dump-symtab", NULL, CLI_ARG_NONE, "dump the symbol table used for profiling",
		    "--dump-symtab dumps the symbol table of --sym-annotate's symbol; tally top has "
		    "no annotate view (use 'tally annotate')"),
	OPT_END(),
};

static const char *const top_usage[] = { "top [<options>]", NULL };

/* Options that exclude each other. 0 or 129 (message printed). */
static int top_check(const struct top_opts *o)
{
	if (o->pid && o->tid)
		return cli_usage_error(&cmd_top, "-p and -t exclude each other");
	if ((o->pid || o->tid) && o->all_cpus)
		return cli_usage_error(&cmd_top, "-a (system-wide) and -p/-t exclude each other");
	if (o->hide_kernel && o->hide_user)
		return cli_usage_error(&cmd_top, "-K and -U together would hide everything");
	if (o->hierarchy && o->fields)
		return cli_usage_error(&cmd_top, "--hierarchy and --fields options cannot be used "
				       "together (the levels are the -s keys)");
	if ((o->hierarchy || o->col_widths.nr) && (o->hide_kernel || o->hide_user))
		return cli_usage_error(&cmd_top, "%s with -K/-U is not implemented: filter with "
				       "--dsos or --comms", o->hierarchy ? "--hierarchy" : "-w");
	if (o->hierarchy && o->col_widths.nr)
		return cli_usage_error(&cmd_top, "--column-widths with --hierarchy is not "
				       "implemented in tally (drop one of them)");
	if (o->uid && (o->pid || o->tid || o->all_cpus))
		return cli_usage_error(&cmd_top, "-u/--uid and -p/-t/-a exclude each other");
	return 0;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

struct loop {
	struct top *t;
	struct top_tui *ui;
	struct pollfd *pfd;
	size_t npfd;
	bool quit;
};

/* Wait until the next refresh is due, draining rings as they fill and handling keys. */
static int wait_until(struct loop *l, double deadline)
{
	for (;;) {
		double left = deadline - now();
		int ms, n;

		if (exiting || l->quit)
			return 0;
		if (left <= 0)
			return 0;
		ms = (int)ceil(left * 1000);
		n = poll(l->pfd, l->npfd, ms);
		if (n < 0) {
			if (errno == EINTR) {
				/* SIGWINCH: ncurses queues KEY_RESIZE; redraw now */
				if (l->ui && top_tui__keys(l->ui, l->t))
					l->quit = true;
				continue;
			}
			cli_error("poll failed: %s", strerror(errno));
			return -1;
		}
		if (!n)
			return 0;
		for (size_t i = 0; i < l->npfd; i++) {
			if (l->pfd[i].fd < 0 || !l->pfd[i].revents)
				continue;
			if (l->ui && l->pfd[i].fd == STDIN_FILENO) {
				if (top_tui__keys(l->ui, l->t))
					l->quit = true;
				continue;
			}
			/* the task went away: its ring says so forever; stop polling it */
			if (l->pfd[i].revents & (POLLHUP | POLLERR))
				l->pfd[i].fd = -1;
		}
		if (top__drain(l->t)) {
			cli_error("out of memory while reading samples");
			return -1;
		}
	}
}

static int run(struct top *t, const struct top_opts *o, bool tui)
{
	struct loop l = { .t = t };
	double last = now();
	long iter = 0;
	int err = 0;

	size_t nr_rings = tally_sampler__nr_rings(t->sampler);

	l.pfd = calloc(nr_rings + 1, sizeof(*l.pfd));
	if (!l.pfd) {
		cli_error("out of memory");
		return 1;
	}
	for (size_t i = 0; i < nr_rings; i++)
		l.pfd[l.npfd++] = (struct pollfd){
			.fd = tally_ring__fd(tally_sampler__ring(t->sampler, i)), .events = POLLIN };
	if (tui) {
		int uierr = top_tui__new(&l.ui);

		if (uierr == -1)	/* -2: it said why */
			cli_error("cannot start the terminal view (TERM=%s); use --stdio",
				  getenv("TERM") ? getenv("TERM") : "unset");
		if (uierr) {
			free(l.pfd);
			return 1;
		}
		l.pfd[l.npfd++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		top_tui__draw(l.ui, t);
	}
	while (!exiting && !l.quit) {
		double tnow;

		if (wait_until(&l, last + o->delay)) {
			err = 1;
			break;
		}
		if (exiting || l.quit)
			break;
		if (top__drain(t)) {
			cli_error("out of memory while reading samples");
			err = 1;
			break;
		}
		tnow = now();
		t->interval_secs = tnow - last;
		last = tnow;
		top__end_interval(t);
		if (top__sort(t)) {
			cli_error("out of memory");
			err = 1;
			break;
		}
		if (l.ui) {
			top_tui__draw(l.ui, t);
		} else if (top_stdio_refresh(t, stdout, isatty(STDOUT_FILENO))) {
			break;	/* stdout is gone (EPIPE) or full: cli_finish_output says so */
		}
		if (o->iterations && ++iter >= o->iterations)
			break;
		top__decay(t, o->zero || top_tui__zero(l.ui));
		/* keys between refreshes redraw the decayed table: keep it sorted */
		if (top__sort(t)) {
			cli_error("out of memory");
			err = 1;
			break;
		}
	}
	top_tui__delete(l.ui);
	free(l.pfd);
	return err;
}

static int top_init(void *opts)
{
	struct top_opts *o = opts;

	o->freq = 4000;
	o->children = -1;
	o->delay = 2.0;
	o->max_stack = 127;
	return 0;
}

static void top_exit(void *opts)
{
	struct top_opts *o = opts;

	free(o->events);
	free(o->uid_pids);
	strlist_free(o->cgroups);
	sample_filter_opts__exit(&o->filter);
}

static int top_exec(void *opts, const struct cli_args *args)
{
	struct top_opts *o = opts;
	struct top t;
	bool tui;
	int ret;

	(void)args;
	ret = top_check(o);
	if (ret)
		return ret;
	tui = o->ui == TOP_UI_TUI ||
	      (o->ui == TOP_UI_AUTO && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO));
	if (tui && (o->hierarchy || o->col_widths.nr)) {
		cli_error("%s is printed by --stdio; tally top's terminal view sizes its own "
			  "columns (use --stdio)", o->hierarchy ? "--hierarchy" : "--column-widths");
		return 1;
	}
	if (tui && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		cli_error("--tui needs a terminal on stdin and stdout; use --stdio");
		return 1;
	}
	memset(&t, 0, sizeof(t));
	if (parse_sort(o->sort ? o->sort : "dso,sym", &t) || (o->fields && parse_fields(o, &t)))
		return 129;
	if (o->uid && (ret = cli_uid_pids(o->uid, &o->uid_pids)))
		return ret;
	if (o->uid)
		o->pid = o->uid_pids;
	if (o->realtime && (ret = cli_realtime(o->realtime, "top")))
		return ret;
	install_signals();
	ret = top__open(&t, o);
	if (ret) {
		top__close(&t);
		return 1;
	}
	ret = run(&t, o, tui);
	top__close(&t);
	return ret;
}

const struct cli_command cmd_top = {
	.name = "top",
	.flags = CLI_LOCALE,
	.summary = "System profiling tool, live",
	.usage = top_usage,
	.footer = " Keys in the full-screen view: q quit, arrows/PgUp/PgDn/Home/End move,\n"
		  " K/U toggle kernel/user symbols, z zero/decay, Tab next event,\n"
		  " Enter callers of the selected symbol (with -g), Esc back.\n",
	.opts = top_options,
	.args_hint = "(tally top samples running tasks; use -p PID to watch one)",
	.size = sizeof(struct top_opts),
	.init = top_init,
	.exec = top_exec,
	.exit = top_exit,
};
