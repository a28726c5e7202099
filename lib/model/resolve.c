/*
 * The session's resolve cache (see internal/session.h): direct-mapped slots of resolved
 * addresses, and the clock that says which of them side-band records made stale.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/format.h>
#include "internal/session.h"

static inline uint32_t pid_slot(int32_t pid, uint32_t mask)
{
	return (uint32_t)(((uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ull) >> 40) & mask;
}

/* tick of the last invalidation of pid's addresses (0: never) */
static uint32_t pid_inval_tick(struct tly_resolve_cache *c, int32_t pid)
{
	uint32_t mask, i;

	if (pid == c->memo_pid)
		return c->memo_tick;
	c->memo_pid = pid;
	c->memo_tick = 0;
	if (!c->pids)
		return 0;
	mask = c->pids_cap - 1;
	for (i = pid_slot(pid, mask); c->pids[i].tick; i = (i + 1) & mask) {
		if (c->pids[i].pid == pid) {
			c->memo_tick = c->pids[i].tick;
			break;
		}
	}
	return c->memo_tick;
}

static void invalidate_all(struct tly_resolve_cache *c)
{
	c->all_inval = c->tick;
	c->memo_pid = INT32_MIN;
}

static int grow_pids(struct tly_resolve_cache *c)
{
	uint32_t cap = c->pids_cap ? c->pids_cap * 2 : 256, i;
	struct tly_pid_inval *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t k = 0; k < c->pids_cap; k++) {
		if (!c->pids[k].tick)
			continue;
		for (i = pid_slot(c->pids[k].pid, cap - 1); n[i].tick; i = (i + 1) & (cap - 1))
			;
		n[i] = c->pids[k];
	}
	free(c->pids);
	c->pids = n;
	c->pids_cap = cap;
	return 0;
}

static void invalidate_pid(struct tly_resolve_cache *c, int32_t pid)
{
	uint32_t mask, i;

	if (c->pids_nr * 2 >= c->pids_cap && grow_pids(c)) {
		invalidate_all(c);	/* no room to remember: forget everything instead */
		return;
	}
	mask = c->pids_cap - 1;
	for (i = pid_slot(pid, mask); c->pids[i].tick; i = (i + 1) & mask)
		if (c->pids[i].pid == pid)
			break;
	if (!c->pids[i].tick)
		c->pids_nr++;
	c->pids[i].pid = pid;
	c->pids[i].tick = c->tick;
	if (c->memo_pid == pid)
		c->memo_tick = c->tick;
}

/* The clock reached its end: every slot is emptied and time starts over at 1, in the
 * next wrap (so generations handed out before stay older than everything after). */
static void start_over(struct tly_resolve_cache *c)
{
	memset(c->slots, 0, ((size_t)c->mask + 1) * sizeof(*c->slots));	/* never used past it */
	free(c->pids);
	c->pids = NULL;
	c->pids_cap = c->pids_nr = 0;
	c->tick = c->all_inval = 1;	/* slots from tick 1 on are valid again */
	c->wraps++;
	c->kernel_inval = 0;
	c->memo_pid = INT32_MIN;
}

void tly_resolve_cache__note(struct tly_resolve_cache *c, const struct perf_event_header *hdr)
{
	uint32_t pid = UINT32_MAX;

	if (!c->slots)
		return;
	switch (hdr->type) {
	case TALLY_RECORD_FINISHED_ROUND:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_READ:
		return;		/* no maps, threads or symbols change */
	}
	if (c->tick == UINT32_MAX)
		start_over(c);
	c->tick++;
	switch (hdr->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (hdr->size >= sizeof(*hdr) + sizeof(pid))
			memcpy(&pid, hdr + 1, sizeof(pid));
		if ((hdr->type == PERF_RECORD_MMAP || hdr->type == PERF_RECORD_MMAP2) &&
		    (pid == UINT32_MAX ||
		     tally_cpumode_is_kernel(hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK)))
			c->kernel_inval = c->tick;
		else if (pid != UINT32_MAX)
			invalidate_pid(c, (int32_t)pid);
		else
			invalidate_all(c);
		break;
	case PERF_RECORD_KSYMBOL:
	case PERF_RECORD_BPF_EVENT:
	case PERF_RECORD_TEXT_POKE:
		c->kernel_inval = c->tick;
		break;
	default:
		invalidate_all(c);
		break;
	}
}

int tly_resolve_cache__init(struct tly_resolve_cache *c)
{
	if (c->slots)
		return 0;
	c->slots = calloc(TLY_RESOLVE_SLOTS, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	c->mask = TLY_RESOLVE_SLOTS_MIN - 1;
	c->tick = c->all_inval = 1;
	c->memo_pid = INT32_MIN;
	return 0;
}

void tly_resolve_cache__exit(struct tly_resolve_cache *c)
{
	free(c->slots);
	free(c->pids);
	memset(c, 0, sizeof(*c));
}

int tly_resolve_cache__valid_from(struct tly_resolve_cache *c, pid_t pid, uint8_t cpumode,
				  int32_t *key, uint32_t *valid_from)
{
	uint32_t v;

	if (tly_resolve_cache__init(c))
		return -ENOMEM;
	if (tally_cpumode_is_kernel(cpumode)) {
		*key = -1;
		v = c->kernel_inval;
	} else {
		*key = (int32_t)pid;
		v = pid_inval_tick(c, *key);
	}
	*valid_from = v < c->all_inval ? c->all_inval : v;
	return 0;
}
