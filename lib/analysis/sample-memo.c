/*
 * The sample memo (tally/sample-memo.h): entries packed one after another in a growing
 * array of words, found through an open-addressing table of their offsets, dated with
 * the session's generation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/record.h>
#include <tally/session.h>
#include "internal/analysis.h"
#include "internal/util.h"

#define ENT_WORDS (sizeof(struct tly_memo_ent) / sizeof(uint64_t))
/* the memo decides whether it pays after each this many lookups */
#define TRIAL_LOOKUPS 20000

_Static_assert(sizeof(struct tly_memo_ent) % sizeof(uint64_t) == 0,
	       "memo entries are whole words");

struct tally_sample_memo *tally_sample_memo__new(size_t max_words, unsigned min_hit_pct)
{
	struct tally_sample_memo *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->max_words = max_words && max_words < TALLY_SAMPLE_MEMO_MAX_WORDS
			       ? max_words : TALLY_SAMPLE_MEMO_MAX_WORDS;
	m->min_hit_pct = min_hit_pct ? min_hit_pct : 25;
	return m;
}

static void release(struct tally_sample_memo *m)
{
	free(m->w);
	free(m->slots);
	m->w = NULL;
	m->slots = NULL;
	m->nr = m->cap = 0;
	m->nr_slots = m->cap_slots = 0;
	m->epoch++;
}

void tally_sample_memo__delete(struct tally_sample_memo *m)
{
	if (!m)
		return;
	release(m);
	free(m);
}

