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
#include <ctype.h>
#include <errno.h>
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

#include "cmd.h"
#include "options.h"
#include "open-error.h"
#include "record.h"
#include "target.h"
#include "workload.h"

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

/* ---- options ------------------------------------------------------------------------ */

#if defined(__x86_64__)
/* perf's x86-64 sample register names, by bit (DS, ES, FS, GS are never sampled) */
static const char *const reg_names[] = {
	"AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS", "CS", "SS", NULL, NULL,
	NULL, NULL, "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15",
};
#define REGS_ALL 0xff0fffull	/* every register above: perf's default mask */
#else
static const char *const reg_names[] = { NULL };	/* names known for x86-64 only */
#define REGS_ALL 0ull
#endif

/* --user-regs / --intr-regs [=r1,r2|?]: a mask of perf's register names. */
static int opt_regs(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	uint64_t *mask = CLI_FIELD_PTR(opts, opt, uint64_t);
	const char *p = arg;

	if (unset) {
		*mask = 0;
		return 0;
	}
	if (!REGS_ALL) {
		cli_error("%s: tally knows the sample registers of x86-64 only", opt->long_name);
		return -1;
	}
	if (!arg || !*arg) {
		*mask = REGS_ALL;
		return 0;
	}
	if (!strcmp(arg, "?")) {
		fprintf(stderr, "available registers: ");
		for (size_t i = 0; i < sizeof(reg_names) / sizeof(*reg_names); i++)
			if (reg_names[i])
				fprintf(stderr, "%s ", reg_names[i]);
		fputc('\n', stderr);
		return -1;
	}
	*mask = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < sizeof(reg_names) / sizeof(*reg_names); i++)
			if (reg_names[i] && strlen(reg_names[i]) == n && !strncasecmp(p, reg_names[i], n))
				break;
		if (i == sizeof(reg_names) / sizeof(*reg_names)) {
			cli_error("unknown register \"%.*s\" (tally record --user-regs=? lists them)",
				  (int)n, p);
			return -1;
		}
		*mask |= 1ull << i;
		p += n + (p[n] == ',');
	}
	return 0;
}

static int opt_filter(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return record_opts__add_filter(opts, arg);
}

static int opt_event(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return record_opts__add_event(opts, arg);
}

/* --aio[=N]: N POSIX AIO blocks (perf clamps other numbers silently; tally says so) */
static int opt_aio(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;
	uint64_t v;

	(void)opt;
	o->aio = 0;
	if (unset)
		return 0;
	if (!parse_u64(arg, &v) || v < 1 || v > 4) {
		cli_error("--aio '%s': expected 1 to 4 control blocks", arg);
		return -1;
	}
	o->aio = (unsigned)v;
	return 0;
}

static int opt_switch_event(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return record_opts__add_switch_event(opts, arg);
}

static int opt_freq(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;
	uint64_t v;

	(void)opt, (void)unset;
	if (!strcmp(arg, "max")) {
		o->freq_max = true;
	} else if (!parse_u64(arg, &v) || !v || v > UINT32_MAX) {
		cli_error("-F '%s': expected a frequency in Hz or 'max'", arg);
		return -1;
	} else {
		o->freq = v;
	}
	o->freq_set = true;
	return 0;
}

static int opt_count(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;
	uint64_t v;

	(void)opt, (void)unset;
	if (!parse_u64(arg, &v) || !v) {
		cli_error("-c '%s': expected a positive sample period", arg);
		return -1;
	}
	o->period = v;
	return 0;
}

static int opt_call_graph(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return parse_call_graph(opts, arg);
}

static int opt_mmap_pages(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return parse_mmap_pages(opts, arg);
}

static int opt_compression(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;
	uint64_t v;

	(void)opt;
	if (unset) {
		o->comp_level = 0;
		return 0;
	}
	o->comp_level = 1;
	if (arg && (!parse_u64(arg, &v) || !v || v > 22)) {
		cli_error("-z '%s': the compression level must be 1..22", arg);
		return -1;
	}
	if (arg)
		o->comp_level = (int)v;
	return 0;
}

static int opt_clockid(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return parse_clockid(opts, arg);
}

static int opt_timeout(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;
	uint64_t v;

	(void)opt, (void)unset;
	if (!parse_u64(arg, &v) || !v) {
		cli_error("--timeout '%s': expected milliseconds > 0", arg);
		return -1;
	}
	o->timeout_ms = v;
	return 0;
}

