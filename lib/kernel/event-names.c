/*
 * perf's symbolic event names: hardware, software, tool events and the generic
 * hardware-cache table with its aliases and the op validity rules perf 6.1 applies.
 */
#include <errno.h>
#include <stdio.h>
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
