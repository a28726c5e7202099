/*
 * What report and script share: opening a perf.data with one clear error message,
 * resolving a sample's call chain into locations, and naming cpumodes.
 */
#ifndef TALLY_CLI_REPORT_COMMON_H
#define TALLY_CLI_REPORT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/data.h>
#include <tally/record.h>
#include <tally/session.h>

/* Open PATH (or "-" for a pipe); prints the error itself. 0 or nonzero exit status. */
int report_open(struct tally_data **d, const char *path, bool force);

/* Open the session for D with what the file knows: the dsos' build-ids and the
 * recording kernel's (BUILD_ID feature), which decides where kernel symbols come from
 * (see tally_session__new). 0 or -errno. */
int report_session_new(struct tally_session **s, struct tally_data *d,
		       const struct tally_session_opts *opts);
/* For the build-id commands: open PATH (the error printed) and a session that keeps
 * maps and dsos but no symbols, given the file's BUILD_ID list (a damaged list is
 * warned about; what could be read is kept). WITH_HITS NULL: nothing more. Else perf
 * buildid-list's rule: hits are wanted as *WITH_HITS says, always for a file without a
 * list, never for a file with AUX area data (too long to decode); the records are read
 * (samples marking the dsos they hit) when hits are wanted or the file is a pipe
 * (its build-ids are records); *WITH_HITS gets the decision. 0, or 1 with nothing left
 * open. */
int report_buildid_session(struct tally_data **d, struct tally_session **s, const char *path,
			   bool force, bool *with_hits);

/* After the records: if kernel addresses went without symbols, say why (one warning),
 * and the same for each binary whose symbols were wanted and not found (its file gone
 * or rebuilt, and no usable copy in the build-id cache; at most 10 named). */
void report_kernel_symbols_note(struct tally_session *s);

/* Resolved addresses of the recent past: samples repeat the same few ips and return
 * addresses, so a direct-mapped cache in front of tally_session__resolve saves most
 * lookups. Kernel addresses are cached once for all processes. Side-band records empty
 * only what they may change (resolve_cache__note): a process's map, comm or fork record
 * its own addresses, a kernel map or symbol record the kernel's, anything unknown all.
 * Each slot remembers the tick it was filled at; it is valid while no invalidation it
 * depends on came later. */
struct resolve_cache {
	struct resolve_slot {
		uint64_t ip;
		int32_t pid;		/* -1: a kernel address (any process) */
		uint32_t tick;
		uint32_t aux;		/* the caller's, about loc; 0 whenever refilled */
		struct tally_addr_loc loc;
	} *slots;
	uint32_t tick;		/* current time in invalidations */
	uint32_t wraps;		/* times tick started over (caches layered on this one
				 * forget everything then) */
	uint32_t all_inval;	/* last invalidation of everything */
	uint32_t kernel_inval;	/* of the kernel's addresses */
	struct pid_inval {
		int32_t pid;
		uint32_t tick;	/* 0: empty */
	} *pids;		/* open addressing, power of two */
	uint32_t pids_cap, pids_nr;
	int32_t memo_pid;	/* last pid looked up in pids, and its tick */
	uint32_t memo_tick;
};

/* Kernel or guest kernel: the addresses the kernel's maps and symbols hold. */
static inline bool cpumode_is_kernel(uint8_t cpumode)
{
	return cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL;
}

/* Allocate the slots and start the clock (tick 1), once; 0 or -ENOMEM. The lookups
 * below do it themselves. */
int resolve_cache__init(struct resolve_cache *c);
/* Resolve through the cache (which may be NULL or unallocated: then directly). The
 * loc's thread field is not meaningful from the cache. */
void resolve_cached(struct resolve_cache *c, struct tally_session *s, pid_t pid, pid_t tid,
		    uint8_t cpumode, uint64_t ip, struct tally_addr_loc *loc);
/* The same, returning the slot that now holds loc (NULL: uncached); its aux stays until
 * the slot is refilled, check slot->loc before trusting it. */
struct resolve_slot *resolve_cached_slot(struct resolve_cache *c, struct tally_session *s,
					 pid_t pid, pid_t tid, uint8_t cpumode, uint64_t ip,
					 struct tally_addr_loc *loc);
/* For caches layered on this one: the pid an address of cpumode is cached under (*key)
 * and the first fill tick still valid for it (entries filled at c->tick or later than
 * that are good). Allocates the slots on first use; 0 or -ENOMEM. */
int resolve_cache__valid_from(struct resolve_cache *c, pid_t pid, uint8_t cpumode,
			      int32_t *key, uint32_t *valid_from);
/* Hash of an address under its cache key (from resolve_cache__valid_from), for this
 * cache and the ones layered on it; take the high bits. */
static inline uint64_t resolve_cache__hash(uint64_t ip, int32_t key, uint8_t cpumode)
{
	return (ip ^ (ip >> 12) ^ ((uint64_t)(uint32_t)key * 0x9e3779b97f4a7c15ull) ^ cpumode) *
	       0xff51afd7ed558ccdull;
}
/* A side-band (non-sample) record is about to reach the session: forget what it may
 * change. */
void resolve_cache__note(struct resolve_cache *c, const struct perf_event_header *hdr);

/* A sample's call chain, resolved frame by frame (callee first), markers removed. */
struct frames {
	struct tally_addr_loc *v;
	struct resolve_slot **slots;	/* where v[i] came from (may be refilled since) */
	size_t nr, cap;
	struct resolve_cache cache;
};

void frames__exit(struct frames *f);
/* A call-chain entry that is a PERF_CONTEXT_* marker: sets *cpumode and returns 1, or -1
 * for an unknown marker (the chain is corrupt); 0 for an address. */
int chain_context(uint64_t ip, uint8_t *cpumode);
/* perf's default --max-stack: kernel.perf_event_max_stack (127 when unreadable). */
unsigned sysctl_max_stack(void);
/* Resolve smp's callchain, its first (innermost) max_stack frames (UINT_MAX: all; 0:
 * none). 0, 1 when the chain holds an unknown PERF_CONTEXT_* marker (corrupt: no
 * frames, perf then skips the sample in report), or -ENOMEM. */
int frames__resolve(struct frames *f, struct tally_session *s, const struct tally_sample *smp,
		    unsigned max_stack);

/* perf's level letter for a cpumode: '.', 'k', 'g', 'u', 'H'. */
char cpumode_level(uint8_t cpumode);

/* Split "a,b,c" into a NULL-terminated array (free with strlist_free). NULL on ENOMEM. */
char **strlist_parse(const char *s, size_t *nr);
void strlist_free(char **l);
bool strlist_has(char *const *l, const char *s);

/* The period a sample counts for: its PERIOD field, else the attr's fixed period, else 1. */
uint64_t sample_period(const struct tally_sample *smp, const struct perf_event_attr *attr);

#endif
