/*
 * tally report: read a perf.data (perf's or tally's), attribute every sample to
 * comm/dso/symbol (or other sort keys), and print perf 6.1's --stdio report: a section
 * per event, self or children overheads, and call-chain graphs.
 *
 * Reading is one pass over the file in time order: side-band records go to the
 * session (threads, maps), samples are resolved and added to the event's histogram.
 * Symbol lookups are cached by the session per dso, so the pass is linear.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <tally/cpumap.h>
#include <tally/data.h>
#include <tally/format.h>
#include <tally/hist.h>
#include <tally/record.h>
#include <tally/session.h>

#include "cmd.h"
#include "hist.h"
#include "report-common.h"
#include "script-trace.h"

struct report_opts {
	const char *input;
	const char *sort;
	const char *fields;
	int children;		/* -1 default, 0 no, 1 yes */
	enum cc_mode cc_mode;
	bool cc_set;
	int cc_order;		/* -1 default, 0 callee, 1 caller */
	double cc_min_percent;
	unsigned cc_print_limit;
	double percent_limit;
	bool show_nr_samples;
	bool show_total_period;
	bool quiet;
	bool header;
	bool header_only;
	bool stats;
	bool dump_raw;
	bool relative;
	bool force;
	int group;		/* -1 default (on when the file has groups), 0, 1 */
	unsigned max_stack;
	char **comms, **dsos, **syms;
	size_t nr_comms, nr_dsos, nr_syms;
	char **pids, **tids;
	struct tally_cpumap *cpus;
	const char *kallsyms, *symfs;
};

struct report {
	struct report_opts *o;
	struct tally_data *data;
	struct tally_session *session;
	struct tally_hists *hists;	/* one histogram per event */
	uint64_t *nr_samples_seen;	/* per event (--stats) */
	size_t nr_ev;
	bool children;
	bool use_chains;	/* resolve call chains (children, trees) */
	bool build_trees;	/* keep call-chain trees (not with -g none) */
	bool caller;		/* chain order */
	bool group_view;	/* event groups print as one section */
	bool children_cols;	/* Children column and order (children, unless -F says not) */
	enum tally_hist_col order[TALLY_HIST_NR_COLS];	/* -F: value columns sort in their order */
	size_t nr_order;
	struct script_trace *trace;	/* the file's tracepoint formats, for the trace key */
	uint64_t lost_samples;
	uint64_t type_counts[128];
	uint64_t nr_records;
};

static const char usage[] =
	"\n usage: tally report [<options>]\n\n"
	"    -i, --input <file>    input file name (default perf.data, - for stdin)\n"
	"    -s, --sort <key[,key...]>  sort by comm, pid, tid, dso, sym, cpu\n"
	"    -F, --fields <field[,...]> output fields: overhead, overhead_children, sample, period + sort keys\n"
	"        --children        accumulate callees into callers (default with call chains)\n"
	"        --no-children     do not accumulate\n"
	"    -g, --call-graph <graph|flat|folded|fractal|none[,threshold[,limit]][,caller|callee]>\n"
	"    -G, --inverted        caller-based call graph\n"
	"        --max-stack <n>   use at most n frames of each call chain\n"
	"        --percent-limit <n>  hide entries below n percent\n"
	"    -n, --show-nr-samples show the number of samples\n"
	"        --show-total-period  show the period column\n"
	"    -c, --comms <comm[,...]>   only these comms\n"
	"    -d, --dsos <dso[,...]>     only these dsos\n"
	"    -S, --symbols <sym[,...]>  only these symbols\n"
	"        --pid <pid[,...]>      only these processes\n"
	"        --tid <tid[,...]>      only these threads\n"
	"    -C, --cpu <cpu-list>       only these cpus\n"
	"        --percentage <relative|absolute>\n"
	"        --group / --no-group  event groups as one section with a column per member\n"
	"                          (default: on when the file has groups)\n"
	"    -q, --quiet           only the entries\n"
	"        --header          print the perf.data header first\n"
	"        --header-only     print only the header\n"
	"        --stats           print record counts\n"
	"    -D, --dump-raw-trace  dump every record\n"
	"    -f, --force           don't complain about file ownership\n"
	"        --stdio           text output (the only one for now)\n"
	"    -k, --vmlinux/--kallsyms <file>  kernel symbols\n"
	"        --symfs <dir>     look for binaries under dir\n";

enum {
	OPT_CHILDREN = 256, OPT_NO_CHILDREN, OPT_PERCENT_LIMIT, OPT_SHOW_PERIOD, OPT_PID,
	OPT_TID, OPT_PERCENTAGE, OPT_HEADER, OPT_HEADER_ONLY, OPT_STATS, OPT_STDIO, OPT_TUI,
	OPT_KALLSYMS, OPT_SYMFS, OPT_MAX_STACK, OPT_GROUP, OPT_NO_GROUP,
};