static inline uint64_t fold(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* Four independent lanes over the chain (one multiply per word, no chain of
 * dependent multiplies across the whole key), folded at the end. */
uint64_t tally_sample_key__hash(const struct tally_sample_key *k)
{
	const uint64_t m = 0x9e3779b97f4a7c15ull;
	uint64_t a = (uint64_t)(uint32_t)k->pid << 32 | (uint32_t)k->tid;
	uint64_t b = (uint64_t)(uint32_t)k->cpu << 32 | (uint64_t)k->evidx << 8 | k->cpumode;
	uint64_t c = k->ip, d = k->nr_chain;
	size_t i = 0, n = k->nr_chain;

	for (; i + 4 <= n; i += 4) {
		a = (a ^ k->chain[i]) * m;
		b = (b ^ k->chain[i + 1]) * m;
		c = (c ^ k->chain[i + 2]) * m;
		d = (d ^ k->chain[i + 3]) * m;
		a ^= a >> 31;
		b ^= b >> 31;
		c ^= c >> 31;
		d ^= d >> 31;
	}
	for (; i < n; i++)
		a = (a ^ k->chain[i]) * m + (a >> 29);
	uint64_t h = fold(a * 0xc2b2ae3d27d4eb4full ^ fold(b + 0x165667b19e3779f9ull) ^
			  fold(c * m) ^ fold(d + 0x27d4eb2f165667c5ull));

	return h ? h : 1;
}

static struct tly_memo_ent *ent_at(const struct tally_sample_memo *m, uint32_t slot)
{
	return (struct tly_memo_ent *)(m->w + slot - 1);
}

static void *payload(struct tly_memo_ent *e)
{
	return (uint64_t *)(e + 1) + e->nr_chain;
}

static bool key_eq(struct tly_memo_ent *e, const struct tally_sample_key *k, uint64_t hash)
{
	return e->hash == hash && e->ip == k->ip && e->pid == k->pid && e->tid == k->tid &&
	       e->nr_chain == k->nr_chain && e->cpu == k->cpu && e->evidx == k->evidx &&
	       e->cpumode == k->cpumode &&
	       (!k->nr_chain || !memcmp(e + 1, k->chain, k->nr_chain * sizeof(uint64_t)));
}

/* The slot of k's entry, or the empty slot where it would go (slots must exist). */
static uint32_t probe(const struct tally_sample_memo *m, const struct tally_sample_key *k,
		      uint64_t hash)
{
	uint32_t mask = m->cap_slots - 1, i;

	for (i = (uint32_t)hash & mask; m->slots[i]; i = (i + 1) & mask)
		if (key_eq(ent_at(m, m->slots[i]), k, hash))
			break;
	return i;
}

/* Is e still what resolving its sample would give: made after every invalidation of
 * its process's addresses, and of the kernel's when it has kernel frames? */
static bool still_valid(struct tally_session *s, const struct tly_memo_ent *e)
{
	if (e->gen < tally_session__valid_since(s, e->pid, PERF_RECORD_MISC_USER))
		return false;
	return !e->kernel ||
	       e->gen >= tally_session__valid_since(s, e->pid, PERF_RECORD_MISC_KERNEL);
}

/* Forget every entry (keeping the memory). */
static void reset(struct tally_sample_memo *m)
{
	m->nr = 0;
	m->nr_slots = 0;
	m->epoch++;
	if (m->slots)
		memset(m->slots, 0, m->cap_slots * sizeof(*m->slots));
}

void *tally_sample_memo__find(struct tally_sample_memo *m, struct tally_session *s,
			      const struct tally_sample_key *k, uint64_t *hash,
			      size_t *nr_words)
{
	struct tly_memo_ent *e = NULL;
	uint32_t i;

	if (m->off) {
		*hash = 0;	/* no use: __add refuses too */
		return NULL;
	}
	*hash = tally_sample_key__hash(k);
	m->lookups++;
	if (m->slots && m->slots[i = probe(m, k, *hash)])
		e = ent_at(m, m->slots[i]);
	if (e && !still_valid(s, e))
		e = NULL;	/* made before a record that may change it */
	m->hits += e != NULL;
	if (m->lookups % TRIAL_LOOKUPS == 0) {
		/* samples that repeated at first may stop repeating (a build's many programs) */
		if ((m->hits - m->trial_hits) * 100 < TRIAL_LOOKUPS * m->min_hit_pct) {
			release(m);
			m->off = true;
			return NULL;
		}
		m->trial_hits = m->hits;
	}
	if (!e)
		return NULL;
	*nr_words = e->nr_words;
	return payload(e);
}

static int grow_slots(struct tally_sample_memo *m)
{
	uint32_t cap = m->cap_slots ? m->cap_slots * 2 : 4096, mask = cap - 1;
	uint32_t *n = tly_calloc_big(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t k = 0; k < m->cap_slots; k++) {
		uint32_t i;

		if (!m->slots[k])
			continue;
		for (i = (uint32_t)ent_at(m, m->slots[k])->hash & mask; n[i]; i = (i + 1) & mask)
			;
		n[i] = m->slots[k];
	}
	free(m->slots);
	m->slots = n;
	m->cap_slots = cap;
	return 0;
}

static int reserve(struct tally_sample_memo *m, size_t words)
{
	if (m->nr + words > m->max_words)
		reset(m);	/* full: start over with what comes next */
	if ((m->nr_slots + 1) * 2 > m->cap_slots && grow_slots(m))
		return -ENOMEM;
	return tly_grow_big((void **)&m->w, &m->cap, m->nr + words, sizeof(*m->w), 8192);
}

/* Does the key hold kernel addresses: its own cpumode, or a chain marker that
 * switches to a kernel one? */
static bool has_kernel(const struct tally_sample_key *k)
{
	uint8_t mode;

	if (tally_cpumode_is_kernel(k->cpumode))
		return true;
	for (size_t j = 0; j < k->nr_chain; j++)
		if (tally_chain_context(k->chain[j], &mode) > 0 && tally_cpumode_is_kernel(mode))
			return true;
	return false;
}

void *tally_sample_memo__add(struct tally_sample_memo *m, struct tally_session *s,
			     const struct tally_sample_key *k, uint64_t hash, size_t nr_words)
{
	size_t words = ENT_WORDS + k->nr_chain + nr_words;
	struct tly_memo_ent *e;
	uint64_t gen;
	uint32_t i;

	if (m->off || k->nr_chain > UINT16_MAX || nr_words > UINT32_MAX || words > m->max_words)
		return NULL;
	gen = tally_session__generation(s);
	if (!gen || reserve(m, words))
		return NULL;
	i = probe(m, k, hash);	/* an older answer for the same key: this one replaces it */
	if (!m->slots[i])
		m->nr_slots++;
	m->slots[i] = (uint32_t)m->nr + 1;
	e = (struct tly_memo_ent *)(m->w + m->nr);
	m->nr += words;
	memset(e, 0, sizeof(*e));
	e->hash = hash;
	e->gen = gen;
	e->nr_chain = (uint16_t)k->nr_chain;
	e->nr_words = (uint32_t)nr_words;
	e->pid = k->pid;
	e->tid = k->tid;
	e->cpu = k->cpu;
	e->evidx = k->evidx;
	e->cpumode = k->cpumode;
	e->ip = k->ip;
	e->kernel = has_kernel(k);
	if (k->nr_chain)
		memcpy(e + 1, k->chain, k->nr_chain * sizeof(uint64_t));
	return payload(e);
}
