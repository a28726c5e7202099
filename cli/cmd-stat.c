/*
 * tally stat: count events for a command, processes, threads or CPUs and print the
 * totals like perf stat 6.1 (human, CSV, JSON) or as one strict JSON document.
 *
 * Reads top to bottom: options → events (with perf stat's attr policy) → targets →
 * for each run (-r): fork the workload, open counters, start, wait (printing
 * intervals with -I), read → reduce the per-(cpu, thread) readings into rows per
 * aggregation bucket → print. The library does the counting (tally_counters); this
 * file decides what to count and when.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "open-error.h"
#include "stat.h"
#include "workload.h"
#include "tally/counter.h"
#include "tally/cpumap.h"
#include "tally/event.h"
#include "tally/topology.h"
#include "tally/format.h"
#include "tally/writer.h"
#include "tally-config.h"

struct stat_opts {
	char **event_specs;
	int nr_event_specs;
	int detail;
	bool system_wide;
	bool no_inherit;
	enum stat_aggr aggr;
	const char *cpu_list, *pid_list, *tid_list;
	int repeat;
	long interval_ms;
	long interval_count;
	bool summary, no_csv_summary;
	long timeout_ms, delay_ms;
	const char *csv_sep;
	bool json, strict_json;
	const char *output;
	bool append;
	int log_fd;
	int big_num;		/* -1: default (on) */
	bool null_run;
	bool no_merge;		/* --no-merge: one line per PMU of a merged name */
	const char *sysfs;	/* --sysfs: PMUs and tracepoints under this root (tests) */
	char **argv;		/* the workload */
	int argc;
	const char *record_path;	/* tally stat record -o PATH ("-": stdout) */
	char **cmdline;			/* the whole command line, for CMDLINE */
	int cmdline_argc;
};

/* State of one counting session. */
struct stat_run {
	struct stat_opts *opts;
	struct stat_evsel *ev;
	int nr_ev;
	struct tally_cpumap *cpus;
	struct tally_threadmap *threads;
	struct tally_topology *topo;
	struct tally_counters *set;
	int *set_idx;		/* ev index → counters index */
	struct stat_aggr_id *ids;
	int nr_ids;
	int *pair_id;		/* pair → bucket */
	struct stat_row *rows;	/* nr_ev x nr_ids */
	struct tally_count *prev;	/* -I: last reading per (event, pair) */
	struct tally_count *cur;	/* -I: this interval's readings per (event, pair) */
	struct stat_out out;
	/* -r accumulators per row */
	double *acc_mean, *acc_m2, *acc_ena, *acc_run;
	int *acc_counted;
	double wall_mean, wall_m2;
	int nr_runs_done;
	struct timespec start;
	double last_wall_ns;
	double span_ns;		/* what the rows cover: the run or the interval (duration_time) */
	bool stopped_workload;	/* --timeout / --interval-count ended the command */
	struct rusage ru;	/* the workload's, from wait4 */
	bool have_ru;
	double ru_user_mean, ru_sys_mean;	/* user_time / system_time (ns), mean over runs */
	int nr_ru;
	int exit_status;
	bool workload_ran;
};

static const char stat_usage[] =
	"\n usage: tally stat [<options>] [<command>]\n\n"
	"    -e, --event <event>   event selector (see 'tally list'); {a,b} is a group\n"
	"    -d, --detailed        detailed run: add cache events (-dd, -ddd for more)\n"
	"    -a, --all-cpus        system-wide collection from all CPUs\n"
	"    -C, --cpu <cpu>       list of CPUs to monitor (implies -a)\n"
	"    -A, --no-aggr         do not aggregate counts across CPUs\n"
	"    -p, --pid <pid>       stat events on existing process id(s)\n"
	"    -t, --tid <tid>       stat events on existing thread id(s)\n"
	"    -i, --no-inherit      child tasks do not inherit counters\n"
	"        --per-thread      aggregate counts per thread\n"
	"        --per-core        aggregate counts per physical processor core\n"
	"        --per-die         aggregate counts per processor die\n"
	"        --per-socket      aggregate counts per processor socket\n"
	"        --per-node        aggregate counts per NUMA node\n"
	"    -r, --repeat <n>      repeat command and print average + stddev (max: 100)\n"
	"    -I, --interval-print <ms>  print counts every <ms> milliseconds\n"
	"        --interval-count <n>   stop after <n> intervals\n"
	"        --summary         print a summary after interval mode\n"
	"        --no-csv-summary  don't print the 'summary' word in CSV summary lines\n"
	"        --timeout <ms>    stop after <ms> milliseconds\n"
	"    -D, --delay <ms>      start counting <ms> milliseconds after program start\n"
	"    -x, --field-separator <sep>  print counts with a separator (CSV)\n"
	"    -j, --json            print counts in perf's JSON lines format\n"
	"        --strict-json     print one valid JSON document (C-locale numbers)\n"
	"    -o, --output <file>   write the counts to a file\n"
	"        --append          append to the output file\n"
	"        --log-fd <n>      write the counts to file descriptor n\n"
	"    -B, --big-num         print large numbers with thousands separators\n"
	"        --no-big-num      print plain numbers\n"
	"    -n, --null            null run: only time the command\n"
	"        --no-merge        do not merge the counts of one event on several PMUs\n"
	"        --sysfs <dir>     read PMUs and tracepoints under <dir> instead of /sys\n"
	"\n"
	"    tally stat record [-o FILE|-] <command>    write counts as a perf.data file\n"
	"    tally stat report [-i FILE|-]              print counts from a perf.data file\n\n";

enum {
	OPT_PER_THREAD = 256, OPT_PER_CORE, OPT_PER_DIE, OPT_PER_SOCKET, OPT_PER_NODE,
	OPT_INTERVAL_COUNT, OPT_SUMMARY, OPT_NO_CSV_SUMMARY, OPT_TIMEOUT, OPT_APPEND,
	OPT_LOG_FD, OPT_NO_BIG_NUM, OPT_STRICT_JSON, OPT_NO_MERGE, OPT_SYSFS,
};

static const struct option stat_long[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "detailed", no_argument, NULL, 'd' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "no-aggr", no_argument, NULL, 'A' },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "no-inherit", no_argument, NULL, 'i' },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "per-core", no_argument, NULL, OPT_PER_CORE },
	{ "per-die", no_argument, NULL, OPT_PER_DIE },
	{ "per-socket", no_argument, NULL, OPT_PER_SOCKET },
	{ "per-node", no_argument, NULL, OPT_PER_NODE },
	{ "repeat", required_argument, NULL, 'r' },
	{ "interval-print", required_argument, NULL, 'I' },
	{ "interval-count", required_argument, NULL, OPT_INTERVAL_COUNT },
	{ "summary", no_argument, NULL, OPT_SUMMARY },
	{ "no-csv-summary", no_argument, NULL, OPT_NO_CSV_SUMMARY },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "delay", required_argument, NULL, 'D' },
	{ "field-separator", required_argument, NULL, 'x' },
	{ "json", no_argument, NULL, 'j' },
	{ "strict-json", no_argument, NULL, OPT_STRICT_JSON },
	{ "output", required_argument, NULL, 'o' },
	{ "append", no_argument, NULL, OPT_APPEND },
	{ "log-fd", required_argument, NULL, OPT_LOG_FD },
	{ "big-num", no_argument, NULL, 'B' },
	{ "no-big-num", no_argument, NULL, OPT_NO_BIG_NUM },
	{ "null", no_argument, NULL, 'n' },
	{ "no-merge", no_argument, NULL, OPT_NO_MERGE },
	{ "sysfs", required_argument, NULL, OPT_SYSFS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* ---- signals ---------------------------------------------------------------- */

static volatile sig_atomic_t child_pid = -1;
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
	exiting = 1;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits return EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
}