/* perf's parse_tag_value: a decimal number and one of the tags (1M, 10s). */
struct tag { char tag; uint64_t mult; };

static bool parse_tagged(const char *s, const struct tag *tags, uint64_t *v)
{
	char *end;
	uint64_t n;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || !*end || end[1])
		return false;
	for (; tags->tag; tags++) {
		if (*end != tags->tag)
			continue;
		if (n > UINT64_MAX / tags->mult)
			return false;
		*v = n * tags->mult;
		return true;
	}
	return false;
}

static const struct tag size_tags[] = {
	{ 'B', 1 }, { 'K', 1 << 10 }, { 'M', 1 << 20 }, { 'G', 1 << 30 }, { 0, 0 },
};
static const struct tag time_tags[] = {
	{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 0, 0 },
};

/* --switch-output[=signal|SIZE[BKMG]|TIME[smhd]] */
static int opt_switch_output(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;

	(void)opt;
	o->switch_signal = false;
	o->switch_size = o->switch_time = 0;
	if (unset)
		return 0;
	if (!strcmp(arg, "signal"))
		o->switch_signal = true;
	else if (!parse_tagged(arg, size_tags, &o->switch_size) &&
		 !parse_tagged(arg, time_tags, &o->switch_time)) {
		cli_error("--switch-output '%s': expected signal, a size (such as 100M: B, K, M, "
			  "G) or a time (such as 30s: s, m, h, d)", arg);
		return -1;
	}
	if (!o->switch_signal && !o->switch_size && !o->switch_time) {
		cli_error("--switch-output '%s': the size or time must be above 0", arg);
		return -1;
	}
	return 0;
}

static int opt_max_size(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;

	(void)opt;
	o->max_size = 0;
	if (unset)
		return 0;
	if (!parse_tagged(arg, size_tags, &o->max_size) || !o->max_size) {
		cli_error("--max-size '%s': expected a size such as 100M (B, K, M or G)", arg);
		return -1;
	}
	return 0;
}

/* -D/--delay: ms (-1: disabled until --control enables them), or ranges "10-20,30-40"
 * of ms after the start in which the events are enabled, each after the one before. */
static int opt_delay(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;
	const char *p = arg;
	char *end;
	long v;

	(void)opt, (void)unset;
	free(o->ranges);
	o->ranges = NULL;
	o->nr_ranges = 0;
	o->delay_ms = 0;
	errno = 0;
	v = strtol(arg, &end, 10);
	if (end != arg && !*end && !errno) {
		if (v < -1)
			goto bad;
		o->delay_ms = v;
		return 0;
	}
	while (*p) {
		struct record_range *n, rg;

		if (!isdigit((unsigned char)*p))
			goto bad;
		rg.start = strtoull(p, &end, 10);
		if (*end != '-' || !isdigit((unsigned char)end[1]))
			goto bad;
		rg.end = strtoull(end + 1, &end, 10);
		if (rg.end <= rg.start || (*end && (*end != ',' || !end[1])) ||
		    (o->nr_ranges && rg.start <= o->ranges[o->nr_ranges - 1].end))
			goto bad;
		n = realloc(o->ranges, (o->nr_ranges + 1) * sizeof(*n));
		if (!n) {
			cli_error("out of memory");
			return -1;
		}
		o->ranges = n;
		o->ranges[o->nr_ranges++] = rg;
		p = *end ? end + 1 : end;
	}
	if (o->nr_ranges)
		return 0;
bad:
	free(o->ranges);
	o->ranges = NULL;
	o->nr_ranges = 0;
	cli_error("-D '%s': expected milliseconds (-1: start disabled) or ranges of ms such as "
		  "10-20,30-40, each after the one before", arg);
	return -1;
}

/* -B / -N: remembered as given, since --switch-output changes their defaults */
static int opt_no_buildid(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;

	(void)arg;
	if (opt->short_name == 'B') {
		o->no_buildid = !unset;
		o->no_buildid_set = true;
	} else {
		o->no_buildid_cache = !unset;
		o->no_buildid_cache_set = true;
	}
	return 0;
}

static int opt_cgroup(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	return record_opts__add_cgroups(opts, arg);
}

static int opt_exclude_perf(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)arg, (void)unset;
	return record_opts__exclude_perf(opts);
}

