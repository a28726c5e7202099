/*
 * tally stat end to end over the simulated kernel: the hardware paths this VM cannot
 * exercise (groups read with GROUP|ID, multiplexing shown as "  (66.67%)" with
 * scaled values, <not counted>, <not supported>, derived metrics such as insn per
 * cycle and GHz) and the open-error messages. Links the stat command's sources and
 * calls cmd_stat() in-process with the sys seam pointing at the simulator.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd.h"
#include "options.h"
#include "open-error.h"
#include "simkernel.h"
#include "tally/topology.h"

/* What cli/main.c provides to commands. */
int verbose;
volatile sig_atomic_t exiting;

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("tally: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

int cli_finish_output(FILE *f, const char *what)
{
	int bad = fflush(f) != 0 || ferror(f);

	(void)what;
	if (f != stdout && f != stderr)
		bad |= fclose(f) != 0;
	return bad;
}

/* Counts the simulated kernel hands out: per (type, config). */
static void give_counts(struct sim_kernel *k, struct sim_event *e)
{
	(void)k;
	e->enabled = 3000000;
	e->running = 3000000;
	if (e->attr.type == PERF_TYPE_SOFTWARE && e->attr.config == PERF_COUNT_SW_TASK_CLOCK) {
		e->count = 2000000;	/* 2 msec */
	} else if (e->attr.type == PERF_TYPE_HARDWARE) {
		switch (e->attr.config) {
		case PERF_COUNT_HW_CPU_CYCLES:
			e->count = 4000000;
			e->running = 2000000;	/* multiplexed: ran 2/3 of the time */
			break;
		case PERF_COUNT_HW_INSTRUCTIONS:
			e->count = 8000000;
			e->running = 2000000;
			break;
		case PERF_COUNT_HW_BRANCH_INSTRUCTIONS:
			e->count = 0;
			e->running = 0;		/* never scheduled: <not counted> */
			break;
		default:
			e->count = 1000;
		}
	} else {
		e->count = 7;
	}
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int run_stat(const char *out, const char **args, int nargs)
{
	char *argv[32];
	int argc = 0;

	argv[argc++] = "stat";
	argv[argc++] = "-o";
	argv[argc++] = (char *)out;
	for (int i = 0; i < nargs; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	exiting = 0;
	return cli_run(&cmd_stat, argc, argv);
}

/* stat run over a fresh simulated kernel that gives counts with @give; its output. */
static char *stat_over_sim(const char *path, void (*give)(struct sim_kernel *, struct sim_event *),
			   const char **args, int nargs)
{
	struct sim_kernel *k = sim_install();

	k->on_open = give;
	assert_int_equal(run_stat(path, args, nargs), 0);
	sim_uninstall();
	return slurp(path);
}

/* A fresh simulated kernel giving give_counts, and stat run on it with its output in
 * the new temporary file path (a mkstemp template); the kernel, still installed. */
static struct sim_kernel *counts_run(char *path, const char **args, int nargs)
{
	struct sim_kernel *k;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	k = sim_install();
	k->on_open = give_counts;
	assert_int_equal(run_stat(path, args, nargs), 0);
	return k;
}

static const char *line_with(const char *text, const char *needle, char *buf, size_t len)
{
	const char *p = strstr(text, needle), *s, *e;

	if (!p)
		return NULL;
	for (s = p; s > text && s[-1] != '\n'; s--)
		;
	e = strchr(p, '\n');
	if (!e)
		e = p + strlen(p);
	snprintf(buf, len, "%.*s", (int)(e - s), s);
	return buf;
}

static void csv_group_multiplexing_not_counted(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX", line[512];
	const char *args[] = { "-a", "-C", "0", "-x", ",", "--timeout", "10", "-e",
			       "{cycles,instructions},task-clock,branches" };
	/* -x , is replaced below by -j -j, then --strict-json twice (repeats are harmless) */
	struct sim_kernel *k;
	char *text;
	int n = 0;

	(void)state;
	k = counts_run(path, args, 9);
	/* group: cycles leader, instructions member reading through it */
	for (int i = 0; i < k->nr_opened; i++) {
		struct sim_event *e = sim_event_nth(i);

		if (e->attr.type == PERF_TYPE_HARDWARE && e->attr.config == PERF_COUNT_HW_INSTRUCTIONS) {
			assert_true(e->group_fd >= 0);
			assert_true(e->attr.read_format & PERF_FORMAT_GROUP);
			assert_true(e->attr.read_format & PERF_FORMAT_ID);
			assert_int_equal(e->attr.disabled, 0);
			n++;
		}
		if (e->attr.type == PERF_TYPE_HARDWARE && e->attr.config == PERF_COUNT_HW_CPU_CYCLES) {
			assert_int_equal(e->group_fd, -1);
			assert_int_equal(e->attr.disabled, 1);
			assert_int_equal(e->cpu, 0);
			assert_int_equal(e->pid, -1);
			assert_true(e->nr_enable >= 1);
		}
	}
	assert_int_equal(n, 1);
	sim_uninstall();
	text = slurp(path);
	/* scaled: 4,000,000 * 3/2; GHz = 6e6 cycles / 2e6 ns; pcnt-running 66.00: perf 6.1
	 * divides the integer times for CSV and JSON (its print_running; std shows 66.67%) */
	assert_non_null(line_with(text, ",cycles,", line, sizeof(line)));
	assert_string_equal(line, "6000000,,cycles,2000000,66.00,3.000,GHz");
	assert_non_null(line_with(text, ",instructions,", line, sizeof(line)));
	assert_string_equal(line, "12000000,,instructions,2000000,66.00,2.00,insn per cycle");
	assert_non_null(line_with(text, ",task-clock,", line, sizeof(line)));
	assert_non_null(strstr(line, "2.00,msec,task-clock,3000000,100.00,"));
	assert_non_null(line_with(text, ",branches,", line, sizeof(line)));
	assert_string_equal(line, "<not counted>,,branches,0,0.00,,");	/* run 0 of ena */
	free(text);

	/* the same in perf's JSON lines and in tally's strict JSON */
	args[3] = "-j";
	args[4] = "-j";
	k = sim_install();
	k->on_open = give_counts;
	assert_int_equal(run_stat(path, args, 9), 0);
	text = slurp(path);
	assert_non_null(strstr(text, "{\"counter-value\" : \"6000000.000000\", \"unit\" : \"\", "
			       "\"event\" : \"cycles\", \"event-runtime\" : 2000000, "
			       "\"pcnt-running\" : 66.00, \"metric-value\" : 3.000000, "
			       "\"metric-unit\" : \"GHz\"}\n"));
	assert_non_null(strstr(text, "{\"counter-value\" : \"<not counted>\", \"unit\" : \"\", "
			       "\"event\" : \"branches\""));
	free(text);
	args[3] = "--strict-json";
	args[4] = "--strict-json";
	k = sim_install();
	k->on_open = give_counts;
	assert_int_equal(run_stat(path, args, 9), 0);
	sim_uninstall();
	text = slurp(path);
	assert_non_null(strstr(text, "\"event\": \"cycles\", \"unit\": \"\", \"status\": "
			       "\"counted\", \"value\": 6000000, \"count\": 6000000, "
			       "\"time-enabled\": 3000000, \"time-running\": 2000000, "
			       "\"pcnt-running\": 66.67"));
	assert_non_null(strstr(text, "\"event\": \"branches\", \"unit\": \"\", "
			       "\"status\": \"not counted\", \"value\": null"));
	free(text);
	unlink(path);
}

/* --no-scale prints multiplexed counts as read (perf's stat_config.scale off), metrics
 * from those; -g puts every event into the first one's group. */
static void no_scale_and_group(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX";
	const char *args[] = { "-a", "-C", "0", "-x", ",", "--timeout", "10", "--no-scale", "-g",
			       "-e", "cycles,instructions,task-clock" };
	struct sim_kernel *k = NULL;
	char *text;

	(void)state;
	k = counts_run(path, args, 11);
	/* opened in order: cycles leads on its own, the other two join it */
	assert_int_equal(k->nr_opened, 3);
	assert_int_equal(sim_event_nth(0)->attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(sim_event_nth(0)->group_fd, -1);
	assert_int_equal(sim_event_nth(1)->group_fd, sim_event_nth(0)->fd);
	assert_int_equal(sim_event_nth(2)->group_fd, sim_event_nth(0)->fd);
	assert_true(sim_event_nth(2)->attr.read_format & PERF_FORMAT_GROUP);
	sim_uninstall();
	text = slurp(path);
	/* as read: 4e6 cycles / 2e6 ns is 2 GHz, 8e6 instructions per 4e6 cycles 2 */
	static const char *const want[] = {
		"4000000,,cycles,2000000,66.00,2.000,GHz",
		"8000000,,instructions,2000000,66.00,2.00,insn per cycle",
	};
	for (size_t i = 0; i < 2; i++)
		assert_non_null(strstr(text, want[i]));
	free(text);
	unlink(path);
}

/* --metric-only with hardware counters: the units of the metrics that have values, then
 * the values alone (CPUs utilized left out), in CSV, JSON and std cells of 20. */
static void metric_only_values(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX";
	const char *args[] = { "-a", "-C", "0", "-x", ",", "--timeout", "10", "--metric-only",
			       "-e", "cycles,instructions,task-clock" };
	static const char *const want[] = {
		"GHz,insn per cycle,\n3.000,2.00,\n",
		"{\"unit\" : \"GHz\", \"unit\" : \"insn per cycle\"}\n"
		"{\"metric-value\" : \"3.000\"}{\"metric-value\" : \"2.00\"}\n",
		"                 GHz       insn per cycle \n"
		"               3.000                2.00  \n",
	};
	char *text;

	(void)state;
	for (int f = 0; f < 3; f++) {
		if (f == 1)
			args[3] = args[4] = "-j";
		if (f == 2)
			args[3] = args[4] = "--no-csv-summary";
		counts_run(path, args, 10);
		sim_uninstall();
		text = slurp(path);
		assert_non_null(strstr(text, want[f]));
		free(text);
		unlink(path);
		strcpy(path, "/tmp/tally-stat-sim-XXXXXX");
	}
}

static void human_multiplexing_and_unsupported(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX", line[512], want[512];
	const char *args[] = { "-a", "-C", "0", "--timeout", "10", "-e",
			       "{cycles,instructions},branch-misses,branches" };
	struct sim_kernel *k;
	char *text;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	k = sim_install();
	k->on_open = give_counts;
	sim_fail_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, false, EOPNOTSUPP);
	assert_int_equal(run_stat(path, args, 7), 0);
	sim_uninstall();
	text = slurp(path);
	assert_non_null(strstr(text, " Performance counter stats for 'CPU(s) 0':\n\n"));
	assert_non_null(line_with(text, " cycles ", line, sizeof(line)));
	/* value %18 + unit (4) + name %-32, no clock → no GHz (35 blank metric columns),
	 * then the multiplexing ratio */
	snprintf(want, sizeof(want), "%18s %-4s %-32s%35s  (66.67%%)", "6000000", "", "cycles", "");
	assert_string_equal(line, want);
	assert_non_null(line_with(text, " instructions ", line, sizeof(line)));
	snprintf(want, sizeof(want), "%18s %-4s %-32s # %7.2f  %-23s  (66.67%%)", "12000000", "",
		 "instructions", 2.0, "insn per cycle");
	assert_string_equal(line, want);
	assert_non_null(line_with(text, " branch-misses", line, sizeof(line)));
	snprintf(want, sizeof(want), "%18s %-4s %-25s%35s", "<not supported>", "", "branch-misses", "");
	assert_string_equal(line, want);
	assert_non_null(line_with(text, " branches", line, sizeof(line)));
	snprintf(want, sizeof(want), "%18s %-4s %-25s%35s  (0.00%%)", "<not counted>", "", "branches", "");
	assert_string_equal(line, want);
	assert_non_null(strstr(text, " seconds time elapsed\n\n"));
	free(text);
	unlink(path);
}

static void give_ratios(struct sim_kernel *k, struct sim_event *e)
{
	(void)k;
	e->enabled = e->running = 1000;
	if (e->attr.type != PERF_TYPE_HARDWARE) {
		e->count = 1000;
		return;
	}
	switch (e->attr.config) {
	case PERF_COUNT_HW_CPU_CYCLES: e->count = 1000; break;
	case PERF_COUNT_HW_INSTRUCTIONS: e->count = 2000; break;
	case PERF_COUNT_HW_STALLED_CYCLES_FRONTEND: e->count = 500; break;
	case PERF_COUNT_HW_BRANCH_INSTRUCTIONS: e->count = 400; break;
	case PERF_COUNT_HW_BRANCH_MISSES: e->count = 10; break;
	case PERF_COUNT_HW_CACHE_REFERENCES: e->count = 200; break;
	case PERF_COUNT_HW_CACHE_MISSES: e->count = 50; break;
	default: e->count = 1;
	}
}

static void ratio_metrics_per_cpu(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX", line[512], want[1024];
	const char *csv[] = { "-A", "-a", "-C", "0,1", "-x", ",", "--timeout", "10", "-e",
			      "cycles,instructions,stalled-cycles-frontend,branches,branch-misses,"
			      "cache-references,cache-misses" };
	const char *std[] = { "-a", "-C", "0", "--timeout", "10", "-e",
			      "cycles,instructions,stalled-cycles-frontend" };
	struct sim_kernel *k;
	char *text;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	k = sim_install();
	k->on_open = give_ratios;
	assert_int_equal(run_stat(path, csv, 10), 0);
	text = slurp(path);
	/* one line per CPU, CPU prefix, per-CPU ratios */
	assert_non_null(strstr(text, "\nCPU0,10,,branch-misses,1000,100.00,2.50,of all branches\n"));
	assert_non_null(strstr(text, "\nCPU1,10,,branch-misses,1000,100.00,2.50,of all branches\n"));
	assert_non_null(strstr(text, "\nCPU0,50,,cache-misses,1000,100.00,25.00,of all cache refs\n"));
	assert_non_null(strstr(text, "\nCPU1,500,,stalled-cycles-frontend,1000,100.00,50.00,"
			       "frontend cycles idle\n"));
	assert_non_null(strstr(text, "\nCPU0,2000,,instructions,1000,100.00,2.00,insn per cycle\n"));
	free(text);

	k = sim_install();
	k->on_open = give_ratios;
	assert_int_equal(run_stat(path, std, 7), 0);
	sim_uninstall();
	text = slurp(path);
	/* insn per cycle, then the stalled-cycles metric on a continuation line */
	assert_non_null(line_with(text, " instructions ", line, sizeof(line)));
	snprintf(want, sizeof(want), "%18s %-4s %-32s # %7.2f  %-23s", "2000", "", "instructions",
		 2.0, "insn per cycle");
	assert_string_equal(line, want);
	snprintf(want, sizeof(want), "%s\n%49s # %7.2f  %-23s\n", line, "", 0.25,
		 "stalled cycles per insn");
	assert_non_null(strstr(text, want));
	free(text);
	unlink(path);
}

/*
 * Uneven multiplexing per CPU: CPU 0 ran its events a third of the time, CPU 1 all of
 * it. perf 6.1 scales each CPU's reading, then sums the bucket; a CPU that never ran
 * an event makes the bucket <not counted> (its times zeroed, the "cpus" column
 * counting the CPUs looked at until then).
 */
static void give_uneven(struct sim_kernel *k, struct sim_event *e)
{
	(void)k;
	e->enabled = 3000000;
	e->running = e->cpu == 0 ? 1000000 : 3000000;
	e->count = 1000000ull * (uint64_t)(e->cpu + 1);
	if (e->attr.type == PERF_TYPE_HARDWARE && e->attr.config == PERF_COUNT_HW_BRANCH_INSTRUCTIONS &&
	    e->cpu == 0)
		e->running = e->count = 0;	/* never scheduled on CPU 0 */
	if (e->attr.type == PERF_TYPE_HARDWARE && e->attr.config == PERF_COUNT_HW_BRANCH_MISSES &&
	    e->cpu == 1)
		e->running = e->count = 0;	/* never scheduled on CPU 1 */
}

/* The lines of @text that @keep accepts, for comparing count lines. */
static void pick_lines(const char *text, bool (*keep)(const char *line, const char *arg),
		       const char *arg, char *out, size_t len)
{
	size_t n = 0;

	out[0] = 0;
	for (const char *l = text; *l && n < len; ) {
		const char *e = strchr(l, '\n');
		size_t ll = e ? (size_t)(e - l) : strlen(l);
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)ll, l);
		if (keep(line, arg) && n + ll + 2 < len) {
			memcpy(out + n, l, ll);
			n += ll;
			out[n++] = '\n';
			out[n] = 0;
		}
		l += ll + (e ? 1 : 0);
	}
}

static bool starts_with(const char *line, const char *prefix)
{
	return !strncmp(line, prefix, strlen(prefix));
}

/* a count line of cycles, branches or branch-misses */
static bool names_event(const char *line, const char *unused)
{
	(void)unused;
	return strstr(line, " cycles ") || strstr(line, " branches ") ||
	       strstr(line, " branch-misses ");
}

static void lines_with_prefix(const char *text, const char *prefix, char *out, size_t len)
{
	pick_lines(text, starts_with, prefix, out, len);
}

static void per_socket_scaling_not_counted(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX", data[] = "/tmp/tally-stat-sim-data-XXXXXX";
	char line[512], want[512], ours[4096], theirs[4096], cmd[512];
	const char *csv[] = { "-a", "-C", "0,1", "--per-socket", "-x", ",", "--timeout", "10", "-e",
			      "cycles,branches,branch-misses" };
	const char *std[] = { "-a", "-C", "0,1", "--per-socket", "--timeout", "10", "-e",
			      "cycles,branches,branch-misses" };
	struct tally_topology *topo = NULL;
	const struct tally_cpu_topo *t0, *t1;
	struct sim_kernel *k;
	char *text;
	int fd;

	(void)state;
	if (tally_topology__read(NULL, &topo) || !(t0 = tally_topology__cpu(topo, 0)) ||
	    !(t1 = tally_topology__cpu(topo, 1)) || t0->socket != t1->socket) {
		tally_topology__delete(topo);
		print_message("CPUs 0 and 1 are not one socket here: per-socket sums not tested\n");
		skip();
	}
	tally_topology__delete(topo);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	text = stat_over_sim(path, give_uneven, csv, 10);
	/* 1e6 * 3/1 + 2e6 * 3/3 = 5e6 (summing first and scaling once would give 4.5e6);
	 * run 4e6 of 6e6 enabled: perf's CSV percentage divides integers (66.00) */
	assert_non_null(line_with(text, ",cycles,", line, sizeof(line)));
	assert_string_equal(line, "S0,2,5000000,,cycles,4000000,66.00,,");
	/* CPU 0 never ran it: the bucket is <not counted>, and perf stopped at CPU 0 */
	assert_non_null(line_with(text, ",branches,", line, sizeof(line)));
	assert_string_equal(line, "S0,1,<not counted>,,branches,0,100.00,,");
	/* CPU 1 never ran it: both CPUs looked at, still <not counted> */
	assert_non_null(line_with(text, ",branch-misses,", line, sizeof(line)));
	assert_string_equal(line, "S0,2,<not counted>,,branch-misses,0,100.00,,");
	free(text);

	/* std, and perf 6.1 itself on the same readings (stat record → perf stat report) */
	text = stat_over_sim(path, give_uneven, std, 8);
	snprintf(want, sizeof(want), "S0        2 %18s %-4s %-32s%35s  (66.67%%)", "5000000", "",
		 "cycles", "");
	assert_non_null(line_with(text, " cycles ", line, sizeof(line)));
	assert_string_equal(line, want);
	lines_with_prefix(text, "S0 ", ours, sizeof(ours));
	free(text);
	if (system("perf --version >/dev/null 2>&1") != 0) {
		print_message("perf absent: per-socket lines not compared with perf stat report\n");
		unlink(path);
		skip();
	}
	fd = mkstemp(data);
	assert_true(fd >= 0);
	close(fd);
	{
		char *argv[] = { "stat", "record", "-o", data, "-a", "-C", "0,1", "--per-socket",
				 "-o", path, "--timeout", "10", "-e",
				 "cycles,branches,branch-misses", NULL };

		k = sim_install();
		k->on_open = give_uneven;
		exiting = 0;
		/* the -o before the stat options names the data file; the later one is stat's */
		assert_int_equal(cli_run(&cmd_stat, 14, argv), 0);
		sim_uninstall();
	}
	snprintf(cmd, sizeof(cmd), "perf stat report -i %s >%s 2>&1", data, path);
	assert_int_equal(system(cmd), 0);
	text = slurp(path);
	lines_with_prefix(text, "S0 ", theirs, sizeof(theirs));
	free(text);
	assert_non_null(strstr(ours, " branches "));
	assert_non_null(strstr(ours, "<not counted>"));
	assert_string_equal(ours, theirs);
	unlink(data);
	unlink(path);
}

/* The same uneven readings per core and per CPU (-A): every count line as perf 6.1's
 * stat report prints it from a stat record of the same readings. */
static void per_core_and_cpu_scaling_as_perf(void **state)
{
	const char *aggrs[] = { "--per-core", "-A" };

	(void)state;
	if (system("perf --version >/dev/null 2>&1") != 0) {
		print_message("perf absent: per-core and -A lines not compared with perf\n");
		skip();
	}
	for (size_t i = 0; i < sizeof(aggrs) / sizeof(aggrs[0]); i++) {
		char path[] = "/tmp/tally-stat-sim-XXXXXX", data[] = "/tmp/tally-stat-sim-data-XXXXXX";
		char ours[4096], theirs[4096], cmd[512];
		const char *std[] = { "-a", "-C", "0,1", aggrs[i], "--timeout", "10", "-e",
				      "cycles,branches,branch-misses" };
		char *argv[] = { "stat", "record", "-o", data, "-a", "-C", "0,1", (char *)aggrs[i],
				 "-o", path, "--timeout", "10", "-e",
				 "cycles,branches,branch-misses", NULL };
		struct sim_kernel *k;
		char *text;
		int fd;

		fd = mkstemp(path);
		assert_true(fd >= 0);
		close(fd);
		fd = mkstemp(data);
		assert_true(fd >= 0);
		close(fd);
		text = stat_over_sim(path, give_uneven, std, 8);
		pick_lines(text, names_event, NULL, ours, sizeof(ours));
		free(text);
		k = sim_install();
		k->on_open = give_uneven;
		exiting = 0;
		assert_int_equal(cli_run(&cmd_stat, 14, argv), 0);
		sim_uninstall();
		snprintf(cmd, sizeof(cmd), "perf stat report %s -i %s >%s 2>&1", aggrs[i], data, path);
		assert_int_equal(system(cmd), 0);
		text = slurp(path);
		pick_lines(text, names_event, NULL, theirs, sizeof(theirs));
		free(text);
		assert_non_null(strstr(ours, "<not counted>"));
		assert_string_equal(ours, theirs);
		unlink(data);
		unlink(path);
	}
}

/* uncore_imc/cas_count_read/ is one event per memory controller (uncore_imc_0, _1):
 * perf 6.1 shows their sum as one line, and with --no-merge one line per PMU. */
static void give_imc(struct sim_kernel *k, struct sim_event *e)
{
	(void)k;
	e->enabled = e->running = 1000000;
	e->count = e->attr.type == 14 ? 16384 : e->attr.type == 15 ? 49152 : 5;
}

static void merged_pmu_events(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX", line[512], sysfs[4096];
	const char *args[] = { "--sysfs", sysfs, "-a", "-C", "0", "-x", ",", "--timeout", "10",
			       "-e", "uncore_imc/cas_count_read/,tsc", "--no-merge" };
	const char *top = getenv("TALLY_TOP");
	char *text;
	int fd;

	(void)state;
	snprintf(sysfs, sizeof(sysfs), "%s/tests/data/sysfs/x86", top ? top : "..");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	text = stat_over_sim(path, give_imc, args, 11);	/* merged */
	/* (16384 + 49152) * 6.103515625e-5 MiB = 4 MiB, one line */
	assert_non_null(line_with(text, "cas_count_read", line, sizeof(line)));
	assert_string_equal(line, "4.00,MiB,uncore_imc/cas_count_read/,2000000,100.00,,");
	assert_null(strstr(strstr(text, "cas_count_read") + 1, "cas_count_read"));
	assert_non_null(line_with(text, ",tsc,", line, sizeof(line)));
	free(text);
	text = stat_over_sim(path, give_imc, args, 12);	/* --no-merge */
	assert_non_null(line_with(text, "uncore_imc_0/", line, sizeof(line)));
	assert_string_equal(line, "1.00,MiB,uncore_imc_0/cas_count_read/,1000000,100.00,,");
	assert_non_null(line_with(text, "uncore_imc_1/", line, sizeof(line)));
	assert_string_equal(line, "3.00,MiB,uncore_imc_1/cas_count_read/,1000000,100.00,,");
	/* an alias is named with its PMU, as perf prints "tsc [msr]" */
	assert_non_null(line_with(text, ",tsc [msr],", line, sizeof(line)));
	free(text);
	unlink(path);
}

static void open_error_messages(void **state)
{
	char buf[2048];
	struct cli_open_ctx sys = { true, 0, -1, false, 2 }, proc = { false, -1, 4242, false, 2 };
	struct cli_open_ctx capped = { false, -1, -1, false, 1 };

	(void)state;
	cli_open_error_text(buf, sizeof(buf), "cycles", -EACCES, &sys);
	assert_non_null(strstr(buf, "perf_event_paranoid"));
	assert_non_null(strstr(buf, "system-wide counting (-a)"));
	assert_non_null(strstr(buf, "CAP_PERFMON"));
	assert_non_null(strstr(buf, "setcap cap_perfmon=ep"));
	assert_non_null(strstr(buf, ":u"));
	assert_non_null(strstr(buf, "sysctl -w kernel.perf_event_paranoid=0"));
	assert_non_null(strstr(buf, "does not have CAP_PERFMON"));
	/* with the capability, the paranoid level is not the cause */
	cli_open_error_text(buf, sizeof(buf), "cycles", -EPERM, &capped);
	assert_non_null(strstr(buf, "LSM"));
	cli_open_error_text(buf, sizeof(buf), "task-clock", -EACCES, &proc);
	assert_non_null(strstr(buf, "ptrace access"));
	cli_open_error_text(buf, sizeof(buf), "cycles", -ENOENT, NULL);
	assert_non_null(strstr(buf, "not supported"));
	assert_non_null(strstr(buf, "cpu-clock"));
	cli_open_error_text(buf, sizeof(buf), "task-clock", -ESRCH, &proc);
	assert_non_null(strstr(buf, "process 4242"));
	cli_open_error_text(buf, sizeof(buf), "task-clock", -EMFILE, NULL);
	assert_non_null(strstr(buf, "RLIMIT_NOFILE"));
	cli_open_error_text(buf, sizeof(buf), "mem:0x1000", -ENOSPC, NULL);
	assert_non_null(strstr(buf, "breakpoint"));
	/* truncation is safe */
	cli_open_error_text(buf, 16, "cycles", -EACCES, &sys);
	assert_int_equal(strlen(buf), 15);
}

static void permission_error_exits_nonzero(void **state)
{
	char path[] = "/tmp/tally-stat-sim-XXXXXX";
	const char *args[] = { "-a", "--timeout", "10", "-e", "task-clock" };
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	sim_install();
	sim_fail_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, false, EACCES);
	assert_int_equal(run_stat(path, args, 5), 1);
	sim_uninstall();
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(csv_group_multiplexing_not_counted),
		cmocka_unit_test(human_multiplexing_and_unsupported),
		cmocka_unit_test(no_scale_and_group),
		cmocka_unit_test(metric_only_values),
		cmocka_unit_test(ratio_metrics_per_cpu),
		cmocka_unit_test(per_socket_scaling_not_counted),
		cmocka_unit_test(per_core_and_cpu_scaling_as_perf),
		cmocka_unit_test(merged_pmu_events),
		cmocka_unit_test(open_error_messages),
		cmocka_unit_test(permission_error_exits_nonzero),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