/* ---- options ------------------------------------------------------------------ */

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int parse_opts(int argc, char **argv, struct stat_opts *o)
{
	long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->repeat = 1;
	o->big_num = -1;
	o->log_fd = -1;
	o->aggr = AGGR_GLOBAL;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+e:daC:Ap:t:ir:I:D:x:jo:Bnh", stat_long, NULL)) != -1) {
		switch (c) {
		case 'e': {
			char **n = realloc(o->event_specs, (size_t)(o->nr_event_specs + 1) * sizeof(*n));

			if (!n)
				return -ENOMEM;
			o->event_specs = n;
			n[o->nr_event_specs++] = optarg;
			break;
		}
		case 'd': o->detail++; break;
		case 'a': o->system_wide = true; break;
		case 'C': o->cpu_list = optarg; o->system_wide = true; break;
		case 'A': o->aggr = AGGR_NONE; break;
		case 'p': o->pid_list = optarg; break;
		case 't': o->tid_list = optarg; break;
		case 'i': o->no_inherit = true; break;
		case OPT_PER_THREAD: o->aggr = AGGR_THREAD; break;
		case OPT_PER_CORE: o->aggr = AGGR_CORE; break;
		case OPT_PER_DIE: o->aggr = AGGR_DIE; break;
		case OPT_PER_SOCKET: o->aggr = AGGR_SOCKET; break;
		case OPT_PER_NODE: o->aggr = AGGR_NODE; break;
		case 'r':
			if (!parse_long(optarg, 1, 100, &v)) {
				cli_error("invalid -r/--repeat '%s': expected a count from 1 to 100", optarg);
				return 129;
			}
			o->repeat = (int)v;
			break;
		case 'I':
			if (!parse_long(optarg, 1, LONG_MAX / 1000000, &v) || v < 10) {
				cli_error("invalid -I/--interval-print '%s': expected milliseconds >= 10",
					  optarg);
				return 129;
			}
			o->interval_ms = v;
			break;
		case OPT_INTERVAL_COUNT:
			if (!parse_long(optarg, 1, LONG_MAX, &v)) {
				cli_error("invalid --interval-count '%s': expected a positive count", optarg);
				return 129;
			}
			o->interval_count = v;
			break;
		case OPT_SUMMARY: o->summary = true; break;
		case OPT_NO_CSV_SUMMARY: o->no_csv_summary = true; break;
		case OPT_TIMEOUT:
			if (!parse_long(optarg, 10, LONG_MAX / 1000000, &v)) {
				cli_error("invalid --timeout '%s': expected milliseconds >= 10", optarg);
				return 129;
			}
			o->timeout_ms = v;
			break;
		case 'D':
			if (!parse_long(optarg, -1, LONG_MAX / 1000000, &v)) {
				cli_error("invalid -D/--delay '%s': expected milliseconds", optarg);
				return 129;
			}
			o->delay_ms = v;
			break;
		case 'x': o->csv_sep = optarg; break;
		case 'j': o->json = true; break;
		case OPT_STRICT_JSON: o->strict_json = true; break;
		case 'o': o->output = optarg; break;
		case OPT_APPEND: o->append = true; break;
		case OPT_LOG_FD:
			if (!parse_long(optarg, 0, INT_MAX, &v)) {
				cli_error("invalid --log-fd '%s': expected a file descriptor number", optarg);
				return 129;
			}
			o->log_fd = (int)v;
			break;
		case 'B': o->big_num = 1; break;
		case OPT_NO_BIG_NUM: o->big_num = 0; break;
		case 'n': o->null_run = true; break;
		case OPT_NO_MERGE: o->no_merge = true; break;
		case OPT_SYSFS: o->sysfs = optarg; break;
		case 'h':
			cli_usage(stdout, stat_usage);
			return -1;
		default:
			if (optopt && strchr("eCptrIDxo", optopt))
				cli_error("option -%c needs a value", optopt);
			else
				cli_error("unknown option '%s'", argv[optind - 1]);
			cli_usage(stderr, stat_usage);
			return 129;
		}
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	if (o->output && o->log_fd >= 0) {
		cli_error("--output and --log-fd cannot be used together");
		return 129;
	}
	if (o->append && !o->output && o->log_fd < 0) {
		cli_error("--append needs --output FILE or --log-fd N");
		return 129;
	}
	if ((o->csv_sep ? 1 : 0) + o->json + o->strict_json > 1) {
		cli_error("choose one output format: -x SEP, -j/--json or --strict-json");
		return 129;
	}
	if (o->repeat > 1 && !o->argc) {
		cli_error("-r/--repeat needs a command to run");
		return 129;
	}
	if (o->repeat > 1 && o->interval_ms) {
		cli_error("-r/--repeat and -I/--interval-print cannot be used together");
		return 129;
	}
	/* no command and no target: the whole system, like perf */
	if (!o->argc && !o->pid_list && !o->tid_list)
		o->system_wide = true;
	if (o->aggr != AGGR_GLOBAL && o->aggr != AGGR_THREAD && !o->system_wide) {
		cli_error("-A/--no-aggr and --per-core/die/socket/node need -a or -C (per-CPU counting)");
		return 129;
	}
	if (o->aggr == AGGR_THREAD && !o->pid_list && !o->tid_list &&
	    (!o->system_wide || o->cpu_list)) {
		cli_error("--per-thread counts with -p PID, -t TID, -a or no target (not with -C "
			  "or a command alone)");
		return 129;
	}
	return 0;
}

/* ---- events ------------------------------------------------------------------- */

static const char *const default_events[] = {
	"task-clock", "context-switches", "cpu-migrations", "page-faults",
	"cycles", "instructions", "branches", "branch-misses",
};
static const char *const detail1[] = {
	"L1-dcache-loads", "L1-dcache-load-misses", "LLC-loads", "LLC-load-misses",
};
static const char *const detail2[] = {
	"L1-icache-loads", "L1-icache-load-misses", "dTLB-loads", "dTLB-load-misses",
	"iTLB-loads", "iTLB-load-misses",
};
static const char *const detail3[] = {
	"L1-dcache-prefetches", "L1-dcache-prefetch-misses",
};

static int add_evsel(struct stat_run *r, const char *name, const struct perf_event_attr *attr,
		     int leader)
{
	struct stat_evsel *n = realloc(r->ev, (size_t)(r->nr_ev + 1) * sizeof(*n)), *e;

	if (!n)
		return -ENOMEM;
	r->ev = n;
	e = &n[r->nr_ev];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->attr = *attr;
	e->leader = leader < 0 ? r->nr_ev : leader;
	e->shown_with = -1;
	stat_evsel_classify(e);
	r->nr_ev++;
	return 0;
}

/* Parse one -e list with the shared event parser and append its events. */
static int parse_spec(struct stat_run *r, struct tally_evlist *list, const char *spec)
{
	struct tally_parse_error perr;
	size_t first = list->nr;
	int base = r->nr_ev, err;

	memset(&perr, 0, sizeof(perr));
	err = tally_evlist__add(list, spec, &perr);
	if (err) {
		char msg[1024];

		if (err == -ENOMEM)
			return err;
		tally_parse_error__format(&perr, spec, msg, sizeof(msg));
		fflush(stdout);
		fprintf(stderr, "%s\nRun 'tally list' for a list of valid events\n", msg);
		return 129;
	}
	for (size_t i = first; i < list->nr; i++) {
		const struct tally_event *e = &list->ev[i];
		int leader = e->leader == (int)i ? -1 : base + (e->leader - (int)first);

		if (add_evsel(r, e->name, &e->attr, leader))
			return -ENOMEM;
		r->ev[r->nr_ev - 1].tool = e->tool;
		r->ev[r->nr_ev - 1].merge = e->merge;
		r->ev[r->nr_ev - 1].name_set = e->name_set;
		if (e->sysfs_pmu && e->pmu_name &&
		    !(r->ev[r->nr_ev - 1].pmu_name = strdup(e->pmu_name)))
			return -ENOMEM;
		if (e->tool)
			r->ev[r->nr_ev - 1].unit = "ns";
		if (e->unit && *e->unit) {
			r->ev[r->nr_ev - 1].unit_buf = strdup(e->unit);
			r->ev[r->nr_ev - 1].unit = r->ev[r->nr_ev - 1].unit_buf ?
						   r->ev[r->nr_ev - 1].unit_buf : "";
			r->ev[r->nr_ev - 1].scale = e->scale;
		}
	}
	return 0;
}

static int add_names(struct stat_run *r, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct perf_event_attr a;

		if (stat_event_lookup(names[i], &a) < 0)
			return -ENOENT;
		a.exclude_guest = 1;
		if (add_evsel(r, names[i], &a, -1))
			return -ENOMEM;
	}
	return 0;
}