/* --mmap-flush: a number of bytes, or a size with B, K, M or G (perf's tags) */
static int opt_mmap_flush(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;

	(void)opt;
	o->mmap_flush = 0;
	if (unset)
		return 0;
	if (!parse_u64(arg, &o->mmap_flush) && !parse_tagged(arg, size_tags, &o->mmap_flush)) {
		cli_error("--mmap-flush '%s': expected a number of bytes or a size such as 16K "
			  "(B, K, M, G)", arg);
		return -1;
	}
	return 0;
}

static int opt_affinity(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct record_opts *o = opts;

	(void)opt;
	o->affinity = AFFINITY_SYS;
	if (unset)
		return 0;
	if (!strcasecmp(arg, "node"))
		o->affinity = AFFINITY_NODE;
	else if (!strcasecmp(arg, "cpu"))
		o->affinity = AFFINITY_CPU;
	else {
		cli_error("--affinity '%s': expected node or cpu", arg);
		return -1;
	}
	return 0;
}

/* --synth no|all|task|mmap|cgroup[,...] (mmap implies task, as in perf) */
static int opt_synth(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	static const struct { const char *name; unsigned bits; } kinds[] = {
		{ "no", 0 }, { "all", RECORD_SYNTH_ALL }, { "task", RECORD_SYNTH_TASK },
		{ "mmap", RECORD_SYNTH_TASK | RECORD_SYNTH_MMAP }, { "cgroup", RECORD_SYNTH_CGROUP },
	};
	struct record_opts *o = opts;
	const char *p = arg;
	unsigned bits = 0;

	(void)opt, (void)unset;
	do {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (strlen(kinds[i].name) == n && !strncmp(p, kinds[i].name, n))
				break;
		if (i == sizeof(kinds) / sizeof(kinds[0])) {
			cli_error("Invalid synth option: %s (expected no, all, task, mmap or cgroup)",
				  arg);
			return -1;
		}
		bits |= kinds[i].bits;
		p += n;
	} while (*p++ == ',');
	o->synth = bits;
	return 0;
}

