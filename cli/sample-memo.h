/*
 * Samples repeat themselves: a hot loop gives thousands of samples with the same ip, the
 * same call chain, the same thread. Resolving every frame of each again (report: finding
 * its histogram entries and logging its chain; script: formatting its frame lines) is
 * most of the work of reading a profile. The sample memo maps a sample's identity
 * (event, pid, tid, cpu, cpumode, ip, raw call chain) to a few words of the caller's
 * choosing: what the caller did with the first such sample, to be done again cheaply.
 *
 * What a sample resolves to depends on the session's state (maps, comms, threads, kernel
 * symbols), so an entry carries the resolve cache's tick from when it was made and the
 * caller uses it only while no side-band record that could change it came after (the
 * same rule as the resolve cache: a process's own records, kernel records for chains
 * with kernel frames, anything unknown for all); sample_memo__valid checks that.
 *
 * Memory is bounded: when the entries reach max_words (SAMPLE_MEMO_MAX_WORDS unless the
 * caller sets less) the memo starts over empty; and when fewer than min_hit_pct percent
 * (25 unless the caller sets another) of the first 20,000 samples were hits, samples
 * repeat too little for the memo to pay: it turns itself off and gives its memory back.
 */
#ifndef TALLY_CLI_SAMPLE_MEMO_H
#define TALLY_CLI_SAMPLE_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct resolve_cache;

#define SAMPLE_MEMO_MAX_WORDS ((size_t)4 << 20)	/* 32 MiB */

/* A sample's identity; fields a caller does not distinguish by are left 0 / -1. */
struct sample_key {
	int32_t pid, tid;
	int32_t cpu;
	uint16_t evidx;
	uint8_t cpumode;
	uint64_t ip;
	const uint64_t *chain;	/* callchain words as recorded (markers included) */
	size_t nr_chain;
};

/* One remembered sample; its chain and nr_words words of payload follow it. */
struct sample_memo_ent {
	uint64_t hash;
	uint32_t tick;		/* resolve cache tick when made (sample_memo__add) */
	uint16_t nr_chain;
	uint8_t cpumode;
	uint8_t flags;		/* SAMPLE_MEMO_* */
	int32_t pid, tid, cpu;
	uint16_t evidx;
	uint16_t pad;
	uint32_t nr_words;
	uint32_t pad2;
	uint64_t ip;
	/* uint64_t chain[nr_chain]; uint64_t payload[nr_words]; */
};

enum {
	SAMPLE_MEMO_KERNEL = 1,		/* the key has kernel addresses */
	SAMPLE_MEMO_USER = 2,		/* the caller's */
};

struct sample_memo {
	uint64_t *w;			/* entries, one after another */
	size_t nr, cap;			/* words */
	uint32_t *slots;		/* word offset + 1 of an entry, by hash (0: empty) */
	uint32_t nr_slots, cap_slots;
	uint64_t lookups, hits;
	uint32_t wraps;			/* the resolve cache's wraps its ticks belong to */
	size_t max_words;		/* budget (0: SAMPLE_MEMO_MAX_WORDS) */
	unsigned min_hit_pct;		/* hits it must have in its trial (0: 25) */
	bool off;			/* turned off: samples rarely repeat */
};

static inline void *sample_memo_ent_payload(struct sample_memo_ent *e)
{
	return (uint64_t *)(e + 1) + e->nr_chain;
}

/* The key's hash (never 0), as sample_memo__get computes it. */
uint64_t sample_key_hash(const struct sample_key *k);
/* The entry for k still valid under the resolve cache c (counted as a hit), or NULL
 * (a miss: the caller resolves the sample and may sample_memo__add its answer). */
struct sample_memo_ent *sample_memo__get(struct sample_memo *m, struct resolve_cache *c,
					 const struct sample_key *k, uint64_t *hash);
/* Room for nr_words words of payload for k, dated now; replaces an older entry for
 * the same key. NULL when the memo is off or out of memory (the caller goes on
 * without it). The entry moves on the next add: fill it in at once. */
struct sample_memo_ent *sample_memo__add(struct sample_memo *m, struct resolve_cache *c,
					 const struct sample_key *k, uint64_t hash,
					 size_t nr_words);
void sample_memo__exit(struct sample_memo *m);

#endif
