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
#include "options.h"
#include "report.h"
#include "script-trace.h"

/* ---- options ----------------------------------------------------------------------- */

/* -g print_type,threshold[,print_limit],order,sort_key,value (perf's words) */
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
		else if (!strcmp(tok, "function"))
			o->cc_key = TALLY_CC_KEY_FUNCTION;
		else if (!strcmp(tok, "address"))
			o->cc_key = TALLY_CC_KEY_ADDRESS;
		else if (!strcmp(tok, "srcline"))
			o->cc_key = TALLY_CC_KEY_SRCLINE;
		else if (!strcmp(tok, "percent") || !strcmp(tok, "fp"))
			;
		else {
			double v = strtod(tok, &end);

			if (*end || end == tok || v < 0) {
				cli_error("-g: unknown call graph parameter '%s' (use graph, flat, "
					  "folded, fractal, none, a threshold, caller, callee, function, address "
					  "or srcline)", tok);
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

static int opt_call_graph(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct report_opts *o = opts;

	(void)opt;
	if (unset) {
		o->cc_set = true;
		o->cc_mode = CC_NONE;
		return 0;
	}
	return parse_cc(o, arg) ? -1 : 0;
}

static int opt_percent_limit(void *opts, const struct cli_opt *opt, const char *arg,
			     bool unset)
{
	struct report_opts *o = opts;
	char *end;

	(void)opt;
	(void)unset;
	o->percent_limit = strtod(arg, &end);
	if (*end || end == arg) {
		cli_error("--percent-limit: '%s' is not a number", arg);
		return -1;
	}
	o->cc_min_percent = o->percent_limit;	/* as perf: also the graph threshold */
	return 0;
}

static int opt_percentage(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct report_opts *o = opts;

	(void)opt, (void)unset;
	if (!strcmp(arg, "relative"))
		o->relative = true;
	else if (!strcmp(arg, "absolute"))
		o->relative = false;
	else {
		cli_error("--percentage: use 'relative' or 'absolute', not '%s'", arg);
		return -1;
	}
	return 0;
}

static int opt_field_sep(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	if (!*arg || *arg == '.') {
		cli_error("-t/--field-separator: %s", *arg ? "'.' is the only separator that "
			  "cannot be used (it replaces the separator inside names)"
			  : "needs a separator");
		return -1;
	}
	((struct report_opts *)opts)->field_sep = arg;
	return 0;
}

static int opt_stdio_color(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opts, (void)opt, (void)unset;
	if (!strcmp(arg, "never") || !strcmp(arg, "auto"))
		return 0;	/* tally's report has no colors */
	if (!strcmp(arg, "always"))
		cli_error("--stdio-color always: tally report prints no colors (use 'never' or "
			  "'auto')");
	else
		cli_error("--stdio-color: use 'always', 'never' or 'auto', not '%s'", arg);
	return -1;
}

static int opt_time(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	struct report_opts *o = opts;

	(void)opt, (void)unset;
	o->time = arg;
	return parse_time_span(arg, &o->time_start, &o->time_end);
}

/* --time-quantum N[ns|us|ms|s] (no unit: ns), perf's words for what it refuses */
static int opt_time_quantum(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	struct report_opts *o = opts;
	char *end;
	unsigned long long v;

	(void)opt, (void)unset;
	v = strtoull(arg, &end, 10);
	for (size_t i = 0; end != arg && i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (!v) {
			cli_error("time quantum cannot be 0");
			return -1;
		}
		o->time_quantum = v * units[i].ns;
		return 0;
	}
	cli_error("Cannot parse time quantum `%s'", arg);
	return -1;
}

static int opt_parent(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	((struct report_opts *)opts)->parent = arg;
	return cli_check_regex("-p/--parent", arg);
}

static int opt_ignore_callees(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	(void)opt, (void)unset;
	((struct report_opts *)opts)->ignore_callees = arg;
	return cli_check_regex("--ignore-callees", arg);
}

#define CLI_OPTS struct report_opts
static const struct cli_opt report_options[] = {
	OPT_STRING('i', "input", input, "file", "input file name"),
	OPT_VERBOSE("be more verbose (show symbol address, etc)"),
	OPT_BOOL('D', "dump-raw-trace", dump_raw, "dump raw trace in ASCII"),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_BOOL(0, "stats", stats, "Display event stats"),
	OPT_BOOL(0, "stdio", stdio, "Use the stdio interface (the only one tally has)"),
	OPT_BOOL(0, "tui", tui, "Use the TUI interface"),
	OPT_BOOL(0, "gtk", tui, "Use the GTK2 interface"),
	OPT_BOOL(0, "header", header, "Show data header."),
	OPT_BOOL(0, "header-only", header_only, "Show only data header."),
	OPT_STRING('s', "sort", sort, "key[,key2...]",
		   "sort by key(s): overhead sample period pid tid comm dso symbol cpu trace"),
	OPT_STRING('F', "fields", fields, "key[,keys...]",
		   "output field(s): overhead overhead_children sample period and the sort keys"),
	OPT_SET('G', "inverted", cc_order, 1, "alias for inverted call graph"),
	OPT_SET(0, "children", children, 1,
		"Accumulate callchains of children and show total overhead as well. "
		"Enabled by default, use --no-children to disable."),
	OPT_CALLBACK_ARG('g', "call-graph",
			 "print_type,threshold[,print_limit],order,sort_key[,branch],value",
			 "Display call graph (stack chain/backtrace):\n\n"
			 "\tprint_type:\tcall graph printing style (graph|flat|fractal|folded|none)\n"
			 "\tthreshold:\tminimum call graph inclusion threshold (<percent>)\n"
			 "\tprint_limit:\tmaximum number of call graph entry (<number>)\n"
			 "\torder:\t\tcall graph order (caller|callee)\n"
			 "\tsort_key:\tcall graph sort key (function|address|srcline)\n"
			 "\tvalue:\t\tcall graph value (percent|period|count)\n\n"
			 "\tDefault: graph,0.5,caller,function,percent",
			 opt_call_graph, CLI_ARG_LASTARG_DEFAULT, "graph", .flags = CLI_NEG),
	OPT_UINT(0, "max-stack", max_stack, "n",
		 "Set the maximum stack depth when parsing the callchain, anything beyond the "
		 "specified depth will be ignored. Default: kernel.perf_event_max_stack or 127"),
	OPT_CALLBACK(0, "percent-limit", "percent", "Don't show entries under that percent",
		     opt_percent_limit),
	OPT_BOOL('n', "show-nr-samples", show_nr_samples, "Show a column with the number of samples"),
	OPT_BOOL(0, "show-total-period", show_total_period,
		 "Show a column with the sum of periods"),
	OPT_STRLIST('c', "comms", filter.comms, "comm[,comm...]", "only consider symbols in these comms"),
	OPT_STRLIST('d', "dsos", filter.dsos, "dso[,dso...]", "only consider symbols in these dsos"),
	OPT_STRLIST('S', "symbols", filter.syms, "symbol[,symbol...]", "only consider these symbols"),
	OPT_STRLIST(0, "pid", filter.pids, "pid[,pid...]", "only consider symbols in these pids"),
	OPT_STRLIST(0, "tid", filter.tids, "tid[,tid...]", "only consider symbols in these tids"),
	OPT_CPUMAP('C', "cpu", filter.cpus, "cpu", "list of cpus to profile"),
	OPT_CALLBACK(0, "percentage", "relative|absolute",
		     "how to display percentage of filtered entries", opt_percentage),
	OPT_SET(0, "group", group, 1, "Show event group information together"),
	OPT_BOOL('q', "quiet", quiet, "Do not show any warnings or messages"),
	OPT_REFUSED(0, "itrace", "opts", CLI_ARG_OPTIONAL, "Instruction Tracing options",
		    CLI_NO_AUX("--itrace")),
	OPT_REFUSED('b', "branch-stack", NULL, CLI_ARG_NONE,
		    "use branch records for per branch histogram filling",
		    CLI_NO_LBR("-b/--branch-stack")),
	OPT_REFUSED(0, "branch-history", NULL, CLI_ARG_NONE, "add last branch records to call history",
		    CLI_NO_LBR("--branch-history")),
	OPT_REFUSED(0, "stitch-lbr", NULL, CLI_ARG_NONE, "Enable LBR callgraph stitching approach",
		    CLI_NO_LBR("--stitch-lbr")),
	OPT_REFUSED(0, "total-cycles", NULL, CLI_ARG_NONE, "Sort all blocks by 'Sampled Cycles%'",
		    CLI_NO_LBR("--total-cycles (cycles of branch blocks)")),
	OPT_REFUSED(0, "mem-mode", NULL, CLI_ARG_NONE, "mem access profile",
		    "--mem-mode (data addresses and sources of memory samples) is not implemented "
		    "in tally report"),
	OPT_REFUSED(0, "objdump", "path", CLI_ARG_REQUIRED,
		    "objdump binary to use for disassembly and annotations",
		    "--objdump: tally disassembles with capstone, never objdump"),
	OPT_REFUSED(0, "asm-raw", NULL, CLI_ARG_NONE,
		    "Display raw encoding of assembly instructions (default)",
		    CLI_NO_ANNOTATE_TUI("report", "--asm-raw")),
	OPT_REFUSED('M', "disassembler-style", "disassembler style", CLI_ARG_REQUIRED,
		    "Specify disassembler style (e.g. -M intel for intel syntax)",
		    CLI_NO_ANNOTATE_TUI("report", "-M")),
	OPT_REFUSED(0, "source", NULL, CLI_ARG_NONE,
		    "Interleave source code with assembly code (default)",
		    CLI_NO_ANNOTATE_TUI("report", "--source")),
	OPT_REFUSED(0, "prefix", "prefix", CLI_ARG_REQUIRED,
		    "Add prefix to source file path names in programs (with --prefix-strip)",
		    CLI_NO_ANNOTATE_TUI("report", "--prefix")),
	OPT_REFUSED(0, "prefix-strip", "N", CLI_ARG_REQUIRED,
		    "Strip first N entries of source file path name in programs (with --prefix)",
		    CLI_NO_ANNOTATE_TUI("report", "--prefix-strip")),
	OPT_BOOL('U', "hide-unresolved", hide_unresolved, "Only display entries resolved to a symbol"),
	OPT_CALLBACK(0, "time", "str", "Time span of interest (start,stop)", opt_time),
	OPT_STRING(0, "symbol-filter", symbol_filter, "filter",
		   "only show symbols that (partially) match with this filter"),
	OPT_BOOL(0, "skip-empty", skip_empty, "Do not display empty (or dummy) events in the output"),
	OPT_BOOL('I', "show-info", show_info, "Display extended information about perf.data file"),
	OPT_BOOL(0, "ns", ns, "Show times in nanosecs"),
	OPT_INT(0, "samples", samples, "n",
		"Number of samples to save per histogram entry for individual browsing"),
	OPT_STRING('k', "vmlinux", vmlinux, "file", "vmlinux pathname (read as a kallsyms file)"),
	OPT_BOOL(0, "ignore-vmlinux", ignore_vmlinux, "don't load vmlinux even if found"),
	OPT_BOOL('m', "modules", modules, "load module symbols - WARNING: use only with -k and LIVE "
		 "kernel (tally takes them from kallsyms either way)"),
	OPT_STRING(0, "kallsyms", kallsyms, "file", "kallsyms pathname"),
	OPT_STRING(0, "symfs", symfs, "directory", "Look for files with symbols relative to this directory"),
	OPT_BOOL(0, "full-source-path", full_source_path, "Show full source file name path for source lines"),
	OPT_BOOL(0, "inline", inline_frames, "Show inline function"),
	OPT_CALLBACK('t', "field-separator", "separator",
		     "separator for columns, no spaces will be added between columns '.' is "
		     "reserved.", opt_field_sep),
	OPT_BOOL(0, "demangle", demangle, "Disable symbol demangling"),
	OPT_BOOL(0, "demangle-kernel", demangle_kernel,
		 "Enable kernel symbol demangling (kallsyms names are never mangled C++)"),
	OPT_BOOL(0, "raw-trace", raw_trace,
		 "Show raw trace event output (do not use print fmt or plugins)"),
	OPT_BOOL(0, "disable-order", disable_order, "Disable raw trace ordering"),
	OPT_CALLBACK(0, "stdio-color", "mode", "'always', 'never' or 'auto' (tally prints no "
		     "colors: 'always' is refused)", opt_stdio_color),
	OPT_BOOL(0, "show-ref-call-graph", show_ref_cg, "Show callgraph from reference event"),
	OPT_REFUSED(0, "percent-type", "local-period", CLI_ARG_REQUIRED,
		    "Set percent type local/global-period/hits",
		    CLI_NO_ANNOTATE_TUI("report", "--percent-type")),
	OPT_CALLBACK('p', "parent", "regex", "regex filter to identify parent, see: '--sort parent'",
		     opt_parent),
	OPT_BOOL('x', "exclude-other", exclude_other, "Only display entries with parent-match"),
	OPT_CALLBACK(0, "time-quantum", "time (ms|us|ns|s)",
		     "Set time quantum for time sort key (default 100ms)", opt_time_quantum),
	OPT_WIDTHS('w', "column-widths", col_widths,
		   "Don't try to adjust column width, use these fixed values"),
	OPT_BOOL(0, "show-cpu-utilization", show_cpu_util, "Show sample percentage for different cpu modes"),
	OPT_INT(0, "socket-filter", socket_filter, "n",
		"only show processor socket that match with this filter"),
	OPT_INT(0, "group-sort-idx", group_sort_idx, "n",
		"Sort the output by the event at the index n in group. If n is invalid, sort by "
		"the first event. WARNING: should be used on grouped events."),
	OPT_CALLBACK(0, "ignore-callees", "regex",
		     "ignore callees of these functions in call graphs", opt_ignore_callees),
	OPT_BOOL(0, "hierarchy", hierarchy, "Show entries in a hierarchy"),
	OPT_EVSWITCH(switch_on, switch_off, show_on_off),
	OPT_BOOL('T', "threads", show_threads, "Show per-thread event counters"),
	OPT_STRING(0, "pretty", pretty, "key", "pretty printing style key: normal raw"),
	OPT_BOOL(0, "tasks", tasks, "Display recorded tasks"),
	OPT_BOOL(0, "mmaps", mmaps, "Display recorded tasks memory maps"),
	OPT_END(),
};

static const char *const report_usage[] = { "report [<options>]", NULL };

static int report_init(void *opts)
{
	struct report_opts *o = opts;

	o->input = "perf.data";
	o->children = -1;
	o->group = -1;
	o->cc_mode = CC_GRAPH;
	o->cc_order = -1;
	o->cc_min_percent = 0.5;
	o->max_stack = sysctl_max_stack();
	o->skip_empty = true;
	o->inline_frames = true;
	o->demangle = true;
	o->socket_filter = -1;
	return 0;
}

static void report_exit(void *opts)
{
	struct report_opts *o = opts;

	sample_filter_opts__exit(&o->filter);
}

/* ---- the flow ---------------------------------------------------------------------- */

/* The modes the file and the options give: children, call chains, trees, groups. */
static void report_modes(struct report *r)
{
	const struct report_opts *o = r->o;
	bool any_chain = false;

	for (size_t i = 0; i < r->nr_ev; i++)
		if (tally_data__event(r->data, i)->attr.sample_type & PERF_SAMPLE_CALLCHAIN)
			any_chain = true;
	/* perf decides children mode before it has seen a pipe's attrs: off for pipes;
	 * --hierarchy turns it off */
	r->children = any_chain && o->children != 0 && !o->hierarchy &&
		      !(o->children < 0 && tally_data__is_pipe(r->data));
	r->use_chains = any_chain;
	for (size_t i = 0; i < r->nr_ev; i++)
		if (tally_data__event(r->data, i)->nr_members > 1)
			r->group_view = o->group != 0;
	r->build_trees = any_chain && o->cc_mode != CC_NONE;
	/* caller order unless --no-children (pipes: caller order without children, as perf) */
	r->caller = o->cc_order >= 0 ? o->cc_order == 1 : o->children != 0;
}

/* What the keys need: tracepoint formats for the trace key, and -F's column order.
 * 0, or 1 (error printed). */
static int report_keys(struct report *r, const enum tally_hist_col *keys, size_t nr_keys,
		       const enum tally_hist_col *cols, size_t nr_cols)
{
	for (size_t i = 0; i < nr_keys; i++) {
		int e;

		if (keys[i] == TALLY_HIST_PARENT && !r->use_chains) {
			cli_error("Selected --sort parent, but no callchain data. Did you call "
				  "'perf record' without -g?");	/* perf's words */
			return 1;
		}
		if (keys[i] != TALLY_HIST_TRACE || r->trace)
			continue;
		e = script_trace__new(&r->trace, r->data);
		if (e == -ENOMEM) {
			cli_error("out of memory");
			return 1;
		}
		if (e)
			cli_warn("%s: no tracepoint formats (TRACING_DATA %s): the trace key shows N/A",
				 r->o->input, e == -ENOENT ? "absent" : "damaged");
	}
	r->children_cols = r->children;
	if (r->children && r->o->fields) {
		/* -F decides the columns: entries still accumulate (perf keeps the cumulative
		 * rows), but order and headers follow the fields */
		bool has_children = false;

		for (size_t i = 0; i < nr_cols; i++)
			has_children |= cols[i] == TALLY_HIST_CHILDREN;
		r->children_cols = has_children;
		for (size_t i = 0; i < nr_cols; i++)
			if (!tally_hist_col__is_key(cols[i]) && r->nr_order < TALLY_HIST_NR_COLS)
				r->order[r->nr_order++] = cols[i];
		if (!r->nr_order)
			r->order[r->nr_order++] = TALLY_HIST_OVERHEAD;
	}
	return 0;
}

/* perf's trace key: the sample's fields as its format prints them (--raw-trace: each
 * as name=value). */
static char *trace_text(void *arg, size_t evidx, const struct tally_sample *smp)
{
	const struct report *r = arg;

	(void)evidx;
	if (!r->trace || !(smp->type & PERF_SAMPLE_RAW))
		return NULL;
	return script_trace__format_as(r->trace, 0, smp->raw, smp->raw_size, r->o->raw_trace);
}

/* One histogram per event, with the trees -g asks for. Trees are deferred where the
 * graph threshold lets most entries go without one (not for group views: their rows
 * come from several hists). */
static int report_hists(struct report *r, const enum tally_hist_col *keys, size_t nr_keys,
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
		.cc_key = o->cc_key,
		.full_source_path = o->full_source_path,
		.filter = filter,
		.parent_pattern = o->parent,
		.exclude_other = o->exclude_other,
		.time_quantum = o->time_quantum,
		/* perf resolves no chain for -g none without children: nothing to ignore */
		.ignore_callees = o->cc_mode != CC_NONE || r->children ? o->ignore_callees : NULL,
		.trace_text = trace_text,
		.trace_arg = r,
	};

	r->nr_samples_seen = calloc(r->nr_ev ? r->nr_ev : 1, sizeof(*r->nr_samples_seen));
	r->lost_samples_ev = calloc(r->nr_ev ? r->nr_ev : 1, sizeof(*r->lost_samples_ev));
	if (!r->nr_samples_seen || !r->lost_samples_ev)
		return -ENOMEM;
	if (r->build_trees && !r->group_view && o->cc_min_percent > 0 &&
	    (o->cc_mode == CC_GRAPH || o->cc_mode == CC_FLAT || o->cc_mode == CC_FOLDED))
		ho.trees = TALLY_TREES_DEFER;
	return tally_hists__new(&r->hists, r->session, r->nr_ev, &ho);
}

/* The one pass over the records; warnings about what the file lacked. 0 or 1. */
static int report_read(struct report *r)
{
	const struct report_opts *o = r->o;
	struct tally_data_error derr = { 0 };
	int ret, end;

	/* samples are resolved here and added to the rows on a thread, where that can be */
	if (!o->dump_raw && !o->stats && tally_hists__pipeline_start(r->hists) < 0) {
		cli_error("out of memory");
		return 1;
	}
	/* -D and --stats count the records the reader consumes itself (COMPRESSED, …) */
	ret = tally_data__for_each(r->data,
				   (o->disable_order ? 0 : TALLY_DATA_ORDERED) |
				   (o->dump_raw || o->stats ? TALLY_DATA_RAW : 0),
				   report__on_record, r, &derr);
	end = tally_hists__pipeline_end(r->hists);
	if (end && (!ret || ret == -EINTR))
		ret = end;
	if (ret == -EINTR && exiting) {
		cli_error("interrupted");
		return 1;
	}
	if (report_walk_end(r->data, o->input, ret, &derr, "reported"))
		return 1;
	if (!o->quiet && !o->stats) {
		struct lost_counts lc = {
			.nr_records = r->nr_records + tally_data__nr_consumed_records(r->data),
			.nr_lost_records = r->type_counts[PERF_RECORD_LOST],
			.nr_samples = r->type_counts[PERF_RECORD_SAMPLE],
			.lost_samples = r->lost_samples,
		};

		report_warn_lost(&lc, true);
	}
	report_kernel_symbols_note(r->session);
	return 0;
}

/* After the pass: the stats, or the report (perf's error when nothing was sampled). */
static int report_output(struct report *r, const enum tally_hist_col *cols, size_t nr_cols)
{
	uint64_t total = 0;

	if (r->o->dump_raw || r->o->stats) {
		report__print_stats(r);
		return cli_finish_output(stdout, "the report");
	}
	for (size_t i = 0; i < r->nr_ev; i++)
		total += tally_hist__totals(tally_hists__hist(r->hists, i))->nr_samples;
	if (!total) {
		fprintf(stderr, "Error:\nThe %s data has no samples!\n", r->o->input);
		return cli_finish_output(stdout, "the report");
	}
	/* the call-graph trees are built meanwhile sorting, on a thread where that pays
	 * (report__print waits for them); a group view links rows across hists first */
	if ((r->group_view || r->o->hierarchy ? tally_hists__finish(r->hists)
					       : tally_hists__finish_start(r->hists)) ||
	    report__print(r, cols, nr_cols)) {
		cli_error("out of memory");
		return 1;
	}
	if (r->o->show_threads)
		report__print_values(r);
	return cli_finish_output(stdout, "the report");
}

static void report_state_exit(struct report *r, struct tally_hist_filter *filter)
{
	tally_hists__delete(r->hists);
	free(r->cpu_socket);
	script_trace__delete(r->trace);
	free(r->nr_samples_seen);
	free(r->lost_samples_ev);
	report__values_free(r->values);
	sample_filter_free(filter);
	tally_session__delete(r->session);
	tally_data__delete(r->data);
}

static const char header_hint[] =
	"# To display the perf.data header info, please use --header/--header-only options.\n#\n";

static int report_exec(void *opts, const struct cli_args *args)
{
	struct report_opts *o = opts;
	struct report r = { .o = o };
	/* as perf, --ignore-vmlinux passes over -k's file too */
	struct tally_session_opts so = {
		.kallsyms = o->kallsyms ? o->kallsyms : o->ignore_vmlinux ? NULL : o->vmlinux,
		.symfs = o->symfs, .no_demangle = !o->demangle,
	};
	enum tally_hist_col keys[TALLY_HIST_NR_COLS], cols[TALLY_HIST_NR_COLS * 2];
	struct tally_hist_filter filter = { 0 };
	size_t nr_keys, nr_cols;
	int status = 1;

	(void)args;
	if (o->hierarchy && o->fields) {
		cli_error("--hierarchy and --fields options cannot be used together");	/* perf's words */
		return 129;
	}
	if ((o->hierarchy || o->field_sep) && o->col_widths.nr) {
		cli_error("--column-widths with %s is not implemented in tally (drop one of them)",
			  o->hierarchy ? "--hierarchy" : "-t/--field-separator");
		return 1;
	}
	if (o->hierarchy && o->field_sep) {
		cli_error("--hierarchy with -t/--field-separator is not implemented in tally "
			  "(drop one of them)");
		return 1;
	}
	if (o->show_info && (o->header || o->header_only)) {
		cli_error("-I/--show-info: tally's header does not expand the CPU and NUMA "
			  "topology, cache and memory features (their 'use -I to display' lines)");
		return 1;
	}
	if (report_open(&r.data, o->input, o->force))
		return 1;
	r.nr_ev = tally_data__nr_events(r.data);
	if (evswitch_init(&r.sw, r.data, o->switch_on, o->switch_off, o->show_on_off))
		goto out;
	for (size_t i = 0; i < r.nr_ev && o->show_ref_cg; i++)
		if (tally_data__event(r.data, i)->attr.sample_type & PERF_SAMPLE_READ) {
			cli_error("--show-ref-call-graph: %s has events that read their group "
				  "(PERF_SAMPLE_READ); tally report does not show reference events' "
				  "call graphs", o->input);
			goto out;
		}
	if (!o->quiet && !o->header && !o->header_only && !o->stats && !o->dump_raw &&
	    !o->tasks && !o->mmaps)
		fputs(header_hint, stdout);
	if (o->header || o->header_only)
		report_print_header(r.data, o->input);
	if (o->header_only) {
		status = cli_finish_output(stdout, "the report");
		goto out;
	}
	report_modes(&r);
	if (o->socket_filter >= 0)
		r.cpu_socket = report_cpu_sockets(r.data, &r.nr_cpu_socket);
	if (r.group_view && o->col_widths.nr) {
		cli_error("--column-widths on event groups is not implemented in tally (use "
			  "--no-group, or drop --column-widths)");
		goto out;
	}
	if (report_session_new(&r.session, r.data, &so))
		goto oom;
	/* perf 6.1 adds inlined functions to the frames it unwinds from dwarf stacks only */
	tally_session__set_inline(r.session, o->inline_frames ? TALLY_INLINE_UNWOUND
							      : TALLY_INLINE_NONE);
	if (report__setup_columns(&r, keys, &nr_keys, cols, &nr_cols))
		goto out;
	if (report_keys(&r, keys, nr_keys, cols, nr_cols))
		goto out;
	filter.hide_unresolved = o->hide_unresolved;
	filter.time_start = o->time_start;
	filter.time_end = o->time_end;
	if (sample_filter_make(&o->filter, &filter) || report_hists(&r, keys, nr_keys, &filter))
		goto oom;
	if (o->dump_raw)
		fputs(header_hint, stdout);
	if (report_read(&r))
		goto out;
	if (o->tasks || o->mmaps) {
		int e = report__print_tasks(&r);

		if (e < 0)
			goto oom;
		status = e ? e : cli_finish_output(stdout, "the report");
		goto out;
	}
	status = report_output(&r, cols, nr_cols);
	goto out;
oom:
	cli_error("out of memory");
out:
	report_state_exit(&r, &filter);
	return status;
}

const struct cli_command cmd_report = {
	.name = "report",
	.summary = "Read perf.data and display the profile",
	.usage = report_usage,
	.opts = report_options,
	.args_hint = "(use -i to name the input file)",
	.size = sizeof(struct report_opts),
	.init = report_init,
	.exec = report_exec,
	.exit = report_exit,
};
