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
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "top.h"

static const char usage[] =
	"\n usage: tally top [<options>]\n\n"
	"    -e, --event <event>       event to sample (default: cycles, or cpu-clock\n"
	"                              where there is no hardware PMU); repeatable\n"
	"    -c, --count <n>           sample every n events\n"
	"    -F, --freq <n>            sample n times per second (default 4000)\n"
	"    -a, --all-cpus            system-wide (the default without -p/-t)\n"
	"    -C, --cpu <cpus>          only these CPUs (\"0-3,5\")\n"
	"    -p, --pid <pids>          only these processes (and their threads)\n"
	"    -t, --tid <tids>          only these threads\n"
	"    -g, --call-graph[=fp]     record call chains; Enter shows a symbol's callers\n"
	"        --children            accumulate callees into callers (default with -g)\n"
	"        --no-children         self overhead only\n"
	"        --max-stack <n>       at most n frames per call chain\n"
	"    -K, --hide_kernel_symbols hide kernel symbols\n"
	"    -U, --hide_user_symbols   hide user symbols\n"
	"    -s, --sort <keys>         comm,pid,tid,dso,sym,cpu (default dso,sym)\n"
	"    -n, --show-nr-samples     show the number of samples\n"
	"        --percent-limit <p>   hide entries below p percent\n"
	"    -d, --delay <secs>        refresh every secs seconds (default 2)\n"
	"    -E, --entries <n>         show n entries (--stdio)\n"
	"    -z, --zero                zero the samples at each refresh instead of decaying\n"
	"    -m, --mmap-pages <n>      ring buffer pages per CPU (power of two, or 512K/1M)\n"
	"        --stdio               print one table per refresh\n"
	"        --tui                 the full-screen view (needs a terminal)\n"
	"        --iterations <n>      stop after n refreshes\n"
	"    -v, --verbose             more messages\n\n"
	" Keys in the full-screen view: q quit, arrows/PgUp/PgDn/Home/End move,\n"
	" K/U toggle kernel/user symbols, z zero/decay, Tab next event,\n"
	" Enter callers of the selected symbol (with -g), Esc back.\n\n";

enum {
	OPT_STDIO = 256,
	OPT_TUI,
	OPT_ITER,
	OPT_CHILDREN,
	OPT_NO_CHILDREN,
	OPT_PERCENT,
	OPT_MAX_STACK,
};

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

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
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