static const struct option long_opts[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "sort", required_argument, NULL, 's' },
	{ "fields", required_argument, NULL, 'F' },
	{ "children", no_argument, NULL, OPT_CHILDREN },
	{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },
	{ "call-graph", optional_argument, NULL, 'g' },
	{ "inverted", no_argument, NULL, 'G' },
	{ "max-stack", required_argument, NULL, OPT_MAX_STACK },
	{ "percent-limit", required_argument, NULL, OPT_PERCENT_LIMIT },
	{ "show-nr-samples", no_argument, NULL, 'n' },
	{ "show-total-period", no_argument, NULL, OPT_SHOW_PERIOD },
	{ "comms", required_argument, NULL, 'c' },
	{ "comm", required_argument, NULL, 'c' },
	{ "dsos", required_argument, NULL, 'd' },
	{ "dso", required_argument, NULL, 'd' },
	{ "symbols", required_argument, NULL, 'S' },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "cpu", required_argument, NULL, 'C' },
	{ "percentage", required_argument, NULL, OPT_PERCENTAGE },
	{ "group", no_argument, NULL, OPT_GROUP },
	{ "no-group", no_argument, NULL, OPT_NO_GROUP },
	{ "quiet", no_argument, NULL, 'q' },
	{ "header", no_argument, NULL, OPT_HEADER },
	{ "header-only", no_argument, NULL, OPT_HEADER_ONLY },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "dump-raw-trace", no_argument, NULL, 'D' },
	{ "force", no_argument, NULL, 'f' },
	{ "stdio", no_argument, NULL, OPT_STDIO },
	{ "tui", no_argument, NULL, OPT_TUI },
	{ "gtk", no_argument, NULL, OPT_TUI },
	{ "kallsyms", required_argument, NULL, OPT_KALLSYMS },
	{ "symfs", required_argument, NULL, OPT_SYMFS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Is this word a -g parameter (so "-g none" works like perf's optional argument)? */
static bool is_cc_param(const char *s)
{
	static const char *const words[] = { "graph", "flat", "folded", "fractal", "none",
					     "caller", "callee", "fp", "dwarf", "lbr",
					     "function", "address", "percent", "period",
					     "count" };
	char first[32];
	size_t n = strcspn(s, ",");

	if (!*s || s[0] == '-')
		return false;
	if ((s[0] >= '0' && s[0] <= '9') || s[0] == '.')
		return true;
	if (n >= sizeof(first))
		return false;
	memcpy(first, s, n);
	first[n] = 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(first, words[i]))
			return true;
	return false;
}

static int parse_cc(struct report_opts *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int nums = 0, ret = 0;

	if (!copy)
		return -ENOMEM;
	o->cc_set = true;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;

		if (!strcmp(tok, "graph"))
			o->cc_mode = CC_GRAPH;
		else if (!strcmp(tok, "fractal"))
			o->cc_mode = CC_FRACTAL;
		else if (!strcmp(tok, "flat"))
			o->cc_mode = CC_FLAT;
		else if (!strcmp(tok, "folded"))
			o->cc_mode = CC_FOLDED;
		else if (!strcmp(tok, "none"))
			o->cc_mode = CC_NONE;
		else if (!strcmp(tok, "caller"))
			o->cc_order = 1;
		else if (!strcmp(tok, "callee"))
			o->cc_order = 0;
		else if (!strcmp(tok, "function") || !strcmp(tok, "percent") ||
			 !strcmp(tok, "fp") || !strcmp(tok, "address"))
			;
		else {
			double v = strtod(tok, &end);

			if (*end || end == tok || v < 0) {
				cli_error("-g: unknown call graph parameter '%s' (use graph, flat, "
					  "folded, fractal, none, a threshold, caller or callee)", tok);
				ret = -EINVAL;
				break;
			}
			if (nums++ == 0)
				o->cc_min_percent = v;
			else
				o->cc_print_limit = (unsigned)v;
		}
	}
	free(copy);
	return ret;
}

static int parse_opts(struct report_opts *o, int argc, char **argv)
{
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:s:F:g::Gnc:d:S:C:qDfvhk:", long_opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->input = optarg;
			break;
		case 's':
			o->sort = optarg;
			break;
		case 'F':
			o->fields = optarg;
			break;
		case OPT_CHILDREN:
			o->children = 1;
			break;
		case OPT_NO_CHILDREN:
			o->children = 0;
			break;
		case 'g':
			if (!optarg && optind < argc && is_cc_param(argv[optind]))
				optarg = argv[optind++];
			if (optarg) {
				if (parse_cc(o, optarg))
					return -1;
			} else {
				o->cc_set = true;
				o->cc_mode = CC_GRAPH;
			}
			break;
		case 'G':
			o->cc_order = 1;
			break;
		case OPT_MAX_STACK: {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v > UINT_MAX || optarg[0] == '-') {
				cli_error("--max-stack: '%s' is not a frame count", optarg);
				return 129;
			}
			o->max_stack = (unsigned)v;
			break;
		}
		case OPT_PERCENT_LIMIT: {
			char *end;

			o->percent_limit = strtod(optarg, &end);
			if (*end || end == optarg) {
				cli_error("--percent-limit: '%s' is not a number", optarg);
				return -1;
			}
			o->cc_min_percent = o->percent_limit;	/* as perf: also the graph threshold */
			break;
		}
		case 'n':
			o->show_nr_samples = true;
			break;
		case OPT_SHOW_PERIOD:
			o->show_total_period = true;
			break;
		case 'c':
			strlist_free(o->comms);
			o->comms = strlist_parse(optarg, &o->nr_comms);
			break;
		case 'd':
			strlist_free(o->dsos);
			o->dsos = strlist_parse(optarg, &o->nr_dsos);
			break;
		case 'S':
			strlist_free(o->syms);
			o->syms = strlist_parse(optarg, &o->nr_syms);
			break;
		case OPT_PID:
			strlist_free(o->pids);
			o->pids = strlist_parse(optarg, NULL);
			break;
		case OPT_TID:
			strlist_free(o->tids);
			o->tids = strlist_parse(optarg, NULL);
			break;
		case 'C': {
			size_t bad = 0;

			tally_cpumap__delete(o->cpus);
			o->cpus = NULL;
			if (tally_cpumap__parse(optarg, &o->cpus, &bad)) {
				cli_error("--cpu: bad cpu list '%s' at character %zu", optarg, bad + 1);
				return -1;
			}
			break;
		}
		case OPT_PERCENTAGE:
			if (!strcmp(optarg, "relative"))
				o->relative = true;
			else if (!strcmp(optarg, "absolute"))
				o->relative = false;
			else {
				cli_error("--percentage: use 'relative' or 'absolute', not '%s'", optarg);
				return -1;
			}
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_GROUP:
			o->group = 1;
			break;
		case OPT_NO_GROUP:
			o->group = 0;
			break;
		case OPT_HEADER:
			o->header = true;
			break;
		case OPT_HEADER_ONLY:
			o->header_only = true;
			break;
		case OPT_STATS:
			o->stats = true;
			break;
		case 'D':
			o->dump_raw = true;
			break;
		case 'f':
			o->force = true;
			break;
		case OPT_STDIO:
		case OPT_TUI:
			break;
		case 'k':
		case OPT_KALLSYMS:
			o->kallsyms = optarg;
			break;
		case OPT_SYMFS:
			o->symfs = optarg;
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
		cli_error("report: unexpected argument '%s' (use -i to name the input file)",
			  argv[optind]);
		return -1;
	}
	if ((o->comms == NULL) != (o->nr_comms == 0) && o->comms == NULL) {
		cli_error("out of memory");
		return -1;
	}
	return 0;
}

