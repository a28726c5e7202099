/*
 * perf's symbolic event names: hardware, software, tool events and the generic
 * hardware-cache table with its aliases and the op validity rules perf 6.1 applies;
 * and the event parser's use of them (lib/kernel/event.c has the grammar): a symbolic,
 * hw-cache, raw or libpfm4 name, or perf's message for an unknown one.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <tally/event.h>

#include "internal/event.h"
#include "internal/util.h"

const struct tly_symbol tly_hw_symbols[] = {
	{ PERF_COUNT_HW_CPU_CYCLES, "cpu-cycles", "cycles", "cycles" },
	{ PERF_COUNT_HW_INSTRUCTIONS, "instructions", NULL, "instructions" },
	{ PERF_COUNT_HW_CACHE_REFERENCES, "cache-references", NULL, "cache-references" },
	{ PERF_COUNT_HW_CACHE_MISSES, "cache-misses", NULL, "cache-misses" },
	{ PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "branch-instructions", "branches", "branches" },
	{ PERF_COUNT_HW_BRANCH_MISSES, "branch-misses", NULL, "branch-misses" },
	{ PERF_COUNT_HW_BUS_CYCLES, "bus-cycles", NULL, "bus-cycles" },
	{ PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, "stalled-cycles-frontend", "idle-cycles-frontend",
	  "stalled-cycles-frontend" },
	{ PERF_COUNT_HW_STALLED_CYCLES_BACKEND, "stalled-cycles-backend", "idle-cycles-backend",
	  "stalled-cycles-backend" },
	{ PERF_COUNT_HW_REF_CPU_CYCLES, "ref-cycles", NULL, "ref-cycles" },
};
const size_t tly_nr_hw_symbols = TLY_ARRAY_SIZE(tly_hw_symbols);

const struct tly_symbol tly_sw_symbols[] = {
	{ PERF_COUNT_SW_CPU_CLOCK, "cpu-clock", NULL, "cpu-clock" },
	{ PERF_COUNT_SW_TASK_CLOCK, "task-clock", NULL, "task-clock" },
	{ PERF_COUNT_SW_PAGE_FAULTS, "page-faults", "faults", "page-faults" },
	{ PERF_COUNT_SW_CONTEXT_SWITCHES, "context-switches", "cs", "context-switches" },
	{ PERF_COUNT_SW_CPU_MIGRATIONS, "cpu-migrations", "migrations", "cpu-migrations" },
	{ PERF_COUNT_SW_PAGE_FAULTS_MIN, "minor-faults", NULL, "minor-faults" },
	{ PERF_COUNT_SW_PAGE_FAULTS_MAJ, "major-faults", NULL, "major-faults" },
	{ PERF_COUNT_SW_ALIGNMENT_FAULTS, "alignment-faults", NULL, "alignment-faults" },
	{ PERF_COUNT_SW_EMULATION_FAULTS, "emulation-faults", NULL, "emulation-faults" },
	{ PERF_COUNT_SW_DUMMY, "dummy", NULL, "dummy" },
	{ PERF_COUNT_SW_BPF_OUTPUT, "bpf-output", NULL, "bpf-output" },
	{ 11 /* PERF_COUNT_SW_CGROUP_SWITCHES */, "cgroup-switches", NULL, "cgroup-switches" },
};
const size_t tly_nr_sw_symbols = TLY_ARRAY_SIZE(tly_sw_symbols);

static const char *const tool_names[] = {
	[TALLY_TOOL_DURATION_TIME] = "duration_time",
	[TALLY_TOOL_USER_TIME] = "user_time",
	[TALLY_TOOL_SYSTEM_TIME] = "system_time",
};

const char *tally_event__tool_name(enum tally_tool_event tool)
{
	if (tool <= TALLY_TOOL_NONE || (size_t)tool >= TLY_ARRAY_SIZE(tool_names))
		return NULL;
	return tool_names[tool];
}

enum tally_tool_event tly_tool_lookup(const char *s, size_t len)
{
	for (size_t i = 1; i < TLY_ARRAY_SIZE(tool_names); i++)
		if (strlen(tool_names[i]) == len && !strncmp(s, tool_names[i], len))
			return (enum tally_tool_event)i;
	return TALLY_TOOL_NONE;
}

