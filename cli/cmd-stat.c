/*
 * tally stat: count events for a command, processes, threads or CPUs and print the
 * totals like perf stat 6.1 (human, CSV, JSON) or as one strict JSON document.
 *
 * Reads top to bottom: options → events (stat-evsel.c, with perf stat's attr policy)
 * → for each run (-r): targets and buckets (stat-aggr.c), fork the workload, open
 * counters, start, wait, printing intervals with -I (stat-run.c) → reduce the
 * per-(cpu, thread) readings into rows per bucket (stat-aggr.c), averaged over runs
 * (stat-repeat.c) → print (stat-output.c, stat-print.c), and with stat record the
 * STAT records (stat-record.c). The library does the counting (tally_counters).
 */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tally/convert.h>
#include <tally/counter.h>
#include <tally/cpumap.h>
#include <tally/topology.h>

#include "cmd.h"
#include "options.h"
#include "stat.h"
#include "workload.h"

/* ---- options ------------------------------------------------------------------------ */

static int opt_event(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct stat_opts *o = opts;
	char **n;
	const char **f;

	(void)opt, (void)unset;
	n = realloc(o->event_specs, (size_t)(o->nr_event_specs + 1) * sizeof(*n));
	if (n)
		o->event_specs = n;
	f = n ? realloc(o->spec_filters, (size_t)(o->nr_event_specs + 1) * sizeof(*f)) : NULL;
	if (!f) {
		cli_error("out of memory");
		return -1;
	}
	o->spec_filters = f;
	f[o->nr_event_specs] = NULL;
	n[o->nr_event_specs++] = (char *)arg;
	return 0;
}

/* --filter: the tracepoint filter of the events of the -e before it (checked when the
 * events are known: stat-evsel.c) */
static int opt_filter(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct stat_opts *o = opts;

	(void)opt, (void)unset;
	if (!o->nr_event_specs) {
		cli_error("--filter option should follow a -e tracepoint option");
		return -1;
	}
	o->spec_filters[o->nr_event_specs - 1] = arg;
	return 0;
}

/* -G: cgroups for the events of the -e before it (stat-cgroup.c) */
static int opt_cgroup(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct stat_opts *o = opts;
	struct stat_cgroup_arg *n;

	(void)opt, (void)unset;
	if (!o->nr_event_specs) {
		cli_error("-G/--cgroup: must define events (-e) before cgroups");
		return -1;
	}
	n = realloc(o->cgroup_args, (size_t)(o->nr_cgroup_args + 1) * sizeof(*n));
	if (!n) {
		cli_error("out of memory");
		return -1;
	}
	o->cgroup_args = n;
	n[o->nr_cgroup_args].after = o->nr_event_specs;
	n[o->nr_cgroup_args++].names = arg;
	return 0;
}

static int opt_cpu(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct stat_opts *o = opts;

	(void)opt, (void)unset;
	o->cpu_list = arg;
	o->system_wide = true;	/* -C counts those CPUs system-wide */
	return 0;
}

#define MS_MAX (LONG_MAX / 1000000)