static int add_sample(struct report *r, int evidx, const struct perf_event_header *hdr)
{
	const struct tally_data_event *ev = tally_data__event(r->data, (size_t)evidx);
	struct tally_sample smp;

	if (tally_sample__parse(&ev->layout, hdr, &smp))
		return 0;	/* a damaged sample is skipped, like perf does */
	return tally_hists__add_sample(r->hists, (size_t)evidx, &smp,
				       tally_sample__period(&smp, &ev->attr));
}

static void hexdump(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	printf(".\n. ... raw event: size %zu bytes\n", len);
	for (size_t i = 0; i < len; i += 16) {
		printf(".  %04zx: ", i);
		for (size_t j = 0; j < 16; j++) {
			if (i + j < len)
				printf(" %02x", p[i + j]);
			else
				printf("   ");
		}
		printf("  ");
		for (size_t j = 0; j < 16; j++) {
			if (i + j < len)
				putchar(p[i + j] >= 32 && p[i + j] < 127 ? p[i + j] : '.');
			else
				putchar(' ');
		}
		putchar('\n');
	}
}

static void dump_record(struct report *r, const struct perf_event_header *hdr,
			const struct tally_record_ctx *ctx)
{
	const char *name = tally_record__type_name(hdr->type);
	const struct tally_data_event *ev = ctx->evidx >= 0 ?
		tally_data__event(r->data, (size_t)ctx->evidx) : NULL;
	struct tally_sample_id sid = { 0 };
	uint64_t t = 0;

	printf("\n%#" PRIx64 "@%s [%#x]: event: %u\n", ctx->file_offset, r->o->input,
	       hdr->size, hdr->type);
	hexdump(hdr, hdr->size);
	if (ev && hdr->type != PERF_RECORD_SAMPLE && hdr->type < 64 &&
	    !tally_sample_id__parse(&ev->layout, hdr, &sid) && sid.has_time)
		t = sid.time;
	if (hdr->type == PERF_RECORD_SAMPLE && ev) {
		struct tally_sample s;

		if (tally_sample__parse(&ev->layout, hdr, &s) == 0) {
			printf("\n%" PRIu64 " %#" PRIx64 " [%#x]: PERF_RECORD_SAMPLE(IP, %#x): "
			       "%u/%u: %#" PRIx64 " period: %" PRIu64 " addr: %#" PRIx64 "\n",
			       s.time, ctx->file_offset, hdr->size, hdr->misc, s.pid, s.tid,
			       s.ip, s.period, s.addr);
			if (s.type & PERF_SAMPLE_CALLCHAIN) {
				printf("... FP chain: nr:%" PRIu64 "\n", s.callchain_nr);
				for (uint64_t i = 0; i < s.callchain_nr; i++)
					printf(".....  %2" PRIu64 ": %016" PRIx64 "\n", i,
					       s.callchain[i]);
			}
			return;
		}
	}
	printf("\n%" PRIu64 " %#" PRIx64 " [%#x]: PERF_RECORD_%s", t, ctx->file_offset,
	       hdr->size, name ? name : "UNKNOWN");
	if (hdr->type == PERF_RECORD_COMM && hdr->size >= 16) {
		const uint32_t *pt = (const void *)(hdr + 1);

		printf("%s: %.*s:%u/%u", hdr->misc & PERF_RECORD_MISC_COMM_EXEC ? " exec" : "",
		       (int)(hdr->size - 16), (const char *)(pt + 2), pt[0], pt[1]);
	} else if ((hdr->type == PERF_RECORD_FORK || hdr->type == PERF_RECORD_EXIT) &&
		   hdr->size >= 32) {
		const uint32_t *pt = (const void *)(hdr + 1);

		printf("(%u:%u):(%u:%u)", pt[0], pt[2], pt[1], pt[3]);
	}
	putchar('\n');
}

static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct report *r = arg;
	int evidx = ctx->evidx;

	if (exiting)
		return -EINTR;
	r->nr_records++;
	if (hdr->type < 128)
		r->type_counts[hdr->type]++;
	if (r->o->dump_raw)
		dump_record(r, hdr, ctx);
	if (hdr->type != PERF_RECORD_SAMPLE) {
		if (hdr->type == PERF_RECORD_LOST_SAMPLES && hdr->size >= 16) {
			uint64_t lost;

			memcpy(&lost, hdr + 1, sizeof(lost));
			r->lost_samples += lost;
		}
		if (r->o->dump_raw || r->o->stats)
			return 0;	/* counted and shown: no threads, maps or symbols */
		return tally_session__process(r->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	}
	if (evidx < 0 && r->nr_ev == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= r->nr_ev)
		return 0;
	r->nr_samples_seen[evidx]++;
	if (r->o->dump_raw || r->o->stats)
		return 0;
	return add_sample(r, evidx, hdr);
}

static void print_string_feat(struct report *r, int feat, const char *label)
{
	const char *s = tally_data__feature_string(r->data, feat);

	if (s)
		printf("# %s : %s\n", label, s);
}

static const char *const sample_type_names[] = {
	"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD", "STREAM_ID",
	"RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT", "DATA_SRC", "IDENTIFIER",
	"TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX", "CGROUP", "DATA_PAGE_SIZE",
	"CODE_PAGE_SIZE", "WEIGHT_STRUCT",
};
static const char *const read_format_names[] = {
	"TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING", "ID", "GROUP", "LOST",
};

static void attr_bits(const char *name, uint64_t v, const char *const *names, size_t nr)
{
	bool first = true;

	if (!v)
		return;
	printf(", %s = ", name);
	for (size_t i = 0; i < nr && i < 64; i++) {
		if (v & (1ull << i)) {
			printf("%s%s", first ? "" : "|", names[i]);
			first = false;
			v &= ~(1ull << i);
		}
	}
	if (v)
		printf("%s%#" PRIx64, first ? "" : "|", v);
}