const struct tly_symbol *tly_symbol_lookup(const char *s, size_t len, uint32_t *type)
{
	for (size_t i = 0; i < tly_nr_hw_symbols; i++) {
		const struct tly_symbol *sym = &tly_hw_symbols[i];

		if ((strlen(sym->name) == len && !strncmp(s, sym->name, len)) ||
		    (sym->alias && strlen(sym->alias) == len && !strncmp(s, sym->alias, len))) {
			*type = PERF_TYPE_HARDWARE;
			return sym;
		}
	}
	for (size_t i = 0; i < tly_nr_sw_symbols; i++) {
		const struct tly_symbol *sym = &tly_sw_symbols[i];

		if ((strlen(sym->name) == len && !strncmp(s, sym->name, len)) ||
		    (sym->alias && strlen(sym->alias) == len && !strncmp(s, sym->alias, len))) {
			*type = PERF_TYPE_SOFTWARE;
			return sym;
		}
	}
	return NULL;
}

static const struct tly_symbol *symbol_by_config(uint32_t type, uint64_t config)
{
	const struct tly_symbol *tab;
	size_t n;

	if (type == PERF_TYPE_HARDWARE) {
		tab = tly_hw_symbols;
		n = tly_nr_hw_symbols;
	} else if (type == PERF_TYPE_SOFTWARE) {
		tab = tly_sw_symbols;
		n = tly_nr_sw_symbols;
	} else {
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (tab[i].config == config)
			return &tab[i];
	return NULL;
}

const char *tally_event__symbol_name(uint32_t type, uint64_t config)
{
	const struct tly_symbol *sym = symbol_by_config(type, config);

	return sym ? sym->display : NULL;
}

const char *tally_event__symbol_alias(uint32_t type, uint64_t config)
{
	const struct tly_symbol *sym = symbol_by_config(type, config);

	return sym ? sym->alias : NULL;
}

/* libpfm4's count, from event-pfm.c (which cannot include the public header). */
int tally_event__pfm_nr_pmus(void)
{
	return tly_pfm_nr_present();
}

const char *tally_event__symbol(uint32_t type, size_t i, const char **alias)
{
	const struct tly_symbol *sym = NULL;

	if (type == PERF_TYPE_HARDWARE && i < tly_nr_hw_symbols)
		sym = &tly_hw_symbols[i];
	else if (type == PERF_TYPE_SOFTWARE && i < tly_nr_sw_symbols)
		sym = &tly_sw_symbols[i];
	if (alias)
		*alias = sym ? sym->alias : NULL;
	return sym ? sym->name : NULL;
}

/*
 * The generic cache events. Type, op and result names as perf 6.1's lexer accepts
 * them; the first name of each row is the one perf prints.
 */
#define MAX_ALIASES 8
static const char *const cache_type_names[PERF_COUNT_HW_CACHE_MAX][MAX_ALIASES] = {
	{ "L1-dcache", "l1-d", "l1d", "L1-data" },
	{ "L1-icache", "l1-i", "l1i", "L1-instruction" },
	{ "LLC", "L2" },
	{ "dTLB", "d-tlb", "Data-TLB" },
	{ "iTLB", "i-tlb", "Instruction-TLB" },
	{ "branch", "branches", "bpu", "btb", "bpc" },
	{ "node" },
};

static const char *const cache_op_names[PERF_COUNT_HW_CACHE_OP_MAX][MAX_ALIASES] = {
	{ "load", "loads", "read" },
	{ "store", "stores", "write" },
	{ "prefetch", "prefetches", "speculative-read", "speculative-load" },
};

static const char *const cache_result_names[PERF_COUNT_HW_CACHE_RESULT_MAX][MAX_ALIASES] = {
	{ "refs", "Reference", "ops", "access" },
	{ "misses", "miss" },
};

#define OPBIT(x) (1u << PERF_COUNT_HW_CACHE_OP_##x)
static const unsigned int cache_valid_ops[PERF_COUNT_HW_CACHE_MAX] = {
	[PERF_COUNT_HW_CACHE_L1D] = OPBIT(READ) | OPBIT(WRITE) | OPBIT(PREFETCH),
	[PERF_COUNT_HW_CACHE_L1I] = OPBIT(READ) | OPBIT(PREFETCH),
	[PERF_COUNT_HW_CACHE_LL] = OPBIT(READ) | OPBIT(WRITE) | OPBIT(PREFETCH),
	[PERF_COUNT_HW_CACHE_DTLB] = OPBIT(READ) | OPBIT(WRITE) | OPBIT(PREFETCH),
	[PERF_COUNT_HW_CACHE_ITLB] = OPBIT(READ),
	[PERF_COUNT_HW_CACHE_BPU] = OPBIT(READ),
	[PERF_COUNT_HW_CACHE_NODE] = OPBIT(READ) | OPBIT(WRITE) | OPBIT(PREFETCH),
};

bool tly_cache_op_valid(unsigned int type, unsigned int op)
{
	return type < PERF_COUNT_HW_CACHE_MAX && (cache_valid_ops[type] & (1u << op));
}

/* Longest table entry that @s starts with (case-sensitive, like the lexer), followed
 * by '-' or the end of the string. Returns the row and sets *len, or -1. */
static int match_token(const char *s, size_t slen, const char *const tab[][MAX_ALIASES], int rows,
		       size_t *len)
{
	int best = -1;
	size_t best_len = 0;

	for (int i = 0; i < rows; i++) {
		for (int j = 0; j < MAX_ALIASES && tab[i][j]; j++) {
			size_t n = strlen(tab[i][j]);

			if (n > slen || n <= best_len || strncmp(s, tab[i][j], n))
				continue;
			if (n < slen && s[n] != '-')
				continue;
			best = i;
			best_len = n;
		}
	}
	*len = best_len;
	return best;
}

int tly_cache_parse(const char *s, size_t len, struct tly_cache_event *out)
{
	size_t n, pos;
	int type, op = -1, result = -1;
	unsigned int bad = 0;

	memset(out, 0, sizeof(*out));
	type = match_token(s, len, cache_type_names, PERF_COUNT_HW_CACHE_MAX, &n);
	if (type < 0)
		return -ENOENT;
	pos = n;
	for (int i = 0; i < 2 && pos < len; i++) {
		size_t tlen;
		int o, r;

		pos++;	/* the '-' */
		o = match_token(s + pos, len - pos, cache_op_names, PERF_COUNT_HW_CACHE_OP_MAX, &tlen);
		if (o < 0) {
			size_t rlen;

			r = match_token(s + pos, len - pos, cache_result_names,
					PERF_COUNT_HW_CACHE_RESULT_MAX, &rlen);
			if (r < 0)
				return -ENOENT;
			tlen = rlen;
		} else {
			r = -1;
		}
		/* perf's order: an op if none yet, else a result if none yet, else ignored */
		if (o >= 0 && op < 0) {
			op = o;
			if (!tly_cache_op_valid((unsigned int)type, (unsigned int)op)) {
				bad = 1;
				out->bad_pos = pos;
				out->bad_len = tlen;
			}
		} else if (result < 0) {
			size_t rlen;

			r = match_token(s + pos, len - pos, cache_result_names,
					PERF_COUNT_HW_CACHE_RESULT_MAX, &rlen);
			if (r >= 0)
				result = r;
		}
		pos += tlen;
	}
	if (pos != len)
		return -ENOENT;
	if (op < 0)
		op = PERF_COUNT_HW_CACHE_OP_READ;
	if (result < 0)
		result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
	out->type = (unsigned int)type;
	out->op = (unsigned int)op;
	out->result = (unsigned int)result;
	out->config = (uint64_t)type | ((uint64_t)op << 8) | ((uint64_t)result << 16);
	return bad ? -EINVAL : 0;
}

const char *tly_cache_type_name(unsigned int type)
{
	return type < PERF_COUNT_HW_CACHE_MAX ? cache_type_names[type][0] : NULL;
}

/* perf's list shows ops/results in their plural "loads", "misses" form. */
static const char *const op_list_names[] = { "loads", "stores", "prefetches" };
static const char *const result_list_names[] = { "", "-misses" };

int tally_event__hw_cache_name(uint64_t config, char *buf, size_t len)
{
	unsigned int type = config & 0xff, op = (config >> 8) & 0xff, res = (config >> 16) & 0xff;

	if (config >> 24 || type >= PERF_COUNT_HW_CACHE_MAX || op >= PERF_COUNT_HW_CACHE_OP_MAX ||
	    res >= PERF_COUNT_HW_CACHE_RESULT_MAX || !tly_cache_op_valid(type, op))
		return -EINVAL;
	if (res == PERF_COUNT_HW_CACHE_RESULT_ACCESS)
		snprintf(buf, len, "%s-%s", cache_type_names[type][0], op_list_names[op]);
	else
		snprintf(buf, len, "%s-%s%s", cache_type_names[type][0],
			 op == PERF_COUNT_HW_CACHE_OP_READ ? "load" :
			 op == PERF_COUNT_HW_CACHE_OP_WRITE ? "store" : "prefetch",
			 result_list_names[res]);
	return 0;
}

/* ---- symbolic names --------------------------------------------------------- */

int tly_evp_simple_event(struct tly_parser *p, uint32_t type, uint64_t config, const char *pmu)
{
	int idx = tly_evp_new_event(p);

	if (idx < 0)
		return idx;
	p->list->ev[idx].attr.type = type;
	p->list->ev[idx].attr.config = config;
	if (pmu && !(p->list->ev[idx].pmu_name = strdup(pmu)))
		return -ENOMEM;
	return 0;
}

/*
 * Names that stand alone: hw/sw/tool symbols, raw rNNN, hw-cache. Returns 1 when the
 * name is none of these, 0 when events were added, -errno on error.
 */
int tly_evp_parse_symbolic(struct tly_parser *p, size_t pos, size_t len)
{
	const char *s = p->in + pos;
	const struct tly_symbol *sym;
	struct tly_cache_event ce;
	enum tally_tool_event tool;
	uint32_t type;
	int err;

	sym = tly_symbol_lookup(s, len, &type);
	if (sym)
		return tly_evp_simple_event(p, type, sym->config,
					    type == PERF_TYPE_HARDWARE ? "cpu" : "software");
	tool = tly_tool_lookup(s, len);
	if (tool) {
		int idx = tly_evp_new_event(p);

		if (idx < 0)
			return idx;
		p->list->ev[idx].attr.type = PERF_TYPE_SOFTWARE;
		p->list->ev[idx].attr.config = PERF_COUNT_SW_DUMMY;
		p->list->ev[idx].attr.exclude_guest = 0;	/* perf skips event_attr_init here */
		p->list->ev[idx].tool = tool;
		if (!(p->list->ev[idx].unit = strdup("ns")) ||
		    !(p->list->ev[idx].pmu_name = strdup("tool")))
			return -ENOMEM;
		return 0;
	}
	if (len >= 2 && s[0] == 'r' && tly_evp_is_hex_span(s + 1, len - 1)) {
		uint64_t v = 0;
		char hex[24];

		if (len - 1 > 16)
			return tly_evp_fail(p, pos, len, -ERANGE,
					    "raw event code '%.*s' does not fit "
					    "in 64 bits", (int)len, s);
		snprintf(hex, sizeof(hex), "0x%.*s", (int)(len - 1), s + 1);
		tly_evp_parse_u64(hex, strlen(hex), &v);
		return tly_evp_simple_event(p, PERF_TYPE_RAW, v, "cpu");
	}
	err = tly_cache_parse(s, len, &ce);
	if (err == -EINVAL)
		return tly_evp_fail(p, pos + ce.bad_pos, ce.bad_len, -EINVAL,
				    "%s does not support '%.*s' (perf's cache table allows %s)",
				    tly_cache_type_name(ce.type), (int)ce.bad_len, s + ce.bad_pos,
				    ce.type == PERF_COUNT_HW_CACHE_L1I ? "loads and prefetches" :
				    ce.type == PERF_COUNT_HW_CACHE_ITLB || ce.type == PERF_COUNT_HW_CACHE_BPU ?
				    "only loads" : "loads, stores and prefetches");
	if (!err) {
		int idx = tly_evp_new_event(p);

		if (idx < 0)
			return idx;
		p->list->ev[idx].attr.type = PERF_TYPE_HW_CACHE;
		p->list->ev[idx].attr.config = ce.config;
		/* perf names cache events by what was parsed, without modifiers */
		if (tly_evp_set_str(&p->list->ev[idx].name, s, len) ||
		    !(p->list->ev[idx].pmu_name = strdup("cpu")))
			return -ENOMEM;
		return 0;
	}
	return 1;
}

/* Edit distance, for "did you mean". */
static size_t distance(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b), row[64], prev, tmp;

	if (an >= 63 || bn >= 63)
		return 99;
	for (size_t j = 0; j <= bn; j++)
		row[j] = j;
	for (size_t i = 1; i <= an; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= bn; j++) {
			tmp = row[j];
			size_t c = prev + (tolower((unsigned char)a[i - 1]) !=
					   tolower((unsigned char)b[j - 1]));
			if (row[j] + 1 < c)
				c = row[j] + 1;
			if (row[j - 1] + 1 < c)
				c = row[j - 1] + 1;
			row[j] = c;
			prev = tmp;
		}
	}
	return row[bn];
}