/* Everything but -o, which is the counts' file in stat and the perf.data in stat record. */
#define STAT_OPTIONS \
	OPT_CALLBACK('e', "event", "event", "event selector. use 'tally list' to list available events", \
		     opt_event), \
	OPT_CALLBACK(0, "filter", "filter", "event filter", opt_filter), \
	OPT_INCR('d', "detailed", detail, "detailed run - start a lot of events"), \
	OPT_BOOL('a', "all-cpus", system_wide, "system-wide collection from all CPUs"), \
	OPT_CALLBACK('G', "cgroup", "name", "monitor event in cgroup name only", opt_cgroup), \
	OPT_STRING(0, "for-each-cgroup", for_each_cgroup, "name", "expand events for each cgroup"), \
	OPT_STRING(0, "control", control, "fd:ctl-fd[,ack-fd] or fifo:ctl-fifo[,ack-fifo]", \
		   "Listen on ctl-fd (or ctl-fifo) for 'enable' and 'disable'; acks to ack-fd"), \
	OPT_CALLBACK('C', "cpu", "cpu", "list of cpus to monitor in system-wide", opt_cpu), \
	OPT_SET_ENUM('A', "no-aggr", aggr, enum stat_aggr, AGGR_NONE, "disable CPU count aggregation"), \
	OPT_STRING('p', "pid", pid_list, "pid", "stat events on existing process id"), \
	OPT_STRING('t', "tid", tid_list, "tid", "stat events on existing thread id"), \
	OPT_BOOL('i', "no-inherit", no_inherit, "child tasks do not inherit counters"), \
	OPT_SET_ENUM(0, "per-thread", aggr, enum stat_aggr, AGGR_THREAD, "aggregate counts per thread"), \
	OPT_SET_ENUM(0, "per-core", aggr, enum stat_aggr, AGGR_CORE, \
		     "aggregate counts per physical processor core"), \
	OPT_SET_ENUM(0, "per-die", aggr, enum stat_aggr, AGGR_DIE, "aggregate counts per processor die"), \
	OPT_SET_ENUM(0, "per-socket", aggr, enum stat_aggr, AGGR_SOCKET, \
		     "aggregate counts per processor socket"), \
	OPT_SET_ENUM(0, "per-node", aggr, enum stat_aggr, AGGR_NODE, "aggregate counts per numa node"), \
	OPT_INT('r', "repeat", repeat, "n", "repeat command and print average + stddev (max: 100)", \
		CLI_RANGED(1, 100)), \
	OPT_LONG('I', "interval-print", interval_ms, "n", \
		 "print counts at regular interval in ms (>= 10)", CLI_RANGED(10, MS_MAX)), \
	OPT_LONG(0, "interval-count", interval_count, "n", "print counts for fixed number of times", \
		 CLI_RANGED(1, LONG_MAX)), \
	OPT_BOOL(0, "summary", summary, "print summary for interval mode"), \
	OPT_BOOL(0, "no-csv-summary", no_csv_summary, "don't print 'summary' for CSV summary output"), \
	OPT_LONG(0, "timeout", timeout_ms, "n", \
		 "stop workload and print counts after a timeout period in ms (>= 10ms)", \
		 CLI_RANGED(10, MS_MAX)), \
	OPT_LONG('D', "delay", delay_ms, "n", \
		 "ms to wait before starting measurement after program start (-1: start with " \
		 "events disabled)", CLI_RANGED(-1, MS_MAX)), \
	OPT_STRING('x', "field-separator", csv_sep, "separator", \
		   "print counts with custom separator"), \
	OPT_BOOL('j', "json-output", json, "print counts in JSON format"), \
	OPT_BOOL(0, "strict-json", strict_json, "print one valid JSON document (C-locale numbers)"), \
	OPT_BOOL(0, "append", append, "append to the output file"), \
	OPT_INT(0, "log-fd", log_fd, "n", "log output to fd, instead of stderr", \
		CLI_RANGED(0, INT_MAX)), \
	OPT_SET('B', "big-num", big_num, 1, "print large numbers with thousands' separators"), \
	OPT_BOOL('n', "null", null_run, "null run - dont start any counters"), \
	OPT_BOOL(0, "no-merge", no_merge, "Do not merge identical named events"), \
	OPT_VERBOSE("be more verbose (show counter open errors, etc)"), \
	OPT_BOOL(0, "table", table, "display details about each run (only with -r option)"), \
	OPT_STRING(0, "pre", pre, "command", "command to run prior to the measured command"), \
	OPT_STRING(0, "post", post, "command", "command to run after to the measured command"), \
	OPT_BOOL(0, "interval-clear", interval_clear, "clear screen in between new interval"), \
	OPT_BOOL(0, "quiet", quiet, "don't print any output, messages or warnings (useful with record)"), \
	OPT_BOOL(0, "all-kernel", all_kernel, "Configure all used events to run in kernel space.", \
		 .flags = CLI_EXCLUSIVE), \
	OPT_BOOL(0, "all-user", all_user, "Configure all used events to run in user space.", \
		 .flags = CLI_EXCLUSIVE), \
	OPT_STRING(0, "sysfs", sysfs, "dir", "read PMUs and tracepoints under <dir> instead of /sys"), \
	OPT_BOOL('S', "sync", sync, "call sync() before starting a run"), \
	OPT_BOOL(0, "metric-only", metric_only, "Only print computed metrics. No raw values"), \
	OPT_BOOL('g', "group", group, "put the counters into a counter group"), \
	OPT_BOOL(0, "scale", scale, "Use --no-scale to disable counter scaling for multiplexing"), \
	/* refused, saying what is missing (stat-refused.c) */ \
	OPT_CALLBACK_NOARG('T', "transaction", "hardware transaction statistics", stat_opt_refused), \
	OPT_CALLBACK_NOARG(0, "topdown", "measure top-down statistics", stat_opt_refused), \
	OPT_CALLBACK(0, "td-level", "n", \
		     "Set the metrics level for the top-down statistics (0: max level)", \
		     stat_opt_refused), \
	OPT_CALLBACK_NOARG(0, "smi-cost", "measure SMI cost", stat_opt_refused), \
	OPT_CALLBACK_ARG(0, "iostat", "default", \
			 "measure I/O performance metrics provided by arch/platform", \
			 stat_opt_refused, CLI_ARG_OPTIONAL, NULL), \
	OPT_CALLBACK(0, "cputype", "hybrid cpu type", "Only enable events on applying cpu with " \
		     "this type for hybrid platform (e.g. core or atom)", stat_opt_refused), \
	OPT_CALLBACK_NOARG(0, "hybrid-merge", "Merge identical named hybrid events", \
			   stat_opt_refused), \
	OPT_CALLBACK('M', "metrics", "metric/metric group list", \
		     "monitor specified metrics or metric groups (separated by ,)", stat_opt_refused), \
	OPT_CALLBACK_NOARG(0, "metric-no-group", "don't group metric events, impacts multiplexing", \
			   stat_opt_refused), \
	OPT_CALLBACK_NOARG(0, "metric-no-merge", \
			   "don't try to share events between metrics in a group", stat_opt_refused), \
	OPT_CALLBACK_NOARG(0, "percore-show-thread", "Use with 'percore' event qualifier to show " \
			   "the event counts of one hardware thread by sum up total hardware " \
			   "threads of same physical core", stat_opt_refused)