static int build_events(struct stat_run *r)
{
	struct stat_opts *o = r->opts;
	int err;

	if (o->nr_event_specs) {
		struct tally_evlist *list;

		err = tally_evlist__new(&list);
		if (!err && o->sysfs)
			err = tally_evlist__set_sysfs_root(list, o->sysfs);
		if (err) {
			tally_evlist__delete(list);
			return err;
		}
		for (int i = 0; i < o->nr_event_specs && !err; i++)
			err = parse_spec(r, list, o->event_specs[i]);
		tally_evlist__delete(list);
		if (err)
			return err;
	}
	if (!r->nr_ev && !o->null_run) {
		err = add_names(r, default_events, sizeof(default_events) / sizeof(*default_events));
		/* perf 6.1 counts cpu-clock instead of task-clock for whole CPUs */
		if (!err && o->system_wide) {
			struct stat_evsel *c = &r->ev[r->nr_ev - 8];
			char *n = strdup("cpu-clock");

			if (!n)
				return -ENOMEM;
			free(c->name);
			c->name = n;
			c->attr.config = PERF_COUNT_SW_CPU_CLOCK;
		}
		if (!err && o->detail >= 1)
			err = add_names(r, detail1, sizeof(detail1) / sizeof(*detail1));
		if (!err && o->detail >= 2)
			err = add_names(r, detail2, sizeof(detail2) / sizeof(*detail2));
		if (!err && o->detail >= 3)
			err = add_names(r, detail3, sizeof(detail3) / sizeof(*detail3));
		if (err)
			return err;
	}
	/* perf stat's policy on top of the parsed attrs (checked with perf stat -vv). */
	for (int i = 0; i < r->nr_ev; i++) {
		struct perf_event_attr *a = &r->ev[i].attr;
		bool leader = r->ev[i].leader == i;

		a->size = sizeof(*a);
		a->sample_type = PERF_SAMPLE_IDENTIFIER;
		a->disabled = leader;
		a->inherit = !o->no_inherit;
		a->enable_on_exec = leader && o->argc && !o->system_wide && !o->pid_list &&
				    !o->tid_list && o->delay_ms == 0;
	}
	return 0;
}

/* ---- one line for one name on several PMUs -------------------------------------- */

/* perf's uniquify_event_name: "uncore_imc_0/cas_count_read/", "tsc [msr]". */
static int unique_name(struct stat_evsel *e)
{
	const char *slash = strchr(e->name, '/');
	char *n;
	int len;

	if (e->name_set || !e->pmu_name || !strncmp(e->name, e->pmu_name, strlen(e->pmu_name)))
		return 0;
	len = slash ? asprintf(&n, "%s%s", e->pmu_name, slash) :
		      asprintf(&n, "%s [%s]", e->name, e->pmu_name);
	if (len < 0)
		return -ENOMEM;
	free(e->name);
	e->name = n;
	return 0;
}

/*
 * perf 6.1 shows the events a name expanded to over several PMUs (uncore_imc_0, _1 …,
 * or a bare alias) as one line: each later event with the same name, scale, unit and
 * clock-ness on another PMU is added into the first one's line. --no-merge keeps a line
 * per event, named after its PMU. --per-thread does neither (perf prints each event).
 */
static int plan_merges(struct stat_run *r)
{
	if (r->opts->aggr == AGGR_THREAD)
		return 0;
	for (int e = 0; e < r->nr_ev; e++) {
		struct stat_evsel *c = &r->ev[e];

		if (r->opts->no_merge) {
			if (unique_name(c))
				return -ENOMEM;
			continue;
		}
		if (!c->merge || c->shown_with >= 0)
			continue;
		for (int x = e + 1; x < r->nr_ev; x++) {
			struct stat_evsel *a = &r->ev[x];

			if (a->shown_with < 0 && !strcmp(a->name, c->name) && a->scale == c->scale &&
			    !strcmp(a->unit, c->unit) && (a->kind == K_CLOCK) == (c->kind == K_CLOCK) &&
			    strcmp(a->pmu_name ? a->pmu_name : "", c->pmu_name ? c->pmu_name : ""))
				a->shown_with = e;
		}
	}
	return 0;
}

/* ---- targets and buckets ------------------------------------------------------ */

