/*
 * Call-chain trees (tally/callchain.h): a trie of frames, built node by node (malloc'd,
 * so a live view can prune it) or from an arena (a report: millions of nodes freed at
 * once). Kids are found through the kid matched last, then a hash table after the kids
 * array of arena nodes with many kids, else a scan.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tally/session.h>
#include "internal/analysis.h"

struct tly_cc_block {
	struct tly_cc_block *next;
	size_t size;		/* of the whole mapping */
};

#define CC_BLOCK_MIN (256u << 10)
#define CC_HUGE_MIN (8u << 20)	/* blocks from this size get huge pages */
#define CC_BLOCK_MAX (64u << 20)
#define CC_HDR 64u	/* block header, rounded to keep nodes on cache lines */

/* n bytes (a multiple of 8) of zeroed memory from lane (0: nodes, 1: kids arrays) */
static void *arena_alloc(struct tly_cc_arena *a, int lane, size_t n)
{
	void *p;

	if (n > a->left[lane]) {
		size_t sz = a->next_size ? a->next_size : CC_BLOCK_MIN;
		struct tly_cc_block *b;

		while (sz - CC_HDR < n)
			sz *= 2;
		b = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			return NULL;
#ifdef MADV_HUGEPAGE
		/* a big report touches all of it soon: one fault per 2 MiB, not per page
		 * (small reports keep small pages: huge ones would only add to their RSS) */
		if (sz >= CC_HUGE_MIN)
			madvise(b, sz, MADV_HUGEPAGE);
#endif
		b->next = a->blocks;
		b->size = sz;
		a->blocks = b;
		a->cur[lane] = (char *)b + CC_HDR;
		a->left[lane] = sz - CC_HDR;
		if (sz < CC_BLOCK_MAX)
			a->next_size = sz * 2;
	}
	p = a->cur[lane];
	a->cur[lane] += n;
	a->left[lane] -= n;
	return p;
}

void tly_cc_arena__exit(struct tly_cc_arena *a)
{
	while (a && a->blocks) {
		struct tly_cc_block *b = a->blocks;

		a->blocks = b->next;
		munmap(b, b->size);
	}
	if (a)
		memset(a, 0, sizeof(*a));
}

void tally_cc_root__init(struct tally_cc_node *root)
{
	memset(root, 0, sizeof(*root));
}

static void node_free(struct tally_cc_node *n)
{
	for (uint32_t i = 0; i < n->nr_kids; i++) {
		struct tally_cc_node *k = tally_cc_node__kid(n, i);

		node_free(k);
		free(k);
	}
	if (n->nr_kids > 1)
		free(n->kids);
}

void tally_cc_root__exit(struct tally_cc_node *root)
{
	if (!root)
		return;
	node_free(root);
	tally_cc_root__init(root);
}

bool tally_symbol__is_inlined(const struct tally_symbol *s)
{
	static const size_t n = sizeof(TALLY_INLINED_SUFFIX) - 1;
	size_t len;

	if (!s || !s->name)
		return false;
	len = strlen(s->name);
	return len > n && !memcmp(s->name + len - n, TALLY_INLINED_SUFFIX, n);
}

int tally_symbol__name_cmp(const struct tally_symbol *a, const struct tally_symbol *b)
{
	size_t la = strlen(a->name), lb = strlen(b->name), n;
	int c;

	if (tally_symbol__is_inlined(a))
		la -= sizeof(TALLY_INLINED_SUFFIX) - 1;
	if (tally_symbol__is_inlined(b))
		lb -= sizeof(TALLY_INLINED_SUFFIX) - 1;
	n = la < lb ? la : lb;
	c = memcmp(a->name, b->name, n);
	if (c || la == lb)
		return c;
	return la < lb ? -(int)(unsigned char)b->name[n] : (unsigned char)a->name[n];
}