#define CLI_OPTS struct stat_opts
static const struct cli_opt stat_options[] = {
	STAT_OPTIONS,
	OPT_STRING('o', "output", output, "file", "output file name"),
	OPT_END(),
};

/* stat record: the first -o names the perf.data, a second one the counts' file */
static int opt_record_output(void *opts, const struct cli_opt *opt, const char *arg,
			     bool unset)
{
	struct stat_opts *o = opts;

	(void)opt, (void)unset;
	if (o->record_path_set) {
		o->output = arg;
	} else {
		o->record_path = arg;
		o->record_path_set = true;
	}
	return 0;
}

static const struct cli_opt stat_record_options[] = {
	STAT_OPTIONS,
	OPT_CALLBACK('o', "output", "file", "perf.data file to write (default perf.data; "
		     "- = stdout); a second -o: the counts' file", opt_record_output),
	OPT_END(),
};

static const char *const stat_usage[] = {
	"stat [<options>] [<command>]",
	"stat record [-o FILE|-] [<options>] <command>",
	"stat report [-i FILE|-] [<options>]",
	NULL,
};

static const char *const stat_record_usage[] = {
	"stat record [-o FILE|-] [<options>] <command>", NULL
};

static int stat_init(void *opts)
{
	struct stat_opts *o = opts;

	o->repeat = 1;
	o->big_num = -1;
	o->log_fd = -1;
	o->aggr = AGGR_GLOBAL;
	o->scale = true;
	return 0;
}

static int stat_record_init(void *opts)
{
	stat_init(opts);
	((struct stat_opts *)opts)->record_path = "perf.data";
	return 0;
}

/* --pre / --post: the user's shell command around each run, as perf runs it (system);
 * 0, or 1 after saying it failed. */
