/*
 * tally record: sample events into a perf.data file that perf 6.1 reads as its own.
 *
 * The flow reads top to bottom in cmd_record(): parse options → build the events'
 * attrs the way perf record configures them → fork the workload (held before exec)
 * → open one fd per event × CPU (× thread for -p/-t) → one ring per CPU (or per thread
 * with --per-thread), the other fds of that CPU redirected into it → write the
 * file's preamble and synthesized side-band → release the workload → poll and drain
 * the rings into the writer, a FINISHED_ROUND after each pass → on workload exit,
 * SIGINT/SIGTERM, --timeout or all targets gone: drain, add lost-sample records,
 * finish the file and print the summary.
 *
 * The recorder never decodes samples beyond their header, the few bytes needed for
 * timestamps and the ip/pid used to mark DSOs for BUILD_ID (record-buildid.c): raw ring
 * bytes go to the file in at most two writes per ring per pass.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/format.h>
#include <tally/perfconfig.h>
#include <tally/ring.h>
#include <tally/synth.h>
#include <tally/tally.h>
#include <tally/writer.h>

#include "internal/sys.h"
#include "cmd.h"
#include "open-error.h"
#include "record.h"
#include "workload.h"

static const char usage_text[] =
"Usage: tally record [<options>] [<command>]\n"
"   or: tally record [<options>] -- <command> [<options>]\n"
"\n"
"    -e, --event <event>   event selector (default: cycles, cpu-clock without a PMU)\n"
"    -F, --freq <n|max>    sample at this frequency (default 4000 Hz)\n"
"    -c, --count <n>       sample every n events\n"
"    -g                    record call graphs (frame pointers)\n"
"        --call-graph <fp|dwarf[,size]>\n"
"                          call graph mode; dwarf copies registers and <size> bytes of\n"
"                          user stack (default 8192)\n"
"    -p, --pid <pid,...>   record existing processes\n"
"    -t, --tid <tid,...>   record existing threads\n"
"    -a, --all-cpus        system-wide collection from all CPUs\n"
"    -C, --cpu <cpus>      only these CPUs (with -a)\n"
"        --per-thread      per-thread rings instead of per-CPU\n"
"    -i, --no-inherit      child tasks do not inherit counters\n"
"    -m, --mmap-pages <n>  ring buffer data pages per CPU (a power of two; default 128)\n"
"        --switch-events   record context switch events\n"
"    -d, --data            record sample data addresses\n"
"    -R, --raw-samples     record raw sample data\n"
"        --sample-cpu      record the sample CPU\n"
"    -T, --timestamp       record sample timestamps\n"
"    -o, --output <file>   output file (default perf.data; - for a pipe stream)\n"
"    -z, --compression-level[=<n>]\n"
"                          compress records with zstd (level 1..22, default 1)\n"
"    -B, --no-buildid      do not collect build-ids of hit DSOs (nor cache them)\n"
"    -N, --no-buildid-cache\n"
"                          do not copy the hit DSOs into the build-id cache\n"
"        --buildid-all     collect (and cache) the build-ids of every DSO, hit or not\n"
"    -k, --clockid <clock> timestamps from this clock (monotonic, monotonic_raw,\n"
"                          realtime, boottime, tai, or a number)\n"
"        --timeout <ms>    stop after this many milliseconds (tally extension)\n"
"    -q, --quiet           no messages except errors\n"
"    -v, --verbose         more messages\n";

enum {
	OPT_CALL_GRAPH = 256, OPT_PER_THREAD, OPT_SWITCH_EVENTS, OPT_SAMPLE_CPU,
	OPT_TIMEOUT, OPT_BUILDID_ALL,
};

static const struct option long_opts[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "freq", required_argument, NULL, 'F' },
	{ "count", required_argument, NULL, 'c' },
	{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "no-inherit", no_argument, NULL, 'i' },
	{ "mmap-pages", required_argument, NULL, 'm' },
	{ "switch-events", no_argument, NULL, OPT_SWITCH_EVENTS },
	{ "data", no_argument, NULL, 'd' },
	{ "raw-samples", no_argument, NULL, 'R' },
	{ "sample-cpu", no_argument, NULL, OPT_SAMPLE_CPU },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "output", required_argument, NULL, 'o' },
	{ "compression-level", optional_argument, NULL, 'z' },
	{ "no-buildid", no_argument, NULL, 'B' },
	{ "no-buildid-cache", no_argument, NULL, 'N' },
	{ "buildid-all", no_argument, NULL, OPT_BUILDID_ALL },
	{ "clockid", required_argument, NULL, 'k' },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

static int parse_call_graph(struct record_opts *o, const char *arg)
{
	const char *comma = strchr(arg, ',');
	size_t n = comma ? (size_t)(comma - arg) : strlen(arg);
	uint64_t size;

	o->callchain = true;
	if (n == 2 && !strncmp(arg, "fp", 2) && !comma) {
		o->dwarf = false;
		return 0;
	}
	if (n == 5 && !strncmp(arg, "dwarf", 5)) {
		o->dwarf = true;
		if (!comma)
			return 0;
		/* The kernel wants a multiple of 8 below 64 KiB (perf rounds up to 8). */
		if (!parse_u64(comma + 1, &size) || !size || size > 65528) {
			cli_error("--call-graph dwarf,%s: the stack size must be 1..65528 bytes",
				  comma + 1);
			return -1;
		}
		o->stack_size = (uint32_t)((size + 7) & ~7ULL);
		return 0;
	}
	if (n == 3 && !strncmp(arg, "lbr", 3)) {
		cli_error("--call-graph lbr needs a hardware PMU with LBR; use fp or dwarf");
		return -1;
	}
	cli_error("--call-graph '%s': expected fp or dwarf[,SIZE]", arg);
	return -1;
}

