/*
 * tally script: print every sample of a perf.data as perf 6.1's `perf script` does,
 * one line per sample (or one line plus one line per frame and a blank line when the
 * sample has a call chain), so FlameGraph's stackcollapse-perf.pl and other consumers
 * of perf script's text read tally's output unchanged. Tracepoint samples print their
 * fields formatted by libtraceevent from the file's TRACING_DATA.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tally/cpumap.h>
#include <tally/data.h>
#include <tally/format.h>
#include <tally/hist.h>
#include <tally/record.h>
#include <tally/sample-memo.h>
#include <tally/session.h>
#include <tally/srcline.h>

#include "cmd.h"
#include "options.h"
#include "record-text.h"
#include "report-common.h"
#include "script-trace.h"

enum {
	F_COMM = 1 << 0, F_TID = 1 << 1, F_PID = 1 << 2, F_TIME = 1 << 3, F_CPU = 1 << 4,
	F_EVENT = 1 << 5, F_IP = 1 << 6, F_SYM = 1 << 7, F_SYMOFF = 1 << 8, F_DSO = 1 << 9,
	F_PERIOD = 1 << 10, F_ADDR = 1 << 11, F_TRACE = 1 << 12, F_SRCLINE = 1 << 13,
};

static const struct {
	const char *name;
	unsigned bit;
	uint64_t needs;		/* sample_type bits the field needs */
} field_names[] = {
	{ "comm", F_COMM, 0 }, { "tid", F_TID, PERF_SAMPLE_TID },
	{ "pid", F_PID, PERF_SAMPLE_TID }, { "time", F_TIME, PERF_SAMPLE_TIME },
	{ "cpu", F_CPU, PERF_SAMPLE_CPU }, { "event", F_EVENT, 0 },
	{ "ip", F_IP, PERF_SAMPLE_IP }, { "sym", F_SYM, PERF_SAMPLE_IP },
	{ "symoff", F_SYMOFF, PERF_SAMPLE_IP }, { "dso", F_DSO, PERF_SAMPLE_IP },
	{ "period", F_PERIOD, 0 /* the attr's fixed period otherwise */ }, { "addr", F_ADDR, PERF_SAMPLE_ADDR },
	{ "trace", F_TRACE, PERF_SAMPLE_RAW }, { "srcline", F_SRCLINE, PERF_SAMPLE_IP },
};

struct script_opts {
	const char *input;
	const char *fields;
	bool ns;
	bool force;
	bool hide_callchain;
	bool full_source_path;
	bool inline_frames;	/* --inline (default on, as perf) */
	bool header, header_only;
	bool reltime, deltatime;
	unsigned max_stack;
	char **stop_bt;		/* --stop-bt: a chain ends after these symbols */
	bool show_info;
	uint64_t time_start, time_end;	/* --time */
	bool show_task, show_mmap, show_switch, show_lost, show_bpf;	/* --show-*-events */
	bool show_ns, show_cgroup, show_text_poke, show_round;
	const char *switch_on, *switch_off;	/* --switch-on/--switch-off (evswitch) */
	bool show_on_off;
	bool demangle;		/* --no-demangle: C++ symbols by their linkage names */
	bool demangle_kernel;	/* --demangle-kernel: kernel symbols come from kallsyms,
				 * which perf does not demangle either */
	bool per_event_dump;
	bool show_kernel_path;	/* the kernel dso's path: tally's kernel symbols are always
				 * kallsyms', whose path perf shows as [kernel.kallsyms] */
	struct sample_filter_opts filter;	/* -c, --pid, --tid, -C, --dsos, -S */
	const char *kallsyms, *symfs;
};

struct script_ev {
	unsigned fields;
	bool tracepoint;
	FILE *dump;		/* --per-event-dump: its file (NULL: stdout) */
	char *dump_path;
	uint64_t nr_dumped;
	char *name_text;	/* -F event: its name padded to the widest, and ": " */
	size_t name_len;
};

/* The maps of the last user frames printed (print_user_frame), each valid while gen
 * is (a chain's frames alternate between a binary and its libraries) */
#define LAST_MAPS 4
struct last_map {
	struct tally_map *map;
	struct tally_dso *dso;		/* NULL: none */
	uint64_t start, end, pgoff, gen;
	int32_t pid, tid;
	int32_t key;			/* the dso's index */
	uint8_t cpumode;
};

/* A number's text as last made (out_num_memo); the texts below are whole LINE_MOVEs,
 * copied as out_line copies */
struct num_memo {
	uint64_t v;
	size_t width;
	uint8_t len;	/* 0: none */
	char text[32];
};

/* The start of a line before its time, as last made on a CPU (print_start) */
#define START_MEMOS 16
struct start_memo {
	unsigned f;
	bool chain;
	int pid, tid;
	uint32_t cpu;
	uint8_t comm_len;
	uint8_t len;	/* 0: none */
	char comm[32];
	char text[128];
};

struct script {
	struct script_opts *o;
	struct tally_data *data;
	struct tally_session *session;
	struct tally_frames *frames;	/* a dwarf sample's (print_unwound) */
	struct script_trace *trace;
	struct script_ev *ev;
	size_t nr_ev;
	int name_width;
	struct out *out;
	struct line_cache *lines;	/* allocated with the first chain */
	struct tally_sample_memo *chains;	/* a chain's finished lines, by sample */
	bool chains_off;	/* the memo did not pay over its trial: no more asking */
	struct tally_dso_lines *srclines;	/* -F srcline: source lines (on first use) */
	struct tally_hist_filter filter;
	bool filter_loc;	/* --dsos, -S: the sample's location decides */
	bool filter_any;	/* any filter at all (kept's other ones look at cpus, the
				 * time bounds, comms, pids and tids) */
	uint64_t first_time, prev_time;	/* --reltime, --deltatime (0: none yet) */
	struct evswitch sw;	/* --switch-on, --switch-off */
	struct lost_counts lost;	/* for perf's warnings after the pass */
	struct start_memo starts[START_MEMOS];	/* by CPU */
	struct num_memo secs, period;
	struct last_map last_maps[LAST_MAPS];
	unsigned next_map;	/* the one to replace next */
};

static int opt_time(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct script_opts *o = opts;

	(void)opt, (void)unset;
	return parse_time_span(arg, &o->time_start, &o->time_end);
}