static int run_hook(const char *opt, const char *cmd)
{
	int st;

	if (!cmd)
		return 0;
	fflush(stdout);
	fflush(stderr);
	st = system(cmd);
	if (st == 0)
		return 0;
	if (st > 0 && WIFEXITED(st))
		cli_error("%s '%s' failed: exit status %d", opt, cmd, WEXITSTATUS(st));
	else
		cli_error("%s '%s' failed", opt, cmd);
	return 1;
}

static void stat_exit(void *opts)
{
	free(((struct stat_opts *)opts)->event_specs);
	free(((struct stat_opts *)opts)->spec_filters);
	free(((struct stat_opts *)opts)->cgroup_args);
}

/* Options that cannot go together, or need a target. 0 or 129 (message printed). */
static int stat_check(const struct cli_command *c, struct stat_opts *o)
{
	if (o->output && o->log_fd >= 0)
		return cli_usage_error(c, "--output and --log-fd cannot be used together");
	if (o->append && !o->output && o->log_fd < 0)
		return cli_usage_error(c, "--append needs --output FILE or --log-fd N");
	if ((o->csv_sep ? 1 : 0) + o->json + o->strict_json > 1)
		return cli_usage_error(c, "choose one output format: -x SEP, -j/--json-output or "
				       "--strict-json");
	if (o->repeat > 1 && !o->argc)
		return cli_usage_error(c, "-r/--repeat needs a command to run");
	if (o->repeat > 1 && o->interval_ms)
		return cli_usage_error(c, "-r/--repeat and -I/--interval-print cannot be used "
				       "together");
	/* no command and no target: the whole system, like perf */
	if (!o->argc && !o->pid_list && !o->tid_list)
		o->system_wide = true;
	if (o->aggr != AGGR_GLOBAL && o->aggr != AGGR_THREAD && !o->system_wide)
		return cli_usage_error(c, "-A/--no-aggr and --per-core/die/socket/node need -a "
				       "or -C (per-CPU counting)");
	if (o->aggr == AGGR_THREAD && !o->pid_list && !o->tid_list &&
	    (!o->system_wide || o->cpu_list))
		return cli_usage_error(c, "--per-thread counts with -p PID, -t TID, -a or no "
				       "target (not with -C or a command alone)");
	if (o->nr_cgroup_args && o->for_each_cgroup)
		return cli_usage_error(c, "--cgroup and --for-each-cgroup cannot be used together");
	if ((o->nr_cgroup_args || o->for_each_cgroup) && (!o->system_wide || o->aggr == AGGR_THREAD))
		return cli_usage_error(c, "-G/--cgroup and --for-each-cgroup count per CPU: they "
				       "need -a or -C (and not --per-thread)");
	if (o->metric_only && (o->repeat > 1 || o->aggr == AGGR_THREAD || o->strict_json))
		return cli_usage_error(c, "--metric-only is not supported with %s",
				       o->repeat > 1 ? "-r" : o->strict_json ? "--strict-json" :
				       "--per-thread");
	if (o->table && o->repeat < 2)
		return cli_usage_error(c, "--table is only supported with -r");
	if (o->record_path && (o->interval_ms || o->repeat > 1))
		return cli_usage_error(c, "-I and -r are not supported; record one run");
	return 0;
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
	free(r->wall_runs);
	free(r->set_idx);
	free(r->ids);
	tally_stat_buckets__delete(r->buckets);
	free(r->rows);
	free(r->prev);
	free(r->cur);
	free(r->acc);
	stat_run__free_cgroups(r);
	cli_control__close(&r->ctl);
}

/* ---- the flow ------------------------------------------------------------------------ */

