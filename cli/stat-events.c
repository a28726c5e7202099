/*
 * tally stat: the events perf stat counts by default (-d, -dd, -ddd add cache sets),
 * the legacy names it accepts, and what kind of event each is for the metrics.
 */
#include <errno.h>
#include <string.h>

#include "stat.h"

#define CACHE(c, op, res) ((c) | ((op) << 8) | ((res) << 16))

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} names[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "L1-dcache-loads", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1D,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "L1-dcache-load-misses", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1D,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "LLC-loads", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_LL,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "LLC-load-misses", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_LL,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "L1-icache-loads", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1I,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "L1-icache-load-misses", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1I,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "dTLB-loads", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_DTLB,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "dTLB-load-misses", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_DTLB,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "iTLB-loads", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_ITLB,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "iTLB-load-misses", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_ITLB,
		PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "L1-dcache-prefetches", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1D,
		PERF_COUNT_HW_CACHE_OP_PREFETCH, PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "L1-dcache-prefetch-misses", PERF_TYPE_HW_CACHE, CACHE(PERF_COUNT_HW_CACHE_L1D,
		PERF_COUNT_HW_CACHE_OP_PREFETCH, PERF_COUNT_HW_CACHE_RESULT_MISS) },
};

int stat_event_lookup(const char *name, struct perf_event_attr *attr)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(names[i].name, name))
			continue;
		memset(attr, 0, sizeof(*attr));
		attr->size = sizeof(*attr);
		attr->type = names[i].type;
		attr->config = names[i].config;
		return 0;
	}
	return -ENOENT;
}

static enum stat_kind hw_kind(uint64_t config)
{
	switch (config) {
	case PERF_COUNT_HW_CPU_CYCLES: return K_CYCLES;
	case PERF_COUNT_HW_INSTRUCTIONS: return K_INSTRUCTIONS;
	case PERF_COUNT_HW_BRANCH_INSTRUCTIONS: return K_BRANCHES;
	case PERF_COUNT_HW_BRANCH_MISSES: return K_BRANCH_MISSES;
	case PERF_COUNT_HW_CACHE_REFERENCES: return K_CACHE_REFS;
	case PERF_COUNT_HW_CACHE_MISSES: return K_CACHE_MISSES;
	case PERF_COUNT_HW_STALLED_CYCLES_FRONTEND: return K_STALLED_FE;
	case PERF_COUNT_HW_STALLED_CYCLES_BACKEND: return K_STALLED_BE;
	default: return K_OTHER;
	}
}

static enum stat_kind cache_kind(uint64_t config)
{
	uint64_t c = config & 0xff, op = (config >> 8) & 0xff, res = (config >> 16) & 0xff;
	bool miss = res == PERF_COUNT_HW_CACHE_RESULT_MISS;

	if (op != PERF_COUNT_HW_CACHE_OP_READ)
		return K_OTHER;
	switch (c) {
	case PERF_COUNT_HW_CACHE_L1D: return miss ? K_L1D_MISSES : K_L1D_LOADS;
	case PERF_COUNT_HW_CACHE_L1I: return miss ? K_L1I_MISSES : K_L1I_LOADS;
	case PERF_COUNT_HW_CACHE_LL: return miss ? K_LLC_MISSES : K_LLC_LOADS;
	case PERF_COUNT_HW_CACHE_DTLB: return miss ? K_DTLB_MISSES : K_DTLB_LOADS;
	case PERF_COUNT_HW_CACHE_ITLB: return miss ? K_ITLB_MISSES : K_ITLB_LOADS;
	default: return K_OTHER;
	}
}

void stat_evsel_classify(struct stat_evsel *ev)
{
	const struct perf_event_attr *a = &ev->attr;

	ev->kind = K_OTHER;
	ev->unit = "";
	ev->scale = 1.0;
	if (a->type == PERF_TYPE_SOFTWARE && (a->config == PERF_COUNT_SW_TASK_CLOCK ||
					      a->config == PERF_COUNT_SW_CPU_CLOCK)) {
		ev->kind = K_CLOCK;
		ev->unit = "msec";
		ev->scale = 1e-6;
	} else if (a->type == PERF_TYPE_HARDWARE) {
		ev->kind = hw_kind(a->config);
	} else if (a->type == PERF_TYPE_HW_CACHE) {
		ev->kind = cache_kind(a->config);
	}
}