#define CLI_OPTS struct script_opts
static const struct cli_opt script_options[] = {
	OPT_STRING('i', "input", input, "file", "input file name"),
	OPT_VERBOSE("be more verbose (show symbol address, etc)"),
	OPT_STRING('F', "fields", fields, "str",
		   "comma separated output fields prepend with 'type:'. +field to add and -field "
		   "to remove. Valid types: hw,sw,trace,raw,break. Fields: comm,tid,pid,time,cpu,"
		   "event,trace,ip,sym,dso,addr,symoff,period,srcline"),
	OPT_BOOL(0, "ns", ns, "Use 9 decimal places when displaying time"),
	OPT_BOOL('G', "hide-call-graph", hide_callchain, "When printing symbols do not display call chain"),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_BOOL(0, "header", header, "Show data header."),
	OPT_BOOL(0, "header-only", header_only, "Show only data header."),
	OPT_STRLIST('c', "comms", filter.comms, "comm[,comm...]",
		    "only display events for these comms"),
	OPT_STRLIST(0, "pid", filter.pids, "pid[,pid...]", "only consider symbols in these pids"),
	OPT_STRLIST(0, "tid", filter.tids, "tid[,tid...]", "only consider symbols in these tids"),
	OPT_CPUMAP('C', "cpu", filter.cpus, "cpu", "list of cpus to profile"),
	OPT_STRLIST(0, "dsos", filter.dsos, "dso[,dso...]", "only consider symbols in these DSOs"),
	OPT_STRLIST('S', "symbols", filter.syms, "symbol[,symbol...]", "only consider these symbols"),
	OPT_BOOL(0, "reltime", reltime, "Show time stamps relative to start"),
	OPT_BOOL(0, "show-kernel-path", show_kernel_path, "Show the path of [kernel.kallsyms]"),
	OPT_BOOL(0, "per-event-dump", per_event_dump,
		 "Dump trace output to files named by the monitored events"),
	OPT_CALLBACK(0, "time", "str", "Time span of interest (start,stop)", opt_time),
	OPT_BOOL(0, "show-task-events", show_task, "Show the fork/comm/exit events"),
	OPT_BOOL(0, "show-mmap-events", show_mmap, "Show the mmap events"),
	OPT_BOOL(0, "show-switch-events", show_switch, "Show context switch events (if recorded)"),
	OPT_BOOL(0, "show-lost-events", show_lost, "Show lost events (if recorded)"),
	OPT_BOOL(0, "show-bpf-events", show_bpf, "Show bpf related events (if recorded)"),
	OPT_BOOL(0, "show-namespace-events", show_ns, "Show namespace events (if recorded)"),
	OPT_BOOL(0, "show-cgroup-events", show_cgroup, "Show cgroup events (if recorded)"),
	OPT_BOOL(0, "show-text-poke-events", show_text_poke,
		 "Show text poke related events (if recorded)"),
	OPT_BOOL(0, "show-round-events", show_round,
		 "Show round events (if recorded); the records in the file's order"),
	OPT_EVSWITCH(switch_on, switch_off, show_on_off),
	OPT_BOOL(0, "demangle", demangle, "Enable symbol demangling (--no-demangle: disable)"),
	OPT_BOOL(0, "demangle-kernel", demangle_kernel,
		 "Enable kernel symbol demangling (kallsyms names are never mangled C++)"),
	OPT_BOOL(0, "deltatime", deltatime, "Show time stamps relative to previous event"),
	OPT_STRLIST(0, "stop-bt", stop_bt, "symbol[,symbol...]",
		    "Stop display of callgraph at these symbols"),
	OPT_BOOL('I', "show-info", show_info, "display extended information from perf.data file"),
	OPT_REFUSED('a', "all-cpus", NULL, CLI_ARG_NONE, "system-wide collection from all CPUs",
		    "-a/--all-cpus goes with 'perf script record', a script language's recording: "
		    "tally has no script languages (record with 'tally record -a')"),
	OPT_REFUSED('d', "debug-mode", NULL, CLI_ARG_NONE,
		    "do various checks like samples ordering and lost events",
		    "-d/--debug-mode is not implemented in tally script"),
	OPT_REFUSED('D', "dump-raw-trace", NULL, CLI_ARG_NONE, "dump raw trace in ASCII",
		    "-D: dump a file's records with 'tally report -D -i FILE'"),
	OPT_REFUSED(0, "dump-unsorted-raw-trace", NULL, CLI_ARG_NONE,
		    "dump unsorted raw trace in ASCII",
		    "--dump-unsorted-raw-trace: dump a file's records with 'tally report -D -i FILE'"),
	OPT_REFUSED('g', "gen-script", "lang", CLI_ARG_REQUIRED,
		    "generate perf-script.xx script in specified language", CLI_NO_SCRIPTS("-g")),
	OPT_REFUSED('s', "script", "name", CLI_ARG_REQUIRED,
		    "script file name (lang:script name, script name, or *)", CLI_NO_SCRIPTS("-s")),
	OPT_REFUSED('l', "list", NULL, CLI_ARG_NONE, "list available scripts", CLI_NO_SCRIPTS("-l")),
	OPT_REFUSED('L', "Latency", NULL, CLI_ARG_NONE,
		    "show latency attributes (irqs/preemption disabled, etc)",
		    "-L/--Latency (irqs/preemption flags of tracepoints) is not implemented in "
		    "tally script"),
	OPT_REFUSED(0, "itrace", "opts", CLI_ARG_OPTIONAL, "Instruction Tracing options",
		    CLI_NO_AUX("--itrace")),
	OPT_REFUSED(0, "insn-trace", "raw|disasm", CLI_ARG_OPTIONAL,
		    "Decode instructions from itrace", CLI_NO_AUX("--insn-trace")),
	OPT_REFUSED(0, "call-trace", "...", CLI_ARG_OPTIONAL, "Decode calls from itrace",
		    CLI_NO_AUX("--call-trace")),
	OPT_REFUSED(0, "call-ret-trace", "...", CLI_ARG_OPTIONAL,
		    "Decode calls and returns from itrace", CLI_NO_AUX("--call-ret-trace")),
	OPT_REFUSED(0, "graph-function", "symbol[,symbol...]", CLI_ARG_REQUIRED,
		    "Only print symbols and callees with --call-trace/--call-ret-trace",
		    CLI_NO_AUX("--graph-function")),
	OPT_REFUSED(0, "addr-range", "n", CLI_ARG_REQUIRED,
		    "Use with -S to list traced records within address range",
		    CLI_NO_AUX("--addr-range")),
	OPT_REFUSED(0, "xed", "...", CLI_ARG_OPTIONAL, "Run xed disassembler on output",
		    CLI_NO_AUX("--xed")),
	OPT_REFUSED(0, "max-blocks", "n", CLI_ARG_REQUIRED,
		    "Maximum number of code blocks to dump with brstackinsn",
		    CLI_NO_LBR("--max-blocks (the brstackinsn field)")),
	OPT_REFUSED(0, "stitch-lbr", NULL, CLI_ARG_NONE, "Enable LBR callgraph stitching approach",
		    CLI_NO_LBR("--stitch-lbr")),
	OPT_REFUSED(0, "dlfilter", "file", CLI_ARG_REQUIRED, "filter .so file name",
		    CLI_NO_DLFILTER("--dlfilter")),
	OPT_REFUSED(0, "dlarg", "argument", CLI_ARG_REQUIRED, "filter argument",
		    CLI_NO_DLFILTER("--dlarg")),
	OPT_REFUSED(0, "list-dlfilters", NULL, CLI_ARG_NONE, "list available dlfilters",
		    CLI_NO_DLFILTER("--list-dlfilters")),
	OPT_REFUSED(0, "guest-code", NULL, CLI_ARG_NONE, "Guest code can be found in hypervisor process",
		    CLI_NO_GUEST("--guest-code")),
	OPT_REFUSED(0, "guestkallsyms", "file", CLI_ARG_REQUIRED,
		    "file saving guest os /proc/kallsyms", CLI_NO_GUEST("--guestkallsyms")),
	OPT_REFUSED(0, "guestmodules", "file", CLI_ARG_REQUIRED,
		    "file saving guest os /proc/modules", CLI_NO_GUEST("--guestmodules")),
	OPT_REFUSED(0, "guestmount", "directory", CLI_ARG_REQUIRED,
		    "guest mount directory under which every guest os instance has a subdir",
		    CLI_NO_GUEST("--guestmount")),
	OPT_REFUSED(0, "guestvmlinux", "file", CLI_ARG_REQUIRED, "file saving guest os vmlinux",
		    CLI_NO_GUEST("--guestvmlinux")),
	OPT_UINT(0, "max-stack", max_stack, "n",
		 "Set the maximum stack depth when parsing the callchain, anything beyond the "
		 "specified depth will be ignored. Default: kernel.perf_event_max_stack or 127"),
	OPT_STRING('k', "vmlinux", kallsyms, "file", "vmlinux pathname"),
	OPT_STRING(0, "kallsyms", kallsyms, "file", "kallsyms pathname"),
	OPT_STRING(0, "symfs", symfs, "directory", "Look for files with symbols relative to this directory"),
	OPT_BOOL(0, "full-source-path", full_source_path, "Show full source file name path for source lines"),
	OPT_BOOL(0, "inline", inline_frames, "Show inline function"),
	OPT_END(),
};

static const char *const script_usage[] = { "script [<options>]", NULL };

static const char *type_name(uint32_t type)
{
	switch (type) {
	case PERF_TYPE_HARDWARE:
		return "hw";
	case PERF_TYPE_SOFTWARE:
		return "sw";
	case PERF_TYPE_TRACEPOINT:
		return "trace";
	case PERF_TYPE_RAW:
		return "raw";
	case PERF_TYPE_BREAKPOINT:
		return "break";
	default:
		return NULL;
	}
}

static unsigned default_fields(const struct tally_data_event *ev)
{
	unsigned f = F_COMM | F_TID | F_CPU | F_TIME | F_EVENT;

	if (ev->attr.type == PERF_TYPE_TRACEPOINT)
		return f | F_TRACE;
	return f | F_IP | F_SYM | F_SYMOFF | F_DSO | F_PERIOD;
}

static int field_bit(const char *name, uint64_t *needs)
{
	for (size_t i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++) {
		if (!strcmp(name, field_names[i].name)) {
			*needs = field_names[i].needs;
			return (int)field_names[i].bit;
		}
	}
	return -1;
}

/* perf 6.1: when a tracepoint was recorded with call chains (and -G does not hide them),
 * every tracepoint shows ip, sym, symoff and dso by default, which prints its chain. */
static void tracepoint_chains(struct script *s)
{
	bool chains = false;

	for (size_t i = 0; i < s->nr_ev && !s->o->hide_callchain; i++) {
		const struct tally_data_event *ev = tally_data__event(s->data, i);

		chains |= s->ev[i].tracepoint && (ev->attr.sample_type & PERF_SAMPLE_CALLCHAIN);
	}
	for (size_t i = 0; chains && i < s->nr_ev; i++)
		if (s->ev[i].tracepoint)
			s->ev[i].fields |= F_IP | F_SYM | F_SYMOFF | F_DSO;
}

/* The fields perf prints without -F, less what the file lacks. */
static void default_event_fields(struct script *s)
{
	for (size_t i = 0; i < s->nr_ev; i++) {
		const struct tally_data_event *ev = tally_data__event(s->data, i);
		uint64_t st = ev->attr.sample_type;
		unsigned f = default_fields(ev);

		/* defaults silently drop what the file lacks */
		for (size_t k = 0; k < sizeof(field_names) / sizeof(field_names[0]); k++)
			if (field_names[k].needs && !(st & field_names[k].needs) &&
			    field_names[k].bit != F_TID)
				f &= ~field_names[k].bit;
		s->ev[i].fields = f;
		s->ev[i].tracepoint = ev->attr.type == PERF_TYPE_TRACEPOINT;
	}
	tracepoint_chains(s);
}

/* Event i's fields from the -F list l (n names; +name/-name edit the defaults). */
static int event_fields(struct script *s, size_t i, char **l, size_t n, const char *only_type,
			bool add_mode)
{
	const struct tally_data_event *ev = tally_data__event(s->data, i);
	unsigned f = add_mode ? s->ev[i].fields : 0;

	for (size_t k = 0; k < n; k++) {
		const char *name = l[k];
		bool del = false;
		uint64_t needs = 0;
		int bit;

		if (name[0] == '+' || name[0] == '-') {
			del = name[0] == '-';
			name++;
		}
		bit = field_bit(name, &needs);
		if (bit < 0) {
			cli_error("-F: unknown field '%s' (use comm, tid, pid, time, cpu, event, "
				  "ip, sym, symoff, dso, period, addr, trace, srcline)", name);
			return -1;
		}
		if (bit == F_TRACE && !only_type && ev->attr.type != PERF_TYPE_TRACEPOINT)
			continue;	/* warned by setup_fields */
		if (!del && needs && !(ev->attr.sample_type & needs)) {
			cli_error("samples for '%s' event do not have the %s attribute set; "
				  "cannot print the '%s' field (record with it, or drop it from -F)",
				  ev->name ? ev->name : "?", name, name);
			return -1;
		}
		if (del)
			f &= ~(unsigned)bit;
		else
			f |= (unsigned)bit;
	}
	if (f & F_SYMOFF)
		f |= F_SYM;
	if ((f & F_SRCLINE) && !(f & F_IP)) {
		cli_error("-F srcline needs the ip field: the source line is looked up "
			  "from the sample's address (add ip to -F)");
		return -1;
	}
	s->ev[i].fields = f;
	return 0;
}