static inline bool frame_eq(const struct tally_cc_frame *a, const struct tally_cc_frame *b)
{
	if (a->sym && a->sym == b->sym && a->dso_key == b->dso_key)
		return true;
	if (a->dso_key != b->dso_key || !a->sym != !b->sym)
		return false;
	if (!a->dso_key && a->dso != b->dso)
		return false;
	if (a->sym)
		return a->sym == b->sym ||
		       (a->sym->start == b->sym->start && !tally_symbol__is_inlined(a->sym) &&
			!tally_symbol__is_inlined(b->sym));
	return a->ip == b->ip;
}

/*
 * Kids lookup. Arena trees (report) index nodes with many kids by a hash table stored
 * after the kids array: slots of kid index + 1, twice the array's capacity. Frames equal
 * under frame_eq hash alike: same interned dso name (or the same dso object without
 * one), same symbol start (or address without a symbol).
 */
#define CC_HASH_MIN 32u	/* array capacity from which arena nodes have a table */

static inline uint32_t frame_hash(const struct tally_cc_frame *f)
{
	uint64_t h = (uint64_t)(uintptr_t)(f->dso_key ? (const void *)f->dso_key
						      : (const void *)f->dso);

	h ^= (f->sym ? f->sym->start : f->ip) * 0x9e3779b97f4a7c15ull;
	h += f->sym ? 1 : 0;
	h *= 0xff51afd7ed558ccdull;
	return (uint32_t)(h >> 32);
}

static inline uint32_t *kid_slots(const struct tally_cc_node *n, uint32_t cap)
{
	return (uint32_t *)(n->kids + cap);
}

static inline uint32_t kid_cap(uint32_t nr)
{
	uint32_t c = 2;

	while (c < nr)
		c *= 2;
	return c;
}

static void slot_insert(struct tally_cc_node *n, uint32_t cap, uint32_t idx)
{
	uint32_t *slots = kid_slots(n, cap), mask = 2 * cap - 1;
	uint32_t h = frame_hash(&n->kids[idx]->f) & mask;

	while (slots[h])
		h = (h + 1) & mask;
	slots[h] = idx + 1;
}

/* Room for one more kid (nr_kids is about to grow). */
static int grow_kids(struct tally_cc_node *cur, struct tly_cc_arena *a)
{
	uint32_t nr = cur->nr_kids, cap;
	struct tally_cc_node **k;

	if (nr == 0 || (nr > 1 && (nr & (nr - 1))))
		return 0;	/* the direct kid, or room in the array */
	cap = nr * 2;
	if (a) {
		size_t sz = cap * sizeof(*k) + (cap >= CC_HASH_MIN ? 2 * cap * sizeof(uint32_t) : 0);

		k = arena_alloc(a, 1, sz);
	} else {
		k = nr == 1 ? malloc(cap * sizeof(*k)) : realloc(cur->kids, cap * sizeof(*k));
	}
	if (!k)
		return -ENOMEM;
	if (nr == 1)
		k[0] = cur->one;
	else if (a)
		memcpy(k, cur->kids, nr * sizeof(*k));
	cur->kids = k;
	if (a && cap >= CC_HASH_MIN) {
		for (uint32_t i = 0; i < nr; i++)	/* arena memory is zeroed */
			slot_insert(cur, cap, i);
	}
	return 0;
}

static struct tally_cc_node *find_kid(struct tally_cc_node *cur, bool hashed, const struct tally_cc_frame *f)
{
	uint32_t nr = cur->nr_kids;

	if (nr == 1)
		return frame_eq(&cur->one->f, f) ? cur->one : NULL;
	if (cur->hint < nr && frame_eq(&cur->kids[cur->hint]->f, f))
		return cur->kids[cur->hint];
	if (hashed && nr > CC_HASH_MIN / 2) {
		uint32_t cap = kid_cap(nr), mask = 2 * cap - 1, *slots = kid_slots(cur, cap);

		for (uint32_t h = frame_hash(f) & mask; slots[h]; h = (h + 1) & mask) {
			if (frame_eq(&cur->kids[slots[h] - 1]->f, f)) {
				cur->hint = slots[h] - 1;
				return cur->kids[cur->hint];
			}
		}
		return NULL;
	}
	for (uint32_t k = 0; k < nr; k++) {
		if (frame_eq(&cur->kids[k]->f, f)) {
			cur->hint = k;
			return cur->kids[k];
		}
	}
	return NULL;
}