/* -m PAGES (a power of two) or -m SIZE[BKMG] (rounded up to a power of two pages, as
 * perf does). The AUX area size after a comma is not supported. */
static int parse_mmap_pages(struct record_opts *o, const char *arg)
{
	long page = sysconf(_SC_PAGESIZE);
	char *end;
	uint64_t v, pages;

	if (strchr(arg, ',')) {
		cli_error("-m '%s': AUX area buffers are not supported (no AUX tracing PMU here); "
			  "give only the data pages", arg);
		return -1;
	}
	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || *arg == '-' || !v)
		goto bad;
	if (!*end) {
		if (v & (v - 1)) {
			cli_error("-m '%s': the number of data pages must be a power of two "
				  "(e.g. 128, 512), or give a size such as 512K", arg);
			return -1;
		}
		pages = v;
	} else {
		int shift = 0;

		switch (*end) {
		case 'B': case 'b': shift = 0; break;
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		default: goto bad;
		}
		if (end[1] || v > (UINT64_MAX >> shift))
			goto bad;
		v <<= shift;
		pages = (v + (uint64_t)page - 1) / (uint64_t)page;
		if (pages & (pages - 1)) {
			uint64_t p2 = 1;

			while (p2 < pages)
				p2 <<= 1;
			pages = p2;
			if (!o->quiet)
				fprintf(stderr, "rounding mmap pages size to %" PRIu64 " bytes (%" PRIu64
					" pages)\n", pages * (uint64_t)page, pages);
		}
	}
	if (pages > (1u << 20))
		goto bad;
	o->mmap_pages = (size_t)pages;
	return 0;
bad:
	cli_error("-m '%s': expected a number of pages (a power of two) or a size such as 512K, "
		  "at most 4G", arg);
	return -1;
}

/* -k: perf's clock names (with or without CLOCK_, any case, and its short forms) or
 * a number. */
static int parse_clockid(struct record_opts *o, const char *arg)
{
	static const struct { const char *name; int id; } clocks[] = {
		{ "monotonic", CLOCK_MONOTONIC }, { "monotonic_raw", CLOCK_MONOTONIC_RAW },
		{ "realtime", CLOCK_REALTIME }, { "boottime", CLOCK_BOOTTIME }, { "tai", CLOCK_TAI },
		{ "mono", CLOCK_MONOTONIC }, { "raw", CLOCK_MONOTONIC_RAW },
		{ "real", CLOCK_REALTIME }, { "boot", CLOCK_BOOTTIME },
	};
	const char *name = strncasecmp(arg, "CLOCK_", 6) ? arg : arg + 6;
	uint64_t v;

	if (parse_u64(arg, &v) && v < 64) {
		o->use_clockid = true;
		o->clockid = (int)v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (!strcasecmp(name, clocks[i].name)) {
			o->use_clockid = true;
			o->clockid = clocks[i].id;
			return 0;
		}
	}
	cli_error("-k '%s': unknown clock (monotonic, monotonic_raw, realtime, boottime, tai, "
		  "or a number)", arg);
	return -1;
}

/* perf's config record.build-id: cache (the default), no-cache (-N), skip (-B). */
static void buildid_config(struct record_opts *o)
{
	char v[32];

	if (tally_perf_config_get("record.build-id", v, sizeof(v)))
		return;
	if (!strcmp(v, "no-cache"))
		o->no_buildid_cache = true;
	else if (!strcmp(v, "skip"))
		o->no_buildid = true;
	else if (strcmp(v, "cache"))
		cli_warn("perf config record.build-id = %s: tally knows cache, no-cache and skip; "
			 "using cache", v);
}