/* -F [type:]a,b,c | +a,-b: decide the fields of every event. */
static int setup_fields(struct script *s)
{
	default_event_fields(s);
	if (!s->o->fields)
		return 0;

	const char *spec = s->o->fields;
	const char *colon = strchr(spec, ':');
	const char *only_type = NULL;
	char tbuf[16];

	if (colon && (size_t)(colon - spec) < sizeof(tbuf)) {
		memcpy(tbuf, spec, (size_t)(colon - spec));
		tbuf[colon - spec] = 0;
		only_type = tbuf;
		spec = colon + 1;
	}
	size_t n;
	char **l = strlist_parse(spec, &n);

	if (!l) {
		cli_error("out of memory");
		return -1;
	}
	bool add_mode = n && (l[0][0] == '+' || l[0][0] == '-');

	/* perf: a field given for every type is left out of the types it does not fit
	 * ("trace" of anything but tracepoints), with its warnings, not refused */
	for (size_t k = 0; !only_type && k < n; k++) {
		static const char *const types[] = { "hardware", "software", "hardware-cache",
						     "unknown", "unknown", "unknown", "unknown" };

		if (strcmp(l[k], "trace") && strcmp(l[k], "+trace"))
			continue;
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
			fprintf(stderr, "'trace' not valid for %s events. Ignoring.\n", types[t]);
		break;
	}

	for (size_t i = 0; i < s->nr_ev; i++) {
		const char *tn = type_name(tally_data__event(s->data, i)->attr.type);

		if (only_type && (!tn || strcmp(tn, only_type)))
			continue;
		if (event_fields(s, i, l, n, only_type, add_mode)) {
			strlist_free(l);
			return -1;
		}
	}
	strlist_free(l);
	return 0;
}

/*
 * Output: perf script's text is most of its run time, so lines are formatted by hand into
 * a 64 KiB buffer instead of through printf (about 3x faster on call-chain files).
 */
struct out {
	FILE *fp;
	size_t len;
	unsigned long flushes;
	char buf[1 << 16];
};

static void out_flush(struct out *o)
{
	if (o->len)
		fwrite(o->buf, 1, o->len, o->fp);
	o->len = 0;
	o->flushes++;
}

/* Where the next lines go (--per-event-dump: each event's file, side-band on stdout). */
static void out_to(struct out *o, FILE *fp)
{
	if (o->fp != fp) {
		out_flush(o);
		o->fp = fp;
	}
}

static void out_mem_slow(struct out *o, const char *s, size_t n)
{
	out_flush(o);
	if (n > sizeof(o->buf) / 2) {
		fwrite(s, 1, n, o->fp);
		return;
	}
	memcpy(o->buf, s, n);
	o->len = n;
}