int tly_cc_append(struct tally_cc_node *root, struct tly_cc_arena *a, const struct tally_cc_frame *frames,
	      size_t n, uint64_t period)
{
	struct tally_cc_node *cur = root;

	root->cumul += period;
	for (size_t i = 0; i < n; i++) {
		struct tally_cc_node *next = cur->nr_kids ? find_kid(cur, a != NULL, &frames[i]) : NULL;

		if (!next) {
			if (grow_kids(cur, a))
				return -ENOMEM;
			next = a ? arena_alloc(a, 0, sizeof(*next)) : calloc(1, sizeof(*next));
			if (!next)
				return -ENOMEM;
			next->f = frames[i];
			cur->hint = cur->nr_kids;
			if (cur->nr_kids == 0) {
				cur->one = next;
			} else {
				cur->kids[cur->nr_kids] = next;
				if (a && cur->nr_kids >= CC_HASH_MIN / 2)
					slot_insert(cur, kid_cap(cur->nr_kids + 1), cur->nr_kids);
			}
			cur->nr_kids++;
		}
		next->cumul += period;
		cur = next;
	}
	cur->hits += period;
	return 0;
}

bool tally_cc_frame__same(const struct tally_cc_frame *a, const struct tally_cc_frame *b)
{
	return frame_eq(a, b);
}

const char *tally_cc_frame__name(const struct tally_cc_frame *f, char *buf, size_t len)
{
	if (f->sym && f->sym->name)
		return f->sym->name;
	snprintf(buf, len, "%#" PRIx64, f->ip);
	return buf;
}

int tally_cc_root__append(struct tally_cc_node *root, const struct tally_cc_frame *frames,
			  size_t n, uint64_t period)
{
	return tly_cc_append(root, NULL, frames, n, period);
}

#define WALK_MAX 1024

struct walk {
	tally_cc_walk_fn fn;
	void *arg;
	const struct tally_cc_node *path[WALK_MAX];
};

static int walk(struct walk *w, const struct tally_cc_node *n, size_t depth)
{
	int ret;

	if (depth) {
		w->path[depth - 1] = n;
		ret = w->fn(w->arg, w->path, depth);
		if (ret)
			return ret;
		if (depth == WALK_MAX)
			return 0;
	}
	for (uint32_t i = 0; i < n->nr_kids; i++) {
		ret = walk(w, tally_cc_node__kid(n, i), depth + 1);
		if (ret)
			return ret;
	}
	return 0;
}

int tally_cc_root__walk(const struct tally_cc_node *root, tally_cc_walk_fn fn, void *arg)
{
	struct walk *w = malloc(sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	ret = walk(w, root, 0);
	free(w);
	return ret;
}

/* Branches that reach zero are freed, so a long live run keeps only the chains still
 * being sampled. */
void tly_cc_decay(struct tally_cc_node *n, bool zero)
{
	uint32_t kept = 0, nr = n->nr_kids;
	struct tally_cc_node *first = NULL;

	n->hits = zero ? 0 : n->hits * 7 / 8;
	n->cumul = zero ? 0 : n->cumul * 7 / 8;
	for (uint32_t i = 0; i < nr; i++) {
		struct tally_cc_node *k = tally_cc_node__kid(n, i);

		tly_cc_decay(k, zero);
		if (k->cumul || k->hits) {
			if (nr > 1)
				n->kids[kept] = k;
			if (!kept++)
				first = k;
		} else {
			tally_cc_root__exit(k);	/* its subtree */
			free(k);
		}
	}
	if (nr > 1 && kept <= 1) {	/* back to the direct kid (or none) */
		free(n->kids);
		n->one = first;
	} else if (nr == 1 && !kept) {
		n->one = NULL;
	}
	n->nr_kids = kept;
	n->hint = 0;
}
