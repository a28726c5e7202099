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
#include <tally/record.h>
#include <tally/session.h>

#include "cmd.h"
#include "hist.h"
#include "report-common.h"
#include "script-trace.h"
#include "sample-memo.h"

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

struct ev_state {
	struct hists hists;
	uint64_t nr_samples_seen;
};

struct report {
	struct report_opts *o;
	struct tally_data *data;
	struct tally_session *session;
	struct ev_state *ev;
	size_t nr_ev;
	bool children;
	bool use_chains;	/* resolve call chains (children, trees) */
	bool build_trees;	/* keep call-chain trees (not with -g none) */
	bool caller;		/* chain order */
	bool group_view;	/* event groups print as one section */
	bool children_cols;	/* Children column and order (children, unless -F says not) */
	struct script_trace *trace;	/* the file's tracepoint formats, for the trace key */
	enum hist_col order[HC_NR];	/* -F: value columns sort in their order */
	size_t nr_order;
	uint64_t lost_samples;
	uint64_t type_counts[128];
	uint64_t nr_records;
	struct frames frames;
	struct hist_entry **seen;
	size_t seen_cap;
	struct cc_frame *ccf;
	size_t ccf_cap;
	struct strpool pool;
	struct cc_arena arena;	/* every call-chain node of the report */
	/* deferred trees (defer_trees): chains logged per sample, appended at the end only
	 * to entries heavy enough to print a branch. Record: n, self entry id, period (2
	 * words), n frame ids, n children entry ids (0: none). */
	bool defer_trees;
	struct cc_log log;
	struct hist_entry **ents;	/* by id - 1 */
	uint32_t nr_ents, cap_ents;
	/* dso -> interned names: rows are keyed by short name (as perf does), call-chain
	 * frames by long name; per-process dso objects of one binary merge */
	struct dso_slot {
		const struct tally_dso *dso;
		const char *key, *long_key;
	} *dso_keys;
	size_t dso_cap, nr_dso_keys;
	/* equal samples are resolved once (not with trees built per sample) */
	struct sample_memo memo;
	bool use_memo;
	bool memo_cpu;		/* the cpu is part of a row: part of the memo's key */
	int err;
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

static bool list_has_num(char *const *l, long v)
{
	for (size_t i = 0; l && l[i]; i++)
		if (strtol(l[i], NULL, 10) == v)
			return true;
	return false;
}

static void chain_buf(struct report *r, size_t n)
{
	if (n > r->ccf_cap) {
		struct cc_frame *f = realloc(r->ccf, n * sizeof(*f));
		struct hist_entry **s = realloc(r->seen, n * sizeof(*s) + sizeof(*s));

		if (f)
			r->ccf = f;
		if (s)
			r->seen = s;
		if (f && s)
			r->ccf_cap = n;
		else
			r->err = -ENOMEM;
	}
}

static const char *dso_key(struct report *r, const struct tally_dso *d, bool long_name)
{
	size_t i, mask;

	if (!d)
		return NULL;
	if (r->nr_dso_keys * 2 >= r->dso_cap) {
		size_t cap = r->dso_cap ? r->dso_cap * 2 : 256;
		struct dso_slot *n = calloc(cap, sizeof(*n));

		if (!n) {
			r->err = -ENOMEM;
			return NULL;
		}
		for (size_t j = 0; j < r->dso_cap; j++) {
			if (!r->dso_keys[j].dso)
				continue;
			for (i = ((uintptr_t)r->dso_keys[j].dso >> 4) & (cap - 1); n[i].dso;
			     i = (i + 1) & (cap - 1))
				;
			n[i] = r->dso_keys[j];
		}
		free(r->dso_keys);
		r->dso_keys = n;
		r->dso_cap = cap;
	}
	mask = r->dso_cap - 1;
	for (i = ((uintptr_t)d >> 4) & mask; r->dso_keys[i].dso; i = (i + 1) & mask)
		if (r->dso_keys[i].dso == d)
			return long_name ? r->dso_keys[i].long_key : r->dso_keys[i].key;
	r->dso_keys[i].dso = d;
	r->dso_keys[i].key = strpool__intern(&r->pool, tally_dso__short_name(d));
	r->dso_keys[i].long_key = strpool__intern(&r->pool, tally_dso__name(d));
	if (!r->dso_keys[i].key || !r->dso_keys[i].long_key)
		r->err = -ENOMEM;
	r->nr_dso_keys++;
	return long_name ? r->dso_keys[i].long_key : r->dso_keys[i].key;
}

static void fill_entry(struct report *r, struct hist_entry *t, const struct tally_addr_loc *loc,
		       bool self)
{
	t->dso = loc->dso;
	t->dso_key = dso_key(r, loc->dso, false);
	t->dso_name = loc->dso ? tally_dso__short_name(loc->dso) : "[unknown]";
	t->sym = loc->sym;
	t->ip = self && loc->map ? loc->dso_addr : loc->addr;
	t->level = cpumode_level(loc->cpumode);
}

/* the entry's id for the deferred log (given on first use) */
static uint32_t entry_id(struct report *r, struct hist_entry *e)
{
	if (!e->id) {
		if (r->nr_ents == r->cap_ents) {
			uint32_t cap = r->cap_ents ? r->cap_ents * 2 : 1024;
			struct hist_entry **v = realloc(r->ents, cap * sizeof(*v));

			if (!v) {
				r->err = -ENOMEM;
				return 0;
			}
			r->ents = v;
			r->cap_ents = cap;
		}
		r->ents[r->nr_ents++] = e;
		e->id = r->nr_ents;
	}
	return e->id;
}

/* Log one sample's chain (r->ccf, n frames) for self; children ids follow via the
 * returned record (NULL: out of memory). */
static uint32_t *log_chain(struct report *r, struct hist_entry *self, size_t n, uint64_t period)
{
	uint32_t *w = cc_log__append(&r->log, 4 + 2 * n);

	if (!w)
		return NULL;
	w[0] = (uint32_t)n;
	w[1] = entry_id(r, self);
	w[2] = (uint32_t)period;
	w[3] = (uint32_t)(period >> 32);
	for (size_t i = 0; i < n; i++) {
		/* the frame's id rides along in its resolve slot: most frames were seen */
		size_t k = r->caller ? n - 1 - i : i;
		const struct tally_addr_loc *l = &r->frames.v[k];
		struct resolve_slot *sl = r->frames.slots[k];
		bool same = sl && sl->loc.addr == l->addr && sl->loc.dso == l->dso &&
			    sl->loc.sym == l->sym;

		if (same && sl->aux) {
			w[4 + i] = sl->aux - 1;
			continue;
		}
		if (cc_log__intern(&r->log, &r->ccf[i], &w[4 + i]))
			return NULL;
		if (same)
			sl->aux = w[4 + i] + 1;
	}
	memset(w + 4 + n, 0, n * sizeof(*w));
	return r->err ? NULL : w;
}

/*
 * The deferred trees: equal samples (same entries, same frames) share one log record
 * with their periods summed; replaying records in the order they first appeared builds
 * the same trees as appending every sample in file order would (each tree gets one chain
 * per record, and a node is created by the first record whose chain has it).
 * An entry whose period (self plus children, an upper bound of its
 * tree's weight) is below the graph threshold (--call-graph's min percent of the total
 * the report prints against) cannot print a branch in graph, flat or folded mode, so
 * its chains are dropped; the others get theirs in file order, as they would have.
 */
static int replay_chains(struct report *r)
{
	uint8_t *big = calloc(r->nr_ents + 1, 1);
	struct cc_log *l = &r->log;

	if (!big)
		return -ENOMEM;
	for (size_t k = 0; k < r->nr_ev; k++) {
		struct hists *h = &r->ev[k].hists;
		uint64_t total = r->o->relative ? h->filtered_period : h->total_period;
		uint64_t min_hit = (uint64_t)((double)total * (r->o->cc_min_percent / 100.0));

		for (size_t i = 0; i < h->cap; i++) {
			struct hist_entry *e = h->table[i];

			if (e && e->id && e->period_acc >= min_hit)
				big[e->id] = 1;
		}
	}
	for (size_t off = 0, released = 0; off < l->nr;) {
		const uint32_t *w = l->w + off;

		/* give back the log behind: the trees grow as it is read */
		if (off - released >= (1u << 18)) {
			size_t to = off & ~(size_t)((1u << 18) - 1);

			cc_log__release(l, released, to);
			released = to;
		}
		size_t n = w[0];
		uint64_t period = w[2] | (uint64_t)w[3] << 32;
		const uint32_t *ids = w + 4, *ents = w + 4 + n;
		bool any = big[w[1]];

		off += 4 + 2 * n;
		for (size_t i = 0; i < n && !any; i++)
			any = big[ents[i]];
		if (!any)
			continue;
		for (size_t i = 0; i < n; i++)
			r->ccf[i] = l->frames[ids[i]];
		if (big[w[1]] && cc_append(&r->ents[w[1] - 1]->chain, &r->arena, r->ccf, n, period))
			goto nomem;
		for (size_t i = 0; i < n; i++) {
			if (big[ents[i]] && cc_append(&r->ents[ents[i] - 1]->chain, &r->arena,
						      r->ccf + i, n - i, period))
				goto nomem;
		}
	}
	free(big);
	cc_log__exit(l);
	return 0;
nomem:
	free(big);
	return -ENOMEM;
}

/* What the slow path of one sample did, for the memo: it was filtered out, or it added
 * to self, to the entries in r->seen[1 .. nr_kids] (children) and to the deferred chain
 * record at log_at + 1 (0: none). */
struct added {
	bool filtered;
	struct hist_entry *self;
	size_t nr_kids;
	size_t log_at;
};

/* Resolve one sample and add it to h: filters, self entry, call chain, children. */
static int add_resolved(struct report *r, struct hists *h, const struct tally_sample *smp,
			uint64_t period, struct added *out)
{
	struct tally_addr_loc loc;
	struct tally_thread *th;
	struct hist_entry tmpl = { 0 }, *self;
	const char *comm;
	int ret;

	out->filtered = true;
	th = tally_session__thread(r->session, (pid_t)smp->pid, (pid_t)smp->tid);
	comm = th ? tally_thread__comm(th) : "[unknown]";
	if (r->o->comms && !strlist_has(r->o->comms, comm))
		return 0;
	if (r->o->pids && !list_has_num(r->o->pids, (long)(int32_t)smp->pid))
		return 0;
	if (r->o->tids && !list_has_num(r->o->tids, (long)(int32_t)smp->tid))
		return 0;
	resolve_cached(&r->frames.cache, r->session, (pid_t)smp->pid, (pid_t)smp->tid,
		       smp->misc & PERF_RECORD_MISC_CPUMODE_MASK, smp->ip, &loc);
	loc.cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	if (r->o->dsos && !(loc.dso && (strlist_has(r->o->dsos, tally_dso__short_name(loc.dso)) ||
					strlist_has(r->o->dsos, tally_dso__name(loc.dso)))))
		return 0;
	if (r->o->syms && !(loc.sym && loc.sym->name && strlist_has(r->o->syms, loc.sym->name)))
		return 0;
	out->filtered = false;
	if (loc.dso)
		tally_dso__set_hit(loc.dso);
	h->filtered_period += period;
	h->nr_filtered_samples++;

	tmpl.comm = hists__comm(h, comm);
	if (!tmpl.comm)
		return -ENOMEM;
	tmpl.thread = th;
	tmpl.pid = (int32_t)smp->pid;
	tmpl.tid = (int32_t)smp->tid;
	tmpl.cpu = smp->type & PERF_SAMPLE_CPU ? (int32_t)smp->cpu : -1;
	if (r->trace && (smp->type & PERF_SAMPLE_RAW)) {
		/* perf's trace key: the sample's fields as its format prints them */
		char *t = script_trace__format(r->trace, 0, smp->raw, smp->raw_size);

		tmpl.trace = t ? strpool__intern(h->pool, t) : NULL;
		free(t);
		if (t && !tmpl.trace)
			return -ENOMEM;
	}
	fill_entry(r, &tmpl, &loc, true);
	self = hists__findnew(h, &tmpl);
	if (!self)
		return -ENOMEM;
	out->self = self;
	self->period += period;
	self->nr_samples++;
	self->period_acc += period;
	self->nr_samples_acc++;
	if (r->err)
		return r->err;

	if (!r->use_chains || !(smp->type & PERF_SAMPLE_CALLCHAIN))
		return 0;
	/* a corrupt chain (unknown context marker) is dropped, the sample stays, as in perf */
	/* perf keeps the first --max-stack frames in the order it reads the chain: the
	 * innermost callee first, or the outermost in the caller view */
	ret = frames__resolve(&r->frames, r->session, smp, r->caller ? UINT_MAX : r->o->max_stack);
	if (ret < 0)
		return ret;
	if (r->caller && r->frames.nr > r->o->max_stack) {
		size_t keep = r->o->max_stack, drop = r->frames.nr - keep;

		memmove(r->frames.v, r->frames.v + drop, keep * sizeof(*r->frames.v));
		memmove(r->frames.slots, r->frames.slots + drop, keep * sizeof(*r->frames.slots));
		r->frames.nr = keep;
	}
	if (r->frames.nr == 0)
		return 0;
	chain_buf(r, r->frames.nr + 1);
	if (r->err)
		return r->err;

	size_t n = r->frames.nr, nseen = 0;
	uint32_t *logw = NULL;

	/* display order: callee (leaf first) or caller (root first) */
	for (size_t i = 0; i < n; i++) {
		const struct tally_addr_loc *l = &r->frames.v[r->caller ? n - 1 - i : i];

		r->ccf[i].dso = l->dso;
		r->ccf[i].dso_key = dso_key(r, l->dso, true);
		r->ccf[i].sym = l->sym;
		r->ccf[i].ip = l->addr;
	}
	if (r->err)
		return r->err;
	if (r->defer_trees) {
		logw = log_chain(r, self, n, period);
		if (!logw)
			return r->err ? r->err : -ENOMEM;
	} else if (r->build_trees && cc_append(&self->chain, &r->arena, r->ccf, n, period)) {
		return -ENOMEM;
	}
	if (n > self->max_depth)
		self->max_depth = (uint32_t)n;
	if (r->children) {
		char level = self->level;

		r->seen[nseen++] = self;
		for (size_t i = 0; i < n; i++) {
			const struct tally_addr_loc *l = &r->frames.v[r->caller ? n - 1 - i : i];
			struct hist_entry *e;
			bool dup = false;

			fill_entry(r, &tmpl, l, false);
			/* perf keeps the previous entry's level for a frame outside any map */
			if (!l->sym && !l->map)
				tmpl.level = level;
			level = tmpl.level;
			e = hists__findnew(h, &tmpl);
			if (!e)
				return -ENOMEM;
			for (size_t k = 0; k < nseen; k++)
				if (r->seen[k] == e)
					dup = true;
			if (dup)
				continue;
			r->seen[nseen++] = e;
			e->period_acc += period;
			e->nr_samples_acc++;
			if (logw) {
				logw[4 + n + i] = entry_id(r, e);
				if (r->err)
					return r->err;
			} else if (r->build_trees &&
				   cc_append(&e->chain, &r->arena, r->ccf + i, n - i, period)) {
				return -ENOMEM;
			}
			if (n - i > e->max_depth)
				e->max_depth = (uint32_t)(n - i);
		}
		out->nr_kids = nseen - 1;
	}
	if (logw) {
		ret = cc_log__commit(&r->log, 4 + 2 * n, &out->log_at);
		out->log_at++;
		return ret;
	}
	return 0;
}

/* What the memo keeps of a sample that was not filtered out (SAMPLE_MEMO_USER marks a
 * filtered one, without payload). */
struct memo_added {
	struct hist_entry *self;
	uint64_t log_at;		/* + 1; 0: no chain record */
	struct hist_entry *kids[];	/* nr_words - 2 */
};

/* Remember what add_resolved did for the sample of key k. */
static void memo_add(struct report *r, const struct sample_key *k, uint64_t hash,
		     const struct added *a)
{
	size_t words = a->filtered ? 0 : 2 + a->nr_kids;
	struct sample_memo_ent *e = sample_memo__add(&r->memo, &r->frames.cache, k, hash, words);
	struct memo_added *m;

	if (!e)
		return;
	if (a->filtered) {
		e->flags |= SAMPLE_MEMO_USER;
		return;
	}
	m = sample_memo_ent_payload(e);
	m->self = a->self;
	m->log_at = a->log_at;
	memcpy(m->kids, r->seen + 1, a->nr_kids * sizeof(*r->seen));
}

/* Add a sample the memo knows. */
static void memo_apply(struct report *r, struct hists *h, struct sample_memo_ent *e,
		       uint64_t period)
{
	struct memo_added *m = sample_memo_ent_payload(e);

	if (e->flags & SAMPLE_MEMO_USER)
		return;		/* filtered out */
	h->filtered_period += period;
	h->nr_filtered_samples++;
	m->self->period += period;
	m->self->nr_samples++;
	m->self->period_acc += period;
	m->self->nr_samples_acc++;
	for (size_t i = 0; i + 2 < e->nr_words; i++) {
		m->kids[i]->period_acc += period;
		m->kids[i]->nr_samples_acc++;
	}
	if (m->log_at)
		cc_log__add_period(&r->log, m->log_at - 1, period);
}

static int add_sample(struct report *r, int evidx, const struct perf_event_header *hdr)
{
	const struct tally_data_event *ev = tally_data__event(r->data, (size_t)evidx);
	struct ev_state *es = &r->ev[evidx];
	struct hists *h = &es->hists;
	struct tally_sample smp;
	struct sample_key key;
	struct added added = { 0 };
	uint64_t period, hash = 0;
	bool chain;
	int ret;

	ret = tally_sample__parse(&ev->layout, hdr, &smp);
	if (ret)
		return 0;	/* a damaged sample is skipped, like perf does */
	/* perf drops samples of other cpus before counting them (unlike the other filters) */
	if (r->o->cpus && (!(smp.type & PERF_SAMPLE_CPU) ||
			   tally_cpumap__idx(r->o->cpus, (int)smp.cpu) < 0))
		return 0;
	period = sample_period(&smp, &ev->attr);
	h->total_period += period;
	h->nr_samples++;

	if (r->use_memo) {
		struct sample_memo_ent *e;

		chain = r->use_chains && (smp.type & PERF_SAMPLE_CALLCHAIN);
		key = (struct sample_key){
			.pid = (int32_t)smp.pid, .tid = (int32_t)smp.tid,
			.cpu = r->memo_cpu && (smp.type & PERF_SAMPLE_CPU) ? (int32_t)smp.cpu : -1,
			.evidx = (uint16_t)evidx,
			.cpumode = smp.misc & PERF_RECORD_MISC_CPUMODE_MASK,
			.ip = smp.ip,
			.chain = chain ? smp.callchain : NULL,
			.nr_chain = chain ? (size_t)smp.callchain_nr : 0,
		};
		e = sample_memo__get(&r->memo, &r->frames.cache, &key, &hash);
		if (e) {
			memo_apply(r, h, e, period);
			return 0;
		}
	}
	ret = add_resolved(r, h, &smp, period, &added);
	if (ret)
		return ret;
	if (r->use_memo)
		memo_add(r, &key, hash, &added);
	return 0;
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
		resolve_cache__note(&r->frames.cache, hdr);
		return tally_session__process(r->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	}
	if (evidx < 0 && r->nr_ev == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= r->nr_ev)
		return 0;
	r->ev[evidx].nr_samples_seen++;
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
		printf("%16s events: %10" PRIu64 "\n", "SAMPLE", r->ev[i].nr_samples_seen);
	}
}