/* perf's "# event :" attr list: every non-zero field, in struct order, "key = value" */
static void print_attr_fields(const struct tally_data_event *ev)
{
	const struct perf_event_attr *a = &ev->attr;
	const struct {
		const char *name;
		uint64_t v;
	} flags[] = {
		{ "disabled", a->disabled }, { "inherit", a->inherit }, { "pinned", a->pinned },
		{ "exclusive", a->exclusive }, { "exclude_user", a->exclude_user },
		{ "exclude_kernel", a->exclude_kernel }, { "exclude_hv", a->exclude_hv },
		{ "exclude_idle", a->exclude_idle }, { "mmap", a->mmap }, { "comm", a->comm },
		{ "freq", a->freq }, { "inherit_stat", a->inherit_stat },
		{ "enable_on_exec", a->enable_on_exec }, { "task", a->task },
		{ "watermark", a->watermark }, { "precise_ip", a->precise_ip },
		{ "mmap_data", a->mmap_data }, { "sample_id_all", a->sample_id_all },
		{ "exclude_host", a->exclude_host }, { "exclude_guest", a->exclude_guest },
		{ "exclude_callchain_kernel", a->exclude_callchain_kernel },
		{ "exclude_callchain_user", a->exclude_callchain_user }, { "mmap2", a->mmap2 },
		{ "comm_exec", a->comm_exec }, { "use_clockid", a->use_clockid },
		{ "context_switch", a->context_switch }, { "write_backward", a->write_backward },
		{ "namespaces", a->namespaces }, { "ksymbol", a->ksymbol },
		{ "bpf_event", a->bpf_event }, { "aux_output", a->aux_output },
		{ "cgroup", a->cgroup }, { "text_poke", a->text_poke }, { "build_id", a->build_id },
		{ "inherit_thread", a->inherit_thread }, { "remove_on_exec", a->remove_on_exec },
		{ "sigtrap", a->sigtrap },
	};

	printf(", type = %u, size = %u", a->type, ev->disk_attr_size);
	if (a->config)
		printf(", config = %#" PRIx64, (uint64_t)a->config);
	if (a->sample_period)
		printf(", { sample_period, sample_freq } = %" PRIu64, (uint64_t)a->sample_period);
	attr_bits("sample_type", a->sample_type, sample_type_names,
		  sizeof(sample_type_names) / sizeof(sample_type_names[0]));
	attr_bits("read_format", a->read_format, read_format_names,
		  sizeof(read_format_names) / sizeof(read_format_names[0]));
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (flags[i].v)
			printf(", %s = %" PRIu64, flags[i].name, flags[i].v);
	if (a->wakeup_events)
		printf(", { wakeup_events, wakeup_watermark } = %u", a->wakeup_events);
	if (a->bp_type)
		printf(", bp_type = %u", a->bp_type);
	if (a->bp_addr)
		printf(", { bp_addr, config1 } = %#" PRIx64, (uint64_t)a->bp_addr);
	if (a->bp_len)
		printf(", { bp_len, config2 } = %#" PRIx64, (uint64_t)a->bp_len);
	if (a->branch_sample_type)
		printf(", branch_sample_type = %#" PRIx64, (uint64_t)a->branch_sample_type);
	if (a->sample_regs_user)
		printf(", sample_regs_user = %#" PRIx64, (uint64_t)a->sample_regs_user);
	if (a->sample_stack_user)
		printf(", sample_stack_user = %u", a->sample_stack_user);
	if (a->clockid)
		printf(", clockid = %d", a->clockid);
	if (a->sample_regs_intr)
		printf(", sample_regs_intr = %#" PRIx64, (uint64_t)a->sample_regs_intr);
	if (a->aux_watermark)
		printf(", aux_watermark = %u", a->aux_watermark);
	if (a->sample_max_stack)
		printf(", sample_max_stack = %u", a->sample_max_stack);
}