/* How the counts print, and where: stderr, -o FILE or --log-fd. 0 or 1. */
static int setup_output(struct stat_run *r, bool *owned)
{
	struct stat_opts *o = r->opts;

	r->out.fmt = o->strict_json ? FMT_STRICT : o->json ? FMT_JSON : o->csv_sep ? FMT_CSV :
		     FMT_STD;
	r->out.aggr = o->aggr;
	r->out.sep = o->csv_sep ? o->csv_sep : " ";
	r->out.big_num = o->big_num != 0;
	r->out.unit_width = 4;
	for (int i = 0; i < r->nr_ev; i++)
		if ((int)strlen(r->ev[i].unit) > r->out.unit_width)
			r->out.unit_width = (int)strlen(r->ev[i].unit);
	r->out.run_count = o->repeat;
	r->out.csv_summary_word = !o->no_csv_summary;
	r->out.strict_first = true;
	r->out.cgroup_column = o->nr_cgroup_args || o->for_each_cgroup;
	r->out.cgroups = r->cgroups;
	r->out.metric_only = o->metric_only;
	if (o->quiet) {
		/* as perf: not even -o's file is made */
		r->out.f = fopen("/dev/null", "w");
		*owned = r->out.f != NULL;
		if (!r->out.f)
			cli_error("--quiet: /dev/null: %s", strerror(errno));
		return r->out.f ? 0 : 1;
	}
	r->out.f = stat_open_output(o, owned);
	if (!r->out.f)
		return 1;
	if (r->out.f == stderr) {
		/* One write at the end instead of one per field (stderr is unbuffered). */
		static char errbuf[16384];

		setvbuf(stderr, errbuf, _IOFBF, sizeof(errbuf));
	}
	return 0;
}

/* Every run of -r (one without it); *exit_code: the workload's. 0 or an exit status. */
static int run_all(struct stat_run *r, int *exit_code)
{
	struct stat_opts *o = r->opts;
	int status = 0, ret;

	if (o->table && !r->wall_runs) {
		r->wall_runs = calloc((size_t)o->repeat, sizeof(*r->wall_runs));
		if (!r->wall_runs)
			return 1;
	}
	for (int run = 0; run < o->repeat; run++) {
		if (run_hook("--pre", o->pre))
			return 1;
		if (o->sync)
			sync();
		ret = stat_run__once(r, &status);
		if (ret)
			return ret;
		if (run_hook("--post", o->post))
			return 1;
		if (o->repeat > 1) {
			size_t n = (size_t)r->nr_ev * (size_t)r->nr_ids + 1;

			if (!r->acc && !(r->acc = calloc(n, sizeof(*r->acc))))
				return 1;
			stat_run__accumulate(r);
		}
		*exit_code = r->workload_ran && !r->stopped_workload ?
			     workload__exit_code(status) : 0;
		if (exiting)
			break;
	}
	return 0;
}

/* After -I: with --summary, the totals since the start (read afresh). */
static void print_summary(struct stat_run *r)
{
	if (!r->nr_ev || tally_counters__read(r->set))
		return;
	r->span_ns = r->last_wall_ns;
	stat_run__reduce(r, false);
	r->out.summary_line = r->out.fmt == FMT_CSV;
	if (r->out.fmt == FMT_STD || r->out.fmt == FMT_STRICT) {
		stat_run__print_report(r);
	} else {
		r->out.interval = false;
		r->out.walltime_ns = r->last_wall_ns;
		stat_print_rows(&r->out, r->ev, r->nr_ev, r->ids, r->nr_ids, r->rows);
	}
}

static void strict_json_open(struct stat_run *r)
{
	char t[4096];

	stat_target_text(r->opts, t, sizeof(t));
	fputs("{\"tally-stat\": 1, \"target\": ", r->out.f);
	tally_json_string(r->out.f, t, 0);
	fprintf(r->out.f, ", \"runs\": %d, \"interval-ms\": %ld, \"counters\": [",
		r->opts->repeat, r->opts->interval_ms);
}

static void strict_json_close(struct stat_run *r, int exit_code)
{
	const struct stat_opts *o = r->opts;

	fprintf(r->out.f, "\n  ], \"elapsed-seconds\": %.9f",
		(o->repeat > 1 ? r->wall.mean : r->last_wall_ns) / 1e9);
	if (o->repeat == 1 && r->workload_ran && r->have_ru)
		fprintf(r->out.f, ", \"user-seconds\": %.6f, \"sys-seconds\": %.6f",
			r->ru.ru_utime.tv_sec + r->ru.ru_utime.tv_usec / 1e6,
			r->ru.ru_stime.tv_sec + r->ru.ru_stime.tv_usec / 1e6);
	if (r->workload_ran)
		fprintf(r->out.f, ", \"exit-status\": %d", exit_code);
	fputs("}\n", r->out.f);
}

