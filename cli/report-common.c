/*
 * Helpers shared by report and script (see report-common.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tally/format.h>

#include "cmd.h"
#include "report-common.h"

int report_open(struct tally_data **d, const char *path, bool force)
{
	struct tally_data_open_opts opts = { .force = force };
	struct tally_data_error err = { 0 };
	int ret = tally_data__open(d, path, &opts, &err);

	if (ret == 0)
		return 0;
	if (ret == -ENOENT && !err.msg[0])
		cli_error("%s: no such file (record one with 'tally record' or 'perf record')", path);
	else if (err.msg[0] && err.offset)
		cli_error("%s: file offset %#" PRIx64 ": %s", path, err.offset, err.msg);
	else if (err.msg[0])
		cli_error("%s: %s", path, err.msg);
	else
		cli_error("%s: cannot read: %s", path, strerror(-ret));
	return 1;
}

int report_session_new(struct tally_session **s, struct tally_data *d,
		       const struct tally_session_opts *opts)
{
	const void *buf = NULL;
	size_t len = 0;
	int ret = tally_session__new(s, opts);

	/* the dsos' build-ids, and the recording kernel's: where its symbols are */
	if (ret == 0 && tally_data__feature(d, TALLY_FEAT_BUILD_ID, &buf, &len) == 0)
		tally_session__add_build_ids(*s, buf, len);
	return ret;
}

#define MAX_DSO_NOTES 10

static int dso_note(void *arg, struct tally_dso *d)
{
	unsigned *n = arg;
	const char *why = tally_dso__problem(d);

	if (why && (*n)++ < MAX_DSO_NOTES)
		cli_warn("%s", why);
	return 0;
}

int report_buildid_session(struct tally_data **d, struct tally_session **s, const char *path,
			   bool force, bool *with_hits)
{
	struct tally_session_opts so = { .no_symbols = true };
	struct tally_data_error err = { 0 };
	const void *buf;
	size_t len;
	int ret;

	*s = NULL;
	if (report_open(d, path, force))
		return 1;
	if (tally_session__new(s, &so)) {
		cli_error("out of memory");
		goto fail;
	}
	if (!tally_data__feature(*d, TALLY_FEAT_BUILD_ID, &buf, &len) &&
	    tally_session__add_build_ids(*s, buf, len))
		cli_warn("%s: the BUILD_ID list is damaged; going on with what could be read", path);
	if (!with_hits)
		return 0;
	if (!tally_data__is_pipe(*d) && tally_data__has_feature(*d, TALLY_FEAT_AUXTRACE))
		*with_hits = false;
	if (!tally_data__has_feature(*d, TALLY_FEAT_BUILD_ID))
		*with_hits = true;
	if (!*with_hits && !tally_data__is_pipe(*d))
		return 0;
	ret = tally_session__read_hits(*s, *d, &err);
	if (ret >= 0)
		return 0;
	if (err.msg[0])
		cli_error("%s: file offset %#" PRIx64 ": %s", path, err.offset, err.msg);
	else
		cli_error("%s: reading failed: %s", path, strerror(-ret));
fail:
	tally_session__delete(*s);
	tally_data__delete(*d);
	*s = NULL;
	*d = NULL;
	return 1;
}

void report_kernel_symbols_note(struct tally_session *s)
{
	const char *why = s ? tally_session__kernel_symbols_problem(s) : NULL;
	unsigned n = 0;

	if (why)
		cli_warn("no kernel symbols: %s", why);
	why = s ? tally_session__kernel_symbols_note(s) : NULL;
	if (why)
		cli_warn("%s", why);
	if (s)
		tally_session__for_each_dso(s, dso_note, &n);
	if (n > MAX_DSO_NOTES)
		cli_warn("%u more binaries went without symbols for the same kind of reason",
			 n - MAX_DSO_NOTES);
}

#define RESOLVE_SLOTS 8192