static inline void out_mem(struct out *o, const char *s, size_t n)
{
	if (o->len + n > sizeof(o->buf)) {
		out_mem_slow(o, s, n);
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static inline void out_str(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static inline void out_ch(struct out *o, char c)
{
	if (o->len + 1 > sizeof(o->buf))
		out_flush(o);
	o->buf[o->len++] = c;
}

static void out_fill(struct out *o, char c, size_t n)
{
	if (o->len + n > sizeof(o->buf))
		out_flush(o);
	if (n > sizeof(o->buf))
		n = sizeof(o->buf);
	memset(o->buf + o->len, c, n);
	o->len += n;
}

/* s padded to width: right-aligned ("%16s") or left-aligned ("%-5s") */
static void out_pad(struct out *o, const char *s, size_t width, bool right)
{
	size_t n = strlen(s);

	if (right && n < width)
		out_fill(o, ' ', width - n);
	out_mem(o, s, n);
	if (!right && n < width)
		out_fill(o, ' ', width - n);
}

static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* v in base 10 into the end of t (24 bytes); returns where the digits start */
static inline char *dec(char *t, uint64_t v)
{
	char *p = t + 24;

	while (v >= 100) {
		p -= 2;
		memcpy(p, digits2 + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, digits2 + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

/* digits of v in base 10 */
static inline size_t dec_len(uint64_t v)
{
	static const uint64_t pow10[20] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
		100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
		10000000000000ull, 100000000000000ull, 1000000000000000ull,
		10000000000000000ull, 100000000000000000ull, 1000000000000000000ull,
		10000000000000000000ull,
	};
	/* bits * log10(2) (at most 19), then one more where v reaches the next power */
	size_t n = ((size_t)(64 - __builtin_clzll(v | 1)) * 1233) >> 12;

	return v ? n + (v >= pow10[n]) : 1;
}

/* v's 16 hex digits (leading zeros included), most significant first: each 32-bit
 * half spread a nibble to a byte, made ASCII in one go ('a'-'9'-1 is 0x27 more) */
static inline void hex16(uint64_t v, char t[16])
{
	for (int i = 0; i < 2; i++) {
		uint64_t x = i ? v & 0xffffffffull : v >> 32;

		x = (x | x << 16) & 0x0000ffff0000ffffull;
		x = (x | x << 8) & 0x00ff00ff00ff00ffull;
		x = (x | x << 4) & 0x0f0f0f0f0f0f0f0full;	/* byte k: nibble k */
		x += 0x3030303030303030ull +
		     (((x + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull) * 0x27;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		x = __builtin_bswap64(x);	/* the highest nibble first in memory */
#endif
		memcpy(t + 8 * i, &x, 8);
	}
}

/* width - n pad chars at p (n < width <= 64); the buffer has 16 bytes of room past
 * them */
static inline char *pad_to(char *p, size_t n, size_t width, char pad)
{
	static const char spaces[16] = "                ", zeros[16] = "0000000000000000";

	if (width - n <= 16)
		memcpy(p, pad == '0' ? zeros : spaces, 16);	/* digits overwrite the rest */
	else
		memset(p, pad, width - n);
	return p + (width - n);
}

/* unsigned in base 10 or 16, at least width chars, padded with pad (' ' or '0') on the
 * left; the digits go straight into the buffer */
static void out_num(struct out *o, uint64_t v, unsigned base, size_t width, char pad)
{
	size_t n = base == 16 ? (size_t)(67 - __builtin_clzll(v | 1)) / 4 : dec_len(v);
	char *p, *e;

	if (width > 64)
		width = 64;
	if (o->len + width + 32 > sizeof(o->buf))
		out_flush(o);
	p = o->buf + o->len;
	if (n < width)
		p = pad_to(p, n, width, pad);
	e = p + n;
	o->len = (size_t)(e - o->buf);
	if (base == 16) {
		char t[32] = "";	/* past the digits: what the whole copy takes along */

		hex16(v, t);
		memcpy(p, t + 16 - n, 16);	/* the bytes past the digits lie past o->len */
		return;
	}
	while (v >= 100) {
		e -= 2;
		memcpy(e, digits2 + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		e -= 2;
		memcpy(e, digits2 + 2 * v, 2);
	} else {
		*--e = (char)('0' + v);
	}
}

/* a mask of a word's first k bytes in memory (k <= 8) */
static inline uint64_t lead_bytes(size_t k)
{
	if (k >= 8)
		return ~0ull;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (1ull << (8 * k)) - 1;
#else
	return ~(~0ull >> (8 * k));
#endif
}

/* "%16lx": an address as perf prints it in a column */
static inline void out_addr(struct out *o, uint64_t v)
{
	size_t pad = 16 - (size_t)(67 - __builtin_clzll(v | 1)) / 4;	/* 0..15 */
	uint64_t w[2], m[2] = {	/* the bytes of w to be spaces */
		lead_bytes(pad < 8 ? pad : 8), lead_bytes(pad > 8 ? pad - 8 : 0),
	};
	char t[16];

	if (o->len + 16 > sizeof(o->buf))
		out_flush(o);
	hex16(v, t);
	memcpy(w, t, 16);
	for (int i = 0; i < 2; i++)
		w[i] = (w[i] & ~m[i]) | (0x2020202020202020ull & m[i]);
	memcpy(o->buf + o->len, w, 16);
	o->len += 16;
}

/* "%5d" / "%-5d" of a signed int */
static void out_int(struct out *o, int v, size_t width, bool left)
{
	char t[25], *p;
	uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	size_t n;

	p = dec(t, u);
	if (v < 0)
		*--p = '-';
	n = (size_t)(t + 24 - p);
	if (!left && n < width)
		out_fill(o, ' ', width - n);
	out_mem(o, p, n);
	if (left && n < width)
		out_fill(o, ' ', width - n);
}

static void print_sym(struct out *o, const struct tally_addr_loc *loc, unsigned f)
{
	if (f & F_SYM) {
		out_ch(o, ' ');
		if (loc->sym && loc->sym->name) {
			/* an inlined function: its name, the offset in the symbol holding it */
			out_str(o, loc->inlined ? loc->inlined : loc->sym->name);
			if (f & F_SYMOFF) {
				out_mem(o, "+0x", 3);
				out_num(o, loc->dso_addr - loc->sym->start, 16, 0, ' ');
			}
		} else {
			out_mem(o, "[unknown]", 9);
		}
	}
	if ((f & F_DSO) && !loc->inlined) {
		out_mem(o, " (", 2);
		out_str(o, loc->dso ? tally_dso__name(loc->dso) : "[unknown]");
		out_ch(o, ')');
	}
}

/*
 * Call-chain lines repeat: the same return addresses in the same processes, printed the
 * same way. A direct-mapped cache keeps the finished text of recent lines, valid as long
 * as resolving the address again would give the same answer (the session's generations).
 * The slots are small (32 bytes) and point at their text in one arena, where each line
 * takes its length rounded up to LINE_MOVE: a file with few distinct lines pays for few
 * (peak RSS), C++ lines of several hundred bytes are kept too, and a hit copies its text
 * in whole 32-byte moves. The table uses LINE_SLOTS_MIN slots (128 KiB) at first and
 * twice as many, up to LINE_SLOTS_MAX, whenever lines pushed others out more than twice
 * the slots in use since it last grew: a file whose chains have more distinct lines than
 * slots (9k in a million C++ samples; a system-wide build, 122k distinct frames) misses
 * less. The arena starts over when it would pass LINE_ARENA_MAX. 16k slots and 2 MiB:
 * bench/corpus.sh's system-wide file 9% faster than with 8k and 1 MiB for 1.2 MB more
 * peak RSS (22.3 MB, perf's 94.6 MB); a file that misses little never grows them.
 */
#define LINE_SLOTS_MIN 4096
#define LINE_SLOTS_MAX 16384
#define LINE_TEXT 2048			/* longer lines are printed each time */
#define LINE_MOVE 32
#define LINE_ARENA_MAX ((size_t)2 << 20)
#define LINE_ROUND(n) (((size_t)(n) + LINE_MOVE - 1) & ~(size_t)(LINE_MOVE - 1))
#define LINE_BY_DSO 0xff		/* a user frame's line by dso (print_user_frame) */

struct line_slot {
	uint64_t ip;		/* LINE_BY_DSO: the address in the dso */
	uint64_t gen;		/* the session's generation when made (0: empty; 1 for
				 * LINE_BY_DSO lines, always valid) */
	int32_t pid;		/* -1: a kernel address (any process); LINE_BY_DSO: the
				 * dso's index */
	uint32_t fields;
	uint32_t off;		/* its text in the arena (LINE_ROUND(len) bytes there) */
	uint16_t len;
	uint8_t cpumode;	/* the frame's, or LINE_BY_DSO */
};

_Static_assert(sizeof(struct line_slot) == 32, "line slots are 32 bytes");
_Static_assert(sizeof(((struct num_memo *)0)->text) % LINE_MOVE == 0 &&
	       sizeof(((struct start_memo *)0)->text) % LINE_MOVE == 0, "memo texts are whole moves");
_Static_assert(LINE_TEXT <= UINT16_MAX && LINE_ARENA_MAX <= UINT32_MAX, "slot fields hold them");

/* A user address outside every map of its process (a broken frame-pointer chain's: a
 * system-wide file has a quarter of its frames so), as last looked up; valid as a
 * line_slot is (gen) */
#define UNMAPPED_SLOTS 1024	/* 32 KiB */
struct unmapped_slot {
	uint64_t ip;
	uint64_t gen;		/* 0: empty */
	int32_t pid, tid;
	uint8_t cpumode;
};

struct line_cache {
	struct unmapped_slot *unmapped;	/* UNMAPPED_SLOTS of them */
	struct line_slot *slots;
	uint32_t mask;			/* slots - 1 */
	uint64_t evictions;		/* since the table last grew */
	char *text;			/* the arena */
	size_t text_len, text_cap;
};

static struct line_cache *line_cache_new(void)
{
	struct line_cache *c = calloc(1, sizeof(*c));

	/* the largest table: pages it never uses cost nothing */
	if (c && (!(c->slots = calloc(LINE_SLOTS_MAX, sizeof(*c->slots))) ||
		  !(c->unmapped = calloc(UNMAPPED_SLOTS, sizeof(*c->unmapped))))) {
		free(c->slots);
		free(c);
		return NULL;
	}
	if (c)
		c->mask = LINE_SLOTS_MIN - 1;
	return c;
}

static void line_cache_delete(struct line_cache *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c->unmapped);
	free(c->text);
	free(c);
}

/* A line about to replace another one: count it, and use twice the slots once they
 * have been too many (the lines already in keep their slots). */
static void line_evicted(struct line_cache *c)
{
	if (++c->evictions > 2 * ((uint64_t)c->mask + 1) && c->mask + 1 < LINE_SLOTS_MAX) {
		c->mask = 2 * c->mask + 1;
		c->evictions = 0;
	}
}

/* Room for len bytes of ls's text: its old room where that is large enough, else new
 * room at the arena's end (NULL: out of memory). */
static char *line_room(struct line_cache *c, struct line_slot *ls, size_t len)
{
	size_t need = LINE_ROUND(len);

	if (ls->gen && LINE_ROUND(ls->len) >= need)
		return c->text + ls->off;
	ls->gen = 0;
	if (c->text_len + need > LINE_ARENA_MAX) {
		/* full: every line is made again as it comes */
		memset(c->slots, 0, ((size_t)c->mask + 1) * sizeof(*c->slots));	/* none past it */
		c->text_len = 0;
	}
	if (c->text_len + need > c->text_cap) {
		size_t cap = c->text_cap ? c->text_cap * 2 : (size_t)64 << 10;
		char *t;

		while (cap < c->text_len + need)
			cap *= 2;
		t = realloc(c->text, cap);
		if (!t)
			return NULL;
		c->text = t;
		c->text_cap = cap;
	}
	ls->off = (uint32_t)c->text_len;
	c->text_len += need;
	return c->text + ls->off;
}

/* a cached line's text into the output: whole moves (its room in the arena and the
 * buffer's room after len are LINE_ROUND(len) long; bytes past len are overwritten by
 * what follows) */
static inline void out_line(struct out *o, const char *text, size_t len)
{
	char *d;

	if (o->len + LINE_ROUND(len) > sizeof(o->buf))
		out_flush(o);
	d = o->buf + o->len;
	for (size_t i = 0; i < len; i += LINE_MOVE)
		memcpy(d + i, text + i, LINE_MOVE);
	o->len += len;
}

/* -F srcline: "\n  file:line" after an address in a map (tally_dso_lines__text), or,
 * where nothing knows it, "\n  dso[address]" as perf; nothing for binutils' "??:0"
 * and outside any map. */
static int print_srcline(struct script *s, const struct tally_addr_loc *l)
{
	struct out *o = s->out;
	char buf[4096];
	size_t file_len;
	int n;

	if (!l->map || !l->dso)
		return 0;
	if (l->line) {		/* an expanded frame's own line, as perf prints it */
		const char *file = l->line->file ? l->line->file : "??";

		if (!s->o->full_source_path && strrchr(file, '/'))
			file = strrchr(file, '/') + 1;
		out_mem(o, "\n  ", 3);
		out_str(o, file);
		out_ch(o, ':');
		out_num(o, l->line->line, 10, 0, ' ');
		return 0;
	}
	if (!s->srclines && tally_dso_lines__new(&s->srclines, s->session))
		return -ENOMEM;
	n = tally_dso_lines__text(s->srclines, l, s->o->full_source_path, buf, sizeof(buf),
				  &file_len);
	if (n < 0)
		return n;
	if (n > 0 && !strncmp(buf, "??:", 3))
		return 0;
	out_mem(o, "\n  ", 3);
	if (n > 0) {
		out_mem(o, buf, (size_t)n);
	} else {
		out_str(o, tally_dso__short_name(l->dso));
		out_ch(o, '[');
		out_num(o, l->dso_addr, 16, 0, ' ');
		out_ch(o, ']');
	}
	return 0;
}

static int print_frame(struct script *s, const struct tally_addr_loc *l, unsigned f)
{
	struct out *o = s->out;

	out_ch(o, '\t');
	out_addr(o, l->map ? l->dso_addr : l->addr);
	print_sym(o, l, f);
	if ((f & F_SRCLINE) && print_srcline(s, l))
		return -ENOMEM;
	if (l->inlined)
		out_mem(o, " (inlined)", 10);
	out_ch(o, '\n');
	return 0;
}

static struct line_slot *line_slot(struct line_cache *c, uint64_t ip, int32_t key, uint8_t cpumode)
{
	uint64_t h = (ip ^ (ip >> 12) ^ ((uint64_t)(uint32_t)key * 0x9e3779b97f4a7c15ull) ^ cpumode) *
		     0xff51afd7ed558ccdull;

	return &c->slots[(h >> 40) & c->mask];
}

static inline bool line_hit(const struct line_slot *ls, uint64_t ip, int32_t key, uint8_t cpumode,
			    unsigned f, uint64_t since)
{
	return ls->gen >= since && ls->ip == ip && ls->pid == key && ls->cpumode == cpumode &&
	       ls->fields == f && ls->gen;
}

/* Keep the line just printed (the buffer from start on) in ls's place, unless the buffer
 * was flushed meanwhile or the line is too long. 0 or -ENOMEM. */
static int line_keep(struct line_cache *c, struct line_slot *ls, const struct out *o,
		     unsigned long flushes, size_t start, uint64_t ip, int32_t key,
		     uint8_t cpumode, unsigned f, uint64_t gen)
{
	char *text;

	if (o->flushes != flushes || o->len - start > LINE_TEXT)
		return 0;
	if (ls->gen && (ls->ip != ip || ls->pid != key || ls->cpumode != cpumode)) {
		line_evicted(c);
		ls = line_slot(c, ip, key, cpumode);	/* the table may have grown */
	}
	text = line_room(c, ls, o->len - start);
	if (!text)
		return -ENOMEM;
	ls->ip = ip;
	ls->pid = key;
	ls->gen = gen;
	ls->fields = f;
	ls->cpumode = cpumode;
	ls->len = (uint16_t)(o->len - start);
	memcpy(text, o->buf + start, ls->len);
	return 0;
}

/* Since when lines of the sample's process made in cpumode are valid
 * (tally_session__valid_since), asked once per context of a chain. */
struct chain_since {
	uint8_t mode;	/* the cpumode v is for (UINT8_MAX: none yet) */
	uint64_t v;
};

static uint64_t chain_since(struct script *s, const struct tally_sample *smp, uint8_t cpumode,
			    struct chain_since *cs)
{
	if (cs->mode != cpumode) {
		cs->mode = cpumode;
		cs->v = tally_session__valid_since(s->session, (pid_t)smp->pid, cpumode);
	}
	return cs->v;
}

/*
 * A user frame's line is its dso's address, symbol and name (perf prints the address
 * in the dso): the same in every process that maps the dso. A system-wide file has
 * thousands of processes running the same binaries (a compiler's forks), so these
 * lines are kept by dso and address, made once for all of them, and always valid (a
 * dso's symbols and name never change). The maps of the last frames are remembered
 * while no record changed the process's maps: callers in the same binaries skip the
 * lookup. Frames outside any map print their address and [unknown]: quicker made
 * than kept. 1: a frame this does not print (a user map of a kernel dso), for the
 * caller's way.
 */
static int print_user_frame(struct script *s, const struct tally_sample *smp, uint8_t cpumode,
			    uint64_t ip, unsigned f, struct chain_since *cs)
{
	struct last_map *lm = NULL, *stale = NULL;
	struct tally_addr_loc loc;
	struct line_slot *ls;
	struct out *o = s->out;
	unsigned long flushes;
	uint64_t dso_addr;
	size_t start;

	if (o->len + LINE_TEXT > sizeof(o->buf))
		out_flush(o);
	for (size_t i = 0; i < LAST_MAPS; i++) {
		struct last_map *m = &s->last_maps[i];

		if (m->dso && ip >= m->start && ip < m->end && m->pid == (int32_t)smp->pid &&
		    m->tid == (int32_t)smp->tid && m->cpumode == cpumode) {
			if (m->gen >= chain_since(s, smp, cpumode, cs))
				lm = m;
			else
				stale = m;	/* a record changed the maps: its place */
			break;
		}
	}
	if (!lm) {
		struct unmapped_slot *us = &s->lines->unmapped[
			(((ip ^ (ip >> 17)) * 0x9e3779b97f4a7c15ull ^ smp->tid) * 0xff51afd7ed558ccdull >> 48) %
			UNMAPPED_SLOTS];
		bool unmapped = us->gen && us->ip == ip && us->pid == (int32_t)smp->pid &&
				us->tid == (int32_t)smp->tid && us->cpumode == cpumode &&
				us->gen >= chain_since(s, smp, cpumode, cs);

		/* no thread (out of memory) leaves the address unknown, as resolving does */
		if (!unmapped) {
			tally_session__locate(s->session, (pid_t)smp->pid, (pid_t)smp->tid, cpumode,
					      ip, &loc);
			if (!loc.dso)
				*us = (struct unmapped_slot){
					.ip = ip, .gen = tally_session__generation(s->session),
					.pid = (int32_t)smp->pid, .tid = (int32_t)smp->tid,
					.cpumode = cpumode,
				};
		}
		if (unmapped || !loc.dso) {	/* print_frame's line of an unknown address, quicker */
			o->buf[o->len++] = '\t';
			out_addr(o, ip);
			if (f & F_SYM)
				out_mem(o, " [unknown]", 10);
			if (f & F_DSO)
				out_mem(o, " ([unknown])", 12);
			o->buf[o->len++] = '\n';
			return 0;
		}
		if (tally_dso__is_kernel(loc.dso))
			return 1;
		lm = stale ? stale : &s->last_maps[s->next_map++ % LAST_MAPS];
		*lm = (struct last_map){
			.map = loc.map, .dso = loc.dso, .start = tally_map__start(loc.map),
			.end = tally_map__end(loc.map), .pgoff = tally_map__pgoff(loc.map),
			.gen = tally_session__generation(s->session), .pid = (int32_t)smp->pid,
			.tid = (int32_t)smp->tid, .cpumode = cpumode,
			.key = (int32_t)tally_dso__index(loc.dso),
		};
	}
	dso_addr = ip - lm->start + lm->pgoff;	/* as tally_session__locate makes it */
	ls = line_slot(s->lines, dso_addr, lm->key, LINE_BY_DSO);
	if (line_hit(ls, dso_addr, lm->key, LINE_BY_DSO, f, 1)) {
		out_line(o, s->lines->text + ls->off, ls->len);
		return 0;
	}
	loc = (struct tally_addr_loc){
		.map = lm->map, .dso = lm->dso, .addr = ip, .dso_addr = dso_addr, .cpumode = cpumode,
		.sym = tally_session__dso_symbol(s->session, lm->dso, dso_addr),
	};
	start = o->len;
	flushes = o->flushes;
	if (print_frame(s, &loc, f))
		return -ENOMEM;
	return line_keep(s->lines, ls, o, flushes, start, dso_addr, lm->key, LINE_BY_DSO, f, 1);
}

/* The chain's lines, callee first; nothing for a corrupt chain (as perf). */
static int print_chain(struct script *s, const struct tally_sample *smp, unsigned f)
{
	uint8_t cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK, m = cpumode;
	uint8_t key_mode = UINT8_MAX;	/* the cpumode key is for */
	struct chain_since cs = { .mode = UINT8_MAX };
	int32_t key = 0;
	struct out *o = s->out;
	/* -F srcline's text is not the dso's alone; --stop-bt looks at each symbol */
	bool by_dso = !(f & F_SRCLINE) && !s->o->stop_bt;
	int ret;

	for (uint64_t i = 0; i < smp->callchain_nr; i++)
		if (smp->callchain[i] >= PERF_CONTEXT_MAX &&
		    tally_chain_context(smp->callchain[i], &m) < 0)
			return 0;
	if (!s->lines) {
		s->lines = line_cache_new();
		if (!s->lines)
			return -ENOMEM;
	}
	for (uint64_t i = 0, nr = 0; i < smp->callchain_nr && nr < s->o->max_stack; i++) {
		uint64_t ip = smp->callchain[i];
		struct tally_addr_loc loc;
		struct line_slot *ls;
		unsigned long flushes;
		size_t start;

		if (ip >= PERF_CONTEXT_MAX && tally_chain_context(ip, &cpumode))
			continue;
		nr++;	/* perf's --max-stack counts the frames, not the context marks */
		/* the same for every frame of one context: asked once per context */
		if (cpumode != key_mode) {
			key_mode = cpumode;
			key = tally_cpumode_is_kernel(cpumode) ? -1 : (int32_t)smp->pid;
		}
		if (by_dso && key != -1 && (ret = print_user_frame(s, smp, cpumode, ip, f, &cs)) <= 0) {
			if (ret)
				return ret;
			continue;
		}
		ls = line_slot(s->lines, ip, key, cpumode);
		if (!s->o->stop_bt && line_hit(ls, ip, key, cpumode, f, chain_since(s, smp, cpumode, &cs))) {
			out_line(o, s->lines->text + ls->off, ls->len);
			continue;
		}
		/* not through the session's resolve cache: the line cache is this one's (its
		 * slots would only double the pages touched) */
		tally_session__locate(s->session, (pid_t)smp->pid, (pid_t)smp->tid, cpumode, ip, &loc);
		if (loc.dso)
			loc.sym = tally_session__dso_symbol(s->session, loc.dso, loc.dso_addr);
		if (o->len + LINE_TEXT > sizeof(o->buf))
			out_flush(o);
		start = o->len;
		flushes = o->flushes;
		if (print_frame(s, &loc, f))
			return -ENOMEM;
		/* --stop-bt: perf prints the frame of the symbol, then no more */
		if (s->o->stop_bt && loc.sym && loc.sym->name && strlist_has(s->o->stop_bt, loc.sym->name))
			break;
		if (line_keep(s->lines, ls, o, flushes, start, ip, key, cpumode, f,
			      tally_session__generation(s->session)))
			return -ENOMEM;
	}
	return 0;
}

/* A dwarf sample's frames: the recorded (kernel) chain and the user frames unwound
 * from its stack copy, at most --max-stack of them. */
static int print_unwound(struct script *s, const struct tally_sample *smp, unsigned f)
{
	int ret;

	if (!s->frames) {
		s->frames = tally_frames__new();
		if (!s->frames)
			return -ENOMEM;
	}
	/* --max-stack (default kernel.perf_event_max_stack) */
	ret = tally_session__resolve_chain(s->session, smp, s->o->max_stack, s->frames);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < tally_frames__nr(s->frames); i++) {
		if (s->out->len + LINE_TEXT > sizeof(s->out->buf))
			out_flush(s->out);
		if (print_frame(s, tally_frames__get(s->frames, i), f))
			return -ENOMEM;
	}
	return 0;
}

/* Most chain blocks are ones printed before: same thread, same addresses. The memo
 * saves the frame-by-frame line cache's work where few chains repeat a lot (a hot
 * loop: 16% of script's time); where many chains repeat a little (system-wide) the
 * line cache does as well and the memo only costs, so it must earn its place: nine
 * samples in ten found in it over its trial, and a budget of 256 KiB of finished text,
 * started over when full (512 KiB cost the C++ file 200 KiB of peak RSS for 6% fewer
 * instructions; the hot loops of the large and million files fit either way). */
#define CHAIN_TEXT_MAX 16384
#define CHAIN_MEMO_WORDS ((size_t)32 << 10)	/* 256 KiB */
#define CHAIN_MEMO_MIN_HITS 90			/* percent */

struct chain_text {
	uint64_t len;
	char text[];
};

/* print_chain through the memo of finished blocks */
static int print_chain_memo(struct script *s, int evidx, const struct tally_sample *smp,
			    unsigned f)
{
	struct tally_sample_key key = {
		.pid = (int32_t)smp->pid, .tid = (int32_t)smp->tid, .cpu = -1,
		.evidx = (uint16_t)evidx, .cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK,
		.chain = smp->callchain, .nr_chain = (size_t)smp->callchain_nr,
	};
	struct chain_text *t;
	struct out *o = s->out;
	unsigned long flushes;
	uint64_t hash;
	size_t start, nr_words;

	if (tally_sample__has_user_stack(smp))
		return print_unwound(s, smp, f);
	if (s->nr_ev > UINT16_MAX || s->o->stop_bt || s->chains_off)
		return print_chain(s, smp, f);
	t = tally_sample_memo__find(s->chains, s->session, &key, &hash, &nr_words);
	if (t) {
		out_mem(o, t->text, t->len);
		return 0;
	}
	if (!hash) {		/* turned off (a key's hash is never 0) */
		s->chains_off = true;
		return print_chain(s, smp, f);
	}
	if (o->len > sizeof(o->buf) - CHAIN_TEXT_MAX)
		out_flush(o);
	start = o->len;
	flushes = o->flushes;
	if (print_chain(s, smp, f))
		return -ENOMEM;
	if (o->flushes != flushes)
		return 0;	/* longer than the buffer: not kept */
	t = tally_sample_memo__add(s->chains, s->session, &key, hash,
				   1 + (o->len - start + 7) / 8);
	if (t) {
		t->len = o->len - start;
		memcpy(t->text, o->buf + start, t->len);
	}
	return 0;
}

/* -C, -c, --pid, --tid, --dsos, -S: does the sample print? */
static bool kept(struct script *s, const struct tally_sample *smp, struct tally_thread *th)
{
	struct tally_addr_loc loc;

	if (!s->filter_any)
		return true;
	if (!tally_hist_filter__keeps_cpu(&s->filter, smp) ||
	    !tally_hist_filter__keeps_time(&s->filter, smp) ||
	    !tally_hist_filter__keeps_thread(&s->filter, smp, th ? tally_thread__comm(th) : ":-1"))
		return false;
	if (!s->filter_loc)
		return true;
	tally_session__resolve(s->session, (pid_t)smp->pid, (pid_t)smp->tid,
			       smp->misc & PERF_RECORD_MISC_CPUMODE_MASK, smp->ip, &loc);
	return tally_hist_filter__keeps_loc(&s->filter, &loc);
}

/* The time a line shows: the sample's, or since the first (--reltime) or the previous
 * (--deltatime) line printed, as perf. */
static uint64_t shown_time(struct script *s, uint64_t t)
{
	uint64_t shown = t;

	/* as perf: a time of 0 (synthesized records) leaves the start unset */
	if (s->o->reltime) {
		if (!s->first_time)
			s->first_time = t;
		shown = t - s->first_time;
	} else if (s->o->deltatime) {
		shown = s->prev_time ? t - s->prev_time : 0;
		s->prev_time = t;
	}
	return shown;
}

/* perf's start of a line (perf_sample__fprintf_start): comm (not padded before a call
 * chain), pid/tid, [cpu], time. */
static void print_start_fields(struct out *o, unsigned f, bool chain, const char *comm, int pid,
			       int tid, uint32_t cpu)
{
	if (f & F_COMM) {
		out_pad(o, comm, chain ? 0 : 16, true);
		out_ch(o, ' ');
	}
	if ((f & F_PID) && (f & F_TID)) {
		out_int(o, pid, 5, false);
		out_ch(o, '/');
		out_int(o, tid, 5, true);
		out_ch(o, ' ');
	} else if (f & (F_PID | F_TID)) {
		out_int(o, f & F_PID ? pid : tid, 5, false);
		out_ch(o, ' ');
	}
	if (f & F_CPU) {
		out_ch(o, '[');
		out_num(o, cpu, 10, 3, '0');
		out_mem(o, "] ", 2);
	}
}

/* v (below a million) as six digits */
static inline void out_dec6(struct out *o, uint32_t v)
{
	char *p;

	if (o->len + 6 > sizeof(o->buf))
		out_flush(o);
	p = o->buf + o->len;
	memcpy(p, digits2 + 2 * (v / 10000), 2);
	memcpy(p + 2, digits2 + 2 * (v / 100 % 100), 2);
	memcpy(p + 4, digits2 + 2 * (v % 100), 2);
	o->len += 6;
}

/* v in base 10, at least width chars padded with spaces, through a memo of the last
 * text made (a field that repeats from line to line: the seconds, the period) */
static void out_num_memo(struct out *o, struct num_memo *m, uint64_t v, size_t width)
{
	size_t start;

	if (m->len && m->v == v && m->width == width) {
		out_line(o, m->text, m->len);	/* whole moves: text is LINE_MOVE long */
		return;
	}
	if (o->len + width + 64 > sizeof(o->buf))
		out_flush(o);	/* out_num's room: it flushes nothing now */
	start = o->len;
	out_num(o, v, 10, width, ' ');
	m->len = 0;
	if (o->len - start <= sizeof(m->text)) {
		m->v = v;
		m->width = width;
		m->len = (uint8_t)(o->len - start);
		memcpy(m->text, o->buf + start, m->len);
	}
}

/* perf's start of a line (perf_sample__fprintf_start): comm (not padded before a call
 * chain), pid/tid, [cpu], time. All before the time is the same from sample to sample
 * of a thread on a CPU: kept per CPU, by the comm's text (a COMM record changes it). */
static void print_start(struct script *s, unsigned f, bool chain, const char *comm, int pid,
			int tid, uint32_t cpu, uint64_t time)
{
	struct start_memo *m = &s->starts[cpu % START_MEMOS];
	struct out *o = s->out;
	size_t cl = strlen(comm), start;

	if (m->len && m->f == f && m->chain == chain && m->pid == pid && m->tid == tid &&
	    m->cpu == cpu && m->comm_len == cl && !memcmp(m->comm, comm, cl)) {
		out_line(o, m->text, m->len);	/* whole moves: text is 4 LINE_MOVEs */
	} else {
		if (o->len + sizeof(m->text) > sizeof(o->buf))
			out_flush(o);
		start = o->len;
		print_start_fields(o, f, chain, comm, pid, tid, cpu);
		m->len = 0;
		if (cl <= sizeof(m->comm) && o->len - start <= sizeof(m->text)) {
			m->f = f;
			m->chain = chain;
			m->pid = pid;
			m->tid = tid;
			m->cpu = cpu;
			m->comm_len = (uint8_t)cl;
			memcpy(m->comm, comm, cl);
			m->len = (uint8_t)(o->len - start);
			memcpy(m->text, o->buf + start, m->len);
		}
	}
	if (f & F_TIME) {
		uint64_t t = shown_time(s, time);
		uint64_t secs = t / 1000000000ull, ns = t % 1000000000ull;

		out_num_memo(o, &s->secs, secs, 5);
		out_ch(o, '.');
		if (s->o->ns)
			out_num(o, ns, 10, 9, '0');
		else
			out_dec6(o, (uint32_t)(ns / 1000));
		out_mem(o, ": ", 2);
	}
}

static int print_sample(struct script *s, int evidx, const struct perf_event_header *hdr)
{
	const struct tally_data_event *ev = tally_data__event(s->data, (size_t)evidx);
	unsigned f = s->ev[evidx].fields;
	struct tally_sample smp;
	struct tally_thread *th;
	struct out *o = s->out;
	bool chain;

	if (!f || tally_sample__parse(&ev->layout, hdr, &smp))
		return 0;	/* no field of this event to print: no line, as perf */
	th = tally_session__thread(s->session, (pid_t)smp.pid, (pid_t)smp.tid);
	if (!kept(s, &smp, th))
		return 0;
	if (s->ev[evidx].dump) {
		out_to(o, s->ev[evidx].dump);
		s->ev[evidx].nr_dumped++;
	}
	chain = (f & F_IP) && !s->o->hide_callchain && (smp.type & PERF_SAMPLE_CALLCHAIN);
	print_start(s, f, chain, th ? tally_thread__comm(th) : ":-1", (int)smp.pid, (int)smp.tid,
		    smp.cpu, smp.time);
	if (f & F_PERIOD) {
		out_num_memo(o, &s->period, tally_sample__period(&smp, &ev->attr), 10);
		out_ch(o, ' ');
	}
	if (f & F_EVENT)
		out_mem(o, s->ev[evidx].name_text, s->ev[evidx].name_len);
	if ((f & F_TRACE) && s->ev[evidx].tracepoint) {
		if (smp.type & PERF_SAMPLE_RAW) {
			out_flush(o);
			script_trace__print(s->trace, o->fp, (int)smp.cpu, smp.raw, smp.raw_size);
		}
		/* the ip brings its own separator: ' ', or '\n' before a chain */
		if ((f & (F_ADDR | F_SYM | F_DSO)) && !(f & F_IP))
			out_ch(o, ' ');
	}
	if (f & F_ADDR)
		out_addr(o, smp.addr);
	if (f & F_IP) {
		if (chain) {
			out_ch(o, '\n');
			if (print_chain_memo(s, evidx, &smp, f))
				return -ENOMEM;
		} else {
			struct tally_addr_loc loc;

			tally_session__resolve(s->session, (pid_t)smp.pid, (pid_t)smp.tid,
					       smp.misc & PERF_RECORD_MISC_CPUMODE_MASK, smp.ip, &loc);
			out_ch(o, ' ');
			out_addr(o, smp.ip);
			print_sym(o, &loc, f);
			if ((f & F_SRCLINE) && print_srcline(s, &loc))
				return -ENOMEM;
		}
	} else if ((f & (F_SYM | F_DSO))) {
		struct tally_addr_loc loc;

		tally_session__resolve(s->session, (pid_t)smp.pid, (pid_t)smp.tid,
				       smp.misc & PERF_RECORD_MISC_CPUMODE_MASK, smp.ip, &loc);
		print_sym(o, &loc, f);
	}
	out_ch(o, '\n');
	return 0;
}

/* Which side-band records --show-*-events print. */
static bool side_band_shown(const struct script *s, uint32_t type)
{
	const struct script_opts *o = s->o;

	switch (type) {
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return o->show_task;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return o->show_mmap;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return o->show_switch;
	case PERF_RECORD_LOST:
		return o->show_lost;
	case PERF_RECORD_KSYMBOL:
	case PERF_RECORD_BPF_EVENT:
		return o->show_bpf;
	case PERF_RECORD_NAMESPACES:
		return o->show_ns;
	case PERF_RECORD_CGROUP:
		return o->show_cgroup;
	case PERF_RECORD_TEXT_POKE:
		return o->show_text_poke;
	default:
		return false;
	}
}

/* A side-band record as perf script prints it: the start of a sample line from its
 * sample_id fields (the thread's name: the record's own thread for task and mmap
 * records), then perf's text of the record. */
static void print_side_band(struct script *s, int evidx, const struct perf_event_header *hdr)
{
	const struct tally_data_event *ev;
	const uint32_t *own = (const void *)(hdr + 1);
	struct tally_sample_id sid = { 0 };
	struct tally_thread *th;
	int pid = -1, tid = -1;
	uint32_t cpu = (uint32_t)-1;
	uint64_t time = (uint64_t)-1;
	bool chain;

	if (s->nr_ev == 0)
		return;
	if (evidx < 0 || (size_t)evidx >= s->nr_ev)
		evidx = 0;
	ev = tally_data__event(s->data, (size_t)evidx);
	if (!ev->attr.sample_id_all) {
		/* no sample_id: perf takes the record's thread, time and cpu 0 */
		pid = hdr->size >= sizeof(*hdr) + 8 ? (int)own[0] : -1;
		tid = hdr->size >= sizeof(*hdr) + 8 ? (int)own[1] : -1;
		cpu = 0;
		time = 0;
	} else if (!tally_sample_id__parse(&ev->layout, hdr, &sid)) {
		if (sid.has_tid) {
			pid = (int)sid.pid;
			tid = (int)sid.tid;
		}
		if (sid.has_time)
			time = sid.time;
		if (sid.has_cpu)
			cpu = sid.cpu;
	}
	if (s->filter.cpus && tally_cpumap__idx(s->filter.cpus, (int)cpu) < 0)
		return;	/* perf's -C applies to them too */
	switch (hdr->type) {
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:	/* pid, ppid, tid, ptid */
		th = hdr->size >= sizeof(*hdr) + 16 ?
		     tally_session__thread(s->session, (pid_t)own[0], (pid_t)own[2]) : NULL;
		break;
	case PERF_RECORD_COMM:
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_NAMESPACES:	/* pid, tid */
		th = hdr->size >= sizeof(*hdr) + 8 ?
		     tally_session__thread(s->session, (pid_t)own[0], (pid_t)own[1]) : NULL;
		break;
	default:
		th = tally_session__thread(s->session, pid, tid);
		break;
	}
	chain = (s->ev[evidx].fields & F_IP) && !s->o->hide_callchain &&
		(ev->attr.sample_type & PERF_SAMPLE_CALLCHAIN);
	out_to(s->out, stdout);	/* perf: side-band lines stay on stdout */
	print_start(s, s->ev[evidx].fields, chain, th ? tally_thread__comm(th) : ":-1", pid, tid,
		    cpu, time);
	out_flush(s->out);
	record_text_in(s->out->fp, hdr, s->session);
}

/* What perf's warnings about lost data count. */
static void count_record(struct lost_counts *c, const struct perf_event_header *hdr)
{
	c->nr_records++;
	c->nr_samples += hdr->type == PERF_RECORD_SAMPLE;
	c->nr_lost_records += hdr->type == PERF_RECORD_LOST;
	c->lost_samples += record_lost_samples(hdr);
}

static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct script *s = arg;
	int evidx = ctx->evidx;

	if (exiting)
		return -EINTR;
	count_record(&s->lost, hdr);
	if (hdr->type == TALLY_RECORD_FINISHED_ROUND && s->o->show_round) {
		out_to(s->out, stdout);
		out_str(s->out, "PERF_RECORD_FINISHED_ROUND\n");	/* perf: the name alone */
		return 0;
	}
	if (hdr->type != PERF_RECORD_SAMPLE) {
		bool show = side_band_shown(s, hdr->type);
		int ret;

		/* perf prints an EXIT (and a LOST) before the session takes it in, the
		 * others after (a COMM shows its new name) */
		if (show && (hdr->type == PERF_RECORD_EXIT || hdr->type == PERF_RECORD_LOST))
			print_side_band(s, evidx, hdr);
		ret = tally_session__process(s->session, hdr) == -ENOMEM ? -ENOMEM : 0;
		if (!ret && show && hdr->type != PERF_RECORD_EXIT && hdr->type != PERF_RECORD_LOST)
			print_side_band(s, evidx, hdr);
		return ret;
	}
	if (evidx < 0 && s->nr_ev == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= s->nr_ev || evswitch_discard(&s->sw, evidx))
		return 0;
	if (ferror_unlocked(stdout))	/* only this thread writes there */
		return -EIO;
	return print_sample(s, evidx, hdr);
}

/* --per-event-dump: INPUT.EVENT.dump for every event, as perf names them. 0 or 1. */
static int open_dumps(struct script *s)
{
	for (size_t i = 0; i < s->nr_ev; i++) {
		const struct tally_data_event *ev = tally_data__event(s->data, i);

		if (asprintf(&s->ev[i].dump_path, "%s.%s.dump", s->o->input,
			     ev->name ? ev->name : "unknown") < 0) {
			s->ev[i].dump_path = NULL;
			cli_error("out of memory");
			return 1;
		}
		s->ev[i].dump = fopen(s->ev[i].dump_path, "w");
		if (!s->ev[i].dump) {
			cli_error("cannot create %s: %s", s->ev[i].dump_path, strerror(errno));
			return 1;
		}
	}
	return 0;
}

/* perf's summary of each file ("[ perf script: Wrote 0.004 MB FILE (52 samples) ]", the
 * size of the whole file: perf's leaves out what its stdio buffer still held). 0 or 1. */
static int close_dumps(struct script *s)
{
	int bad = 0;

	for (size_t i = 0; i < s->nr_ev; i++) {
		struct script_ev *e = &s->ev[i];
		long size;

		fflush(e->dump);
		size = ftell(e->dump);
		printf("[ perf script: Wrote %.3f MB %s (%" PRIu64 " samples) ]\n",
		       size > 0 ? (double)size / 1048576.0 : 0.0, e->dump_path, e->nr_dumped);
		bad |= cli_finish_output(e->dump, e->dump_path);	/* (closes it) */
		e->dump = NULL;
	}
	return bad ? 1 : 0;
}

static int script_init(void *opts)
{
	struct script_opts *o = opts;

	o->input = "perf.data";
	o->max_stack = sysctl_max_stack();
	o->inline_frames = true;
	o->demangle = true;
	return 0;
}

static void script_exit(void *opts)
{
	struct script_opts *o = opts;

	sample_filter_opts__exit(&o->filter);
	strlist_free(o->stop_bt);
}

/* What the walk needs: the output buffer, the chain memo, the events and their
 * fields, the dump files, the session and the tracepoint formats. 0 or 1. */
static int script_setup(struct script *s)
{
	const struct script_opts *o = s->o;
	struct tally_session_opts so = { 0 };
	int ret;

	s->out = malloc(sizeof(*s->out));
	if (!s->out) {
		cli_error("out of memory");
		return 1;
	}
	s->out->fp = stdout;
	s->out->len = 0;
	s->out->flushes = 0;
	s->chains = tally_sample_memo__new(CHAIN_MEMO_WORDS, CHAIN_MEMO_MIN_HITS);
	if (!s->chains) {
		cli_error("out of memory");
		return 1;
	}
	s->nr_ev = tally_data__nr_events(s->data);
	s->ev = calloc(s->nr_ev ? s->nr_ev : 1, sizeof(*s->ev));
	if (!s->ev) {
		cli_error("out of memory");
		return 1;
	}
	for (size_t i = 0; i < s->nr_ev; i++) {
		const struct tally_data_event *ev = tally_data__event(s->data, i);
		int w = ev->name ? (int)strlen(ev->name) : 9;

		if (w > s->name_width)
			s->name_width = w;
	}
	for (size_t i = 0; i < s->nr_ev; i++) {
		const struct tally_data_event *ev = tally_data__event(s->data, i);
		const char *name = ev->name ? ev->name : "[unknown]";
		size_t n = strlen(name), pad = n < (size_t)s->name_width ? s->name_width - n : 0;
		char *t = malloc(pad + n + 2);

		if (!t) {
			cli_error("out of memory");
			return 1;
		}
		memset(t, ' ', pad);	/* "%*s: " */
		memcpy(t + pad, name, n);
		memcpy(t + pad + n, ": ", 2);
		s->ev[i].name_text = t;
		s->ev[i].name_len = pad + n + 2;
	}
	if (setup_fields(s) || (o->per_event_dump && open_dumps(s)) ||
	    evswitch_init(&s->sw, s->data, o->switch_on, o->switch_off, o->show_on_off))
		return 1;
	so.kallsyms = o->kallsyms;
	so.symfs = o->symfs;
	so.no_demangle = !o->demangle;
	if (report_session_new(&s->session, s->data, &so)) {
		cli_error("out of memory");
		return 1;
	}
	/* perf 6.1 adds inlined functions to the frames it unwinds from dwarf stacks only */
	tally_session__set_inline(s->session, o->inline_frames ? TALLY_INLINE_UNWOUND
							      : TALLY_INLINE_NONE);
	for (size_t i = 0; i < s->nr_ev; i++) {
		if (s->ev[i].tracepoint && (s->ev[i].fields & F_TRACE)) {
			ret = script_trace__new(&s->trace, s->data);
			if (ret)
				cli_warn("%s: tracepoint formats unreadable (%s); printing events "
					 "without their fields", o->input, strerror(-ret));
			break;
		}
	}
	return 0;
}

/*
 * Reading on a second thread: the file's records go through the ordering queue, their
 * checks and into copies on a reader thread, while this one prints them, in the order
 * the walk gives them: the output is the same, the reading (a fifth of the work, and
 * the page faults of the mapped file) runs beside the printing. Each record goes into
 * one of FEED_BLOCKS blocks as its context and its bytes; a block goes to the printer
 * when full, and the reader waits for a free one. Only where another CPU may run it and
 * the file is large enough to gain (a pipe's walk learns its events as it goes: never).
 */
#define FEED_BLOCK ((size_t)64 << 10)
#define FEED_BLOCKS 4
#define FEED_MIN_DATA ((uint64_t)1 << 20)	/* smaller files: one thread */

struct feed {
	struct tally_data *data;
	unsigned flags;
	pthread_mutex_t lock;
	pthread_cond_t filled, freed;
	char *buf[FEED_BLOCKS];
	size_t len[FEED_BLOCKS];
	uint64_t nr_filled, nr_freed;	/* blocks handed over and given back so far */
	size_t fill;		/* the reader's bytes in its block */
	int stop;		/* the printer's error: the walk ends with it (0: go on) */
	bool done;		/* the walk ended with ret, derr */
	int ret;
	struct tally_data_error derr;
};

struct feed_rec {
	struct tally_record_ctx ctx;
	/* the record's bytes follow, rounded up to 8 */
};

#define FEED_ROUND(n) (((size_t)(n) + 7) & ~(size_t)7)
_Static_assert(sizeof(struct feed_rec) % 8 == 0, "records stay 8-byte aligned");
/* the most one record takes: a block holds FEED_BLOCK bytes of them and room past that
 * for one more (a record of 64 KiB: a dwarf sample's stack copy) */
#define FEED_ENTRY_MAX (sizeof(struct feed_rec) + FEED_ROUND(UINT16_MAX))

/* The reader's block to the printer; then a free block. The printer's error, or 0. */
static int feed_hand_over(struct feed *f)
{
	int stop;

	pthread_mutex_lock(&f->lock);
	f->len[f->nr_filled % FEED_BLOCKS] = f->fill;
	f->nr_filled++;
	pthread_cond_signal(&f->filled);
	while (f->nr_filled - f->nr_freed >= FEED_BLOCKS && !f->stop)
		pthread_cond_wait(&f->freed, &f->lock);
	stop = f->stop;
	pthread_mutex_unlock(&f->lock);
	f->fill = 0;
	return stop;
}

static int feed_record(void *arg, const struct perf_event_header *hdr,
		       const struct tally_record_ctx *ctx)
{
	struct feed *f = arg;
	size_t need = sizeof(struct feed_rec) + FEED_ROUND(hdr->size);
	struct feed_rec r = { .ctx = *ctx };
	char *p;
	int stop;

	if (f->fill && f->fill + need > FEED_BLOCK && (stop = feed_hand_over(f)))
		return stop;
	p = f->buf[f->nr_filled % FEED_BLOCKS] + f->fill;
	memcpy(p, &r, sizeof(r));
	memcpy(p + sizeof(r), hdr, hdr->size);
	f->fill += need;
	return 0;
}

static void *feed_thread(void *arg)
{
	struct feed *f = arg;
	int ret = tally_data__for_each(f->data, f->flags, feed_record, f, &f->derr);

	if (f->fill)
		feed_hand_over(f);
	pthread_mutex_lock(&f->lock);
	f->ret = ret;
	f->done = true;
	pthread_cond_signal(&f->filled);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Is a reader thread worth it? */
static bool feed_pays(const struct script *s)
{
	if (tally_data__is_pipe(s->data) || tally_data__file_size(s->data) < FEED_MIN_DATA)
		return false;
	return tally_cpumap__nr_usable() > 1;
}

/* The printer's side: every record the reader hands over through on_record; the walk's
 * end as tally_data__for_each gives it. 1: no thread (the caller walks). */
static int feed_walk(struct script *s, unsigned flags, struct tally_data_error *derr, int *ret)
{
	struct feed f = { .data = s->data, .flags = flags };
	pthread_t tid;
	int err = 0;

	for (size_t i = 0; i < FEED_BLOCKS; i++) {
		f.buf[i] = malloc(FEED_BLOCK + FEED_ENTRY_MAX);
		if (!f.buf[i])
			goto no_thread;
	}
	if (pthread_mutex_init(&f.lock, NULL))
		goto no_thread;
	if (pthread_cond_init(&f.filled, NULL)) {
		pthread_mutex_destroy(&f.lock);
		goto no_thread;
	}
	if (pthread_cond_init(&f.freed, NULL)) {
		pthread_cond_destroy(&f.filled);
		pthread_mutex_destroy(&f.lock);
		goto no_thread;
	}
	if (pthread_create(&tid, NULL, feed_thread, &f)) {
		pthread_cond_destroy(&f.freed);
		pthread_cond_destroy(&f.filled);
		pthread_mutex_destroy(&f.lock);
		goto no_thread;
	}
	for (;;) {
		const char *p, *end;

		pthread_mutex_lock(&f.lock);
		while (f.nr_freed == f.nr_filled && !f.done)
			pthread_cond_wait(&f.filled, &f.lock);
		if (f.nr_freed == f.nr_filled) {
			pthread_mutex_unlock(&f.lock);
			break;		/* the walk ended and all it gave is printed */
		}
		p = f.buf[f.nr_freed % FEED_BLOCKS];
		end = p + f.len[f.nr_freed % FEED_BLOCKS];
		pthread_mutex_unlock(&f.lock);
		while (p < end && !err) {
			const struct feed_rec *r = (const struct feed_rec *)(const void *)p;
			const struct perf_event_header *hdr =
				(const struct perf_event_header *)(const void *)(r + 1);

			err = on_record(s, hdr, &r->ctx);
			p += sizeof(*r) + FEED_ROUND(hdr->size);
		}
		pthread_mutex_lock(&f.lock);
		f.nr_freed++;
		if (err)
			f.stop = err;	/* the reader ends its walk there */
		pthread_cond_signal(&f.freed);
		pthread_mutex_unlock(&f.lock);
		if (err)
			break;
	}
	pthread_join(tid, NULL);
	pthread_cond_destroy(&f.freed);
	pthread_cond_destroy(&f.filled);
	pthread_mutex_destroy(&f.lock);
	for (size_t i = 0; i < FEED_BLOCKS; i++)
		free(f.buf[i]);
	/* the printer's error ends the walk as its callback's would */
	*ret = err ? err : f.ret;
	if (!err)
		*derr = f.derr;
	return 0;
no_thread:
	for (size_t i = 0; i < FEED_BLOCKS; i++)
		free(f.buf[i]);
	return 1;
}

/* Print every record. 0 when the walk went through; otherwise the command ends with
 * *status. */
static int script_walk(struct script *s, int *status)
{
	const struct script_opts *o = s->o;
	struct tally_data_error derr = { 0 };
	/* perf: the round events come with the records in the file's order */
	unsigned flags = o->show_round ? 0 : TALLY_DATA_ORDERED;
	int ret;

	if (!feed_pays(s) || feed_walk(s, flags, &derr, &ret))
		ret = tally_data__for_each(s->data, flags, on_record, s, &derr);

	out_flush(s->out);
	if (ret == -EIO && ferror(stdout)) {
		*status = cli_finish_output(stdout, "the script output");
		return 1;
	}
	if (ret == -EINTR && exiting) {
		cli_error("interrupted");
		return 1;
	}
	if (ret < 0)
		fflush(stdout);
	if (report_walk_end(s->data, o->input, ret, &derr, "printed"))
		return 1;
	s->lost.nr_records += tally_data__nr_consumed_records(s->data);
	report_warn_lost(&s->lost, !o->show_lost);	/* --show-lost-events printed them */
	return 0;
}

static int script_exec(void *opts, const struct cli_args *args)
{
	struct script_opts o = *(struct script_opts *)opts;
	struct script s = { .o = &o };
	int status = 1;

	(void)args;
	if (report_open(&s.data, o.input, o.force))
		return 1;
	if (o.show_info && (o.header || o.header_only)) {
		cli_error("-I/--show-info: tally's header does not expand the CPU and NUMA "
			  "topology, cache and memory features (their 'use -I to display' lines)");
		goto out;
	}
	if (o.header || o.header_only)
		report_print_header(s.data, o.input);
	if (o.header_only) {
		status = cli_finish_output(stdout, "the script output");
		goto out;
	}
	if (sample_filter_make(&o.filter, &s.filter)) {
		cli_error("out of memory");
		goto out;
	}
	s.filter_loc = o.filter.dsos || o.filter.syms;
	s.filter.time_start = o.time_start;
	s.filter.time_end = o.time_end;
	s.filter_any = s.filter_loc || s.filter.cpus || s.filter.time_start || s.filter.time_end ||
		       s.filter.comms || s.filter.pids || s.filter.tids;
	for (size_t i = 0; o.filter.cpus && i < tally_data__nr_events(s.data); i++) {
		if (!(tally_data__event(s.data, i)->attr.sample_type & PERF_SAMPLE_CPU)) {
			cli_error("%s does not contain CPU events (its samples have no cpu): "
				  "remove -C to proceed", o.input);
			goto out;
		}
	}
	if (script_setup(&s) || script_walk(&s, &status))
		goto out;
	report_kernel_symbols_note(s.session);
	out_to(s.out, stdout);
	if (o.per_event_dump && close_dumps(&s))
		goto out;
	status = cli_finish_output(stdout, "the script output");
out:
	if (s.out)
		out_flush(s.out);
	fflush(stdout);
	free(s.out);
	line_cache_delete(s.lines);
	tally_sample_memo__delete(s.chains);
	for (size_t i = 0; s.ev && i < s.nr_ev; i++) {
		if (s.ev[i].dump)
			fclose(s.ev[i].dump);
		free(s.ev[i].dump_path);
		free(s.ev[i].name_text);
	}
	free(s.ev);
	script_trace__delete(s.trace);
	tally_frames__delete(s.frames);
	tally_dso_lines__delete(s.srclines);
	tally_session__delete(s.session);
	tally_data__delete(s.data);
	sample_filter_free(&s.filter);
	return status;
}

const struct cli_command cmd_script = {
	.name = "script",
	.summary = "Read perf.data and display every sample as text",
	.usage = script_usage,
	.opts = script_options,
	.args_hint = "(use -i to name the input file)",
	.size = sizeof(struct script_opts),
	.init = script_init,
	.exec = script_exec,
	.exit = script_exit,
};