#define CLI_OPTS struct record_opts
static const struct cli_opt record_options[] = {
	OPT_CALLBACK('e', "event", "event", "event selector. use 'tally list' to list available events",
		     opt_event),
	OPT_CALLBACK(0, "filter", "filter", "event filter (of the tracepoints of the -e before it)",
		     opt_filter),
	OPT_CALLBACK_NOARG(0, "exclude-perf", "don't record events from perf itself "
			   "(tally itself, for the tracepoints of the -e before it)",
			   opt_exclude_perf),
	OPT_CALLBACK('F', "freq", "freq or 'max'", "profile at this frequency", opt_freq),
	OPT_CALLBACK('c', "count", "n", "event period to sample", opt_count),
	OPT_BOOL('g', NULL, callchain, "enables call-graph recording"),
	OPT_CALLBACK(0, "call-graph", "record_mode[,record_size]",
		     "setup and enables call-graph (stack chain/backtrace):\n\n"
		     "\trecord_mode:\tcall graph recording mode (fp|dwarf|lbr)\n"
		     "\trecord_size:\tif record_mode is 'dwarf', max size of stack recording (<bytes>)\n"
		     "\t\t\tdefault: 8192 (bytes)\n\n"
		     "\tDefault: fp", opt_call_graph),
	OPT_STRING('p', "pid", pid_list, "pid", "record events on existing process id"),
	OPT_STRING('t', "tid", tid_list, "tid", "record events on existing thread id"),
	OPT_BOOL('a', "all-cpus", system_wide, "system-wide collection from all CPUs"),
	OPT_STRING('u', "uid", uid, "user", "user to profile (its processes when record starts)"),
	OPT_STRING('C', "cpu", cpu_list, "cpu", "list of cpus to monitor"),
	OPT_BOOL(0, "per-thread", per_thread, "use per-thread mmaps"),
	OPT_BOOL('s', "stat", inherit_stat, "per thread counts"),
	OPT_INT('r', "realtime", realtime, "n", "collect data with this RT SCHED_FIFO priority",
		CLI_RANGED(1, 99)),
	OPT_BOOL(0, "group", group, "put the counters into a counter group"),
	OPT_BOOL('i', "no-inherit", no_inherit, "child tasks do not inherit counters"),
	OPT_CALLBACK('m', "mmap-pages", "pages", "number of mmap data pages (a power of two, or "
		     "a size such as 512K)", opt_mmap_pages),
	OPT_CALLBACK(0, "mmap-flush", "number",
		     "Minimal number of bytes that is extracted from mmap data pages (default: 1)",
		     opt_mmap_flush, .flags = CLI_NEG),
	OPT_BOOL(0, "no-buffering", no_buffering, "collect data without buffering", .flags = CLI_NONEG),
	OPT_CALLBACK(0, "affinity", "node|cpu",
		     "Set affinity mask of trace reading thread to NUMA node cpu mask or cpu of "
		     "processed mmap buffer", opt_affinity, .flags = CLI_NEG),
	OPT_BOOL(0, "switch-events", switch_events, "Record context switch events"),
	OPT_BOOL(0, "namespaces", namespaces, "Record namespaces events"),
	OPT_BOOL(0, "all-cgroups", all_cgroups, "Record cgroup events"),
	OPT_CALLBACK('G', "cgroup", "name", "monitor event in cgroup name only", opt_cgroup),
	OPT_BOOL('d', "data", sample_addr, "Record the sample addresses"),
	OPT_BOOL('R', "raw-samples", raw, "collect raw sample records from all opened counters"),
	OPT_BOOL(0, "sample-cpu", sample_cpu, "Record the sample cpu"),
	OPT_BOOL('T', "timestamp", sample_time, "Record the sample timestamps"),
	OPT_BOOL('P', "period", sample_period, "Record the sample period"),
	OPT_BOOL(0, "sample-identifier", sample_identifier, "Record the sample identifier"),
	OPT_BOOL(0, "running-time", running_time,
		 "Record running/enabled time of read (:S) events"),
	OPT_BOOL(0, "all-kernel", all_kernel, "Configure all used events to run in kernel space.",
		 .flags = CLI_EXCLUSIVE),
	OPT_BOOL(0, "all-user", all_user, "Configure all used events to run in user space.",
		 .flags = CLI_EXCLUSIVE),
	OPT_BOOL(0, "kernel-callchains", kernel_callchains, "collect kernel callchains"),
	OPT_BOOL(0, "user-callchains", user_callchains, "collect user callchains"),
	OPT_BOOL(0, "transaction", transaction, "sample transaction flags (special events only)"),
	OPT_BOOL(0, "phys-data", phys_data, "Record the sample physical addresses"),
	OPT_BOOL(0, "data-page-size", data_page_size,
		 "Record the sampled data address data page size"),
	OPT_BOOL(0, "code-page-size", code_page_size,
		 "Record the sampled code address (ip) page size"),
	OPT_BOOL('W', "weight", weight, "sample by weight (on special events only)"),
	OPT_BOOL(0, "dry-run", dry_run, "Parse options then exit"),
	OPT_CALLBACK_ARG(0, "user-regs", "any register",
			 "sample selected machine registers in user space, use '--user-regs=?' to "
			 "list register names", opt_regs, CLI_ARG_OPTIONAL, "", .off = CLI_FIELD(uint64_t, user_regs),
			 .flags = CLI_NEG),
	OPT_CALLBACK_ARG('I', "intr-regs", "any register",
			 "sample selected machine registers on interrupt, use '-I?' to list register "
			 "names", opt_regs, CLI_ARG_OPTIONAL, "", .off = CLI_FIELD(uint64_t, intr_regs),
			 .flags = CLI_NEG),
	OPT_BOOL(0, "strict-freq", strict_freq, "Fail if the specified frequency can't be used"),
	OPT_BOOL('n', "no-samples", no_samples, "don't sample"),
	OPT_REFUSED(0, "off-cpu", NULL, CLI_ARG_NONE, "Enable off-cpu analysis",
		    "--off-cpu needs BPF (perf loads a BPF program at every context switch); "
		    "tally has no BPF: record 'tally record -g -e sched:sched_switch' for off-CPU "
		    "stacks"),
	OPT_CALLBACK(0, "synth", "no|all|task|mmap|cgroup",
		     "Fine-tune event synthesis: default=all", opt_synth),
	OPT_BOOL(0, "timestamp-boundary", timestamp_boundary,
		 "Record timestamp boundary (time of first/last samples; tally always does)"),
	OPT_ACCEPTED_SYNTH("record"),
	OPT_STRING(0, "vmlinux", vmlinux, "file", "vmlinux pathname (checked; the kernel's "
		   "build-id comes from /sys/kernel/notes)"),
	OPT_STRING(0, "control", control, "fd:ctl-fd[,ack-fd] or fifo:ctl-fifo[,ack-fifo]",
		   "Listen on ctl-fd descriptor for command to control measurement ('enable', "
		   "'disable', 'snapshot', 'stop', 'ping', 'evlist [-v|-g|-F]')"),
	OPT_CALLBACK(0, "switch-output-event", "switch output event",
		     "switch output event selector. use 'tally list' to list available events",
		     opt_switch_event),
	OPT_CALLBACK_ARG(0, "aio", "n",
			 "Use <n> control blocks in asynchronous trace writing mode (default: 1, max: 4)",
			 opt_aio, CLI_ARG_OPTIONAL, "1", .flags = CLI_NEG),
	OPT_STRING_OPTARG(0, "debuginfod", debuginfod, "debuginfod urls",
			  "Enable debuginfod data retrieval from DEBUGINFOD_URLS or specified urls",
			  "system"),
	OPT_REFUSED('b', "branch-any", NULL, CLI_ARG_NONE, "sample any taken branches",
		    CLI_NO_LBR("-b/--branch-any")),
	OPT_REFUSED('j', "branch-filter", "branch filter mask", CLI_ARG_REQUIRED,
		    "branch stack filter modes", CLI_NO_LBR("-j/--branch-filter")),
	OPT_REFUSED('S', "snapshot", "opts", CLI_ARG_OPTIONAL, "AUX area tracing Snapshot Mode",
		    CLI_NO_AUX("-S/--snapshot")),
	OPT_REFUSED(0, "aux-sample", "opts", CLI_ARG_OPTIONAL, "sample AUX area",
		    CLI_NO_AUX("--aux-sample")),
	OPT_REFUSED(0, "clang-path", "clang path", CLI_ARG_REQUIRED,
		    "clang binary to use for compiling BPF scriptlets",
		    "--clang-path: tally compiles no BPF scriptlets"),
	OPT_REFUSED(0, "clang-opt", "clang options", CLI_ARG_REQUIRED,
		    "options passed to clang when compiling BPF scriptlets",
		    "--clang-opt: tally compiles no BPF scriptlets"),
	OPT_REFUSED(0, "kcore", NULL, CLI_ARG_NONE, "copy /proc/kcore",
		    "--kcore (a perf.data directory with a copy of /proc/kcore) is not "
		    "implemented in tally record"),
	OPT_REFUSED(0, "threads", "spec", CLI_ARG_OPTIONAL,
		    "write collected trace data into several data files using parallel threads",
		    "--threads (a perf.data directory written by several threads) is not "
		    "implemented in tally record"),
	OPT_REFUSED(0, "overwrite", NULL, CLI_ARG_NONE, "use overwrite mode",
		    "--overwrite (backward rings, kept until a signal) is not implemented in tally "
		    "record"),
	OPT_REFUSED(0, "tail-synthesize", NULL, CLI_ARG_NONE,
		    "synthesize non-sample events at the end of output",
		    "--tail-synthesize is not implemented in tally record: it synthesizes at the "
		    "start, as perf's default"),
	OPT_STRING('o', "output", output, "file", "output file name"),
	OPT_CALLBACK_ARG('z', "compression-level", "n",
			 "Compress records using specified level (default: 1 - fastest "
			 "compression, 22 - greatest compression)", opt_compression,
			 CLI_ARG_OPTIONAL, NULL, .flags = CLI_NEG),
	OPT_CALLBACK_NOARG('B', "no-buildid", "do not collect buildids in perf.data",
			   opt_no_buildid, .flags = CLI_NEG),
	OPT_CALLBACK_NOARG('N', "no-buildid-cache", "do not update the buildid cache",
			   opt_no_buildid, .flags = CLI_NEG),
	OPT_BOOL(0, "buildid-all", buildid_all, "Record build-id of all DSOs regardless of hits"),
	OPT_BOOL(0, "buildid-mmap", buildid_mmap, "Record build-id in map events"),
	OPT_CALLBACK('k', "clockid", "clockid", "clockid to use for events, see clock_gettime()",
		     opt_clockid),
	OPT_CALLBACK_ARG(0, "switch-output", "signal or size[BKMG] or time[smhd]",
			 "Switch output when receiving SIGUSR2 (signal) or cross a size or time "
			 "threshold", opt_switch_output, CLI_ARG_OPTIONAL, "signal", .flags = CLI_NEG),
	OPT_INT(0, "switch-max-files", switch_max_files, "n",
		"Limit number of switch output generated files"),
	OPT_BOOL(0, "timestamp-filename", timestamp_filename,
		 "append timestamp to output filename"),
	OPT_CALLBACK(0, "max-size", "size", "Limit the maximum size of the output file",
		     opt_max_size, .flags = CLI_NEG),
	OPT_CALLBACK('D', "delay", "ms",
		     "ms to wait before starting measurement after program start (-1: start with "
		     "events disabled), or ranges of time to enable events e.g. '-D 10-20,30-40'",
		     opt_delay),
	OPT_CALLBACK(0, "timeout", "ms", "stop after this many milliseconds", opt_timeout),
	OPT_BOOL('q', "quiet", quiet, "don't print any warnings or messages"),
	OPT_VERBOSE("be more verbose (show counter open errors, etc)"),
	OPT_END(),
};