static void print_header(struct report *r)
{
	const struct tally_file_header *fh = tally_data__header(r->data);
	const void *buf;
	size_t len;
	struct stat st;

	bool pipe = tally_data__is_pipe(r->data);
	int sr = strcmp(r->o->input, "-") ? stat(r->o->input, &st) : fstat(0, &st);

	printf("# ========\n");
	if (sr == 0) {
		char tb[64];

		ctime_r(&st.st_mtime, tb);
		tb[strcspn(tb, "\n")] = 0;
		printf("# captured on    : %s\n", tb);
	}
	printf("# header version : 1\n");
	printf("# data offset    : %" PRIu64 "\n", pipe ? 0 : fh->data.offset);
	printf("# data size      : %" PRIu64 "\n", pipe ? 0 : fh->data.size);
	printf("# feat offset    : %" PRIu64 "\n", pipe ? 0 : fh->data.offset + fh->data.size);
	if (pipe)	/* perf closes the block before a pipe's feature records */
		printf("# ========\n#\n");
	print_string_feat(r, TALLY_FEAT_HOSTNAME, "hostname");
	print_string_feat(r, TALLY_FEAT_OSRELEASE, "os release");
	print_string_feat(r, TALLY_FEAT_VERSION, "perf version");
	print_string_feat(r, TALLY_FEAT_ARCH, "arch");
	if (tally_data__feature(r->data, TALLY_FEAT_NRCPUS, &buf, &len) == 0 && len >= 8) {
		uint32_t n[2];

		memcpy(n, buf, sizeof(n));	/* feature payloads need not be aligned */
		printf("# nrcpus online : %u\n# nrcpus avail : %u\n", n[1], n[0]);
	}
	print_string_feat(r, TALLY_FEAT_CPUDESC, "cpudesc");
	print_string_feat(r, TALLY_FEAT_CPUID, "cpuid");
	if (tally_data__feature(r->data, TALLY_FEAT_TOTAL_MEM, &buf, &len) == 0 && len >= 8) {
		uint64_t kb;

		memcpy(&kb, buf, sizeof(kb));
		printf("# total memory : %" PRIu64 " kB\n", kb);
	}
	if (tally_data__feature(r->data, TALLY_FEAT_CMDLINE, &buf, &len) == 0 && len >= 4) {
		const unsigned char *p = buf, *end = p + len;
		uint32_t nr;

		memcpy(&nr, p, 4);
		p += 4;
		printf("# cmdline : ");
		for (uint32_t i = 0; i < nr && p + 4 <= end; i++) {
			uint32_t l;

			memcpy(&l, p, 4);
			p += 4;
			if (l > (size_t)(end - p))
				break;
			printf("%.*s ", (int)strnlen((const char *)p, l), (const char *)p);
			p += l;
		}
		putchar('\n');
	}
	for (size_t i = 0; i < tally_data__nr_events(r->data); i++) {
		const struct tally_data_event *ev = tally_data__event(r->data, i);

		printf("# event : name = %s, , id = {", ev->name ? ev->name : "");
		for (size_t k = 0; k < ev->nr_ids; k++)
			printf("%s %" PRIu64, k ? "," : "", ev->ids[k]);
		printf(" }");
		print_attr_fields(ev);
		putchar('\n');
	}
	if (tally_data__has_feature(r->data, TALLY_FEAT_CPU_TOPOLOGY))
		printf("# CPU_TOPOLOGY info available, use -I to display\n");
	if (tally_data__has_feature(r->data, TALLY_FEAT_NUMA_TOPOLOGY))
		printf("# NUMA_TOPOLOGY info available, use -I to display\n");
	if (tally_data__feature(r->data, TALLY_FEAT_PMU_MAPPINGS, &buf, &len) == 0 && len >= 4) {
		const unsigned char *p = buf, *end = p + len;
		uint32_t nr;

		memcpy(&nr, p, 4);
		p += 4;
		printf("# pmu mappings: ");
		for (uint32_t i = 0; i < nr && end - p >= 8; i++) {
			uint32_t type, l;

			memcpy(&type, p, 4);
			memcpy(&l, p + 4, 4);
			p += 8;
			if (l > (size_t)(end - p))
				break;
			printf("%s%.*s = %u", i ? ", " : "", (int)strnlen((const char *)p, l),
			       (const char *)p, type);
			p += l;
		}
		putchar('\n');
	}
	for (size_t i = 0; i < tally_data__nr_events(r->data); i++) {
		const struct tally_data_event *ev = tally_data__event(r->data, i);

		if (ev->leader != (int)i || ev->nr_members < 2 ||
		    i + (size_t)ev->nr_members > tally_data__nr_events(r->data))
			continue;
		printf("# group: {");
		for (int k = 0; k < ev->nr_members; k++) {
			const struct tally_data_event *m = tally_data__event(r->data, i + (size_t)k);

			printf("%s%s", k ? "," : "", m->name ? m->name : "");
		}
		printf("}\n");
	}
	if (tally_data__has_feature(r->data, TALLY_FEAT_CACHE))
		printf("# CACHE info available, use -I to display\n");
	if (tally_data__feature(r->data, TALLY_FEAT_SAMPLE_TIME, &buf, &len) == 0 && len >= 16) {
		uint64_t t[2];

		memcpy(t, buf, sizeof(t));

		printf("# time of first sample : %" PRIu64 ".%06" PRIu64 "\n", t[0] / 1000000000,
		       t[0] % 1000000000 / 1000);
		printf("# time of last sample : %" PRIu64 ".%06" PRIu64 "\n", t[1] / 1000000000,
		       t[1] % 1000000000 / 1000);
		printf("# sample duration : %10.3f ms\n", (double)(t[1] - t[0]) / 1e6);
	}
	if (tally_data__has_feature(r->data, TALLY_FEAT_MEM_TOPOLOGY))
		printf("# MEM_TOPOLOGY info available, use -I to display\n");
	if (tally_data__feature(r->data, TALLY_FEAT_COMPRESSED, &buf, &len) == 0 && len >= 16) {
		uint32_t c[4];

		memcpy(c, buf, sizeof(c));

		printf("# compressed : %s, level = %u, ratio = %u\n", c[1] == 1 ? "Zstd" : "Unknown",
		       c[2], c[3]);
	}
	{
		static const char *const feat_names[] = {
			[TALLY_FEAT_TRACING_DATA] = "TRACING_DATA", [TALLY_FEAT_BUILD_ID] = "BUILD_ID",
			[TALLY_FEAT_HOSTNAME] = "HOSTNAME", [TALLY_FEAT_OSRELEASE] = "OSRELEASE",
			[TALLY_FEAT_VERSION] = "VERSION", [TALLY_FEAT_ARCH] = "ARCH",
			[TALLY_FEAT_NRCPUS] = "NRCPUS", [TALLY_FEAT_CPUDESC] = "CPUDESC",
			[TALLY_FEAT_CPUID] = "CPUID", [TALLY_FEAT_TOTAL_MEM] = "TOTAL_MEM",
			[TALLY_FEAT_CMDLINE] = "CMDLINE", [TALLY_FEAT_EVENT_DESC] = "EVENT_DESC",
			[TALLY_FEAT_CPU_TOPOLOGY] = "CPU_TOPOLOGY",
			[TALLY_FEAT_NUMA_TOPOLOGY] = "NUMA_TOPOLOGY",
			[TALLY_FEAT_BRANCH_STACK] = "BRANCH_STACK",
			[TALLY_FEAT_PMU_MAPPINGS] = "PMU_MAPPINGS", [TALLY_FEAT_GROUP_DESC] = "GROUP_DESC",
			[TALLY_FEAT_AUXTRACE] = "AUXTRACE", [TALLY_FEAT_STAT] = "STAT",
			[TALLY_FEAT_CACHE] = "CACHE", [TALLY_FEAT_SAMPLE_TIME] = "SAMPLE_TIME",
			[TALLY_FEAT_MEM_TOPOLOGY] = "MEM_TOPOLOGY", [TALLY_FEAT_CLOCKID] = "CLOCKID",
			[TALLY_FEAT_DIR_FORMAT] = "DIR_FORMAT", [TALLY_FEAT_BPF_PROG_INFO] = "BPF_PROG_INFO",
			[TALLY_FEAT_BPF_BTF] = "BPF_BTF", [TALLY_FEAT_COMPRESSED] = "COMPRESSED",
			[TALLY_FEAT_CPU_PMU_CAPS] = "CPU_PMU_CAPS", [TALLY_FEAT_CLOCK_DATA] = "CLOCK_DATA",
			[TALLY_FEAT_HYBRID_TOPOLOGY] = "HYBRID_TOPOLOGY", [TALLY_FEAT_PMU_CAPS] = "PMU_CAPS",
		};
		bool any = false;

		if (pipe)
			return;
		for (int f = 1; f < (int)(sizeof(feat_names) / sizeof(feat_names[0])); f++) {
			if (tally_data__has_feature(r->data, f) || !feat_names[f])
				continue;
			printf("%s%s ", any ? "" : "# missing features: ", feat_names[f]);
			any = true;
		}
		if (any)
			putchar('\n');
	}
	printf("# ========\n#\n");
}