static void read_comm(pid_t tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "%s", "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

static int cmp_ids(const void *x, const void *y)
{
	const struct stat_aggr_id *a = x, *b = y;

	if (a->socket != b->socket)
		return a->socket - b->socket;
	if (a->die != b->die)
		return a->die - b->die;
	if (a->node != b->node)
		return a->node - b->node;
	return a->core - b->core;
}

static struct stat_aggr_id cpu_key(struct stat_run *r, int cpu)
{
	struct stat_aggr_id k;
	const struct tally_cpu_topo *t = tally_topology__cpu(r->topo, cpu);

	memset(&k, 0, sizeof(k));
	k.cpu = cpu;
	if (t) {
		k.socket = t->socket;
		k.die = t->die;
		k.node = t->node;
		k.core = t->core;
	}
	switch (r->opts->aggr) {
	case AGGR_SOCKET: k.die = 0; k.node = 0; k.core = 0; break;
	case AGGR_DIE: k.node = 0; k.core = 0; break;
	case AGGR_CORE: k.node = 0; break;
	case AGGR_NODE: k.socket = 0; k.die = 0; k.core = 0; break;
	default: break;
	}
	return k;
}

static int build_buckets(struct stat_run *r)
{
	enum stat_aggr m = r->opts->aggr;
	size_t ncpu = r->cpus->nr, nthr = r->threads->nr, np = ncpu * nthr;

	r->pair_id = calloc(np, sizeof(*r->pair_id));
	r->ids = calloc(np ? np : 1, sizeof(*r->ids));
	if (!r->pair_id || !r->ids)
		return -ENOMEM;
	if (m == AGGR_GLOBAL) {
		r->nr_ids = 1;
		r->ids[0].nr = (int)ncpu;
		return 0;
	}
	if (m == AGGR_THREAD) {
		r->nr_ids = (int)nthr;
		for (size_t t = 0; t < nthr; t++) {
			r->ids[t].tid = r->threads->tid[t];
			r->ids[t].thread_idx = (int)t;
			read_comm(r->threads->tid[t], r->ids[t].comm, sizeof(r->ids[t].comm));
			for (size_t c = 0; c < ncpu; c++)
				r->pair_id[c * nthr + t] = (int)t;
		}
		return 0;
	}
	if (m == AGGR_NONE) {
		r->nr_ids = (int)ncpu;
		for (size_t c = 0; c < ncpu; c++) {
			r->ids[c].cpu = r->cpus->cpu[c];
			r->ids[c].nr = 1;
			for (size_t t = 0; t < nthr; t++)
				r->pair_id[c * nthr + t] = (int)c;
		}
		return 0;
	}
	if (!r->topo && tally_topology__read(NULL, &r->topo) < 0)
		r->topo = NULL;
	/* core/die/socket/node: unique keys, sorted */
	for (size_t c = 0; c < ncpu; c++) {
		struct stat_aggr_id k = cpu_key(r, r->cpus->cpu[c]);
		int i;

		for (i = 0; i < r->nr_ids; i++)
			if (!cmp_ids(&r->ids[i], &k))
				break;
		if (i == r->nr_ids)
			r->ids[r->nr_ids++] = k;
	}
	qsort(r->ids, (size_t)r->nr_ids, sizeof(*r->ids), cmp_ids);
	for (size_t c = 0; c < ncpu; c++) {
		struct stat_aggr_id k = cpu_key(r, r->cpus->cpu[c]);

		for (int i = 0; i < r->nr_ids; i++) {
			if (cmp_ids(&r->ids[i], &k))
				continue;
			r->ids[i].nr++;
			for (size_t t = 0; t < nthr; t++)
				r->pair_id[c * nthr + t] = i;
		}
	}
	return 0;
}

static int build_targets(struct stat_run *r, pid_t workload_pid)
{
	struct stat_opts *o = r->opts;
	int err;

	tally_counters__delete(r->set);	/* it borrows the maps */
	r->set = NULL;
	tally_cpumap__delete(r->cpus);
	tally_threadmap__delete(r->threads);
	r->cpus = NULL;
	r->threads = NULL;
	if (o->system_wide && o->aggr == AGGR_THREAD) {
		/* perf: every thread of the system, each counted wherever it runs */
		err = tally_cpumap__any(&r->cpus);
		if (!err)
			err = tally_threadmap__all(&r->threads);
		return err;
	}
	if (o->system_wide) {
		size_t bad = 0;

		if (o->cpu_list) {
			err = tally_cpumap__parse(o->cpu_list, &r->cpus, &bad);
			if (err == -EINVAL) {
				cli_error("invalid CPU list '%s' (at '%s'): expected e.g. 0-3,5",
					  o->cpu_list, o->cpu_list + bad);
				return 129;
			}
		} else {
			err = tally_cpumap__online(&r->cpus);
		}
		if (!err)
			err = tally_threadmap__single(-1, &r->threads);
		return err;
	}
	err = tally_cpumap__any(&r->cpus);
	if (err)
		return err;
	if (o->pid_list) {
		pid_t bad = 0;

		err = tally_threadmap__from_pids(o->pid_list, &r->threads, &bad);
		if (err == -ESRCH || err == -EINVAL) {
			if (bad > 0)
				cli_error("no such process: %d (from -p '%s')", (int)bad, o->pid_list);
			else
				cli_error("invalid -p '%s': expected PID[,PID…] of running processes",
					  o->pid_list);
			return 1;
		}
		return err;
	}
	if (o->tid_list) {
		err = tally_threadmap__parse_tids(o->tid_list, &r->threads);
		if (err == -EINVAL) {
			cli_error("invalid -t '%s': expected TID[,TID…]", o->tid_list);
			return 129;
		}
		if (!err) {
			for (size_t i = 0; i < r->threads->nr; i++) {
				if (kill(r->threads->tid[i], 0) < 0 && errno == ESRCH) {
					cli_error("no such thread: %d (from -t '%s')",
						  (int)r->threads->tid[i], o->tid_list);
					return 1;
				}
			}
		}
		return err;
	}
	return tally_threadmap__single(workload_pid, &r->threads);
}

/* ---- counting ------------------------------------------------------------------ */

static int open_counters(struct stat_run *r)
{
	int err;

	tally_counters__delete(r->set);
	r->set = NULL;
	err = tally_counters__new(r->cpus, r->threads, &r->set);
	if (err)
		return err;
	free(r->set_idx);
	r->set_idx = calloc((size_t)r->nr_ev + 1, sizeof(int));
	if (!r->set_idx)
		return -ENOMEM;
	for (int i = 0; i < r->nr_ev; i++) {
		int lead = r->ev[i].leader == i ? -1 : r->set_idx[r->ev[i].leader];

		err = tally_counters__add(r->set, &r->ev[i].attr, lead, &r->set_idx[i]);
		if (err)
			return err;
	}
	/* like perf: a per-task count refused for the kernel part is retried as :u */
	r->set->user_only_fallback = !r->opts->system_wide;
	err = tally_counters__open(r->set, 0);
	for (int i = 0; i < r->nr_ev; i++) {
		struct tally_counter *c = &r->set->ev[r->set_idx[i]];

		r->ev[i].supported = c->open_err == 0;
		if (c->user_only && !strchr(r->ev[i].name, ':')) {
			char *n = malloc(strlen(r->ev[i].name) + 3);

			if (n) {
				sprintf(n, "%s:u", r->ev[i].name);
				free(r->ev[i].name);
				r->ev[i].name = n;
			}
		}
	}
	if (err) {
		struct cli_open_ctx ctx = { r->opts->system_wide, -1, -1, false };
		bool other_task = r->opts->pid_list || r->opts->tid_list;
		int fe = r->set->fail_event;

		if (r->set->fail_cpu_idx >= 0)
			ctx.cpu = r->cpus->cpu[r->set->fail_cpu_idx];
		if (r->set->fail_thread_idx >= 0 && other_task)
			ctx.pid = r->threads->tid[r->set->fail_thread_idx];
		if (fe >= 0)
			ctx.exclude_kernel = r->set->ev[fe].attr->exclude_kernel;
		for (int i = 0; i < r->nr_ev; i++)
			if (r->set_idx[i] == fe)
				fe = i;
		cli_open_error(fe >= 0 && fe < r->nr_ev ? r->ev[fe].name : "?", err, &ctx);
		return 1;
	}
	if (verbose) {
		for (int i = 0; i < r->nr_ev; i++)
			if (!r->ev[i].supported)
				fprintf(stderr, "tally: %s: not supported (%s)\n", r->ev[i].name,
					strerror(-r->set->ev[r->set_idx[i]].open_err));
	}
	return 0;
}

/* ---- readings into rows, by perf 6.1's rules -------------------------------------- */

/* perf_counts_values__scale: val * ena / run in doubles, truncated. A bucket's sum can
 * differ from the exact product in its last digit, and perf users compare digits. */
static uint64_t perf_scale(const struct tally_count *c)
{
	if (c->run == 0)
		return 0;
	if (c->run >= c->ena)
		return c->val;
	return (uint64_t)((double)c->val * (double)c->ena / (double)c->run);
}

struct acc {
	uint64_t val, ena, run;
	int nr;
};

/* The readings of this report: the totals, or (-I) what changed since the last one. */
static const struct tally_count *readings(struct stat_run *r, int e, bool delta)
{
	struct tally_counter *c = &r->set->ev[r->set_idx[e]];
	size_t np = tally_counters__nr_pairs(r->set);

	struct tally_count *d = &r->cur[(size_t)e * np];

	if (!delta)
		return c->count;
	for (size_t k = 0; k < np; k++) {
		struct tally_count *p = &r->prev[(size_t)e * np + k], cur = c->count[k];

		d[k].val = cur.val - p->val;
		d[k].ena = cur.ena - p->ena;
		d[k].run = cur.run - p->run;
		*p = cur;
	}
	return d;
}

/*
 * One event's readings added into its line's buckets (acc[nr_ids]), as perf 6.1 adds
 * them (stat.c / stat-display.c):
 *  - the whole run (global): raw values, times summed, then scaled once;
 *  - -A: each CPU's reading scaled;
 *  - --per-core/die/socket/node: each CPU's reading scaled, then summed; a CPU that
 *    was never enabled or never ran zeroes the bucket's times (<not counted>) and ends
 *    this event's part of it;
 *  - --per-thread: each reading scaled, summed over CPUs.
 * A line that shows several PMUs' events (merged) adds each event this way in turn.
 */
static void add_event(struct stat_run *r, const struct tally_count *v, struct acc *acc,
		      bool first)
{
	size_t nthr = r->threads->nr, ncpu = r->cpus->nr;

	switch (r->opts->aggr) {
	case AGGR_GLOBAL: {
		struct tally_count sum = { 0, 0, 0 };

		for (size_t k = 0; k < ncpu * nthr; k++) {
			sum.val += v[k].val;
			sum.ena += v[k].ena;
			sum.run += v[k].run;
		}
		acc[0].val += perf_scale(&sum);
		acc[0].ena += sum.ena;
		acc[0].run += sum.run;
		break;
	}
	case AGGR_THREAD:
		for (size_t t = 0; t < nthr; t++)
			for (size_t c = 0; c < ncpu; c++) {
				const struct tally_count *x = &v[c * nthr + t];

				acc[t].val += perf_scale(x);
				acc[t].ena += x->ena;
				acc[t].run += x->run;
			}
		break;
	case AGGR_NONE:
		for (size_t c = 0; c < ncpu; c++) {
			const struct tally_count *x = &v[c * nthr];

			acc[c].val += perf_scale(x);
			acc[c].ena += x->ena;
			acc[c].run += x->run;
		}
		break;
	default:	/* core, die, socket, node: thread 0 of each CPU (system-wide) */
		for (int a = 0; a < r->nr_ids; a++) {
			for (size_t c = 0; c < ncpu; c++) {
				const struct tally_count *x = &v[c * nthr];

				if (r->pair_id[c * nthr] != a)
					continue;
				if (first)
					acc[a].nr++;
				if (!x->ena || !x->run) {
					acc[a].ena = acc[a].run = 0;
					break;
				}
				acc[a].val += perf_scale(x);
				acc[a].ena += x->ena;
				acc[a].run += x->run;
			}
		}
		break;
	}
}

/* perf's user_time / system_time: the workload's rusage (the mean over -r runs so far). */
static double tool_value(const struct stat_run *r, int tool)
{
	switch (tool) {
	case TALLY_TOOL_DURATION_TIME:
		return r->span_ns;	/* perf's user-space event: the wall time, in ns */
	case TALLY_TOOL_USER_TIME:
		return (double)(uint64_t)r->ru_user_mean;
	case TALLY_TOOL_SYSTEM_TIME:
		return (double)(uint64_t)r->ru_sys_mean;
	default:
		return 0;
	}
}

/* Reduce the readings (minus the previous ones with -I) into rows. */
static void reduce(struct stat_run *r, bool delta)
{
	struct acc *acc = calloc((size_t)r->nr_ids + 1, sizeof(*acc));
	const struct tally_count **v = calloc((size_t)r->nr_ev + 1, sizeof(*v));
	bool per_thread_all = r->opts->aggr == AGGR_THREAD && r->opts->system_wide;

	for (size_t i = 0; i < (size_t)r->nr_ev * (size_t)r->nr_ids; i++)
		memset(&r->rows[i], 0, sizeof(r->rows[i]));
	if (!acc || !v)
		goto out;
	/* every event's readings first: -I deltas are taken once per event */
	for (int e = 0; e < r->nr_ev; e++)
		if (!r->ev[e].tool && !(v[e] = readings(r, e, delta)))
			goto out;
	for (int e = 0; e < r->nr_ev; e++) {
		struct stat_evsel *ev = &r->ev[e];
		bool first_ran = true;

		if (ev->shown_with >= 0)
			continue;	/* its counts are on another event's line */
		memset(acc, 0, (size_t)r->nr_ids * sizeof(*acc));
		for (int x = e; !ev->tool && x < r->nr_ev; x++) {
			if (x != e && r->ev[x].shown_with != e)
				continue;
			add_event(r, v[x], acc, x == e);
			if (x == e && r->opts->aggr == AGGR_GLOBAL)
				first_ran = acc[0].run != 0;	/* perf: the line's own scaling */
		}
		for (int a = 0; a < r->nr_ids; a++) {
			struct stat_row *row = &r->rows[(size_t)e * (size_t)r->nr_ids + (size_t)a];

			row->present = true;
			row->nr = acc[a].nr;
			if (ev->tool) {
				row->val = row->ena = row->run = tool_value(r, ev->tool);
				row->counted = row->run != 0;
				row->nr = r->ids[a].nr;
				continue;
			}
			row->ena = (double)acc[a].ena;
			row->run = (double)acc[a].run;
			row->val = (double)acc[a].val;
			row->counted = ev->supported && acc[a].run && acc[a].ena && first_ran;
			if (!ev->supported)
				row->ena = row->run = row->val = 0;
			/* system-wide --per-thread lists only the threads that counted something */
			if (per_thread_all && row->val * ev->scale == 0.0)
				row->present = false;
		}
	}
out:
	free(acc);
	free(v);
}

static double ts_ns(const struct timespec *t)
{
	return (double)t->tv_sec * 1e9 + (double)t->tv_nsec;
}

static struct timespec now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

static struct timespec ts_sub(struct timespec a, struct timespec b)
{
	struct timespec d = { a.tv_sec - b.tv_sec, a.tv_nsec - b.tv_nsec };

	if (d.tv_nsec < 0) {
		d.tv_nsec += 1000000000L;
		d.tv_sec--;
	}
	return d;
}

static void print_interval(struct stat_run *r, struct timespec t)
{
	if (tally_counters__read(r->set) < 0)
		return;
	r->span_ns = (double)r->opts->interval_ms * 1e6;
	reduce(r, true);
	r->out.interval = true;
	r->out.ts = ts_sub(t, r->start);
	r->out.walltime_ns = (double)r->opts->interval_ms * 1e6;
	stat_print_rows(&r->out, r->ev, r->nr_ev, r->ids, r->nr_ids, r->rows);
	fflush(r->out.f);
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Wait for the end of counting: the workload exiting, the targets exiting, a signal,
 * --timeout or --interval-count; print intervals on the way. */
static void wait_loop(struct stat_run *r, struct workload *w, int *wstatus)
{
	struct stat_opts *o = r->opts;
	int pfd = -1;
	struct timespec next = r->start, deadline = { 0, 0 };
	long nr_intervals = 0;
	bool reaped = false;

	if (w && w->pid > 0)
		pfd = pidfd_open_(w->pid);
	else if (r->threads->nr && r->threads->tid[0] > 0)
		pfd = pidfd_open_(r->threads->tid[0]);
	if (o->timeout_ms) {
		deadline = r->start;
		deadline.tv_sec += o->timeout_ms / 1000;
		deadline.tv_nsec += (o->timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_nsec -= 1000000000L;
			deadline.tv_sec++;
		}
	}
	for (;;) {
		struct timespec t = now(), wake = { 0, 0 }, rel;
		struct pollfd p = { pfd, POLLIN, 0 };
		bool have_wake = false;
		int n;

		if (exiting)
			break;
		if (o->interval_ms) {
			while (ts_ns(&next) <= ts_ns(&t)) {
				next.tv_nsec += (o->interval_ms % 1000) * 1000000L;
				next.tv_sec += o->interval_ms / 1000;
				if (next.tv_nsec >= 1000000000L) {
					next.tv_nsec -= 1000000000L;
					next.tv_sec++;
				}
			}
			wake = next;
			have_wake = true;
		}
		if (o->timeout_ms && (!have_wake || ts_ns(&deadline) < ts_ns(&wake))) {
			wake = deadline;
			have_wake = true;
		}
		if (have_wake) {
			rel = ts_ns(&wake) > ts_ns(&t) ? ts_sub(wake, t) : (struct timespec){ 0, 0 };
		}
		if (pfd < 0 && w && w->pid > 0) {
			/* no pidfd: fall back to polling the child */
			pid_t x = wait4(w->pid, wstatus, WNOHANG, &r->ru);

			if (x == w->pid) {
				reaped = true;
				break;
			}
			if (!have_wake || ts_ns(&rel) > 1e7) {
				rel = (struct timespec){ 0, 10000000L };
				have_wake = true;
			}
		}
		n = ppoll(pfd >= 0 ? &p : NULL, pfd >= 0 ? 1 : 0, have_wake ? &rel : NULL, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			break;	/* the workload or target exited */
		t = now();
		if (o->timeout_ms && ts_ns(&t) >= ts_ns(&deadline)) {
			if (o->interval_ms && ts_ns(&t) >= ts_ns(&next))
				print_interval(r, t);
			break;
		}
		if (o->interval_ms && ts_ns(&t) >= ts_ns(&next)) {
			print_interval(r, t);
			if (o->interval_count && ++nr_intervals >= o->interval_count)
				break;
		}
	}
	if (pfd >= 0)
		close(pfd);
	/* stopping early: end the workload like perf (SIGTERM) */
	if (w && w->pid > 0 && !reaped) {
		pid_t x = wait4(w->pid, wstatus, WNOHANG, &r->ru);

		if (x == 0 && !exiting) {
			kill(w->pid, SIGTERM);
			r->stopped_workload = true;	/* perf then exits 0 */
		}
		if (x == 0) {
			while (wait4(w->pid, wstatus, 0, &r->ru) < 0 && errno == EINTR)
				;
		}
	}
	if (o->interval_ms && (!o->interval_count || nr_intervals < o->interval_count)) {
		struct timespec t = now();

		/* the last, partial interval (perf prints it when the workload ends) */
		if (w && w->pid > 0)
			print_interval(r, t);
	}
}

static void accumulate(struct stat_run *r)
{
	size_t n = (size_t)r->nr_ev * (size_t)r->nr_ids;
	double k = (double)(r->nr_runs_done + 1);

	for (size_t i = 0; i < n; i++) {
		double x = r->rows[i].val, d = x - r->acc_mean[i];

		r->acc_mean[i] += d / k;
		r->acc_m2[i] += d * (x - r->acc_mean[i]);
		r->acc_ena[i] += (r->rows[i].ena - r->acc_ena[i]) / k;
		r->acc_run[i] += (r->rows[i].run - r->acc_run[i]) / k;
		r->acc_counted[i] += r->rows[i].counted;
	}
	{
		double d = r->last_wall_ns - r->wall_mean;

		r->wall_mean += d / k;
		r->wall_m2 += d * (r->last_wall_ns - r->wall_mean);
	}
	r->nr_runs_done++;
}

static double rel_stddev(double m2, double mean, int n)
{
	double sd;

	if (n < 2 || mean == 0)
		return 0;
	sd = sqrt(m2 / (n - 1) / n);
	return 100.0 * sd / mean;
}

static void averaged_rows(struct stat_run *r)
{
	size_t n = (size_t)r->nr_ev * (size_t)r->nr_ids;

	for (size_t i = 0; i < n; i++) {
		r->rows[i].val = r->acc_mean[i];
		r->rows[i].ena = r->acc_ena[i];
		r->rows[i].run = r->acc_run[i];
		r->rows[i].counted = r->acc_counted[i] > 0 && r->acc_run[i] > 0;
		r->rows[i].variance = rel_stddev(r->acc_m2[i], r->acc_mean[i], r->nr_runs_done);
	}
}

/* One run: fork (when there is a command), open, count, read. Returns 0 or an exit code. */
static int run_once(struct stat_run *r, int *child_status)
{
	struct stat_opts *o = r->opts;
	struct workload w = { .pid = -1, .go_fd = -1, .err_fd = -1 };
	bool have_w = o->argc > 0;
	struct timespec end;
	int err, status = 0;

	if (have_w) {
		err = workload__prepare(&w, o->argv);
		if (err) {
			cli_error("cannot start '%s': %s", o->argv[0], strerror(-err));
			return 255;
		}
		child_pid = w.pid;
	}
	err = build_targets(r, w.pid);
	if (err > 0 || err < 0) {
		if (err < 0)
			cli_error("cannot set up the targets: %s", strerror(-err));
		workload__abort(&w);
		child_pid = -1;
		return err > 0 ? err : 1;
	}
	if (!r->pair_id || r->opts->aggr == AGGR_THREAD) {
		free(r->pair_id);
		free(r->ids);
		r->pair_id = NULL;
		r->ids = NULL;
		err = build_buckets(r);
		if (err) {
			workload__abort(&w);
			return 1;
		}
		free(r->rows);
		r->rows = calloc((size_t)r->nr_ev * (size_t)r->nr_ids + 1, sizeof(*r->rows));
		if (!r->rows) {
			workload__abort(&w);
			return 1;
		}
	}
	if (r->nr_ev) {
		err = open_counters(r);
		if (err) {
			if (err < 0)
				cli_error("cannot open counters: %s", strerror(-err));
			workload__abort(&w);
			child_pid = -1;
			return 1;
		}
	}
	if (o->interval_ms) {
		free(r->prev);
		free(r->cur);
		r->prev = calloc((size_t)r->nr_ev * tally_counters__nr_pairs(r->set) + 1,
				 sizeof(*r->prev));
		r->cur = calloc((size_t)r->nr_ev * tally_counters__nr_pairs(r->set) + 1,
				sizeof(*r->cur));
		if (!r->prev || !r->cur) {
			workload__abort(&w);
			return 1;
		}
	}
	/* Counters not armed by exec are enabled before the clock starts, like perf. */
	if (r->nr_ev && (!have_w || o->system_wide || o->pid_list || o->tid_list) &&
	    o->delay_ms == 0)
		tally_counters__enable(r->set);
	r->start = now();
	if (have_w) {
		err = workload__start(&w);
		if (err) {
			int st;

			while (waitpid(w.pid, &st, 0) < 0 && errno == EINTR)
				;
			child_pid = -1;
			fflush(stdout);
			fprintf(stderr, "Workload failed: %s\n", strerror(-err));
			return 255;
		}
		r->workload_ran = true;
	}
	if (r->nr_ev && o->delay_ms) {
		if (o->delay_ms > 0) {
			struct timespec d = { o->delay_ms / 1000, (o->delay_ms % 1000) * 1000000L };

			fputs("Events disabled\n", stderr);	/* perf's words */
			fflush(stderr);
			while (nanosleep(&d, &d) < 0 && errno == EINTR && !exiting)
				;
		}
		tally_counters__enable(r->set);
		if (o->delay_ms > 0) {
			fputs("Events enabled\n", stderr);
			fflush(stderr);
		}
		r->start = now();	/* elapsed time counts from here, like perf */
	}
	memset(&r->ru, 0, sizeof(r->ru));
	wait_loop(r, have_w ? &w : NULL, &status);
	end = now();
	if (r->nr_ev) {
		tally_counters__disable(r->set);
		if (!o->interval_ms)
			tally_counters__read(r->set);
	}
	child_pid = -1;
	if (have_w) {
		double k;

		*child_status = status;
		/* the workload's own rusage (wait4), for user_time, system_time and the
		 * footer; perf keeps the mean over the runs so far */
		r->have_ru = true;
		k = ++r->nr_ru;
		r->ru_user_mean += ((double)r->ru.ru_utime.tv_sec * 1e9 +
				    (double)r->ru.ru_utime.tv_usec * 1e3 - r->ru_user_mean) / k;
		r->ru_sys_mean += ((double)r->ru.ru_stime.tv_sec * 1e9 +
				   (double)r->ru.ru_stime.tv_usec * 1e3 - r->ru_sys_mean) / k;
	}
	r->last_wall_ns = ts_ns(&end) - ts_ns(&r->start);
	if (verbose)
		fprintf(stderr, "tally: run took %.0f ns\n", r->last_wall_ns);
	r->span_ns = r->last_wall_ns;
	if (r->nr_ev && !o->interval_ms)
		reduce(r, false);
	return 0;
}

/* ---- stat record: perf's STAT records in a perf.data file ---------------------------- */

/* perf's aggr_mode numbers in STAT_CONFIG. */
static uint64_t perf_aggr_mode(enum stat_aggr a)
{
	switch (a) {
	case AGGR_NONE: return 0;
	case AGGR_SOCKET: return 2;
	case AGGR_DIE: return 3;
	case AGGR_CORE: return 4;
	case AGGR_THREAD: return 5;
	case AGGR_NODE: return 7;
	default: return 1;	/* global */
	}
}

static int put_record(struct tally_writer *w, uint32_t type, void *rec, size_t len)
{
	struct perf_event_header *h = rec;

	h->type = type;
	h->misc = 0;
	h->size = (uint16_t)len;
	return tally_writer__write(w, rec, len);
}

static int write_stat_data(struct stat_run *r)
{
	struct stat_opts *o = r->opts;
	struct tally_writer *w = NULL;
	size_t np = tally_counters__nr_pairs(r->set);
	int err;

	err = tally_writer__open(&w, o->record_path, NULL);
	if (err) {
		cli_error("cannot create '%s': %s", o->record_path, strerror(-err));
		return 1;
	}
	for (int e = 0; e < r->nr_ev && !err; e++) {
		struct tally_counter *c = &r->set->ev[r->set_idx[e]];
		uint64_t *ids = calloc(np + 1, sizeof(*ids));
		size_t n = 0;
		int idx;

		if (!ids) {
			err = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < np; k++)
			if (c->fd[k] >= 0)
				ids[n++] = c->id[k];
		idx = tally_writer__add_event(w, c->attr, r->ev[e].name, ids, n);
		free(ids);
		if (idx < 0)
			err = idx;
	}
	for (int e = 0; e < r->nr_ev && !err; e++) {
		int members = r->set->ev[r->set_idx[e]].nr_members;

		if (r->ev[e].leader == e && members > 1)
			err = tally_writer__add_group(w, NULL, e, members);
	}
	if (!err) {
		/* "tally stat record …": main hands us argv from the subcommand on */
		char **cl = calloc((size_t)o->cmdline_argc + 2, sizeof(*cl));

		if (!cl) {
			err = -ENOMEM;
		} else {
			cl[0] = "tally";
			memcpy(cl + 1, o->cmdline, (size_t)o->cmdline_argc * sizeof(*cl));
			err = tally_writer__set_cmdline(w, o->cmdline_argc + 1, cl);
			free(cl);
		}
	}
	if (!err)
		err = tally_writer__set_host_features(w, TALLY_VERSION);
	if (!err)
		err = tally_writer__set_feature(w, TALLY_FEAT_STAT, NULL, 0);
	if (!err)
		err = tally_writer__start(w);
	/* EVENT_UPDATE: unit and scale of events that have them (perf: task-clock msec) */
	for (int e = 0; e < r->nr_ev && !err; e++) {
		struct tally_counter *c = &r->set->ev[r->set_idx[e]];
		uint64_t rec[6];
		uint64_t id = 0;
		double sc = r->ev[e].scale;

		if (!*r->ev[e].unit)
			continue;
		for (size_t k = 0; k < np; k++)
			if (c->fd[k] >= 0) {
				id = c->id[k];
				break;
			}
		memset(rec, 0, sizeof(rec));
		rec[1] = TALLY_EVENT_UPDATE_UNIT;
		rec[2] = id;
		snprintf((char *)&rec[3], 3 * sizeof(uint64_t), "%s", r->ev[e].unit);
		err = put_record(w, TALLY_RECORD_EVENT_UPDATE, rec, sizeof(rec));
		if (err)
			break;
		memset(rec, 0, sizeof(rec));
		rec[1] = TALLY_EVENT_UPDATE_SCALE;
		rec[2] = id;
		memcpy(&rec[3], &sc, sizeof(sc));
		err = put_record(w, TALLY_RECORD_EVENT_UPDATE, rec, sizeof(rec));
	}
	if (!err) {	/* THREAD_MAP: nr, then {pid, comm[16]} */
		size_t nt = r->threads->nr, len = 16 + nt * 24;
		char *rec = calloc(1, len);

		if (!rec) {
			err = -ENOMEM;
		} else {
			uint64_t nr = nt;

			memcpy(rec + 8, &nr, 8);
			for (size_t t = 0; t < nt; t++) {
				uint64_t pid = (uint64_t)(int64_t)r->threads->tid[t];

				memcpy(rec + 16 + t * 24, &pid, 8);
				if (r->threads->tid[t] > 0)
					read_comm(r->threads->tid[t], rec + 16 + t * 24 + 8, 16);
			}
			err = put_record(w, TALLY_RECORD_THREAD_MAP, rec, len);
			free(rec);
		}
	}
	if (!err) {	/* CPU_MAP, type 0 (a list of u16 cpus) */
		size_t nc = r->cpus->nr, len = (8 + 4 + 2 * nc + 7) & ~(size_t)7;
		char *rec = calloc(1, len);

		if (!rec) {
			err = -ENOMEM;
		} else {
			uint16_t type = 0, nr = (uint16_t)nc;

			memcpy(rec + 8, &type, 2);
			memcpy(rec + 10, &nr, 2);
			for (size_t i = 0; i < nc; i++) {
				uint16_t cpu = (uint16_t)r->cpus->cpu[i];

				memcpy(rec + 12 + 2 * i, &cpu, 2);
			}
			err = put_record(w, TALLY_RECORD_CPU_MAP, rec, len);
			free(rec);
		}
	}
	if (!err) {
		uint64_t rec[8] = { 0, 3, TALLY_STAT_CONFIG_AGGR_MODE, perf_aggr_mode(o->aggr),
				    TALLY_STAT_CONFIG_INTERVAL, (uint64_t)o->interval_ms,
				    TALLY_STAT_CONFIG_SCALE, 1 };

		err = put_record(w, TALLY_RECORD_STAT_CONFIG, rec, sizeof(rec));
	}
	for (int e = 0; e < r->nr_ev && !err; e++) {
		struct tally_counter *c = &r->set->ev[r->set_idx[e]];

		for (size_t ci = 0; ci < r->cpus->nr && !err; ci++) {
			for (size_t ti = 0; ti < r->threads->nr && !err; ti++) {
				size_t k = tally_counters__idx(r->set, ci, ti);
				uint64_t rec[6];
				uint32_t cpu = (uint32_t)r->cpus->cpu[ci], thr = (uint32_t)ti;

				if (c->fd[k] < 0)
					continue;
				rec[1] = c->id[k];
				memcpy((char *)&rec[2], &cpu, 4);
				memcpy((char *)&rec[2] + 4, &thr, 4);
				rec[3] = c->count[k].val;
				rec[4] = c->count[k].ena;
				rec[5] = c->count[k].run;
				err = put_record(w, TALLY_RECORD_STAT, rec, sizeof(rec));
			}
		}
	}
	if (!err) {
		uint64_t rec[3] = { 0, TALLY_STAT_ROUND_FINAL, (uint64_t)r->last_wall_ns };

		err = put_record(w, TALLY_RECORD_STAT_ROUND, rec, sizeof(rec));
	}
	if (!err)
		err = tally_writer__finish(w);
	else
		tally_writer__finish(w);
	tally_writer__delete(w);
	if (err) {
		cli_error("writing '%s' failed: %s", o->record_path, strerror(-err));
		return 1;
	}
	return 0;
}

/* ---- output framing ----------------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void target_text(struct stat_opts *o, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = 0;
	if (o->cpu_list) {
		snprintf(buf, len, "'CPU(s) %s'", o->cpu_list);
	} else if (o->system_wide) {
		snprintf(buf, len, "'system wide'");
	} else if (o->pid_list) {
		snprintf(buf, len, "process id '%s'", o->pid_list);
	} else if (o->tid_list) {
		snprintf(buf, len, "thread id '%s'", o->tid_list);
	} else {
		pos += (size_t)snprintf(buf, len, "'");
		for (int i = 0; i < o->argc && pos < len; i++)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", i ? " " : "", o->argv[i]);
		if (pos < len)
			snprintf(buf + pos, len - pos, "'");
	}
}

static void print_header(struct stat_run *r)
{
	char t[4096];

	target_text(r->opts, t, sizeof(t));
	fprintf(r->out.f, "\n Performance counter stats for %s", t);
	if (r->opts->repeat > 1)
		fprintf(r->out.f, " (%d runs)", r->opts->repeat);
	fputs(":\n\n", r->out.f);
}

static int get_precision(double num)
{
	if (num > 1)
		return 0;
	return (int)lround(ceil(-log10(num)));
}

/* perf's hint: the NMI watchdog holds a hardware counter, so supported events may go
 * uncounted. */
static bool any_not_counted(const struct stat_run *r)
{
	for (int e = 0; e < r->nr_ev; e++)
		for (int a = 0; a < r->nr_ids; a++) {
			const struct stat_row *row = &r->rows[(size_t)e * (size_t)r->nr_ids + (size_t)a];

			if (r->ev[e].supported && row->present && !row->counted && !r->ev[e].tool)
				return true;
		}
	return false;
}

static bool nmi_watchdog_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/nmi_watchdog", "re");
	int v = 0;

	if (!f)
		return false;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v != 0;
}

static void print_footer(struct stat_run *r)
{
	FILE *f = r->out.f;
	struct stat_opts *o = r->opts;

	if (!o->null_run)
		fputc('\n', f);
	if (o->repeat == 1) {
		fprintf(f, " %17.9f seconds time elapsed", r->last_wall_ns / 1e9);
		if (r->workload_ran && r->have_ru && !o->system_wide) {
			fputs("\n\n", f);
			fprintf(f, " %17.9f seconds user\n", r->ru.ru_utime.tv_sec +
				r->ru.ru_utime.tv_usec / 1e6);
			fprintf(f, " %17.9f seconds sys\n", r->ru.ru_stime.tv_sec +
				r->ru.ru_stime.tv_usec / 1e6);
		}
	} else {
		double avg = r->wall_mean / 1e9;
		double sd = r->nr_runs_done > 1 ?
			    sqrt(r->wall_m2 / (r->nr_runs_done - 1) / r->nr_runs_done) / 1e9 : 0;
		int prec = sd > 0 ? get_precision(sd) + 2 : 9;
		double pct = avg ? 100.0 * sd / avg : 0;

		fprintf(f, " %17.*f +- %.*f seconds time elapsed", prec, avg, prec, sd);
		if (pct)
			fprintf(f, "  ( +-%6.2f%% )", pct);
	}
	fputs("\n\n", f);
	if (any_not_counted(r) && nmi_watchdog_on())
		fputs("Some events weren't counted. Try disabling the NMI watchdog:\n"
		      "\techo 0 > /proc/sys/kernel/nmi_watchdog\n"
		      "\ttally stat ...\n"
		      "\techo 1 > /proc/sys/kernel/nmi_watchdog\n", f);
}

static void print_report(struct stat_run *r)
{
	struct stat_out *out = &r->out;

	out->interval = false;
	out->walltime_ns = r->opts->repeat > 1 ? r->wall_mean : r->last_wall_ns;
	if (out->fmt == FMT_STD)
		print_header(r);
	if (r->nr_ev)
		stat_print_rows(out, r->ev, r->nr_ev, r->ids, r->nr_ids, r->rows);
	if (out->fmt == FMT_STD)
		print_footer(r);
}

static FILE *open_output(struct stat_opts *o, bool *owned)
{
	FILE *f;

	*owned = false;
	if (o->output) {
		/* O_NOFOLLOW: never write through a symlink planted at the output path */
		int fd = open(o->output, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			      (o->append ? O_APPEND : O_TRUNC), 0666);
		f = fd < 0 ? NULL : fdopen(fd, o->append ? "a" : "w");
		if (!f) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			cli_error("cannot open output file '%s': %s", o->output,
				  e == ELOOP ? "it is a symbolic link (not followed)" : strerror(e));
			return NULL;
		}
		*owned = true;
	} else if (o->log_fd >= 0) {
		f = fdopen(o->log_fd, o->append ? "a" : "w");
		if (!f) {
			cli_error("--log-fd %d: %s", o->log_fd, strerror(errno));
			return NULL;
		}
		*owned = true;
	} else {
		return stderr;
	}
	if (o->output || o->log_fd >= 0) {
		time_t t = time(NULL);
		char tb[64];

		if (!o->strict_json)
			fprintf(f, "# started on %s\n", ctime_r(&t, tb));
	}
	return f;
}

static void free_run(struct stat_run *r)
{
	tally_counters__delete(r->set);
	tally_cpumap__delete(r->cpus);
	tally_threadmap__delete(r->threads);
	tally_topology__delete(r->topo);
	for (int i = 0; i < r->nr_ev; i++) {
		free(r->ev[i].name);
		free(r->ev[i].unit_buf);
		free(r->ev[i].pmu_name);
	}
	free(r->ev);
	free(r->set_idx);
	free(r->ids);
	free(r->pair_id);
	free(r->rows);
	free(r->prev);
	free(r->cur);
	free(r->acc_mean);
	free(r->acc_m2);
	free(r->acc_ena);
	free(r->acc_run);
	free(r->acc_counted);
}

static int cmd_stat_count_ext(int argc, char **argv, const char *record_path, int full_argc,
			      char **full_argv)
{
	struct stat_opts o;
	struct stat_run r;
	locale_t c_locale = (locale_t)0, old_locale = (locale_t)0;
	bool owned = false;
	int ret, status = 0, exit_code = 0;

	ret = parse_opts(argc, argv, &o);
	if (ret) {
		free(o.event_specs);
		return ret < 0 ? 0 : ret;
	}
	o.record_path = record_path;
	o.cmdline = full_argv;
	o.cmdline_argc = full_argc;
	if (record_path && (o.interval_ms || o.repeat > 1)) {
		cli_error("stat record: -I and -r are not supported; record one run");
		free(o.event_specs);
		return 129;
	}

	memset(&r, 0, sizeof(r));
	r.opts = &o;
	ret = build_events(&r);
	if (!ret)
		ret = plan_merges(&r);
	if (ret) {
		if (ret < 0)
			cli_error("cannot set up events: %s", strerror(-ret));
		free(o.event_specs);
		free_run(&r);
		return ret > 0 ? ret : 1;
	}
	r.out.fmt = o.strict_json ? FMT_STRICT : o.json ? FMT_JSON : o.csv_sep ? FMT_CSV : FMT_STD;
	r.out.aggr = o.aggr;
	r.out.sep = o.csv_sep ? o.csv_sep : " ";
	r.out.big_num = o.big_num != 0;
	r.out.unit_width = 4;
	for (int i = 0; i < r.nr_ev; i++)
		if ((int)strlen(r.ev[i].unit) > r.out.unit_width)
			r.out.unit_width = (int)strlen(r.ev[i].unit);
	r.out.run_count = o.repeat;
	r.out.csv_summary_word = !o.no_csv_summary;
	r.out.strict_first = true;
	r.out.f = open_output(&o, &owned);
	if (!r.out.f) {
		free(o.event_specs);
		free_run(&r);
		return 1;
	}
	if (r.out.f == stderr) {
		/* One write at the end instead of one per field (stderr is unbuffered). */
		static char errbuf[16384];

		setvbuf(stderr, errbuf, _IOFBF, sizeof(errbuf));
	}
	if (o.strict_json) {
		c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
		if (c_locale)
			old_locale = uselocale(c_locale);
	}
	install_signals();

	if (o.strict_json) {
		char t[4096];

		target_text(&o, t, sizeof(t));
		fputs("{\"tally-stat\": 1, \"target\": ", r.out.f);
		json_string(r.out.f, t);
		fprintf(r.out.f, ", \"runs\": %d, \"interval-ms\": %ld, \"counters\": [", o.repeat,
			o.interval_ms);
	}
	for (int run = 0; run < o.repeat; run++) {
		ret = run_once(&r, &status);
		if (ret) {
			exit_code = ret;
			goto out;
		}
		if (o.repeat > 1) {
			size_t n = (size_t)r.nr_ev * (size_t)r.nr_ids + 1;

			if (!r.acc_mean) {
				r.acc_mean = calloc(n, sizeof(double));
				r.acc_m2 = calloc(n, sizeof(double));
				r.acc_ena = calloc(n, sizeof(double));
				r.acc_run = calloc(n, sizeof(double));
				r.acc_counted = calloc(n, sizeof(int));
				if (!r.acc_mean || !r.acc_m2 || !r.acc_ena || !r.acc_run ||
				    !r.acc_counted) {
					exit_code = 1;
					goto out;
				}
			}
			accumulate(&r);
		}
		exit_code = r.workload_ran && !r.stopped_workload ? workload__exit_code(status) : 0;
		if (exiting)
			break;
	}
	if (o.repeat > 1)
		averaged_rows(&r);
	if (o.record_path && r.nr_ev && r.set) {
		int wr = write_stat_data(&r);

		if (wr && !exit_code)
			exit_code = wr;
	}
	if (!o.interval_ms) {
		print_report(&r);
	} else if (o.summary) {
		/* totals since the start: read the running totals afresh */
		if (r.nr_ev && tally_counters__read(r.set) == 0) {
			r.span_ns = r.last_wall_ns;
			reduce(&r, false);
			r.out.summary_line = r.out.fmt == FMT_CSV;
			if (r.out.fmt == FMT_STD || r.out.fmt == FMT_STRICT) {
				print_report(&r);
			} else {
				r.out.interval = false;
				r.out.walltime_ns = r.last_wall_ns;
				stat_print_rows(&r.out, r.ev, r.nr_ev, r.ids, r.nr_ids, r.rows);
			}
		}
	}
	if (o.strict_json) {
		fprintf(r.out.f, "\n  ], \"elapsed-seconds\": %.9f", (o.repeat > 1 ? r.wall_mean :
								     r.last_wall_ns) / 1e9);
		if (o.repeat == 1 && r.workload_ran && r.have_ru)
			fprintf(r.out.f, ", \"user-seconds\": %.6f, \"sys-seconds\": %.6f",
				r.ru.ru_utime.tv_sec + r.ru.ru_utime.tv_usec / 1e6,
				r.ru.ru_stime.tv_sec + r.ru.ru_stime.tv_usec / 1e6);
		if (r.workload_ran)
			fprintf(r.out.f, ", \"exit-status\": %d", exit_code);
		fputs("}\n", r.out.f);
	}
out:
	if (old_locale)
		uselocale(old_locale);
	if (c_locale)
		freelocale(c_locale);
	if (r.out.f && cli_finish_output(r.out.f, owned ? (o.output ? o.output : "--log-fd") :
						"standard error") && !exit_code)
		exit_code = 1;
	if (got_signal && !r.workload_ran && !exit_code)
		exit_code = 0;
	free(o.event_specs);
	free_run(&r);
	return exit_code;
}

static int cmd_stat_record(int argc, char **argv, int full_argc, char **full_argv)
{
	static const char usage[] =
		"\n usage: tally stat record [-o FILE|-] [<stat options>] <command>\n\n"
		"    -o, --output <file>   perf.data file to write (default perf.data; - = stdout)\n\n";
	const char *path = "perf.data";
	char **cmdline = malloc(((size_t)full_argc + 1) * sizeof(*cmdline));
	int i = 1, ret;

	if (!cmdline)
		return 1;
	memcpy(cmdline, full_argv, (size_t)full_argc * sizeof(*cmdline));	/* before we edit argv */

	while (i < argc) {
		if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
			path = argv[i + 1];
			i += 2;
		} else if (!strncmp(argv[i], "--output=", 9)) {
			path = argv[i] + 9;
			i++;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			cli_usage(stdout, usage);
			free(cmdline);
			return 0;
		} else {
			break;
		}
	}
	/* the rest are stat options: argv[i-1] becomes the command name slot */
	argv[i - 1] = "stat";
	ret = cmd_stat_count_ext(argc - (i - 1), argv + (i - 1), path, full_argc, cmdline);
	free(cmdline);
	return ret;
}

int cmd_stat(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "record"))
		return cmd_stat_record(argc - 1, argv + 1, argc, argv);
	if (argc > 1 && !strcmp(argv[1], "report"))
		return cmd_stat_report(argc - 1, argv + 1);
	return cmd_stat_count_ext(argc, argv, NULL, argc, argv);
}