static const char *const record_usage[] = {
	"record [<options>] [<command>]",
	"record [<options>] -- <command> [<options>]",
	NULL,
};

static int record_init(void *opts)
{
	struct record_opts *o = opts;

	record_opts__init(o);
	o->synth = RECORD_SYNTH_ALL;
	buildid_config(o);
	return 0;
}

static void record_exit(void *opts)
{
	record_opts__exit(opts);
}

/* Options that cannot go together; what to record. 0 or 129 (message printed). */
static int record_check(struct record_opts *o, bool have_cmd)
{
	if (o->period && o->freq_set)
		return cli_usage_error(&cmd_record, "-c and -F cannot be used together: choose a "
				       "period or a frequency");
	if ((o->pid_list || o->tid_list) && o->system_wide)
		return cli_usage_error(&cmd_record, "-p/-t and -a cannot be used together");
	if (o->nr_cgroups && !o->system_wide && !o->cpu_list)
		return cli_usage_error(&cmd_record, "-G/--cgroup: cgroup monitoring is only "
				       "available in system-wide mode (-a)");
	if (o->uid && (o->pid_list || o->tid_list || o->system_wide))
		return cli_usage_error(&cmd_record, "-u/--uid and -p/-t/-a cannot be used together");
	if (o->cpu_list && !o->system_wide && !o->pid_list && !o->tid_list && !have_cmd)
		o->system_wide = true;	/* perf: -C alone records those CPUs system-wide */
	if (!have_cmd && !o->pid_list && !o->tid_list && !o->system_wide && !o->uid)
		return cli_usage_error(&cmd_record, "nothing to record: give a command, -p PID, "
				       "-t TID, -u USER or -a");
	return 0;
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

static int record_exec(void *opts, const struct cli_args *args)
{
	struct record_opts *o = opts;
	struct record r;
	struct sigaction sa;
	int rc;

	rc = record_check(o, args->argc > 0);
	if (rc)
		return rc;
	if (o->buildid_mmap)
		o->no_buildid = true;	/* perf: the ids are in the maps; no BUILD_ID, no cache */
	if (o->vmlinux && access(o->vmlinux, R_OK)) {
		cli_error("--vmlinux %s: Invalid file: %s", o->vmlinux, strerror(errno));
		return 1;
	}
	if (o->uid) {
		rc = cli_uid_pids(o->uid, &o->uid_pids);
		if (rc)
			return rc;
		o->pid_list = o->uid_pids;
	}
	if (args->argc)
		o->workload = args->argv;
	o->argc = args->full_argc;
	o->argv = args->full_argv;
	if (o->switch_output_ev)
		o->switch_signal = true;	/* --switch-output-event: a SIGUSR2 of its own */
	if (o->switch_signal || o->switch_size || o->switch_time)
		o->timestamp_filename = true;
	if (o->dry_run)
		return 0;	/* perf: the options (and events, above) parsed, nothing run */

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);	/* a file-size limit shows as EFBIG, handled */

	return record__run(&r, o, &child_exited);
}

const struct cli_command cmd_record = {
	.name = "record",
	.summary = "Run a command and record its profile into perf.data",
	.usage = record_usage,
	.opts = record_options,
	.flags = CLI_STOP_AT_ARG,
	.max_args = CLI_ANY_ARGS,
	.size = sizeof(struct record_opts),
	.init = record_init,
	.exec = record_exec,
	.exit = record_exit,
};