/* Columns and sort keys from -s / -F / -n and the children mode. */
static int setup_columns(struct report *r, enum hist_col *keys, size_t *nr_keys,
			 enum hist_col *cols, size_t *nr_cols)
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
			int c = hist_col_parse(l[i]);

			if (c < 0) {
				cli_error("-F: unknown field '%s' (use overhead, overhead_children, "
					  "sample, period, comm, pid, tid, dso, sym, cpu, trace)", l[i]);
				strlist_free(l);
				return -EINVAL;
			}
			if (*nr_cols < HC_NR * 2)
				cols[(*nr_cols)++] = (enum hist_col)c;
			if (hist_col_is_key((enum hist_col)c) && !r->o->sort && *nr_keys < HC_NR)
				keys[(*nr_keys)++] = (enum hist_col)c;
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
			cols[(*nr_cols)++] = HC_CHILDREN;
		cols[(*nr_cols)++] = HC_OVERHEAD;
		if (r->o->show_nr_samples)
			cols[(*nr_cols)++] = HC_SAMPLE;
		if (r->o->show_total_period)
			cols[(*nr_cols)++] = HC_PERIOD;
	}
	for (size_t i = 0; i < n; i++) {
		int c = hist_col_parse(l[i]);

		if (c < 0 || !hist_col_is_key((enum hist_col)c)) {
			cli_error("--sort: unknown key '%s' (use comm, pid, tid, dso, sym, cpu, trace)", l[i]);
			strlist_free(l);
			return -EINVAL;
		}
		if (*nr_keys < HC_NR)
			keys[(*nr_keys)++] = (enum hist_col)c;
		if (!r->o->fields && *nr_cols < HC_NR * 2)
			cols[(*nr_cols)++] = (enum hist_col)c;
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

static int print_report(struct report *r, const enum hist_col *cols, size_t nr_cols)
{
	struct hists_print_opts po = {
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

	po.elide[HC_COMM] = r->o->nr_comms == 1;
	po.elide[HC_DSO] = r->o->nr_dsos == 1;
	po.elide[HC_SYM] = r->o->nr_syms == 1;
	if (po.elide[HC_COMM])
		printf("# comm: %s\n", r->o->comms[0]);
	if (po.elide[HC_DSO])
		printf("# dso: %s\n", r->o->dsos[0]);
	if (po.elide[HC_SYM])
		printf("# symbol: %s\n", r->o->syms[0]);
	if (!r->o->quiet)
		printf("#\n# Total Lost Samples: %" PRIu64 "\n#\n", r->lost_samples);
	for (size_t i = 0; i < r->nr_ev; i++) {
		struct hists *h = &r->ev[i].hists;
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
			struct hists *m = &r->ev[i + k].hists;

			nr += r->o->relative ? m->nr_filtered_samples : m->nr_samples;
			totals[k] = r->o->relative ? m->filtered_period : m->total_period;
			period += totals[k];
			if (k && hists__link_member(h, m, k, nm))
				return -ENOMEM;
		}
		if (!nr)
			continue;
		po.member_totals = totals;
		if (r->nr_order ? hists__sort_by(h, r->order, r->nr_order)
				: hists__sort(h, r->children_cols))
			return -ENOMEM;
		if (!r->o->quiet) {
			unsigned long n = convert_unit((unsigned long)nr, &unit);

			printf("# Samples: %lu%c of event%s '%s'\n", n, unit, nm > 1 ? "s" : "",
			       name);
			printf("# Event count (approx.): %" PRIu64 "\n#\n", period);
		}
		err = hists__fprintf(h, stdout, &po);
		if (err)
			return err;
		printf("\n\n");
	}
	if (!r->o->quiet)
		printf("#\n# (Tip: Sort by the call chain root with --children and -g caller)\n#\n");
	return 0;
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
	enum hist_col keys[HC_NR], cols[HC_NR * 2];
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
	r.defer_trees = r.build_trees && !r.group_view && o.cc_min_percent > 0 &&
			(o.cc_mode == CC_GRAPH || o.cc_mode == CC_FLAT || o.cc_mode == CC_FOLDED);
	/* caller order unless --no-children (pipes: caller order without children, as perf) */
	r.caller = o.cc_order >= 0 ? o.cc_order == 1 : o.children != 0;

	so.kallsyms = o.kallsyms;
	so.symfs = o.symfs;
	if (report_session_new(&r.session, r.data, &so)) {
		cli_error("out of memory");
		goto out;
	}
	if (setup_columns(&r, keys, &nr_keys, cols, &nr_cols))
		goto out;
	/* with trees built per sample (not deferred), every sample must reach them */
	r.use_memo = !(r.build_trees && !r.defer_trees) && r.nr_ev <= UINT16_MAX;
	for (size_t i = 0; i < nr_keys; i++) {
		r.memo_cpu |= keys[i] == HC_CPU;
		/* rows by trace output: each sample's own fields (no memo of equal samples) */
		if (keys[i] == HC_TRACE && !r.trace) {
			int e = script_trace__new(&r.trace, r.data);

			if (e == -ENOMEM) {
				cli_error("out of memory");
				goto out;
			}
			if (e)
				cli_warn("%s: no tracepoint formats (TRACING_DATA %s): the trace "
					 "key shows N/A", o.input, e == -ENOENT ? "absent" : "damaged");
			r.use_memo = false;
		}
	}
	for (size_t i = 0; i < nr_cols; i++)
		r.memo_cpu |= cols[i] == HC_CPU;
	r.children_cols = r.children;
	if (r.children && o.fields) {
		/* -F decides the columns: entries still accumulate (perf keeps the cumulative
		 * rows), but order and headers follow the fields */
		bool has_children = false;

		for (size_t i = 0; i < nr_cols; i++)
			has_children |= cols[i] == HC_CHILDREN;
		r.children_cols = has_children;
		for (size_t i = 0; i < nr_cols; i++)
			if (!hist_col_is_key(cols[i]) && r.nr_order < HC_NR)
				r.order[r.nr_order++] = cols[i];
		if (!r.nr_order)
			r.order[r.nr_order++] = HC_OVERHEAD;
	}
	r.ev = calloc(r.nr_ev ? r.nr_ev : 1, sizeof(*r.ev));
	if (!r.ev) {
		cli_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < r.nr_ev; i++) {
		if (hists__init_shared(&r.ev[i].hists, keys, nr_keys, &r.pool)) {
			cli_error("out of memory");
			goto out;
		}
		r.ev[i].hists.callchains = r.use_chains;
		r.ev[i].hists.arena = &r.arena;
		r.ev[i].hists.caller = r.caller;
		r.ev[i].hists.no_depth_ties = !r.build_trees;
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
			total += r.ev[i].hists.nr_samples;
		if (!total) {
			fprintf(stderr, "Error:\nThe %s data has no samples!\n", o.input);
			status = cli_finish_output(stdout, "the report");
			goto out;
		}
	}
	if ((r.defer_trees && replay_chains(&r)) || print_report(&r, cols, nr_cols)) {
		cli_error("out of memory");
		goto out;
	}
	status = cli_finish_output(stdout, "the report");
out:
	for (size_t i = 0; r.ev && i < r.nr_ev; i++)
		hists__exit(&r.ev[i].hists);
	free(r.ev);
	free(r.ccf);
	free(r.seen);
	free(r.dso_keys);
	sample_memo__exit(&r.memo);
	strpool__exit(&r.pool);
	script_trace__delete(r.trace);
	cc_arena_free(&r.arena);
	cc_log__exit(&r.log);
	free(r.ents);
	frames__exit(&r.frames);
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