static void print_stats(struct report *r)
{
	printf("\nAggregated stats:\n");
	printf("%16s events: %10" PRIu64 "\n", "TOTAL", r->nr_records);
	for (unsigned t = 0; t < 128; t++) {
		const char *name = tally_record__type_name(t);

		if (!r->type_counts[t])
			continue;
		printf("%16s events: %10" PRIu64 "  (%4.1f%%)\n", name ? name : "UNKNOWN",
		       r->type_counts[t], 100.0 * (double)r->type_counts[t] / (double)r->nr_records);
	}
	for (size_t i = 0; i < r->nr_ev; i++) {
		const struct tally_data_event *ev = tally_data__event(r->data, i);

		printf("%s stats:\n", ev->name ? ev->name : "unknown");
		printf("%16s events: %10" PRIu64 "\n", "SAMPLE", r->nr_samples_seen[i]);
	}
}

/* Columns and sort keys from -s / -F / -n and the children mode. */
static int setup_columns(struct report *r, enum tally_hist_col *keys, size_t *nr_keys,
			 enum tally_hist_col *cols, size_t *nr_cols)
{
	const char *sort = r->o->sort ? r->o->sort : "comm,dso,sym";
	bool all_tp = r->nr_ev > 0;

	/* perf 6.1 sorts a file of tracepoints only by their fields by default */
	for (size_t i = 0; i < r->nr_ev; i++)
		all_tp &= tally_data__event(r->data, i)->attr.type == PERF_TYPE_TRACEPOINT;
	if (!r->o->sort && all_tp)
		sort = "trace";
	char **l;
	size_t n;

	*nr_keys = *nr_cols = 0;
	if (r->o->fields) {
		l = strlist_parse(r->o->fields, &n);
		if (!l)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			int c = tally_hist_col__parse(l[i]);

			if (c < 0) {
				cli_error("-F: unknown field '%s' (use overhead, overhead_children, "
					  "sample, period, comm, pid, tid, dso, sym, cpu, trace)", l[i]);
				strlist_free(l);
				return -EINVAL;
			}
			if (*nr_cols < TALLY_HIST_NR_COLS * 2)
				cols[(*nr_cols)++] = (enum tally_hist_col)c;
			if (tally_hist_col__is_key((enum tally_hist_col)c) && !r->o->sort && *nr_keys < TALLY_HIST_NR_COLS)
				keys[(*nr_keys)++] = (enum tally_hist_col)c;
		}
		strlist_free(l);
		if (!r->o->sort)
			return 0;
	}
	l = strlist_parse(sort, &n);
	if (!l)
		return -ENOMEM;
	if (!r->o->fields) {
		if (r->children)
			cols[(*nr_cols)++] = TALLY_HIST_CHILDREN;
		cols[(*nr_cols)++] = TALLY_HIST_OVERHEAD;
		if (r->o->show_nr_samples)
			cols[(*nr_cols)++] = TALLY_HIST_SAMPLES;
		if (r->o->show_total_period)
			cols[(*nr_cols)++] = TALLY_HIST_PERIOD;
	}
	for (size_t i = 0; i < n; i++) {
		int c = tally_hist_col__parse(l[i]);

		if (c < 0 || !tally_hist_col__is_key((enum tally_hist_col)c)) {
			cli_error("--sort: unknown key '%s' (use comm, pid, tid, dso, sym, cpu, trace)", l[i]);
			strlist_free(l);
			return -EINVAL;
		}
		if (*nr_keys < TALLY_HIST_NR_COLS)
			keys[(*nr_keys)++] = (enum tally_hist_col)c;
		if (!r->o->fields && *nr_cols < TALLY_HIST_NR_COLS * 2)
			cols[(*nr_cols)++] = (enum tally_hist_col)c;
	}
	strlist_free(l);
	return 0;
}

static unsigned long convert_unit(unsigned long v, char *unit)
{
	*unit = ' ';
	if (v > 1000) {
		v /= 1000;
		*unit = 'K';
	}
	if (v > 1000) {
		v /= 1000;
		*unit = 'M';
	}
	if (v > 1000) {
		v /= 1000;
		*unit = 'G';
	}
	return v;
}

