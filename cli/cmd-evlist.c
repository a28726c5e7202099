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
		attr_fprintf(f, &ev->attr, ev->disk_attr_size, ev->config3, &l.first);
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
