/*
 * tally parse-events: show what an event string parses to, without opening anything.
 *
 * Each event is printed as a name line followed by its perf_event_attr in the layout
 * perf 6.1 uses for `perf stat -vv` / `perf record -vv` (only nonzero fields, same
 * field names and number formats), so the output can be compared field by field with
 * perf's (tests/cli/test-event-attrs.sh). -v adds the settings that are not attr bits
 * (group, pmu, call-graph=, period/freq chosen by the user …).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/cpumap.h>
#include <tally/event.h>

#include "attr-names.h"
#include "cmd.h"
#include "options.h"

struct parse_opts {
	int verbose;
	const char *sysfs;
	bool no_pfm;
};

static void print_extra(FILE *f, const struct tally_evlist *l, size_t i)
{
	const struct tally_event *ev = tally_evlist__event(l, i);
	char cpus[256] = "";

	if (ev->cpus)
		tally_cpumap__format(ev->cpus, cpus, sizeof(cpus));
	fprintf(f, "  pmu: %s  leader: %d  members: %d", ev->pmu_name ? ev->pmu_name : "-",
		ev->leader, ev->nr_members);
	if (ev->group_name)
		fprintf(f, "  group: %s", ev->group_name);
	if (cpus[0])
		fprintf(f, "  cpus: %s", cpus);
	fputc('\n', f);
	if (ev->period_set || ev->freq_set || ev->inherit_set || ev->exclude_set)
		fprintf(f, "  user set:%s%s%s%s\n", ev->period_set ? " period" : "",
			ev->freq_set ? " freq" : "", ev->inherit_set ? " inherit" : "",
			ev->exclude_set ? " privilege-modifiers" : "");
	if (ev->sample_read || ev->precise_max || ev->weak_group || ev->exclude_GH || ev->bpf_counter)
		fprintf(f, "  modifiers:%s%s%s%s%s\n", ev->sample_read ? " sample_read(S)" : "",
			ev->precise_max ? " precise_max(P)" : "",
			ev->weak_group ? " weak_group(W)" : "", ev->exclude_GH ? " G/H" : "",
			ev->bpf_counter ? " bpf(b)" : "");
	if (ev->call_graph)
		fprintf(f, "  call-graph: %s\n", ev->call_graph);
	if (ev->stack_size)
		fprintf(f, "  stack-size: %u\n", ev->stack_size);
	if (ev->max_stack)
		fprintf(f, "  max-stack: %d\n", ev->max_stack);
	if (ev->time >= 0)
		fprintf(f, "  time: %d\n", ev->time);
	if (ev->overwrite >= 0)
		fprintf(f, "  overwrite: %d\n", ev->overwrite);
	if (ev->percore)
		fprintf(f, "  percore: 1\n");
	if (ev->driver_config)
		fprintf(f, "  driver-config: %s\n", ev->driver_config);
	if (ev->metric_id)
		fprintf(f, "  metric-id: %s\n", ev->metric_id);
	if (ev->unit || ev->scale != 1.0)
		fprintf(f, "  unit: %s  scale: %g\n", ev->unit ? ev->unit : "", ev->scale);
	if (ev->tool)
		fprintf(f, "  tool event: %s\n", tally_event__tool_name(ev->tool));
}

static int parse_events_init(void *opts)
{
	((struct parse_opts *)opts)->verbose = verbose;	/* tally -v parse-events */
	return 0;
}

static int parse_events_exec(void *opts, const struct cli_args *a)
{
	struct parse_opts *o = opts;
	struct tally_evlist *list = NULL;
	int ret = 0;

	if (tally_evlist__new(&list)) {
		cli_error("out of memory");
		return 1;
	}
	if (o->sysfs && tally_evlist__set_sysfs_root(list, o->sysfs)) {
		cli_error("out of memory");
		tally_evlist__delete(list);
		return 1;
	}
	if (o->no_pfm)
		tally_evlist__set_flags(list, TALLY_EVLIST_NO_PFM);
	for (int i = 0; i < a->argc; i++) {
		struct tally_parse_error err;
		char msg[1024];

		if (tally_evlist__add(list, a->argv[i], &err)) {
			tally_parse_error__format(&err, a->argv[i], msg, sizeof(msg));
			fflush(stdout);
			fprintf(stderr, "%s\n", msg);
			fprintf(stderr, "Run 'tally list' for a list of valid events\n");
			ret = 1;
			break;
		}
	}
	for (size_t i = 0; !ret && i < tally_evlist__nr(list); i++) {
		const struct tally_event *ev = tally_evlist__event(list, i);

		printf("%s\n", ev->name);
		attr_block_fprintf(stdout, &ev->attr, ev->config3);
		if (o->verbose)
			print_extra(stdout, list, i);
	}
	tally_evlist__delete(list);
	return ret;
}

#define CLI_OPTS struct parse_opts
static const struct cli_opt parse_events_options[] = {
	OPT_INCR('v', "verbose", verbose, "also show group, PMU and per-event term settings"),
	OPT_STRING(0, "sysfs", sysfs, "dir", "read PMUs and tracepoints under <dir> instead of /sys"),
	OPT_BOOL(0, "no-pfm", no_pfm, "do not ask libpfm4 about unknown names"),
	OPT_END(),
};

/* Each argument is parsed like one -e option; all of them go into one list. */
static const char *const parse_events_usage[] = {
	"parse-events [<options>] <event> [<event>...]", NULL
};

const struct cli_command cmd_parse_events = {
	.name = "parse-events",
	.summary = "Show the perf_event_attr an event string parses to",
	.usage = parse_events_usage,
	.opts = parse_events_options,
	.flags = CLI_STOP_AT_ARG,
	.min_args = 1,
	.max_args = CLI_ANY_ARGS,
	.args_hint = "no event given (e.g. tally parse-events 'cycles:u')",
	.size = sizeof(struct parse_opts),
	.init = parse_events_init,
	.exec = parse_events_exec,
};