static int print_report(struct report *r, const enum tally_hist_col *cols, size_t nr_cols)
{
	struct hist_print_opts po = {
		.cols = cols,
		.nr_cols = nr_cols,
		.children = r->children_cols,
		.overhead_is_self = r->children && !r->o->fields,
		.header = !r->o->quiet,
		.percent_limit = r->o->percent_limit,
		.relative = r->o->relative,
		.cc = {
			.mode = r->use_chains ? r->o->cc_mode : CC_NONE,
			.min_percent = r->o->cc_min_percent,
			.print_limit = r->o->cc_print_limit,
			.skip_first = !r->o->fields && r->o->sort && !strncmp(r->o->sort, "sym", 3),
		},
	};
	int err = 0;

	po.elide[TALLY_HIST_COMM] = r->o->nr_comms == 1;
	po.elide[TALLY_HIST_DSO] = r->o->nr_dsos == 1;
	po.elide[TALLY_HIST_SYM] = r->o->nr_syms == 1;
	if (po.elide[TALLY_HIST_COMM])
		printf("# comm: %s\n", r->o->comms[0]);
	if (po.elide[TALLY_HIST_DSO])
		printf("# dso: %s\n", r->o->dsos[0]);
	if (po.elide[TALLY_HIST_SYM])
		printf("# symbol: %s\n", r->o->syms[0]);
	if (!r->o->quiet)
		printf("#\n# Total Lost Samples: %" PRIu64 "\n#\n", r->lost_samples);
	for (size_t i = 0; i < r->nr_ev; i++) {
		struct tally_hist *h = tally_hists__hist(r->hists, i);
		const struct tally_data_event *ev = tally_data__event(r->data, i);
		uint64_t nr = 0, period = 0, totals[64];
		size_t nm = 1;
		char unit, name[1024];

		if (r->group_view && ev->leader != (int)i)
			continue;	/* a group member: printed in its leader's section */
		if (r->group_view && ev->nr_members > 1)
			nm = (size_t)ev->nr_members < 64 && i + (size_t)ev->nr_members <= r->nr_ev
				     ? (size_t)ev->nr_members : 1;
		snprintf(name, sizeof(name), "%s", ev->name ? ev->name : "unknown");
		if (nm > 1) {
			size_t off = (size_t)snprintf(name, sizeof(name), "anon group {");

			for (size_t k = 0; k < nm && off < sizeof(name); k++) {
				const struct tally_data_event *m = tally_data__event(r->data, i + k);

				off += (size_t)snprintf(name + off, sizeof(name) - off, "%s %s",
							k ? "," : "", m->name ? m->name : "unknown");
			}
			if (off < sizeof(name))
				snprintf(name + off, sizeof(name) - off, " }");
		}
		for (size_t k = 0; k < nm; k++) {
			struct tally_hist *m = tally_hists__hist(r->hists, i + k);
			const struct tally_hist_totals *t = tally_hist__totals(m);

			nr += r->o->relative ? t->nr_filtered : t->nr_samples;
			totals[k] = r->o->relative ? t->filtered_period : t->period;
			period += totals[k];
			if (k && tally_hist__link_member(h, m, k, nm))
				return -ENOMEM;
		}
		if (!nr)
			continue;
		po.member_totals = totals;
		if (r->nr_order ? tally_hist__sort_by(h, r->order, r->nr_order)
				: tally_hist__sort(h, r->children_cols))
			return -ENOMEM;
		if (!r->o->quiet) {
			unsigned long n = convert_unit((unsigned long)nr, &unit);

			printf("# Samples: %lu%c of event%s '%s'\n", n, unit, nm > 1 ? "s" : "",
			       name);
			printf("# Event count (approx.): %" PRIu64 "\n#\n", period);
		}
		err = hist_fprintf(h, stdout, &po);
		if (err)
			return err;
		printf("\n\n");
	}
	if (!r->o->quiet)
		printf("#\n# (Tip: Sort by the call chain root with --children and -g caller)\n#\n");
	return 0;
}

/* "1,2,3" (parsed by strlist_parse) as numbers, as perf reads them. */
static int pid_list(char *const *l, pid_t **out, size_t *nr)
{
	size_t n = 0;

	while (l[n])
		n++;
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = (pid_t)strtol(l[i], NULL, 10);
	*nr = n;
	return 0;
}

/* The filter options as the library's sample filter. */
static int make_filter(const struct report_opts *o, struct tally_hist_filter *f)
{
	f->comms = (const char *const *)o->comms;
	f->dsos = (const char *const *)o->dsos;
	f->syms = (const char *const *)o->syms;
	f->cpus = o->cpus;
	if (o->pids && pid_list(o->pids, (pid_t **)&f->pids, &f->nr_pids))
		return -ENOMEM;
	if (o->tids && pid_list(o->tids, (pid_t **)&f->tids, &f->nr_tids))
		return -ENOMEM;
	return 0;
}

/* perf's trace key: the sample's fields as its format prints them. */
static char *trace_text(void *arg, size_t evidx, const struct tally_sample *smp)
{
	(void)evidx;
	if (!arg || !(smp->type & PERF_SAMPLE_RAW))
		return NULL;
	return script_trace__format(arg, 0, smp->raw, smp->raw_size);
}

/* The tracepoint formats, when a key shows trace output. 0, or 1 (error printed). */
static int trace_setup(struct report *r, const enum tally_hist_col *keys, size_t nr_keys)
{
	for (size_t i = 0; i < nr_keys; i++) {
		int e;

		if (keys[i] != TALLY_HIST_TRACE)
			continue;
		e = script_trace__new(&r->trace, r->data);
		if (e == -ENOMEM) {
			cli_error("out of memory");
			return 1;
		}
		if (e)
			cli_warn("%s: no tracepoint formats (TRACING_DATA %s): the trace key shows N/A",
				 r->o->input, e == -ENOENT ? "absent" : "damaged");
		return 0;
	}
	return 0;
}

/* One histogram per event, with the trees -g asks for. Trees are deferred where the
 * graph threshold lets most entries go without one (not for group views: their rows
 * come from several hists). */
static int hists_new(struct report *r, const enum tally_hist_col *keys, size_t nr_keys,
		     const struct tally_hist_filter *filter)
{
	const struct report_opts *o = r->o;
	struct tally_hists_opts ho = {
		.keys = keys,
		.nr_keys = nr_keys,
		/* --max-stack 0: no frames of any chain */
		.callchains = r->use_chains && o->max_stack,
		.children = r->children,
		.caller = r->caller,
		.trees = r->build_trees ? TALLY_TREES_BUILD : TALLY_TREES_NONE,
		.tree_min_percent = o->cc_min_percent,
		.relative = o->relative,
		.max_stack = o->max_stack,
		.filter = filter,
		.trace_text = trace_text,
		.trace_arg = r->trace,
	};

	if (r->build_trees && !r->group_view && o->cc_min_percent > 0 &&
	    (o->cc_mode == CC_GRAPH || o->cc_mode == CC_FLAT || o->cc_mode == CC_FOLDED))
		ho.trees = TALLY_TREES_DEFER;
	return tally_hists__new(&r->hists, r->session, r->nr_ev, &ho);
}

