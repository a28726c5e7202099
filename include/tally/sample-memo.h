/*
 * The sample memo. Samples repeat themselves: a hot loop gives thousands of samples
 * with the same ip, the same call chain, the same thread. Resolving every frame of each
 * again (finding its histogram entries, formatting its frame lines) is most of the work
 * of reading a profile. The memo maps a sample's identity (event, pid, tid, cpu,
 * cpumode, ip, raw call chain) to a few words of the caller's choosing: what the caller
 * made of the first such sample, to be used again cheaply.
 *
 * What a sample resolves to depends on the session's state (maps, comms, threads,
 * kernel symbols), so an entry is dated with the session's generation when it was made
 * and is found only while no side-band record that could change it came after (a
 * process's own records; kernel records for samples with kernel frames; anything
 * unknown for all): see tally_session__valid_since.
 *
 * Memory is bounded: when the entries reach the budget the memo starts over empty; and
 * when fewer than min_hit_pct percent of a trial's lookups were hits (every 20,000
 * lookups is one trial), samples repeat too little for the memo to pay: it turns itself
 * off and gives its memory back (every later lookup misses and every add is refused).
 */
#ifndef TALLY_SAMPLE_MEMO_H
#define TALLY_SAMPLE_MEMO_H

#include <tally/api.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_session;
struct tally_sample_memo;

/* The default and largest budget: 32 MiB of entries. */
#define TALLY_SAMPLE_MEMO_MAX_WORDS ((size_t)4 << 20)

/* A sample's identity; fields a caller does not tell samples apart by are 0 / -1. */
struct tally_sample_key {
	int32_t pid, tid;
	int32_t cpu;
	uint16_t evidx;
	uint8_t cpumode;
	uint64_t ip;
	const uint64_t *chain;	/* call-chain entries as recorded (markers included) */
	size_t nr_chain;
};

/* max_words: budget in 8-byte words of entries (0 or more than the largest: the
 * largest); min_hit_pct: the hits it must have in each trial (0: 25). NULL: ENOMEM. */
TALLY_API struct tally_sample_memo *tally_sample_memo__new(size_t max_words, unsigned min_hit_pct);
TALLY_API void tally_sample_memo__delete(struct tally_sample_memo *m);

/* The key's hash (never 0), as __find computes it. */
TALLY_API uint64_t tally_sample_key__hash(const struct tally_sample_key *k);
/* The payload remembered for k, still valid in session s (counted as a hit), with its
 * size in words in *nr_words; or NULL (a miss: resolve the sample, then __add what came
 * of it). *hash is k's hash either way, for __add; 0 once the memo is off (its trial
 * found too few hits: every later __find and __add is in vain). */
TALLY_API void *tally_sample_memo__find(struct tally_sample_memo *m, struct tally_session *s,
					const struct tally_sample_key *k, uint64_t *hash,
					size_t *nr_words);
/* Room for nr_words words of payload (8-byte aligned) for k, dated now; replaces an
 * older entry for the same key. NULL when the memo is off, the entry is bigger than the
 * budget, or memory ran out (go on without it). The payload moves on the next add:
 * fill it in at once. */
TALLY_API void *tally_sample_memo__add(struct tally_sample_memo *m, struct tally_session *s,
				       const struct tally_sample_key *k, uint64_t hash,
				       size_t nr_words);

#ifdef __cplusplus
}
#endif
#endif