/* Parse options into o; returns the index of the workload's argv, or -1 (error, message
 * printed), or -2 (help printed). */
static int parse_options(struct record_opts *o, int argc, char **argv)
{
	int c;
	uint64_t v;

	buildid_config(o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+e:F:c:gp:t:aC:im:dRTo:z::BNk:qvh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (record_opts__add_event(o, optarg))
				return -1;
			break;
		case 'F':
			if (!strcmp(optarg, "max")) {
				o->freq_max = true;
			} else if (!parse_u64(optarg, &v) || !v || v > UINT32_MAX) {
				cli_error("-F '%s': expected a frequency in Hz or 'max'", optarg);
				return -1;
			} else {
				o->freq = v;
			}
			o->freq_set = true;
			break;
		case 'c':
			if (!parse_u64(optarg, &v) || !v) {
				cli_error("-c '%s': expected a positive sample period", optarg);
				return -1;
			}
			o->period = v;
			break;
		case 'g':
			o->callchain = true;
			break;
		case OPT_CALL_GRAPH:
			if (parse_call_graph(o, optarg))
				return -1;
			break;
		case 'p':
			o->pid_list = optarg;
			break;
		case 't':
			o->tid_list = optarg;
			break;
		case 'a':
			o->system_wide = true;
			break;
		case 'C':
			o->cpu_list = optarg;
			break;
		case OPT_PER_THREAD:
			o->per_thread = true;
			break;
		case 'i':
			o->no_inherit = true;
			break;
		case 'm':
			if (parse_mmap_pages(o, optarg))
				return -1;
			break;
		case OPT_SWITCH_EVENTS:
			o->switch_events = true;
			break;
		case 'd':
			o->sample_addr = true;
			break;
		case 'R':
			o->raw = true;
			break;
		case OPT_SAMPLE_CPU:
			o->sample_cpu = true;
			break;
		case 'T':
			o->sample_time = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'z':
			o->comp_level = 1;
			if (optarg && (!parse_u64(optarg, &v) || !v || v > 22)) {
				cli_error("-z '%s': the compression level must be 1..22", optarg);
				return -1;
			}
			if (optarg)
				o->comp_level = (int)v;
			break;
		case 'B':
			o->no_buildid = true;
			break;
		case 'N':
			o->no_buildid_cache = true;
			break;
		case OPT_BUILDID_ALL:
			o->buildid_all = true;
			break;
		case 'k':
			if (parse_clockid(o, optarg))
				return -1;
			break;
		case OPT_TIMEOUT:
			if (!parse_u64(optarg, &v) || !v) {
				cli_error("--timeout '%s': expected milliseconds > 0", optarg);
				return -1;
			}
			o->timeout_ms = v;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			cli_usage(stdout, usage_text);
			return -2;
		default:
			if (optopt && optopt < 256)
				cli_error("record: unknown or incomplete option '-%c'", optopt);
			else
				cli_error("record: unknown or incomplete option '%s'", argv[optind - 1]);
			cli_usage(stderr, usage_text);
			return -1;
		}
	}
	if (o->period && o->freq_set) {
		cli_error("-c and -F cannot be used together: choose a period or a frequency");
		return -1;
	}
	if ((o->pid_list || o->tid_list) && o->system_wide) {
		cli_error("-p/-t and -a cannot be used together");
		return -1;
	}
	if (o->cpu_list && !o->system_wide && !o->pid_list && !o->tid_list && optind >= argc) {
		o->system_wide = true;	/* perf: -C alone records those CPUs system-wide */
	}
	if (optind >= argc && !o->pid_list && !o->tid_list && !o->system_wide) {
		cli_error("record: nothing to record: give a command, -p PID, -t TID or -a");
		cli_usage(stderr, usage_text);
		return -1;
	}
	if (optind < argc && (o->pid_list || o->tid_list)) {
		cli_error("record: give either a command or -p/-t, not both");
		return -1;
	}
	return optind;
}

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

static volatile sig_atomic_t child_exited;

static void on_child(int sig)
{
	(void)sig;
	child_exited = 1;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct record r;
	struct sigaction sa;
	int first, rc;

	record_opts__init(&o);
	first = parse_options(&o, argc, argv);
	if (first < 0) {
		record_opts__release(&o);
		return first == -2 ? 0 : 1;
	}
	if (first < argc)
		o.workload = argv + first;
	o.argc = argc;
	o.argv = argv;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);	/* a file-size limit shows as EFBIG, handled */

	rc = record__run(&r, &o, &child_exited);
	record_opts__release(&o);
	return rc;
}