int cmd_report(int argc, char **argv)
{
	struct report_opts o = {
		.input = "perf.data",
		.children = -1,
		.group = -1,
		.cc_mode = CC_GRAPH,
		.cc_order = -1,
		.cc_min_percent = 0.5,
		.max_stack = sysctl_max_stack(),
	};
	struct report r = { .o = &o };
	struct tally_session_opts so = { 0 };
	struct tally_data_error derr = { 0 };
	enum tally_hist_col keys[TALLY_HIST_NR_COLS], cols[TALLY_HIST_NR_COLS * 2];
	struct tally_hist_filter filter = { 0 };
	size_t nr_keys, nr_cols;
	bool any_chain = false;
	int ret, status = 1;

	ret = parse_opts(&o, argc, argv);
	if (ret)
		goto out_opts;
	if (report_open(&r.data, o.input, o.force))
		goto out_opts;
	r.nr_ev = tally_data__nr_events(r.data);
	for (size_t i = 0; i < r.nr_ev; i++)
		if (tally_data__event(r.data, i)->attr.sample_type & PERF_SAMPLE_CALLCHAIN)
			any_chain = true;
	if (!o.quiet && !o.header && !o.header_only && !o.stats && !o.dump_raw)
		printf("# To display the perf.data header info, please use "
		       "--header/--header-only options.\n#\n");
	if (o.header || o.header_only)
		print_header(&r);
	if (o.header_only) {
		status = cli_finish_output(stdout, "the report");
		goto out;
	}
	/* perf decides children mode before it has seen a pipe's attrs: off for pipes */
	r.children = any_chain && o.children != 0 && !(o.children < 0 && tally_data__is_pipe(r.data));
	r.use_chains = any_chain;
	for (size_t i = 0; i < r.nr_ev; i++)
		if (tally_data__event(r.data, i)->nr_members > 1)
			r.group_view = o.group != 0;
	r.build_trees = any_chain && o.cc_mode != CC_NONE;
	/* caller order unless --no-children (pipes: caller order without children, as perf) */
	r.caller = o.cc_order >= 0 ? o.cc_order == 1 : o.children != 0;

	so.kallsyms = o.kallsyms;
	so.symfs = o.symfs;
	if (report_session_new(&r.session, r.data, &so)) {
		cli_error("out of memory");
		goto out;
	}
	if (setup_columns(&r, keys, &nr_keys, cols, &nr_cols) || trace_setup(&r, keys, nr_keys))
		goto out;
	r.children_cols = r.children;
	if (r.children && o.fields) {
		/* -F decides the columns: entries still accumulate (perf keeps the cumulative
		 * rows), but order and headers follow the fields */
		bool has_children = false;

		for (size_t i = 0; i < nr_cols; i++)
			has_children |= cols[i] == TALLY_HIST_CHILDREN;
		r.children_cols = has_children;
		for (size_t i = 0; i < nr_cols; i++)
			if (!tally_hist_col__is_key(cols[i]) && r.nr_order < TALLY_HIST_NR_COLS)
				r.order[r.nr_order++] = cols[i];
		if (!r.nr_order)
			r.order[r.nr_order++] = TALLY_HIST_OVERHEAD;
	}
	r.nr_samples_seen = calloc(r.nr_ev ? r.nr_ev : 1, sizeof(*r.nr_samples_seen));
	if (!r.nr_samples_seen || make_filter(&o, &filter) ||
	    hists_new(&r, keys, nr_keys, &filter)) {
		cli_error("out of memory");
		goto out;
	}
	if (o.dump_raw)
		printf("# To display the perf.data header info, please use "
		       "--header/--header-only options.\n#\n");
	/* -D and --stats count the records the reader consumes itself (COMPRESSED, …) */
	ret = tally_data__for_each(r.data,
				   TALLY_DATA_ORDERED | (o.dump_raw || o.stats ? TALLY_DATA_RAW : 0),
				   on_record, &r, &derr);
	if (ret == -EINTR && exiting) {
		cli_error("interrupted");
		goto out;
	}
	if (ret < 0) {
		if (derr.msg[0])
			cli_error("%s: file offset %#" PRIx64 ": %s", o.input, derr.offset, derr.msg);
		else
			cli_error("%s: reading failed: %s", o.input, strerror(-ret));
		goto out;
	}
	if (tally_data__truncated(r.data))
		cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; "
			 "reported the complete records before it", o.input,
			 tally_data__truncated(r.data));
	if (tally_data__nr_unknown_records(r.data))
		cli_warn("%s: skipped %" PRIu64 " record(s) of unknown type (a newer perf?)",
			 o.input, tally_data__nr_unknown_records(r.data));
	report_kernel_symbols_note(r.session);
	if (o.dump_raw || o.stats) {
		print_stats(&r);
		status = cli_finish_output(stdout, "the report");
		goto out;
	}
	{
		uint64_t total = 0;

		for (size_t i = 0; i < r.nr_ev; i++)
			total += tally_hist__totals(tally_hists__hist(r.hists, i))->nr_samples;
		if (!total) {
			fprintf(stderr, "Error:\nThe %s data has no samples!\n", o.input);
			status = cli_finish_output(stdout, "the report");
			goto out;
		}
	}
	if (tally_hists__finish(r.hists) || print_report(&r, cols, nr_cols)) {
		cli_error("out of memory");
		goto out;
	}
	status = cli_finish_output(stdout, "the report");
out:
	tally_hists__delete(r.hists);
	script_trace__delete(r.trace);
	free(r.nr_samples_seen);
	free((pid_t *)filter.pids);
	free((pid_t *)filter.tids);
	tally_session__delete(r.session);
	tally_data__delete(r.data);
out_opts:
	strlist_free(o.comms);
	strlist_free(o.dsos);
	strlist_free(o.syms);
	strlist_free(o.pids);
	strlist_free(o.tids);
	tally_cpumap__delete(o.cpus);
	return ret > 0 && status == 1 && !r.data ? 0 : status;
}