/* Count, print, and with stat record write the perf.data. The exit status. */
static int count_and_print(struct stat_run *r)
{
	struct stat_opts *o = r->opts;
	int exit_code = 0, ret;

	if (o->strict_json)
		strict_json_open(r);
	ret = run_all(r, &exit_code);
	if (ret)
		return ret;
	if (o->repeat > 1)
		stat_run__averaged_rows(r);
	if (o->record_path && r->nr_ev && r->set) {
		int wr = stat_run__write_data(r);

		if (wr && !exit_code)
			exit_code = wr;
	}
	if (!o->interval_ms)
		stat_run__print_report(r);
	else if (o->summary)
		print_summary(r);
	if (o->strict_json)
		strict_json_close(r, exit_code);
	return exit_code;
}

static int stat_exec_common(const struct cli_command *c, struct stat_opts *o,
			    const struct cli_args *args)
{
	struct stat_run r;
	locale_t c_locale = (locale_t)0, old_locale = (locale_t)0;
	bool owned = false;
	int ret, exit_code;

	o->argv = args->argv;
	o->argc = args->argc;
	o->cmdline = args->full_argv;
	o->cmdline_argc = args->full_argc;
	if (o->refused)
		return stat_refuse(o);
	ret = stat_check(c, o);
	if (ret)
		return ret;
	memset(&r, 0, sizeof(r));
	r.opts = o;
	if (cli_control__open(&r.ctl, o->control))
		return 129;
	ret = stat_run__build_events(&r);
	if (!ret)
		ret = stat_run__plan_merges(&r);
	if (ret) {
		if (ret < 0)
			cli_error("cannot set up events: %s", strerror(-ret));
		free_run(&r);
		return ret > 0 ? ret : 1;
	}
	if (setup_output(&r, &owned)) {
		free_run(&r);
		return 1;
	}
	if (o->strict_json) {
		c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
		if (c_locale)
			old_locale = uselocale(c_locale);
	}
	stat_install_signals();
	exit_code = count_and_print(&r);
	if (old_locale)
		uselocale(old_locale);
	if (c_locale)
		freelocale(c_locale);
	if (cli_finish_output(r.out.f, owned ? (o->output ? o->output : "--log-fd") :
				"standard error") && !exit_code)
		exit_code = 1;
	if (stat_got_signal() && !r.workload_ran && !exit_code)
		exit_code = 0;
	free_run(&r);
	return exit_code;
}

static int stat_exec(void *opts, const struct cli_args *args)
{
	return stat_exec_common(&cmd_stat, opts, args);
}

static const struct cli_command cmd_stat_record;

static int stat_record_exec(void *opts, const struct cli_args *args)
{
	return stat_exec_common(&cmd_stat_record, opts, args);
}

static const struct cli_command cmd_stat_record = {
	.name = "stat record",
	.summary = "Write the counts of a command as a perf.data file",
	.usage = stat_record_usage,
	.opts = stat_record_options,
	.flags = CLI_STOP_AT_ARG | CLI_LOCALE,
	.max_args = CLI_ANY_ARGS,
	.size = sizeof(struct stat_opts),
	.init = stat_record_init,
	.exec = stat_record_exec,
	.exit = stat_exit,
};

static const struct cli_command *const stat_subcommands[] = {
	&cmd_stat_record, &cmd_stat_report, NULL,
};

const struct cli_command cmd_stat = {
	.name = "stat",
	.summary = "Run a command and gather performance counter statistics",
	.usage = stat_usage,
	.opts = stat_options,
	.flags = CLI_STOP_AT_ARG | CLI_LOCALE,
	.max_args = CLI_ANY_ARGS,
	.size = sizeof(struct stat_opts),
	.init = stat_init,
	.exec = stat_exec,
	.exit = stat_exit,
	.subcommands = stat_subcommands,
};