static const char *suggest(const char *s, size_t n)
{
	const char *best = NULL;
	size_t bd = 3;
	static const char *const extra[] = {
		"duration_time", "user_time", "system_time", "L1-dcache-loads",
		"L1-dcache-load-misses", "LLC-loads", "LLC-load-misses", "dTLB-load-misses",
		"branch-loads", "branch-load-misses",
	};

	for (size_t i = 0; i < tly_nr_hw_symbols + tly_nr_sw_symbols; i++) {
		const struct tly_symbol *sym = i < tly_nr_hw_symbols ? &tly_hw_symbols[i] :
					       &tly_sw_symbols[i - tly_nr_hw_symbols];
		size_t d = distance(s, n, sym->name);

		if (d < bd) {
			bd = d;
			best = sym->name;
		}
		if (sym->alias && (d = distance(s, n, sym->alias)) < bd) {
			bd = d;
			best = sym->alias;
		}
	}
	for (size_t i = 0; i < TLY_ARRAY_SIZE(extra); i++) {
		size_t d = distance(s, n, extra[i]);

		if (d < bd) {
			bd = d;
			best = extra[i];
		}
	}
	return best;
}

/* The last resort for a name: libpfm4. Returns 1 when libpfm4 does not know it. */
int tly_evp_parse_pfm(struct tly_parser *p, size_t pos, size_t len, char *why, size_t whylen)
{
	struct perf_event_attr attr;
	char name[256];
	int err, idx;

	why[0] = 0;
	if (p->list->flags & TALLY_EVLIST_NO_PFM || len >= sizeof(name))
		return 1;
	memcpy(name, p->in + pos, len);
	name[len] = 0;
	memset(&attr, 0, sizeof(attr));
	err = tly_pfm_encode(name, &attr, why, whylen);
	if (err == -ENOMEM)
		return err;
	if (err)
		return err == -ENODEV ? 2 : 1;
	idx = tly_evp_new_event(p);
	if (idx < 0)
		return idx;
	p->list->ev[idx].attr.type = attr.type;
	p->list->ev[idx].attr.config = attr.config;
	p->list->ev[idx].attr.config1 = attr.config1;
	p->list->ev[idx].attr.config2 = attr.config2;
	p->list->ev[idx].attr.precise_ip = attr.precise_ip;
	/* libpfm4's own privilege modifiers (u=0, k=1 …); its hv default is not perf's */
	if (attr.exclude_user || attr.exclude_kernel) {
		p->list->ev[idx].attr.exclude_user = attr.exclude_user;
		p->list->ev[idx].attr.exclude_kernel = attr.exclude_kernel;
		p->list->ev[idx].attr.exclude_hv = 1;
		p->list->ev[idx].exclude_set = true;
	}
	if (!(p->list->ev[idx].pmu_name = strdup("cpu")))
		return -ENOMEM;
	return 0;
}

int tly_evp_unknown_event(struct tly_parser *p, size_t pos, size_t len, const char *pfm_why,
			  int pfm_rc)
{
	const char *s = p->in + pos;
	const char *sug = suggest(s, len);

	if (sug)
		return tly_evp_fail(p, pos, len, -EINVAL,
				    "unknown event '%.*s'; did you mean '%s'? "
				    "(tally list shows the events)", (int)len, s, sug);
	if (pfm_rc == 2)
		return tly_evp_fail(p, pos, len, -EINVAL,
				    "unknown event '%.*s': not a perf event name, "
				    "sysfs alias or tracepoint, and %s", (int)len, s, pfm_why);
	return tly_evp_fail(p, pos, len, -EINVAL,
			    "unknown event '%.*s' (expected a name from tally "
			    "list, rNNNN, pmu/term=value/, subsystem:tracepoint or mem:ADDR)", (int)len, s);
}
