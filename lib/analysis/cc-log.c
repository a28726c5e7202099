/*
 * The deferred chain log (TALLY_TREES_DEFER, see internal/analysis.h): a report logs
 * each distinct chain once with its periods summed and builds trees only for the entries
 * heavy enough to print a branch, at the end (most of a system-wide file's entries
 * cannot, and their trees would be most of the nodes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal/analysis.h"
#include "internal/util.h"

#define LOG_HUGE_MIN (8u << 20)	/* mappings from this size get huge pages */

static inline uint32_t log_hash(const struct tally_cc_frame *f)
{
	uint64_t h = (uint64_t)(uintptr_t)f->dso * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)(uintptr_t)f->sym * 0xc2b2ae3d27d4eb4full;
	h ^= f->ip + (uint64_t)(uintptr_t)f->dso_key;
	h *= 0xff51afd7ed558ccdull;
	return (uint32_t)(h >> 32);
}

int tly_cc_log__intern(struct tly_cc_log *l, const struct tally_cc_frame *f, uint32_t *id)
{
	uint32_t mask, i;

	if (l->nr_frames == l->cap_frames) {
		uint32_t cap = l->cap_frames ? l->cap_frames * 2 : 4096;
		struct tally_cc_frame *fr = tly_realloc_big(l->frames, cap * sizeof(*fr));
		uint32_t *sl;

		if (!fr)
			return -ENOMEM;
		l->frames = fr;
		sl = tly_calloc_big(2 * (size_t)cap, sizeof(*sl));
		if (!sl)
			return -ENOMEM;
		for (uint32_t k = 0; k < l->nr_frames; k++) {
			for (i = log_hash(&fr[k]) & (2 * cap - 1); sl[i]; i = (i + 1) & (2 * cap - 1))
				;
			sl[i] = k + 1;
		}
		free(l->slots);
		l->slots = sl;
		l->cap_frames = cap;
	}
	mask = 2 * l->cap_frames - 1;
	for (i = log_hash(f) & mask; l->slots[i]; i = (i + 1) & mask) {
		const struct tally_cc_frame *g = &l->frames[l->slots[i] - 1];

		if (g->sym == f->sym && g->ip == f->ip && g->dso == f->dso &&
		    g->dso_key == f->dso_key) {
			*id = l->slots[i] - 1;
			return 0;
		}
	}
	l->frames[l->nr_frames] = *f;
	l->slots[i] = l->nr_frames + 1;
	*id = l->nr_frames++;
	return 0;
}

uint32_t *tly_cc_log__append(struct tly_cc_log *l, size_t n)
{
	uint32_t *p;

	if (l->nr + n > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : (256u << 10) / sizeof(uint32_t);
		void *m;

		while (cap < l->nr + n)
			cap *= 2;
		/* a mapping that grows in place (or moves without copying pages) */
		if (l->w)
			m = mremap(l->w, l->cap * sizeof(uint32_t), cap * sizeof(uint32_t),
				   MREMAP_MAYMOVE);
		else
			m = mmap(NULL, cap * sizeof(uint32_t), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		if (cap * sizeof(uint32_t) >= LOG_HUGE_MIN)
			tly_huge_hint(m, cap * sizeof(uint32_t));
		l->w = m;
		l->cap = cap;
	}
	p = l->w + l->nr;
	l->nr += n;
	return p;
}

/* Over the record's words but its period (2 and 3), two at a time (a record is an
 * even number of words). */
static uint32_t rec_hash(const uint32_t *w, size_t size)
{
	uint64_t h = (size ^ ((uint64_t)w[0] << 32 | w[1])) * 0x9e3779b97f4a7c15ull;

	for (size_t i = 4; i + 1 < size; i += 2)
		h = (h ^ h >> 31 ^ ((uint64_t)w[i] << 32 | w[i + 1])) * 0xff51afd7ed558ccdull;
	h ^= h >> 32;
	return (uint32_t)((h * 0xc4ceb9fe1a85ec53ull) >> 32);
}

/* the size of the record at word offset off: n frames, 4 + 2n words */
static size_t rec_size(const struct tly_cc_log *l, size_t off)
{
	return 4 + 2 * (size_t)l->w[off];
}

static bool rec_eq(const uint32_t *a, const uint32_t *b, size_t size)
{
	return a[0] == b[0] && a[1] == b[1] &&
	       !memcmp(a + 4, b + 4, (size - 4) * sizeof(uint32_t));
}

int tly_cc_log__commit(struct tly_cc_log *l, size_t size, size_t *at)
{
	size_t off = l->nr - size;
	uint32_t *w = l->w + off, h, mask, i;

	*at = off;
	if (l->nr >= UINT32_MAX)
		return 0;	/* offsets no longer fit: keep the record as it is */
	if ((l->nr_recs + 1) * 2 > l->recs_cap) {
		uint32_t cap = l->recs_cap ? l->recs_cap * 2 : 4096;
		struct tly_cc_log_rec *n = tly_calloc_big(cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (uint32_t k = 0; k < l->recs_cap; k++) {
			if (!l->recs[k].off1)
				continue;
			for (i = l->recs[k].hash & (cap - 1); n[i].off1; i = (i + 1) & (cap - 1))
				;
			n[i] = l->recs[k];
		}
		free(l->recs);
		l->recs = n;
		l->recs_cap = cap;
	}
	h = rec_hash(w, size);
	mask = l->recs_cap - 1;
	for (i = h & mask; l->recs[i].off1; i = (i + 1) & mask) {
		uint32_t *o = l->w + l->recs[i].off1 - 1;

		if (l->recs[i].hash == h && rec_size(l, l->recs[i].off1 - 1) == size &&
		    rec_eq(o, w, size)) {
			*at = l->recs[i].off1 - 1;
			tly_cc_log__add_period(l, *at, w[2] | (uint64_t)w[3] << 32);
			l->nr = off;	/* drop the new copy */
			return 0;
		}
	}
	l->recs[i].off1 = (uint32_t)off + 1;
	l->recs[i].hash = h;
	l->nr_recs++;
	return 0;
}

void tly_cc_log__drop(struct tly_cc_log *l, size_t from, size_t to)
{
	if (l->w && to > from && to <= l->cap)
		madvise(l->w + from, (to - from) * sizeof(uint32_t), MADV_DONTNEED);
}

void tly_cc_log__exit(struct tly_cc_log *l)
{
	if (l->w)
		munmap(l->w, l->cap * sizeof(uint32_t));
	free(l->frames);
	free(l->slots);
	free(l->recs);
	memset(l, 0, sizeof(*l));
}
