/*
 * tally evlist: list the events of a perf.data file, like perf evlist.
 *   -i FILE   input (default perf.data; "-" reads a pipe stream from stdin)
 *   -v        every non-zero attr field, in perf's "name: field: value, …" format
 *   -g        groups as {leader,member,…}
 *   -F        the sample frequency or period of each event
 *   -f        read files not owned by the current user
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tally/data.h>

#include "cmd.h"

struct evlist_opts {
	const char *input;
	bool verbose, group, freq, force;
};

static const char evlist_usage[] =
	"\n usage: tally evlist [<options>]\n\n"
	"    -i, --input <file>    Input file name (default perf.data, - for stdin)\n"
	"    -v, --verbose         Show all event attr details\n"
	"    -g, --group           Show event group information\n"
	"    -F, --freq            Show the sample frequency/period of each event\n"
	"    -f, --force           Don't complain, do it\n\n";

/* One "name: value" item of the -v line, comma separated. */
struct line {
	FILE *f;
	bool first;
};

static void item(struct line *l, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void item(struct line *l, const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(l->f, "%s%s: ", l->first ? "" : ", ", name);
	va_start(ap, fmt);
	vfprintf(l->f, fmt, ap);
	va_end(ap);
	l->first = false;
}

static void bits(struct line *l, const char *name, uint64_t v, const char *const *names,
		 size_t nr)
{
	char buf[512];
	size_t n = 0;

	if (!v)
		return;
	buf[0] = 0;
	for (size_t i = 0; i < nr && i < 64; i++) {
		if (!(v & (1ULL << i)) || !names[i])
			continue;
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "|" : "", names[i]);
		v &= ~(1ULL << i);
		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
	}
	if (v)
		snprintf(buf + n, sizeof(buf) - n, "%s%#" PRIx64, n ? "|" : "", v);
	item(l, name, "%s", buf);
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
static const char *const branch_names[] = {
	"USER", "KERNEL", "HV", "ANY", "ANY_CALL", "ANY_RETURN", "IND_CALL", "ABORT_TX",
	"IN_TX", "NO_TX", "COND", "CALL_STACK", "IND_JUMP", "CALL", "NO_FLAGS", "NO_CYCLES",
	"TYPE_SAVE", "HW_INDEX", "PRIV_SAVE",
};

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define U(field) do { if (a->field) item(&l, #field, "%" PRIu64, (uint64_t)a->field); } while (0)
#define X(name, field) do { if (a->field) item(&l, name, "%#" PRIx64, (uint64_t)a->field); } while (0)

/* perf's attr dump: only non-zero fields, in struct order. */
static void print_attr(FILE *f, const struct tally_data_event *ev)
{
	const struct perf_event_attr *a = &ev->attr;
	struct line l = { f, true };

	item(&l, "type", "%u", a->type);
	item(&l, "size", "%u", ev->disk_attr_size);
	X("config", config);
	if (a->sample_period)
		item(&l, "{ sample_period, sample_freq }", "%" PRIu64, (uint64_t)a->sample_period);
	bits(&l, "sample_type", a->sample_type, sample_type_names, N(sample_type_names));
	bits(&l, "read_format", a->read_format, read_format_names, N(read_format_names));
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
	bits(&l, "branch_sample_type", a->branch_sample_type, branch_names, N(branch_names));
	X("sample_regs_user", sample_regs_user);
	U(sample_stack_user);
	if (a->clockid)
		item(&l, "clockid", "%d", a->clockid);
	X("sample_regs_intr", sample_regs_intr);
	U(aux_watermark);
	U(sample_max_stack);
	U(aux_sample_size);
	U(sig_data);
}

static void print_event(FILE *f, const struct tally_data *d, size_t i,
			const struct evlist_opts *o)
{
	const struct tally_data_event *ev = tally_data__event(d, i);

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
	if (o->verbose) {
		fputs(": ", f);
		print_attr(f, ev);
	} else if (o->freq) {
		fprintf(f, ": sample_%s=%" PRIu64, ev->attr.freq ? "freq" : "period",
			(uint64_t)ev->attr.sample_period);
	}
	fputc('\n', f);
}

int cmd_evlist(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "group", no_argument, NULL, 'g' },
		{ "freq", no_argument, NULL, 'F' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct evlist_opts o = { .input = NULL };
	struct tally_data_open_opts oo = { 0 };
	struct tally_data_error err;
	struct tally_data *d;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:vgFfh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o.input = optarg; break;
		case 'v': o.verbose = true; break;
		case 'g': o.group = true; break;
		case 'F': o.freq = true; break;
		case 'f': o.force = true; break;
		case 'h': cli_usage(stdout, evlist_usage); return 0;
		default: cli_usage(stderr, evlist_usage); return 129;
		}
	}
	if (optind < argc) {
		cli_error("evlist: unexpected argument '%s'", argv[optind]);
		cli_usage(stderr, evlist_usage);
		return 129;
	}
	if (!o.input)
		o.input = "perf.data";
	oo.force = o.force;
	ret = tally_data__open(&d, o.input, &oo, &err);
	if (ret) {
		if (ret == -ENOENT && err.offset == 0)
			cli_error("%s: %s (record one with 'tally record', or pass -i FILE)",
				  o.input, err.msg);
		else
			cli_error("%s: file offset %#" PRIx64 ": %s", o.input, err.offset, err.msg);
		return 1;
	}
	/* a file cut short lost its features (they follow the data), names included */
	if (tally_data__truncated(d))
		cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; its features "
			 "(event names, groups) went with them: listed the events of its header, "
			 "named from their attrs", o.input, tally_data__truncated(d));
	for (size_t i = 0; i < tally_data__nr_events(d); i++)
		print_event(stdout, d, i, &o);
	tally_data__delete(d);
	return cli_finish_output(stdout, "standard output") ? 1 : 0;
}
