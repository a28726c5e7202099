/*
 * tally evlist: list the events of a perf.data file, like perf evlist.
 *   -i FILE   input (default perf.data; "-" reads a pipe stream from stdin)
 *   -v        every non-zero attr field, in perf's "name: field: value, …" format
 *   -g        groups as {leader,member,…}
 *   -F        the sample frequency or period of each event
 *   -f        read files not owned by the current user
 *   --trace-fields  the field names of each tracepoint (from the file's formats)
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tally/data.h>

#include "attr-names.h"
#include "cmd.h"
#include "options.h"
#include "script-trace.h"

struct evlist_opts {
	const char *input;
	bool verbose, group, freq, force, trace_fields;
};

#define CLI_OPTS struct evlist_opts
static const struct cli_opt evlist_options[] = {
	OPT_STRING('i', "input", input, "file", "Input file name (default perf.data, - for stdin)"),
	OPT_BOOL('v', "verbose", verbose, "Show all event attr details"),
	OPT_BOOL('g', "group", group, "Show event group information"),
	OPT_BOOL('F', "freq", freq, "Show the sample frequency"),
	OPT_BOOL('f', "force", force, "don't complain, do it"),
	OPT_BOOL(0, "trace-fields", trace_fields, "Show tracepoint fields"),
	OPT_END(),
};

static const char *const evlist_usage[] = { "evlist [<options>]", NULL };

/* One line of evlist's output: items after the event name, perf's comma_fprintf
 * (":" before the first, "," before the others). */
struct line {
	FILE *f;
	bool first;
};