/* Returns 0 to go on, 1 for -h (exit 0), -1 on a usage error. */
static int parse_options(int argc, char **argv, struct top_opts *o)
{
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "count", required_argument, NULL, 'c' },
		{ "freq", required_argument, NULL, 'F' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "call-graph", optional_argument, NULL, 'g' },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },
		{ "max-stack", required_argument, NULL, OPT_MAX_STACK },
		{ "hide_kernel_symbols", no_argument, NULL, 'K' },
		{ "hide_user_symbols", no_argument, NULL, 'U' },
		{ "sort", required_argument, NULL, 's' },
		{ "show-nr-samples", no_argument, NULL, 'n' },
		{ "percent-limit", required_argument, NULL, OPT_PERCENT },
		{ "delay", required_argument, NULL, 'd' },
		{ "entries", required_argument, NULL, 'E' },
		{ "zero", no_argument, NULL, 'z' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "tui", no_argument, NULL, OPT_TUI },
		{ "iterations", required_argument, NULL, OPT_ITER },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "e:c:F:aC:p:t:gKUs:nd:E:zm:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': {
			const char **ev = realloc(o->events, (o->nr_events + 1) * sizeof(*ev));

			if (!ev) {
				cli_error("out of memory");
				return -1;
			}
			o->events = ev;
			o->events[o->nr_events++] = optarg;
			break;
		}
		case 'c':
			if (parse_uint(optarg, UINT64_MAX, &v) || !v) {
				cli_error("-c needs a positive event count, not '%s'", optarg);
				return -1;
			}
			o->count = v;
			break;
		case 'F':
			if (parse_uint(optarg, 1000000, &v) || !v) {
				cli_error("-F needs a frequency in Hz (1..1000000), not '%s'", optarg);
				return -1;
			}
			o->freq = (unsigned)v;
			break;
		case 'a':
			o->all_cpus = true;
			break;
		case 'C':
			o->cpu_list = optarg;
			break;
		case 'p':
			o->pid = optarg;
			break;
		case 't':
			o->tid = optarg;
			break;
		case 'g':
			if (optarg && strcmp(optarg, "fp") && strncmp(optarg, "graph", 5) &&
			    strncmp(optarg, "caller", 6)) {
				cli_error("--call-graph=%s: tally top unwinds with frame pointers "
					  "only (use -g or --call-graph=fp)", optarg);
				return -1;
			}
			o->callgraph = true;
			break;
		case OPT_CHILDREN:
			o->children = 1;
			break;
		case OPT_NO_CHILDREN:
			o->children = 0;
			break;
		case OPT_MAX_STACK:
			if (parse_uint(optarg, 1024, &v)) {
				cli_error("--max-stack needs a number of frames, not '%s'", optarg);
				return -1;
			}
			o->max_stack = (unsigned)v;
			break;
		case 'K':
			o->hide_kernel = true;
			break;
		case 'U':
			o->hide_user = true;
			break;
		case 's':
			o->sort = optarg;
			break;
		case 'n':
			o->show_nr_samples = true;
			break;
		case OPT_PERCENT: {
			char *end;

			o->percent_limit = strtod(optarg, &end);
			if (*end || end == optarg || !(o->percent_limit >= 0 && o->percent_limit <= 100)) {
				cli_error("--percent-limit needs a percentage, not '%s'", optarg);
				return -1;
			}
			break;
		}
		case 'd': {
			char *end;

			o->delay = strtod(optarg, &end);
			if (*end || end == optarg || !(o->delay >= 0.01 && o->delay <= 86400)) {
				cli_error("-d needs a refresh delay in seconds (0.01 or more), not '%s'",
					  optarg);
				return -1;
			}
			break;
		}
		case 'E':
			if (parse_uint(optarg, 1000000, &v) || !v) {
				cli_error("-E needs a number of entries, not '%s'", optarg);
				return -1;
			}
			o->entries = (int)v;
			break;
		case 'z':
			o->zero = true;
			break;
		case 'm':
			if (parse_pages(optarg, &o->mmap_pages)) {
				cli_error("-m needs a power-of-two number of pages or a size like 512K, "
					  "not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_STDIO:
			o->ui = TOP_UI_STDIO;
			break;
		case OPT_TUI:
			o->ui = TOP_UI_TUI;
			break;
		case OPT_ITER:
			if (parse_uint(optarg, 1000000000, &v) || !v) {
				cli_error("--iterations needs a positive number, not '%s'", optarg);
				return -1;
			}
			o->iterations = (long)v;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			cli_usage(stdout, usage);
			return 1;
		default:
			cli_usage(stderr, usage);
			return -1;
		}
	}
	if (optind < argc) {
		cli_error("top: unexpected argument '%s' (tally top samples running tasks; "
			  "use -p PID to watch one)", argv[optind]);
		return -1;
	}
	if (o->pid && o->tid) {
		cli_error("-p and -t exclude each other");
		return -1;
	}
	if ((o->pid || o->tid) && o->all_cpus) {
		cli_error("-a (system-wide) and -p/-t exclude each other");
		return -1;
	}
	if (o->hide_kernel && o->hide_user) {
		cli_error("-K and -U together would hide everything");
		return -1;
	}
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

	l.pfd = calloc(t->nr_rings + 1, sizeof(*l.pfd));
	if (!l.pfd) {
		cli_error("out of memory");
		return 1;
	}
	for (size_t i = 0; i < t->nr_rings; i++)
		l.pfd[l.npfd++] = (struct pollfd){ .fd = t->rings[i].fd, .events = POLLIN };
	if (tui) {
		if (top_tui__new(&l.ui)) {
			cli_error("cannot start the terminal view (TERM=%s); use --stdio",
				  getenv("TERM") ? getenv("TERM") : "unset");
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

int cmd_top(int argc, char **argv)
{
	struct top_opts o = {
		.freq = 4000,
		.children = -1,
		.sort = "dso,sym",
		.delay = 2.0,
		.max_stack = 127,
	};
	struct top t;
	bool tui;
	int ret;

	ret = parse_options(argc, argv, &o);
	if (ret) {
		free(o.events);
		return ret > 0 ? 0 : 129;
	}
	tui = o.ui == TOP_UI_TUI ||
	      (o.ui == TOP_UI_AUTO && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO));
	if (tui && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		cli_error("--tui needs a terminal on stdin and stdout; use --stdio");
		free(o.events);
		return 1;
	}
	memset(&t, 0, sizeof(t));
	if (parse_sort(o.sort, &t)) {
		free(o.events);
		return 129;
	}
	install_signals();
	ret = top__open(&t, &o);
	if (ret) {
		top__close(&t);
		free(o.events);
		return 1;
	}
	ret = run(&t, &o, tui);
	top__close(&t);
	free(o.events);
	return ret;
}
