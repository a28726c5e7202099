/*
 * The session's resolve cache and call-chain frames, as the rest of libtally sees them
 * (lib/model/resolve.c, lib/model/frames.c; the public face is in tally/session.h).
 *
 * Samples repeat the same few ips and return addresses, so a direct-mapped cache in
 * front of the session's map and symbol lookup saves most of them. Kernel addresses are
 * cached once for all processes. Side-band records empty only what they may change
 * (tly_resolve_cache__note, called by tally_session__process): a process's map, comm or
 * fork record its own addresses, a kernel map or symbol record the kernel's, anything
 * unknown all. Each slot remembers the tick it was filled at; it is valid while no
 * invalidation it depends on came later. Caches layered on this one (the sample memo,
 * script's line cache) date their entries on the same clock: tally_session__generation
 * and tally_session__valid_since.
 */
#ifndef TALLY_INTERNAL_SESSION_H
#define TALLY_INTERNAL_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/record.h>
#include <tally/session.h>

/* The slots are allocated at the largest size (pages never touched cost no memory)
 * and used from the smallest: the mask doubles, up to TLY_RESOLVE_SLOTS, when
 * addresses pushed others out more than twice the slots in use since it last grew.
 * Slots never move, so a note pointer stays a slot's (frames.c checks its address). */
#define TLY_RESOLVE_SLOTS 8192
#define TLY_RESOLVE_SLOTS_MIN 1024

struct tly_resolve_slot {
	uint64_t ip;
	int32_t pid;		/* -1: a kernel address (any process) */
	uint32_t tick;
	uint32_t note;		/* the analysis layer's, about loc; 0 whenever refilled */
	struct tally_addr_loc loc;	/* thread not kept: it is the sample's */
};

struct tly_resolve_cache {
	struct tly_resolve_slot *slots;	/* TLY_RESOLVE_SLOTS */
	uint32_t mask;		/* slots in use - 1 */
	uint32_t evictions;	/* since the mask last grew */
	uint32_t tick;		/* current time in invalidations */
	uint32_t wraps;		/* times tick started over */
	uint32_t all_inval;	/* last invalidation of everything */
	uint32_t kernel_inval;	/* of the kernel's addresses */
	struct tly_pid_inval {
		int32_t pid;
		uint32_t tick;	/* 0: empty */
	} *pids;		/* open addressing, power of two */
	uint32_t pids_cap, pids_nr;
	int32_t memo_pid;	/* last pid looked up in pids, and its tick */
	uint32_t memo_tick;
	uint32_t fills;		/* slots (re)filled, ever (wraps) */
};

/* Allocate the slots and start the clock (tick 1), once; 0 or -ENOMEM. */
int tly_resolve_cache__init(struct tly_resolve_cache *c);
void tly_resolve_cache__exit(struct tly_resolve_cache *c);
/* A side-band (non-sample) record is about to change the session: forget what it may
 * change. */
void tly_resolve_cache__note(struct tly_resolve_cache *c, const struct perf_event_header *hdr);
/* The pid an address of cpumode is cached under (*key) and the first fill tick still
 * valid for it. Allocates the slots on first use; 0 or -ENOMEM. */
int tly_resolve_cache__valid_from(struct tly_resolve_cache *c, pid_t pid, uint8_t cpumode,
				  int32_t *key, uint32_t *valid_from);
/* An address is about to replace another in a slot: count it, and use more slots
 * once they have been too many. */
static inline void tly_resolve_cache__evicted(struct tly_resolve_cache *c)
{
	if (++c->evictions > 2 * (c->mask + 1) && c->mask + 1 < TLY_RESOLVE_SLOTS) {
		c->mask = 2 * c->mask + 1;
		c->evictions = 0;
	}
}
/* Hash of an address under its cache key; take the high bits. */
static inline uint64_t tly_resolve_hash(uint64_t ip, int32_t key, uint8_t cpumode)
{
	return (ip ^ (ip >> 12) ^ ((uint64_t)(uint32_t)key * 0x9e3779b97f4a7c15ull) ^ cpumode) *
	       0xff51afd7ed558ccdull;
}

/* The slot holding ip under key (cpumode), filled at or after valid_from
 * (tly_resolve_cache__valid_from); NULL: not cached. */
static inline struct tly_resolve_slot *tly_resolve_cache__hit(struct tly_resolve_cache *c,
							      uint64_t ip, int32_t key,
							      uint8_t cpumode, uint32_t valid_from)
{
	struct tly_resolve_slot *sl = &c->slots[(tly_resolve_hash(ip, key, cpumode) >> 40) & c->mask];

	return sl->tick >= valid_from && sl->ip == ip && sl->pid == key &&
	       sl->loc.cpumode == cpumode ? sl : NULL;
}

/* A generation as the public API gives it: the tick, with the wraps above it. */
static inline uint64_t tly_resolve_generation(uint32_t wraps, uint32_t tick)
{
	return (uint64_t)wraps << 32 | tick;
}

/* The session's cache (allocated on first use). */
struct tly_resolve_cache *tly_session__cache(struct tally_session *s);

/* Resolve through the cache without looking up the thread (loc->thread is NULL).
 * *note (if note is not NULL) is the slot's note word for this location, or NULL when
 * uncached; it stays with the location until the slot is refilled. */
void tly_session__resolve_noted(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
				uint64_t ip, struct tally_addr_loc *loc, uint32_t **note);

/* Make owner the one user of the notes (the analysis layer's frame ids): true if it is
 * now (notes start at 0), false if another owns them; owner NULL gives them up. */
bool tly_session__own_notes(struct tally_session *s, const void *owner);

/* The session's unwinder (tally/unwind.h), made on first use (NULL on ENOMEM), looking
 * addresses up in the maps of process pid, thread tid. */
struct tally_unwinder;
struct tally_unwinder *tly_session__unwinder(struct tally_session *s, pid_t pid, pid_t tid);

/* A sample's frames (tally_session__resolve_chain), callee first. notes[i] is frame
 * i's note word, or NULL when it is uncached or a later frame of the same chain took
 * its slot. */
struct tally_frames {
	struct tally_addr_loc *v;
	uint32_t **notes;
	struct tally_line *lines;	/* lines[i]: v[i].line's (expanded frames) */
	size_t nr, cap;
};

/* tally_session__set_inline's mode, and the source lines its frames come from (made on
 * first use; NULL on ENOMEM). */
enum tally_inline_mode tly_session__inline_mode(const struct tally_session *s);
struct tally_dso_lines *tly_session__inline_lines(struct tally_session *s);

#endif