/* One more item of the line; fmt starts with its own space. */
static void lprintf(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void lprintf(struct line *l, const char *fmt, ...)
{
	va_list ap;

	fputs(l->first ? ":" : ",", l->f);
	va_start(ap, fmt);
	vfprintf(l->f, fmt, ap);
	va_end(ap);
	l->first = false;
}

/* One " name: value" item of the -v line. */
static void item(struct line *l, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void item(struct line *l, const char *name, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	lprintf(l, " %s: %s", name, buf);
}

static void bits(struct line *l, const char *name, uint64_t v, enum attr_bits_field field)
{
	char buf[512];

	if (v)
		item(l, name, "%s", attr_bits_text(field, v, buf, sizeof(buf)));
}

#define U(field) do { if (a->field) item(&l, #field, "%" PRIu64, (uint64_t)a->field); } while (0)
#define X(name, field) do { if (a->field) item(&l, name, "%#" PRIx64, (uint64_t)a->field); } while (0)

/* perf's attr dump: only non-zero fields, in struct order. */
static void print_attr(struct line *lp, const struct tally_data_event *ev)
{
	const struct perf_event_attr *a = &ev->attr;
	struct line l = *lp;

	item(&l, "type", "%u", a->type);
	item(&l, "size", "%u", ev->disk_attr_size);
	X("config", config);
	if (a->sample_period)
		item(&l, "{ sample_period, sample_freq }", "%" PRIu64, (uint64_t)a->sample_period);
	bits(&l, "sample_type", a->sample_type, ATTR_SAMPLE_TYPE);
	bits(&l, "read_format", a->read_format, ATTR_READ_FORMAT);
	U(disabled); U(inherit); U(pinned); U(exclusive); U(exclude_user); U(exclude_kernel);
	U(exclude_hv); U(exclude_idle); U(mmap); U(comm); U(freq); U(inherit_stat);
	U(enable_on_exec); U(task); U(watermark); U(precise_ip); U(mmap_data);
	U(sample_id_all); U(exclude_host); U(exclude_guest); U(exclude_callchain_kernel);
	U(exclude_callchain_user); U(mmap2); U(comm_exec); U(use_clockid); U(context_switch);
	U(write_backward); U(namespaces); U(ksymbol); U(bpf_event); U(aux_output); U(cgroup);
	U(text_poke); U(build_id); U(inherit_thread); U(remove_on_exec); U(sigtrap);
	if (a->wakeup_events)
		item(&l, "{ wakeup_events, wakeup_watermark }", "%u", a->wakeup_events);
	U(bp_type);
	X("{ bp_addr, config1 }", bp_addr);
	X("{ bp_len, config2 }", bp_len);
	if (ev->config3)
		item(&l, "config3", "%#" PRIx64, ev->config3);
	bits(&l, "branch_sample_type", a->branch_sample_type, ATTR_BRANCH_SAMPLE_TYPE);
	X("sample_regs_user", sample_regs_user);
	U(sample_stack_user);
	if (a->clockid)
		item(&l, "clockid", "%d", a->clockid);
	X("sample_regs_intr", sample_regs_intr);
	U(aux_watermark);
	U(sample_max_stack);
	U(aux_sample_size);
	U(sig_data);
	*lp = l;
}

/* --trace-fields: a tracepoint's field names from the file's formats. */
static void print_trace_fields(struct line *l, const struct tally_data_event *ev,
			       struct script_trace *trace)
{
	char buf[4096];

	if (ev->attr.type != PERF_TYPE_TRACEPOINT) {
		lprintf(l, " (not a tracepoint)");
		return;
	}
	if (script_trace__field_names(trace, ev->attr.config, buf, sizeof(buf)))
		lprintf(l, " (no trace field)");
	else
		lprintf(l, " trace_fields: %s", buf);
}

static void print_event(FILE *f, const struct tally_data *d, size_t i,
			const struct evlist_opts *o, struct script_trace *trace)
{
	const struct tally_data_event *ev = tally_data__event(d, i);
	struct line l = { f, true };

	if (o->group) {
		if (ev->leader != (int)i)
			return;	/* printed with its leader */
		if (ev->nr_members > 1) {
			fputc('{', f);
			for (int m = 0; m < ev->nr_members; m++)
				fprintf(f, "%s%s", m ? "," : "",
					tally_data__event(d, i + (size_t)m)->name);
			fputs("}\n", f);
			return;
		}
	}
	fputs(ev->name, f);
	if (o->verbose)
		print_attr(&l, ev);
	else if (o->freq)
		lprintf(&l, " sample_%s=%" PRIu64, ev->attr.freq ? "freq" : "period",
			(uint64_t)ev->attr.sample_period);
	if (o->trace_fields && !o->group)	/* perf: -g prints names only */
		print_trace_fields(&l, ev, trace);
	fputc('\n', f);
}

static int evlist_exec(void *opts, const struct cli_args *args)
{
	struct evlist_opts *o = opts;
	struct tally_data_open_opts oo = { 0 };
	struct tally_data_error err;
	struct script_trace *trace = NULL;
	struct tally_data *d;
	int ret;

	(void)args;
	if (o->group && (o->verbose || o->freq))
		return cli_usage_error(&cmd_evlist, "--group option is not compatible with other "
				       "options");
	if (!o->input)
		o->input = "perf.data";
	oo.force = o->force;
	ret = tally_data__open(&d, o->input, &oo, &err);
	if (ret) {
		if (ret == -ENOENT && err.offset == 0)
			cli_error("%s: %s (record one with 'tally record', or pass -i FILE)",
				  o->input, err.msg);
		else
			cli_error("%s: file offset %#" PRIx64 ": %s", o->input, err.offset, err.msg);
		return 1;
	}
	/* a file cut short lost its features (they follow the data), names included */
	if (tally_data__truncated(d))
		cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; its features "
			 "(event names, groups) went with them: listed the events of its header, "
			 "named from their attrs", o->input, tally_data__truncated(d));
	if (o->trace_fields && script_trace__new(&trace, d) == -ENOMEM) {
		cli_error("out of memory");
		tally_data__delete(d);
		return 1;
	}
	for (size_t i = 0; i < tally_data__nr_events(d); i++)
		print_event(stdout, d, i, o, trace);
	script_trace__delete(trace);
	tally_data__delete(d);
	return cli_finish_output(stdout, "standard output") ? 1 : 0;
}

const struct cli_command cmd_evlist = {
	.name = "evlist",
	.summary = "List the event names in a perf.data file",
	.usage = evlist_usage,
	.opts = evlist_options,
	.size = sizeof(struct evlist_opts),
	.exec = evlist_exec,
	.args_hint = "(use -i to name the input file)",
};