static inline uint32_t pid_slot(int32_t pid, uint32_t mask)
{
	return (uint32_t)(((uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ull) >> 40) & mask;
}

/* tick of the last invalidation of pid's addresses (0: never) */
static uint32_t pid_inval_tick(struct resolve_cache *c, int32_t pid)
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

static void invalidate_all(struct resolve_cache *c)
{
	c->all_inval = c->tick;
	c->memo_pid = INT32_MIN;
}

static void invalidate_pid(struct resolve_cache *c, int32_t pid)
{
	uint32_t mask, i;

	if (c->pids_nr * 2 >= c->pids_cap) {
		uint32_t cap = c->pids_cap ? c->pids_cap * 2 : 256;
		struct pid_inval *n = calloc(cap, sizeof(*n));

		if (!n) {	/* no room to remember: forget everything instead */
			invalidate_all(c);
			return;
		}
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

void resolve_cache__note(struct resolve_cache *c, const struct perf_event_header *hdr)
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
	if (c->tick == UINT32_MAX) {	/* wrapped: start over */
		memset(c->slots, 0, RESOLVE_SLOTS * sizeof(*c->slots));
		free(c->pids);
		c->pids = NULL;
		c->pids_cap = c->pids_nr = 0;
		c->tick = c->all_inval = 1;	/* slots from tick 1 on are valid again */
		c->wraps++;
		c->kernel_inval = 0;
		c->memo_pid = INT32_MIN;
	}
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
		    (pid == UINT32_MAX || cpumode_is_kernel(hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK)))
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

int resolve_cache__init(struct resolve_cache *c)
{
	if (c->slots)
		return 0;
	c->slots = calloc(RESOLVE_SLOTS, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	c->tick = c->all_inval = 1;
	c->memo_pid = INT32_MIN;
	return 0;
}

int resolve_cache__valid_from(struct resolve_cache *c, pid_t pid, uint8_t cpumode,
			      int32_t *key, uint32_t *valid_from)
{
	uint32_t v;

	if (resolve_cache__init(c))
		return -ENOMEM;
	if (cpumode_is_kernel(cpumode)) {
		*key = -1;
		v = c->kernel_inval;
	} else {
		*key = (int32_t)pid;
		v = pid_inval_tick(c, *key);
	}
	*valid_from = v < c->all_inval ? c->all_inval : v;
	return 0;
}

struct resolve_slot *resolve_cached_slot(struct resolve_cache *c, struct tally_session *s,
					 pid_t pid, pid_t tid, uint8_t cpumode, uint64_t ip,
					 struct tally_addr_loc *loc)
{
	struct resolve_slot *slot;
	uint32_t valid_from;
	int32_t key;
	uint64_t h;

	if (!c || resolve_cache__valid_from(c, pid, cpumode, &key, &valid_from)) {
		tally_session__resolve(s, pid, tid, cpumode, ip, loc);
		loc->cpumode = cpumode;
		return NULL;
	}
	h = resolve_cache__hash(ip, key, cpumode);
	slot = &c->slots[(h >> 40) & (RESOLVE_SLOTS - 1)];
	if (slot->tick >= valid_from && slot->ip == ip && slot->pid == key &&
	    slot->loc.cpumode == cpumode) {
		*loc = slot->loc;
		return slot;
	}
	tally_session__resolve(s, pid, tid, cpumode, ip, loc);
	loc->cpumode = cpumode;
	slot->tick = c->tick;
	slot->ip = ip;
	slot->pid = key;
	slot->aux = 0;
	slot->loc = *loc;
	return slot;
}

void resolve_cached(struct resolve_cache *c, struct tally_session *s, pid_t pid, pid_t tid,
		    uint8_t cpumode, uint64_t ip, struct tally_addr_loc *loc)
{
	resolve_cached_slot(c, s, pid, tid, cpumode, ip, loc);
}

void frames__exit(struct frames *f)
{
	free(f->cache.slots);
	free(f->cache.pids);
	free(f->v);
	free(f->slots);
	memset(f, 0, sizeof(*f));
}

int chain_context(uint64_t ip, uint8_t *cpumode)
{
	if (ip < PERF_CONTEXT_MAX)
		return 0;
	switch (ip) {
	case PERF_CONTEXT_HV:
		*cpumode = PERF_RECORD_MISC_HYPERVISOR;
		return 1;
	case PERF_CONTEXT_KERNEL:
		*cpumode = PERF_RECORD_MISC_KERNEL;
		return 1;
	case PERF_CONTEXT_USER:
		*cpumode = PERF_RECORD_MISC_USER;
		return 1;
	case PERF_CONTEXT_GUEST_KERNEL:
		*cpumode = PERF_RECORD_MISC_GUEST_KERNEL;
		return 1;
	case PERF_CONTEXT_GUEST_USER:
		*cpumode = PERF_RECORD_MISC_GUEST_USER;
		return 1;
	default:
		return -1;
	}
}

unsigned sysctl_max_stack(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "re");
	unsigned v = 0;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 127;
}

int frames__resolve(struct frames *f, struct tally_session *s, const struct tally_sample *smp,
		    unsigned max_stack)
{
	uint8_t cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK;

	f->nr = 0;
	if (!(smp->type & PERF_SAMPLE_CALLCHAIN))
		return 0;
	for (uint64_t i = 0; i < smp->callchain_nr; i++) {
		uint64_t ip = smp->callchain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			if (chain_context(ip, &cpumode) < 0) {
				/* an unknown context: the chain is corrupt, perf drops it */
				f->nr = 0;
				return 1;
			}
			continue;
		}
		if (f->nr >= max_stack)
			break;
		if (f->nr == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 64;
			struct tally_addr_loc *v = realloc(f->v, cap * sizeof(*v));
			struct resolve_slot **sl;

			if (!v)
				return -ENOMEM;
			f->v = v;
			sl = realloc(f->slots, cap * sizeof(*sl));
			if (!sl)
				return -ENOMEM;
			f->slots = sl;
			f->cap = cap;
		}
		f->slots[f->nr] = resolve_cached_slot(&f->cache, s, (pid_t)smp->pid,
						      (pid_t)smp->tid, cpumode, ip, &f->v[f->nr]);
		f->nr++;
	}
	return 0;
}

char cpumode_level(uint8_t cpumode)
{
	return tally_cpumode_level(cpumode);
}

char **strlist_parse(const char *s, size_t *nr)
{
	size_t n = 1, i = 0;
	char **l, *copy, *tok, *save = NULL;

	for (const char *p = s; *p; p++)
		n += *p == ',';
	l = calloc(n + 1, sizeof(*l));
	copy = strdup(s);
	if (!l || !copy) {
		free(l);
		free(copy);
		return NULL;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		l[i] = strdup(tok);
		if (!l[i]) {
			free(copy);
			strlist_free(l);
			return NULL;
		}
		i++;
	}
	free(copy);
	if (nr)
		*nr = i;
	return l;
}

void strlist_free(char **l)
{
	if (!l)
		return;
	for (size_t i = 0; l[i]; i++)
		free(l[i]);
	free(l);
}

bool strlist_has(char *const *l, const char *s)
{
	for (size_t i = 0; l && l[i]; i++)
		if (!strcmp(l[i], s))
			return true;
	return false;
}

uint64_t sample_period(const struct tally_sample *smp, const struct perf_event_attr *attr)
{
	return tally_sample__period(smp, attr);
}
