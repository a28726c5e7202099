/*
 * Call-chain trees: building (a trie of frames) and perf 6.1's stdio renderings.
 * The layout rules (12-column margin, "|", "---", "--NN.NN%--", 11-column levels, the
 * single-chain shortcut) were read off perf 6.1's output; see callchain.h for how the
 * trie maps onto perf's runs of frames.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tally/session.h>

#include "callchain.h"
#include "fmt.h"

struct cc_block {
	struct cc_block *next;
	size_t size;		/* of the whole mapping */
};

#define CC_BLOCK_MIN (256u << 10)
#define CC_HUGE_MIN (8u << 20)
#define CC_BLOCK_MAX (64u << 20)
#define CC_HDR 64u	/* block header, rounded to keep nodes on cache lines */

/* n bytes (a multiple of 8) of zeroed memory from lane (0: nodes, 1: kids arrays) */
static void *arena_alloc(struct cc_arena *a, int lane, size_t n)
{
	void *p;

	if (n > a->left[lane]) {
		size_t sz = a->next_size ? a->next_size : CC_BLOCK_MIN;
		struct cc_block *b;

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

void cc_arena_free(struct cc_arena *a)
{
	while (a && a->blocks) {
		struct cc_block *b = a->blocks;

		a->blocks = b->next;
		munmap(b, b->size);
	}
	if (a)
		memset(a, 0, sizeof(*a));
}

void cc_root_init(struct cc_node *root)
{
	memset(root, 0, sizeof(*root));
}

static void node_free(struct cc_node *n)
{
	for (uint32_t i = 0; i < n->nr_kids; i++) {
		struct cc_node *k = cc_kid(n, i);

		node_free(k);
		free(k);
	}
	if (n->nr_kids > 1)
		free(n->kids);
}

void cc_root_free(struct cc_node *root)
{
	if (!root)
		return;
	node_free(root);
	cc_root_init(root);
}

static inline bool frame_eq(const struct cc_frame *a, const struct cc_frame *b)
{
	if (a->sym && a->sym == b->sym && a->dso_key == b->dso_key)
		return true;
	if (a->dso_key != b->dso_key || !a->sym != !b->sym)
		return false;
	if (!a->dso_key && a->dso != b->dso)
		return false;
	if (a->sym)
		return a->sym == b->sym || a->sym->start == b->sym->start;
	return a->ip == b->ip;
}

/*
 * Kids lookup. Arena trees (report) index nodes with many kids by a hash table stored
 * after the kids array: slots of kid index + 1, twice the array's capacity. Frames equal
 * under frame_eq hash alike: same interned dso name (or the same dso object without
 * one), same symbol start (or address without a symbol).
 */
#define CC_HASH_MIN 32u	/* array capacity from which arena nodes have a table */

static inline uint32_t frame_hash(const struct cc_frame *f)
{
	uint64_t h = (uint64_t)(uintptr_t)(f->dso_key ? (const void *)f->dso_key
						      : (const void *)f->dso);

	h ^= (f->sym ? f->sym->start : f->ip) * 0x9e3779b97f4a7c15ull;
	h += f->sym ? 1 : 0;
	h *= 0xff51afd7ed558ccdull;
	return (uint32_t)(h >> 32);
}

static inline uint32_t *kid_slots(const struct cc_node *n, uint32_t cap)
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

static void slot_insert(struct cc_node *n, uint32_t cap, uint32_t idx)
{
	uint32_t *slots = kid_slots(n, cap), mask = 2 * cap - 1;
	uint32_t h = frame_hash(&n->kids[idx]->f) & mask;

	while (slots[h])
		h = (h + 1) & mask;
	slots[h] = idx + 1;
}

/* Room for one more kid (nr_kids is about to grow). */
static int grow_kids(struct cc_node *cur, struct cc_arena *a)
{
	uint32_t nr = cur->nr_kids, cap;
	struct cc_node **k;

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

static struct cc_node *find_kid(struct cc_node *cur, bool hashed, const struct cc_frame *f)
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

int cc_append(struct cc_node *root, struct cc_arena *a, const struct cc_frame *frames,
	      size_t n, uint64_t period)
{
	struct cc_node *cur = root;

	root->cumul += period;
	for (size_t i = 0; i < n; i++) {
		struct cc_node *next = cur->nr_kids ? find_kid(cur, a != NULL, &frames[i]) : NULL;

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

/* ---- deferred chains ---- */

static inline uint32_t log_hash(const struct cc_frame *f)
{
	uint64_t h = (uint64_t)(uintptr_t)f->dso * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)(uintptr_t)f->sym * 0xc2b2ae3d27d4eb4full;
	h ^= f->ip + (uint64_t)(uintptr_t)f->dso_key;
	h *= 0xff51afd7ed558ccdull;
	return (uint32_t)(h >> 32);
}

int cc_log__intern(struct cc_log *l, const struct cc_frame *f, uint32_t *id)
{
	uint32_t mask, i;

	if (l->nr_frames == l->cap_frames) {
		uint32_t cap = l->cap_frames ? l->cap_frames * 2 : 4096;
		struct cc_frame *fr = realloc(l->frames, cap * sizeof(*fr));
		uint32_t *sl;

		if (!fr)
			return -ENOMEM;
		l->frames = fr;
		sl = calloc(2 * (size_t)cap, sizeof(*sl));
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
		const struct cc_frame *g = &l->frames[l->slots[i] - 1];

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

uint32_t *cc_log__append(struct cc_log *l, size_t n)
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
#ifdef MADV_HUGEPAGE
		if (cap * sizeof(uint32_t) >= CC_HUGE_MIN)
			madvise(m, cap * sizeof(uint32_t), MADV_HUGEPAGE);
#endif
		l->w = m;
		l->cap = cap;
	}
	p = l->w + l->nr;
	l->nr += n;
	return p;
}

static uint32_t rec_hash(const uint32_t *w, size_t size)
{
	uint64_t h = size;

	for (size_t i = 0; i < size; i++) {
		if (i == 2 || i == 3)
			continue;
		h = (h ^ w[i]) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32));
}

/* the size of the record at word offset off: n frames, 4 + 2n words */
static size_t rec_size(const struct cc_log *l, size_t off)
{
	return 4 + 2 * (size_t)l->w[off];
}

static bool rec_eq(const uint32_t *a, const uint32_t *b, size_t size)
{
	return a[0] == b[0] && a[1] == b[1] &&
	       !memcmp(a + 4, b + 4, (size - 4) * sizeof(uint32_t));
}

int cc_log__commit(struct cc_log *l, size_t size, size_t *at)
{
	size_t off = l->nr - size;
	uint32_t *w = l->w + off, h, mask, i;

	*at = off;
	if (l->nr >= UINT32_MAX)
		return 0;	/* offsets no longer fit: keep the record as it is */
	if ((l->nr_recs + 1) * 2 > l->recs_cap) {
		uint32_t cap = l->recs_cap ? l->recs_cap * 2 : 4096;
		struct cc_log_rec *n = calloc(cap, sizeof(*n));

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
			cc_log__add_period(l, *at, w[2] | (uint64_t)w[3] << 32);
			l->nr = off;	/* drop the new copy */
			return 0;
		}
	}
	l->recs[i].off1 = (uint32_t)off + 1;
	l->recs[i].hash = h;
	l->nr_recs++;
	return 0;
}

void cc_log__release(struct cc_log *l, size_t from, size_t to)
{
	if (l->w && to > from && to <= l->cap)
		madvise(l->w + from, (to - from) * sizeof(uint32_t), MADV_DONTNEED);
}

void cc_log__exit(struct cc_log *l)
{
	if (l->w)
		munmap(l->w, l->cap * sizeof(uint32_t));
	free(l->frames);
	free(l->slots);
	free(l->recs);
	memset(l, 0, sizeof(*l));
}

const char *cc_frame_name(const struct cc_frame *f, char *buf, size_t len)
{
	if (f->sym && f->sym->name)
		return f->sym->name;
	snprintf(buf, len, "%#" PRIx64, f->ip);
	return buf;
}

/* A run: perf's radix node, from head down single-child hit-less nodes to end. */
struct run {
	struct cc_node *head, *end;
};

static struct cc_node *run_end(struct cc_node *n)
{
	while (n->hits == 0 && n->nr_kids == 1)
		n = cc_kid(n, 0);
	return n;
}

/* Order of branches: heaviest first; perf breaks ties by its insertion tree, ordered by
 * (dso object, address) descending. perf compares dso objects by address, which grow
 * in the order the file's maps make them: tally compares that order itself
 * (tally_dso__index), not its own heap addresses. */
static bool run_after(const struct cc_node *a, const struct cc_node *b)
{
	uint64_t x, y;

	if (a->cumul != b->cumul)
		return a->cumul < b->cumul;
	if (a->f.dso_key != b->f.dso_key) {
		if (!a->f.dso_key || !b->f.dso_key)
			return !a->f.dso_key;
		return tally_dso__index(a->f.dso) < tally_dso__index(b->f.dso);
	}
	x = a->f.sym ? a->f.sym->start : a->f.ip;
	y = b->f.sym ? b->f.sym->start : b->f.ip;
	return x < y;
}

/* The runs below node (children of its run end), sorted by weight, pruned. */
static struct run *sorted_runs(struct cc_node *end, uint64_t min_hit, size_t *nr)
{
	struct run *r = NULL;
	size_t n = 0;

	*nr = 0;
	if (!end->nr_kids)
		return NULL;
	r = calloc(end->nr_kids, sizeof(*r));
	if (!r)
		return NULL;
	for (size_t i = 0; i < end->nr_kids; i++) {
		struct cc_node *k = cc_kid(end, (uint32_t)i);

		if (k->cumul < min_hit || k->cumul == 0)
			continue;
		r[n].head = k;
		r[n].end = run_end(k);
		n++;
	}
	/* stable: insertion sort keeps first-seen order among equal weights */
	for (size_t i = 1; i < n; i++) {
		struct run t = r[i];
		size_t j = i;

		while (j > 0 && run_after(r[j - 1].head, t.head)) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = t;
	}
	*nr = n;
	return r;
}

struct printer {
	FILE *fp;
	const struct cc_print_opts *o;
	int err;
};

static void margin(struct printer *p, int left)
{
	fmt_spaces(p->fp, 12 + (size_t)(left > 0 ? left : 0));
}

static void print_value(struct printer *p, uint64_t v, uint64_t total)
{
	double pct = total ? 100.0 * (double)v / (double)total : 0.0;

	fmt_pct(p->fp, pct, 0);
}

static void graph_line(struct printer *p, int depth, unsigned long mask, int left)
{
	margin(p, left);
	for (int i = 0; i < depth; i++)
		fwrite_unlocked(mask & (1ul << i) ? "|          " : "           ", 1, 11, p->fp);
	fputc_unlocked('\n', p->fp);
}

static void graph_frame(struct printer *p, uint64_t value, const char *name, int depth,
			unsigned long mask, int period, uint64_t total, int left)
{
	margin(p, left);
	for (int i = 0; i < depth; i++) {
		fputc_unlocked(mask & (1ul << i) ? '|' : ' ', p->fp);
		if (!period && i == depth - 1) {
			fwrite_unlocked("--", 1, 2, p->fp);
			print_value(p, value, total);
			fwrite_unlocked("--", 1, 2, p->fp);
		} else {
			fwrite_unlocked("          ", 1, 10, p->fp);
		}
	}
	fmt_puts(p->fp, name);
	fputc_unlocked('\n', p->fp);
}

static uint64_t min_hit_for(const struct printer *p, uint64_t total)
{
	return (uint64_t)((double)total * (p->o->min_percent / 100.0));
}

/* Print the branches below end; returns how many were printed at this level. */
static size_t graph_level(struct printer *p, struct cc_node *end, uint64_t total, int depth,
			  unsigned long depth_mask, int left)
{
	bool rel = p->o->mode == CC_FRACTAL;
	uint64_t min_hit = rel ? min_hit_for(p, end->cumul - end->hits)
			       : min_hit_for(p, p->o->total);
	unsigned long new_mask = depth_mask;
	uint64_t remaining = total;
	size_t nr;
	struct run *runs;
	char buf[64];

	if (depth >= (int)(sizeof(unsigned long) * 8) - 1)
		return 0;
	runs = sorted_runs(end, min_hit, &nr);
	if (!runs && end->nr_kids) {
		p->err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < nr; i++) {
		struct cc_node *n = runs[i].head;
		int idx = 0;

		remaining -= n->cumul;
		if (i + 1 == nr && (!rel || !remaining))
			new_mask &= ~(1ul << (depth - 1));
		graph_line(p, depth, depth_mask, left);
		for (;;) {
			graph_frame(p, runs[i].head->cumul, cc_frame_name(&n->f, buf, sizeof(buf)),
				    depth, new_mask, idx++, total, left);
			if (n == runs[i].end)
				break;
			n = cc_kid(n, 0);
		}
		graph_level(p, runs[i].end,
			    rel ? runs[i].end->cumul - runs[i].end->hits : total, depth + 1,
			    new_mask | (1ul << depth), left);
	}
	if (rel && remaining && remaining != total && nr) {
		new_mask &= ~(1ul << (depth - 1));
		graph_frame(p, remaining, "[...]", depth, new_mask, 0, total, left);
	}
	free(runs);
	return nr;
}

static void print_graph(struct printer *p, struct cc_node *root)
{
	const struct cc_print_opts *o = p->o;
	uint64_t total = o->mode == CC_FRACTAL ? o->parent : o->total;
	uint64_t min_hit = o->mode == CC_FRACTAL ? min_hit_for(p, root->cumul - root->hits)
						 : min_hit_for(p, o->total);
	struct cc_node *start = root;
	bool printed_any = false;
	int left = 0;
	size_t nr;
	struct run *runs = sorted_runs(root, min_hit, &nr);
	char buf[64];

	if (!runs && root->nr_kids) {
		p->err = -ENOMEM;
		return;
	}
	if (nr == 1 && runs[0].head->cumul == o->parent) {
		struct cc_node *n = runs[0].head;
		bool printed = false;
		int i = 0;

		for (;;) {
			if (!(i++ == 0 && o->skip_first)) {
				if (!printed) {
					margin(p, left);
					fputs("|\n", p->fp);
					margin(p, left);
					fputs("---", p->fp);
					left += 3;
					printed = true;
				} else {
					margin(p, left);
				}
				fmt_puts(p->fp, cc_frame_name(&n->f, buf, sizeof(buf)));
				fputc_unlocked('\n', p->fp);
				printed_any = true;
			}
			if (n == runs[0].end)
				break;
			n = cc_kid(n, 0);
		}
		start = runs[0].end;
	}
	free(runs);
	if (graph_level(p, start, total, 1, 1, left))
		printed_any = true;
	if (printed_any)
		fputc('\n', p->fp);
}

/* Flat and folded: every node where chains end, heaviest first, with its full path. */
struct leaf {
	struct cc_node *node;
	struct cc_node **path;
	size_t depth;
};

struct leaves {
	struct leaf *v;
	size_t nr, cap;
	uint64_t min_hit;
	struct cc_node *stack[512];
	int err;
};

static void collect(struct leaves *l, struct cc_node *n, size_t depth)
{
	if (depth >= sizeof(l->stack) / sizeof(l->stack[0]))
		return;
	if (depth > 0)
		l->stack[depth - 1] = n;
	if (depth > 0 && n->hits && n->hits >= l->min_hit) {
		if (l->nr == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct leaf *v = realloc(l->v, cap * sizeof(*v));

			if (!v) {
				l->err = -ENOMEM;
				return;
			}
			l->v = v;
			l->cap = cap;
		}
		l->v[l->nr].node = n;
		l->v[l->nr].depth = depth;
		l->v[l->nr].path = malloc(depth * sizeof(struct cc_node *));
		if (!l->v[l->nr].path) {
			l->err = -ENOMEM;
			return;
		}
		memcpy(l->v[l->nr].path, l->stack, depth * sizeof(struct cc_node *));
		l->nr++;
	}
	for (size_t i = 0; i < n->nr_kids && !l->err; i++)
		collect(l, cc_kid(n, (uint32_t)i), depth + 1);
}

static void print_flat(struct printer *p, struct cc_node *root)
{
	struct leaves l = { .min_hit = min_hit_for(p, p->o->total) };
	char buf[64];

	collect(&l, root, 0);
	if (l.err)
		p->err = l.err;
	for (size_t i = 1; i < l.nr; i++) {
		struct leaf t = l.v[i];
		size_t j = i;

		while (j > 0 && l.v[j - 1].node->hits < t.node->hits) {
			l.v[j] = l.v[j - 1];
			j--;
		}
		l.v[j] = t;
	}
	for (size_t i = 0; i < l.nr; i++) {
		struct leaf *lf = &l.v[i];

		if (p->o->print_limit && i >= p->o->print_limit)
			break;
		if (p->o->mode == CC_FLAT) {
			fputs("           ", p->fp);
			print_value(p, lf->node->cumul, p->o->total);
			fputc('\n', p->fp);
			for (size_t d = 0; d < lf->depth; d++)
				fprintf(p->fp, "                %s\n",
					cc_frame_name(&lf->path[d]->f, buf, sizeof(buf)));
			fputc('\n', p->fp);
		} else {
			print_value(p, lf->node->hits, p->o->total);
			fputc(' ', p->fp);
			for (size_t d = 0; d < lf->depth; d++)
				fprintf(p->fp, "%s%s", d ? ";" : "",
					cc_frame_name(&lf->path[d]->f, buf, sizeof(buf)));
			fputc('\n', p->fp);
		}
	}
	for (size_t i = 0; i < l.nr; i++)
		free(l.v[i].path);
	free(l.v);
}

int cc_print(FILE *fp, struct cc_node *root, const struct cc_print_opts *o)
{
	struct printer p = { .fp = fp, .o = o };

	switch (o->mode) {
	case CC_GRAPH:
	case CC_FRACTAL:
		print_graph(&p, root);
		break;
	case CC_FLAT:
	case CC_FOLDED:
		print_flat(&p, root);
		break;
	case CC_NONE:
		break;
	}
	return p.err;
}
