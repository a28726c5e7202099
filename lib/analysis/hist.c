/*
 * One event's histogram (tally/hist.h): entries hashed by the sort keys, and the
 * output order perf 6.1 gives them (its input and collapsed trees, then a red-black tree
 * ordered by its comparator, ties and all).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/session.h>
#include "internal/analysis.h"
#include "internal/util.h"

static const struct {
	const char *name;
	enum tally_hist_col col;
} col_names[] = {
	{ "overhead", TALLY_HIST_OVERHEAD }, { "overhead_children", TALLY_HIST_CHILDREN },
	{ "sample", TALLY_HIST_SAMPLES }, { "period", TALLY_HIST_PERIOD }, { "comm", TALLY_HIST_COMM },
	{ "pid", TALLY_HIST_PID }, { "tid", TALLY_HIST_PID }, { "dso", TALLY_HIST_DSO }, { "sym", TALLY_HIST_SYM },
	{ "symbol", TALLY_HIST_SYM }, { "cpu", TALLY_HIST_CPU }, { "trace", TALLY_HIST_TRACE },
	{ "srcline", TALLY_HIST_SRCLINE }, { "srcfile", TALLY_HIST_SRCFILE },
	{ "parent", TALLY_HIST_PARENT }, { "time", TALLY_HIST_TIME },
};

int tally_hist_col__parse(const char *name)
{
	for (size_t i = 0; i < TLY_ARRAY_SIZE(col_names); i++)
		if (!strcmp(name, col_names[i].name))
			return (int)col_names[i].col;
	return -1;
}

/* The default keys, comm, dso, sym: the hash and the comparison without the loop. */
static inline bool std_keys(const struct tally_hist *h)
{
	return h->nr_keys == 3 && h->keys[0] == TALLY_HIST_COMM && h->keys[1] == TALLY_HIST_DSO &&
	       h->keys[2] == TALLY_HIST_SYM;
}

static uint64_t entry_hash(const struct tally_hist *h, const struct tally_hist_entry *e)
{
	uint64_t x = 0x12345;

	if (std_keys(h)) {	/* what the loop makes of them */
		x = tly_hash_mix(x, (uintptr_t)e->comm);
		x = tly_hash_mix(x, (uintptr_t)e->dso_key);
		x = tly_hash_mix(x, (uintptr_t)e->dso_key);
		return tly_hash_mix(x, e->sym ? e->sym->start : e->ip);
	}

	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case TALLY_HIST_COMM:
			x = tly_hash_mix(x, (uintptr_t)e->comm);
			break;
		case TALLY_HIST_PID:
			x = tly_hash_mix(x, (uint64_t)(uint32_t)e->tid);
			break;
		case TALLY_HIST_DSO:
			x = tly_hash_mix(x, (uintptr_t)e->dso_key);
			break;
		case TALLY_HIST_SYM:
			x = tly_hash_mix(x, (uintptr_t)e->dso_key);
			x = tly_hash_mix(x, e->sym ? e->sym->start : e->ip);
			break;
		case TALLY_HIST_CPU:
			x = tly_hash_mix(x, (uint64_t)(uint32_t)e->cpu);
			break;
		case TALLY_HIST_TRACE:	/* interned */
			x = tly_hash_mix(x, (uintptr_t)e->trace);
			break;
		case TALLY_HIST_SRCLINE:
			x = tly_hash_mix(x, (uintptr_t)e->srcline);
			break;
		case TALLY_HIST_SRCFILE:
			x = tly_hash_mix(x, (uintptr_t)e->srcfile);
			break;
		case TALLY_HIST_PARENT:	/* interned */
			x = tly_hash_mix(x, (uintptr_t)e->parent);
			break;
		case TALLY_HIST_TIME:
			x = tly_hash_mix(x, e->time);
			break;
		default:
			break;
		}
	}
	return x;
}

/* the sym key: a symbol is its dso and start address (dsos may be per process); the
 * level is not part of the key: the first sample's is shown */
static inline bool sym_eq(const struct tally_hist_entry *a, const struct tally_hist_entry *b)
{
	if (!a->sym != !b->sym || a->dso_key != b->dso_key)
		return false;
	if (a->sym ? a->sym->start != b->sym->start : a->ip != b->ip)
		return false;
	/* two binaries of one short name, a function at the same address: perf keeps
	 * them apart when they end apart */
	if (a->sym && a->sym != b->sym && a->sym->size != b->sym->size)
		return false;
	/* an inlined function's symbol starts where the one it is in does */
	return a->sym == b->sym || (!tally_symbol__is_inlined(a->sym) &&
				    !tally_symbol__is_inlined(b->sym));
}

static bool entry_eq(const struct tally_hist *h, const struct tally_hist_entry *a,
		     const struct tally_hist_entry *b)
{
	if (std_keys(h))
		return a->comm == b->comm && sym_eq(a, b);	/* sym_eq compares the dsos */
	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case TALLY_HIST_COMM:
			if (a->comm != b->comm)
				return false;
			break;
		case TALLY_HIST_PID:
			if (a->tid != b->tid)
				return false;
			break;
		case TALLY_HIST_DSO:
			if (a->dso_key != b->dso_key)
				return false;
			break;
		case TALLY_HIST_SYM:
			if (!sym_eq(a, b))
				return false;
			break;
		case TALLY_HIST_CPU:
			if (a->cpu != b->cpu)
				return false;
			break;
		case TALLY_HIST_TRACE:
			if (a->trace != b->trace)
				return false;
			break;
		case TALLY_HIST_SRCLINE:
			if (a->srcline != b->srcline)
				return false;
			break;
		case TALLY_HIST_SRCFILE:
			if (a->srcfile != b->srcfile)
				return false;
			break;
		case TALLY_HIST_PARENT:
			if (a->parent != b->parent)
				return false;
			break;
		case TALLY_HIST_TIME:
			if (a->time != b->time)
				return false;
			break;
		default:
			break;
		}
	}
	return true;
}

int tly_hist__init(struct tally_hist *h, const enum tally_hist_col *keys, size_t nr_keys,
		   struct tally_strpool *pool)
{
	memset(h, 0, sizeof(*h));
	h->pool = pool;
	h->nr_members = 1;
	if (nr_keys > TALLY_HIST_NR_COLS)
		return -EINVAL;
	for (size_t i = 0; i < nr_keys; i++)
		if (!tally_hist_col__is_key(keys[i]))
			return -EINVAL;
	memcpy(h->keys, keys, nr_keys * sizeof(*keys));
	h->nr_keys = nr_keys;
	h->cap = 1024;
	h->table = calloc(h->cap, sizeof(*h->table));
	h->hashes = calloc(h->cap, sizeof(*h->hashes));
	return h->table && h->hashes ? 0 : -ENOMEM;
}

/* The hierarchy's own rows (tally_hist__sort_hierarchy). */
static void free_levels(struct tally_hist *h)
{
	for (size_t i = 0; i < h->nr_levels; i++) {
		free(h->levels[i]->members);
		free(h->levels[i]);
	}
	free(h->levels);
	h->levels = NULL;
	h->nr_levels = h->cap_levels = 0;
}

/* Entries come from blocks of them (the next twice the last, up to a limit): one
 * allocation for many, all freed at once. */
struct tly_entry_block {
	struct tly_entry_block *next;
	size_t nr;
	struct tally_hist_entry e[];
};

static struct tally_hist_entry *entry_alloc(struct tally_hist *h)
{
	struct tly_entry_block *b;

	if (!h->block_left) {
		size_t nr = h->blocks ? h->blocks->nr * 2 : 16;

		/* at most 4 MiB: two huge pages (tly_malloc_big) */
		if (nr > ((4u << 20) - sizeof(*b)) / sizeof(b->e[0]))
			nr = ((4u << 20) - sizeof(*b)) / sizeof(b->e[0]);
		b = tly_malloc_big(sizeof(*b) + nr * sizeof(b->e[0]));
		if (!b)
			return NULL;
		b->next = h->blocks;
		b->nr = nr;
		h->blocks = b;
		h->block_left = nr;
	}
	b = h->blocks;
	return &b->e[b->nr - h->block_left--];
}

void tly_hist__exit(struct tally_hist *h)
{
	free(h->hashes);
	h->hashes = NULL;
	if (!h->table)
		return;
	for (size_t i = 0; i < h->cap; i++) {
		if (h->table[i]) {
			if (!h->arena_trees)
				tally_cc_root__exit(&h->table[i]->chain);
			free(h->table[i]->members);
		}
	}
	while (h->blocks) {
		struct tly_entry_block *b = h->blocks;

		h->blocks = b->next;
		free(b);
	}
	free(h->table);
	free(h->sorted);
	free_levels(h);
	memset(h, 0, sizeof(*h));
}

/* A hash's first slot in a table of cap: its high half folded in, the low bits of
 * entry_hash alone being alike for rows of aligned symbols (long probe runs). */
static inline size_t first_slot(uint64_t hash, size_t cap)
{
	return (size_t)(hash ^ hash >> 32) & (cap - 1);
}

static int grow(struct tally_hist *h)
{
	size_t cap = h->cap * 2;
	struct tally_hist_entry **t = tly_calloc_big(cap, sizeof(*t));
	uint64_t *hs = tly_calloc_big(cap, sizeof(*hs));

	if (!t || !hs) {
		free(t);
		free(hs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->cap; i++) {
		struct tally_hist_entry *e = h->table[i];
		size_t j;

		if (!e)
			continue;
		for (j = first_slot(e->hash, cap); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = e;
		hs[j] = e->hash;
	}
	free(h->table);
	free(h->hashes);
	h->table = t;
	h->hashes = hs;
	h->cap = cap;
	return 0;
}

struct tally_hist_entry *tly_hist__findnew(struct tally_hist *h,
					   const struct tally_hist_entry *tmpl_in)
{
	struct tally_hist_entry keyed;
	const struct tally_hist_entry *tmpl = tmpl_in;
	uint64_t hash;

	if (tmpl_in->dso && !tmpl_in->dso_key) {
		keyed = *tmpl_in;
		keyed.dso_key = tally_strpool__intern(h->pool, tally_dso__short_name(tmpl_in->dso));
		if (!keyed.dso_key)
			return NULL;
		tmpl = &keyed;
	}
	hash = entry_hash(h, tmpl) | 1;	/* never 0: that marks an empty slot */
	struct tally_hist_entry *e;
	size_t i;

	if ((h->nr + 1) * 4 >= h->cap * 3 && grow(h))
		return NULL;
	/* probe the hashes only: the entries themselves are far apart in memory */
	for (i = first_slot(hash, h->cap); h->hashes[i]; i = (i + 1) & (h->cap - 1))
		if (h->hashes[i] == hash && entry_eq(h, h->table[i], tmpl))
			return h->table[i];
	e = entry_alloc(h);
	if (!e)
		return NULL;
	*e = *tmpl;
	e->period = e->nr_samples = e->period_acc = e->nr_samples_acc = 0;
	e->period_sys = e->period_us = e->period_guest_sys = e->period_guest_us = 0;
	e->max_depth = 0;
	e->members = NULL;
	e->id = 0;
	e->seq = (uint32_t)h->nr;
	tally_cc_root__init(&e->chain);
	e->hash = hash;
	h->table[i] = e;
	h->hashes[i] = hash;
	h->nr++;
	return e;
}

static const char *sym_name(const struct tally_hist_entry *e)
{
	return e->sym && e->sym->name ? e->sym->name : NULL;
}

static int key_cmp(const struct tally_hist *h, const struct tally_hist_entry *a,
		   const struct tally_hist_entry *b)
{
	int c;

	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case TALLY_HIST_COMM:	/* interned: equal strings are one pointer */
			if (a->comm != b->comm && (c = strcmp(a->comm, b->comm)))
				return c;
			break;
		case TALLY_HIST_PID:
			if (a->tid != b->tid)
				return a->tid < b->tid ? -1 : 1;
			break;
		case TALLY_HIST_DSO:
			/* perf: rows outside any dso ([unknown]) after the others */
			if (!a->dso != !b->dso)
				return a->dso ? -1 : 1;
			if (a->dso_key != b->dso_key && (c = strcmp(a->dso_name, b->dso_name)))
				return c;
			break;
		case TALLY_HIST_SYM: {
			const char *x = sym_name(a), *y = sym_name(b);

			/* perf compares the names (an inlined function's without " (inlined)") */
			if (x && y && x != y && (c = tally_symbol__name_cmp(a->sym, b->sym)))
				return c;
			if (!x != !y)
				return x ? -1 : 1;
			/* perf's output sort leaves two unresolved rows tied */
			break;
		}
		case TALLY_HIST_CPU:
			if (a->cpu != b->cpu)
				return a->cpu < b->cpu ? -1 : 1;
			break;
		case TALLY_HIST_TRACE:	/* perf: strings in order; N/A rows tie */
			if (a->trace != b->trace && a->trace && b->trace && (c = strcmp(a->trace, b->trace)))
				return c;
			break;
		case TALLY_HIST_SRCLINE:
			if (a->srcline != b->srcline && (c = strcmp(a->srcline, b->srcline)))
				return c;
			break;
		case TALLY_HIST_SRCFILE:
			if (a->srcfile != b->srcfile && (c = strcmp(a->srcfile, b->srcfile)))
				return c;
			break;
		case TALLY_HIST_PARENT:	/* perf: names in order, rows without one last */
			if (!a->parent != !b->parent)
				return a->parent ? -1 : 1;
			if (a->parent != b->parent && (c = strcmp(a->parent, b->parent)))
				return c;
			break;
		case TALLY_HIST_TIME:	/* perf: the earlier first */
			if (a->time != b->time)
				return a->time < b->time ? -1 : 1;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* Which side of an existing row E perf's input and collapsed trees put a new row N:
 * its hist_entry__cmp(E, N) < 0 sends N left. The keys in order, as perf compares them:
 * strings and a symbol's start and end as differences of N and E, unresolved rows by
 * address as the 64-bit difference N - E taken as signed. That difference wraps for
 * addresses more than 2^63 apart (junk frames of code without frame pointers), so the
 * trees are not sorted then, and their shape decides the order rows reach the output
 * tree: emulating the trees gives perf's order of ties. */
static int64_t perf_in_cmp(const struct tally_hist *h, const struct tally_hist_entry *e,
			   const struct tally_hist_entry *n)
{
	int64_t c;

	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case TALLY_HIST_COMM:	/* interned: equal strings are one pointer */
			if (n->comm != e->comm && (c = strcmp(n->comm, e->comm)))
				return c;
			break;
		case TALLY_HIST_PID:
			if (n->tid != e->tid)
				return (int64_t)n->tid - e->tid;
			break;
		case TALLY_HIST_DSO:
			/* perf: rows outside any dso ([unknown]) after the others */
			if (!e->dso != !n->dso)
				return e->dso ? 1 : -1;
			if (e->dso_key != n->dso_key && (c = strcmp(n->dso_name, e->dso_name)))
				return c;
			break;
		case TALLY_HIST_SYM:
			if (!e->sym && !n->sym) {
				c = (int64_t)(n->ip - e->ip);
				if (c)
					return c;
				break;
			}
			/* perf compares the dsos first here, whatever the keys */
			if (!e->dso != !n->dso)
				return e->dso ? 1 : -1;
			if (e->dso_key != n->dso_key && (c = strcmp(n->dso_name, e->dso_name)))
				return c;
			if (!e->sym || !n->sym)
				return e->sym ? 1 : -1;
			if (e->sym == n->sym)
				break;
			/* perf: inlined functions by name; of one name, one row when the
			 * symbols they are in overlap (ours: one symbol per function and
			 * name), else by address */
			if ((tally_symbol__is_inlined(e->sym) || tally_symbol__is_inlined(n->sym)) &&
			    (c = tally_symbol__name_cmp(e->sym, n->sym)))
				return c;
			if (e->sym->start != n->sym->start)
				return (int64_t)(n->sym->start - e->sym->start);
			if (e->sym->size != n->sym->size)
				return (int64_t)((n->sym->start + n->sym->size) -
						 (e->sym->start + e->sym->size));
			break;
		case TALLY_HIST_CPU:
			if (n->cpu != e->cpu)
				return (int64_t)n->cpu - e->cpu;
			break;
		case TALLY_HIST_TRACE:
			if (n->trace != e->trace && n->trace && e->trace && (c = strcmp(n->trace, e->trace)))
				return c;
			break;
		case TALLY_HIST_SRCLINE:	/* perf compares the texts the other way round */
			if (n->srcline != e->srcline && (c = strcmp(e->srcline, n->srcline)))
				return c;
			break;
		case TALLY_HIST_SRCFILE:
			if (n->srcfile != e->srcfile && (c = strcmp(e->srcfile, n->srcfile)))
				return c;
			break;
		case TALLY_HIST_PARENT:	/* perf: a row without one before the others */
			if (!e->parent != !n->parent)
				return e->parent ? 1 : -1;
			if (n->parent != e->parent && (c = strcmp(n->parent, e->parent)))
				return c;
			break;
		case TALLY_HIST_TIME:	/* perf: the difference, new minus existing */
			if (n->time != e->time)
				return (int64_t)(n->time - e->time);
			break;
		default:
			break;
		}
	}
	return 0;
}

static bool in_goes_left(const struct tally_hist_entry *n, const struct tally_hist_entry *e, const void *h)
{
	return perf_in_cmp(h, e, n) < 0;
}

static int seq_qcmp(const void *pa, const void *pb)
{
	uint32_t a = (*(struct tally_hist_entry *const *)pa)->seq, b = (*(struct tally_hist_entry *const *)pb)->seq;

	return (a > b) - (a < b);
}

struct sort_ctx {
	const struct tally_hist *h;
	const enum tally_hist_col *order;	/* value columns to sort by, in order */
	size_t nr_order;
};

static const struct tally_hist_entry *member(const struct tally_hist_entry *e, size_t k)
{
	return k == 0 ? e : e->members ? e->members[k] : NULL;
}

/* compare a field member by member (group view), heaviest first */
static int group_cmp(const struct tally_hist *h, const struct tally_hist_entry *a,
		     const struct tally_hist_entry *b, bool acc)
{
	for (size_t k = 1; k < h->nr_members; k++) {
		const struct tally_hist_entry *x = member(a, k), *y = member(b, k);
		uint64_t vx = x ? (acc ? x->period_acc : x->period) : 0;
		uint64_t vy = y ? (acc ? y->period_acc : y->period) : 0;

		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	return 0;
}

uint64_t tly_hist_entry__value(const struct tally_hist_entry *e, enum tally_hist_col c)
{
	switch (c) {
	case TALLY_HIST_CHILDREN:
		return e->period_acc;
	case TALLY_HIST_SAMPLES:
		return e->nr_samples;
	default:
		return e->period;
	}
}

/* --group-sort-idx: member idx's field, then the other members' after the leader */
static int group_idx_cmp(const struct tally_hist *h, const struct tally_hist_entry *a,
			 const struct tally_hist_entry *b, enum tally_hist_col col)
{
	size_t idx = h->group_sort_idx;

	for (size_t i = 0; i < h->nr_members; i++) {
		size_t k = i == 0 ? idx : i;
		const struct tally_hist_entry *x = member(a, k), *y = member(b, k);
		uint64_t vx = x ? tly_hist_entry__value(x, col) : 0, vy = y ? tly_hist_entry__value(y, col) : 0;

		if (i && k == idx)
			continue;
		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	return 0;
}

void tally_hist__group_sort_idx(struct tally_hist *h, size_t idx)
{
	h->group_sort_idx = idx;
}

static int out_cmp(const void *pa, const void *pb, void *arg)
{
	const struct tally_hist_entry *a = *(struct tally_hist_entry *const *)pa;
	const struct tally_hist_entry *b = *(struct tally_hist_entry *const *)pb;
	const struct sort_ctx *ctx = arg;
	int c;

	for (size_t i = 0; i < ctx->nr_order; i++) {
		enum tally_hist_col col = ctx->order[i];
		uint64_t x = tly_hist_entry__value(a, col), y = tly_hist_entry__value(b, col);

		/* (perf's children column sorts without it; an index past the members sorts
		 * by the leader alone) */
		if (ctx->h->group_sort_idx && ctx->h->nr_members > 1 && col != TALLY_HIST_CHILDREN) {
			if (ctx->h->group_sort_idx < ctx->h->nr_members)
				c = group_idx_cmp(ctx->h, a, b, col);
			else
				c = x != y ? (x > y ? -1 : 1) : 0;
			if (c)
				return c;
			continue;
		}
		if (x != y)
			return x > y ? -1 : 1;
		if (ctx->h->nr_members > 1 && col != TALLY_HIST_SAMPLES &&
		    (c = group_cmp(ctx->h, a, b, col == TALLY_HIST_CHILDREN)))
			return c;
		/* perf: with equal children periods, a caller goes above its callees (rows
		 * made by one thread; whatever the sort keys, as 6.1 does it) */
		if (col == TALLY_HIST_CHILDREN && !ctx->h->no_depth_ties && a->tid == b->tid && a->pid == b->pid &&
		    a->max_depth != b->max_depth) {
			bool deeper_first = ctx->h->caller;

			if (a->max_depth > b->max_depth)
				return deeper_first ? -1 : 1;
			return deeper_first ? 1 : -1;
		}
	}
	return key_cmp(ctx->h, a, b);
}

static bool out_goes_left(const struct tally_hist_entry *n, const struct tally_hist_entry *e, const void *ctx)
{
	return out_cmp(&n, &e, (void *)ctx) < 0;
}

struct rb_rows {
	struct tally_hist_entry **v;
	bool (*goes_left)(const struct tally_hist_entry *, const struct tally_hist_entry *, const void *);
	const void *ctx;
};

static bool row_goes_left(size_t z, size_t x, const void *arg)
{
	const struct rb_rows *r = arg;

	return r->goes_left(r->v[z], r->v[x], r->ctx);
}

/* Insert v[0..n) in order into a red-black tree where goes_left(new, existing) sends a
 * row left, and put the in-order walk back into v. */
static int rb_order(struct tally_hist_entry **v, size_t n,
		    bool (*goes_left)(const struct tally_hist_entry *, const struct tally_hist_entry *,
				      const void *), const void *ctx)
{
	struct rb_rows r = { .v = v, .goes_left = goes_left, .ctx = ctx };

	return n < 2 ? 0 : tly_rb_sort_rows(v, n, row_goes_left, &r);
}

/* h->sorted (zeroed, room for h->nr): the entries in the order they were made, placed
 * by their creation numbers, which are 0 .. nr-1 unless a hierarchy renumbered them */
static size_t in_creation_order(struct tally_hist *h)
{
	size_t n = 0;
	bool placed = true;

	for (size_t i = 0; i < h->cap && placed; i++) {
		struct tally_hist_entry *e = h->table[i];

		if (e && (e->seq >= h->nr || h->sorted[e->seq]))
			placed = false;
		else if (e)
			h->sorted[e->seq] = e, n++;
	}
	if (placed)
		return n;
	n = 0;
	for (size_t i = 0; i < h->cap; i++)
		if (h->table[i])
			h->sorted[n++] = h->table[i];
	qsort(h->sorted, n, sizeof(*h->sorted), seq_qcmp);
	return n;
}

int tally_hist__sort(struct tally_hist *h, bool children)
{
	static const enum tally_hist_col with_children[] = { TALLY_HIST_CHILDREN, TALLY_HIST_OVERHEAD };

	return tally_hist__sort_by(h, with_children + (children ? 0 : 1), children ? 2 : 1);
}

int tally_hist__sort_by(struct tally_hist *h, const enum tally_hist_col *order, size_t nr_order)
{
	struct sort_ctx ctx = { .h = h, .order = order, .nr_order = nr_order };
	struct tly_out_prep *op;
	size_t n = 0;
	int err;

	free(h->sorted);
	h->nr_sorted = 0;
	h->sorted = calloc(h->nr ? h->nr : 1, sizeof(*h->sorted));
	if (!h->sorted)
		return -ENOMEM;
	/* perf inserts the rows as they are made into its input tree, walks that into its
	 * collapsed tree, and walks that into its output tree, ordered by its comparator
	 * (ties go right); the first two orders are not total (see perf_in_cmp), nor is the
	 * last in children mode, so the trees' shapes decide ties: do exactly the same,
	 * on compact keys (hist-order.c) where the keys allow, else on the rows. The output
	 * tree's keys are made meanwhile, on a thread of their own. */
	n = in_creation_order(h);
	op = tly_out_prep__start(h, h->sorted, n, order, nr_order);
	err = tly_hist__in_order(h, h->sorted, n);
	if (err > 0 && rb_order(h->sorted, n, in_goes_left, h))
		err = -ENOMEM;
	/* perf collapses only when a key needs it: comm (strings, not comm objects) */
	for (size_t i = 0; i < h->nr_keys && err > 0; i++)
		if (h->keys[i] == TALLY_HIST_COMM && rb_order(h->sorted, n, in_goes_left, h))
			err = -ENOMEM;
	if (err >= 0)
		err = tly_out_prep__finish(op, h->sorted, n);
	tly_out_prep__delete(op);
	if (err == 1)
		err = tly_hist__out_order(h, h->sorted, n, order, nr_order);
	if (err > 0 && rb_order(h->sorted, n, out_goes_left, &ctx))
		err = -ENOMEM;
	if (err < 0)
		return err;
	h->nr_sorted = n;
	return 0;
}

/* ---- hierarchy (perf's --hierarchy) ---- */

/* A new row of the hierarchy (like: the first entry under it), owned by h. */
static struct tally_hist_entry *level_new(struct tally_hist *h, const struct tally_hist_entry *like)
{
	struct tally_hist_entry *e;

	if (h->nr_levels == h->cap_levels) {
		size_t cap = h->cap_levels ? h->cap_levels * 2 : 256;
		struct tally_hist_entry **v = realloc(h->levels, cap * sizeof(*v));

		if (!v)
			return NULL;
		h->levels = v;
		h->cap_levels = cap;
	}
	e = malloc(sizeof(*e));
	if (!e)
		return NULL;
	*e = like ? *like : (struct tally_hist_entry){ 0 };
	e->period = e->nr_samples = e->period_acc = e->nr_samples_acc = 0;
	e->period_sys = e->period_us = e->period_guest_sys = e->period_guest_us = 0;
	e->members = NULL;
	e->id = 0;
	tally_cc_root__init(&e->chain);
	h->levels[h->nr_levels++] = e;
	return e;
}

/* Add entry x (and its group members) into the hierarchy row e. */
static int level_add(struct tally_hist *h, struct tally_hist_entry *e,
		     const struct tally_hist_entry *x)
{
	e->period += x->period;
	e->nr_samples += x->nr_samples;
	e->period_acc += x->period_acc;
	e->nr_samples_acc += x->nr_samples_acc;
	e->period_sys += x->period_sys;
	e->period_us += x->period_us;
	e->period_guest_sys += x->period_guest_sys;
	e->period_guest_us += x->period_guest_us;
	if (h->nr_members < 2 || !x->members)
		return 0;
	if (!e->members) {
		e->members = calloc(h->nr_members, sizeof(*e->members));
		if (!e->members)
			return -ENOMEM;
	}
	for (size_t k = 1; k < h->nr_members; k++) {
		if (!x->members[k])
			continue;
		if (!e->members[k] && !(e->members[k] = level_new(h, x->members[k])))
			return -ENOMEM;
		e->members[k]->period += x->members[k]->period;
		e->members[k]->nr_samples += x->members[k]->nr_samples;
		e->members[k]->period_sys += x->members[k]->period_sys;
		e->members[k]->period_us += x->members[k]->period_us;
	}
	return 0;
}

struct hier {
	struct tally_hist *h;
	struct sort_ctx ctx;
	size_t nr_out;
};

/* The rows of key d for the entries lv[0..n) (perf's input order), then recursively
 * the rows under each: perf makes a row per distinct key value in the order the
 * entries come, keeps them in a tree by that key, and walks that tree into its output
 * tree (sort_ctx). */
static int hier_level(struct hier *hr, struct tally_hist_entry **lv, size_t n, size_t d)
{
	struct tally_hist *h = hr->h, one = *h;
	bool last = d + 1 == h->nr_keys;
	size_t cap = 16, nr_grp = 0, *grp_of = NULL, *slot = NULL, *start = NULL, *fill = NULL;
	struct tally_hist_entry **rows = NULL, **by_grp = NULL;
	int err = -ENOMEM;

	one.keys[0] = h->keys[d];
	one.nr_keys = 1;
	while (cap < 2 * n)
		cap *= 2;
	grp_of = malloc(n * sizeof(*grp_of));
	slot = calloc(cap, sizeof(*slot));	/* group + 1 */
	rows = malloc(n * sizeof(*rows));
	start = calloc(n + 1, sizeof(*start));
	fill = malloc(n * sizeof(*fill));
	by_grp = malloc(n * sizeof(*by_grp));
	if (!grp_of || !slot || !rows || !start || !fill || !by_grp)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t k = entry_hash(&one, lv[i]) & (cap - 1);

		while (slot[k] && !entry_eq(&one, rows[slot[k] - 1], lv[i]))
			k = (k + 1) & (cap - 1);
		if (!slot[k]) {
			rows[nr_grp] = last ? lv[i] : level_new(h, lv[i]);
			if (!rows[nr_grp])
				goto out;
			if (!last) {
				rows[nr_grp]->depth = (uint8_t)d;
				rows[nr_grp]->seq = (uint32_t)nr_grp;	/* its group */
			}
			slot[k] = ++nr_grp;
		}
		grp_of[i] = slot[k] - 1;
		if (!last && level_add(h, rows[grp_of[i]], lv[i]))
			goto out;
		start[grp_of[i] + 1]++;
	}
	/* the entries of each group together, in their order */
	for (size_t g = 0; g < nr_grp; g++)
		start[g + 1] += start[g];
	memcpy(fill, start, nr_grp * sizeof(*fill));
	for (size_t i = 0; i < n; i++)
		by_grp[fill[grp_of[i]]++] = lv[i];
	if (rb_order(rows, nr_grp, in_goes_left, &one) ||
	    rb_order(rows, nr_grp, out_goes_left, &hr->ctx))
		goto out;
	err = 0;
	for (size_t r = 0; r < nr_grp && !err; r++) {
		hr->h->sorted[hr->nr_out++] = rows[r];
		if (!last) {
			size_t g = rows[r]->seq;

			err = hier_level(hr, by_grp + start[g], start[g + 1] - start[g], d + 1);
		}
	}
out:
	free(grp_of);
	free(slot);
	free(rows);
	free(start);
	free(fill);
	free(by_grp);
	return err;
}

int tally_hist__sort_hierarchy(struct tally_hist *h)
{
	static const enum tally_hist_col by_self[] = { TALLY_HIST_OVERHEAD };
	struct hier hr = { .h = h, .ctx = { .h = h, .order = by_self, .nr_order = 1 } };
	struct tally_hist_entry **lv;
	size_t n = 0;
	int err;

	free(h->sorted);
	free_levels(h);
	h->nr_sorted = 0;
	h->sorted = malloc((h->nr ? h->nr : 1) * (h->nr_keys ? h->nr_keys : 1) * sizeof(*h->sorted));
	lv = malloc((h->nr ? h->nr : 1) * sizeof(*lv));
	if (!h->sorted || !lv) {
		free(lv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->cap; i++)
		if (h->table[i])
			lv[n++] = h->table[i];
	/* perf's input tree, walked in order, feeds the hierarchy */
	qsort(lv, n, sizeof(*lv), seq_qcmp);
	err = rb_order(lv, n, in_goes_left, h);
	if (!err && n && h->nr_keys)
		err = hier_level(&hr, lv, n, 0);
	free(lv);
	if (!err) {
		for (size_t i = 0; i < h->cap; i++)
			if (h->table[i])
				h->table[i]->depth = (uint8_t)(h->nr_keys - 1);
		h->nr_sorted = hr.nr_out;
	}
	return err;
}

int tally_hist__link_member(struct tally_hist *leader, struct tally_hist *m, size_t idx,
			    size_t nr)
{
	leader->nr_members = nr;
	for (size_t i = 0; i < m->cap; i++) {
		struct tally_hist_entry *e = m->table[i], *l;

		if (!e)
			continue;
		l = tly_hist__findnew(leader, e);
		if (!l)
			return -ENOMEM;
		if (!l->members) {
			l->members = calloc(nr, sizeof(*l->members));
			if (!l->members)
				return -ENOMEM;
		}
		l->members[idx] = e;
	}
	return 0;
}

void tally_hist__unlink_members(struct tally_hist *leader)
{
	if (!leader || !leader->table)
		return;
	for (size_t i = 0; i < leader->cap; i++) {
		struct tally_hist_entry *e = leader->table[i];

		if (e) {
			free(e->members);
			e->members = NULL;
		}
	}
	leader->nr_members = 1;
}

struct tally_hist_entry *tally_hist__find(struct tally_hist *h,
					  const struct tally_hist_entry *like)
{
	uint64_t hash = entry_hash(h, like) | 1;

	for (size_t i = first_slot(hash, h->cap); h->hashes[i]; i = (i + 1) & (h->cap - 1))
		if (h->hashes[i] == hash && entry_eq(h, h->table[i], like))
			return h->table[i];
	return NULL;
}

const struct tally_hist_totals *tally_hist__totals(const struct tally_hist *h)
{
	return &h->totals;
}

size_t tally_hist__nr_entries(const struct tally_hist *h)
{
	return h->nr;
}

bool tally_hist__has_trees(const struct tally_hist *h)
{
	return h->trees;
}

size_t tally_hist__nr_members(const struct tally_hist *h)
{
	return h->nr_members ? h->nr_members : 1;
}

struct tally_hist_entry *const *tally_hist__sorted(const struct tally_hist *h, size_t *nr)
{
	*nr = h->sorted ? h->nr_sorted : 0;
	return h->sorted;
}

static uint64_t decayed(uint64_t v, bool zero)
{
	return zero ? 0 : v * 7 / 8;
}

/* Entries that reached zero leave the table: a fresh table is built from the
 * survivors, their call graphs moved over. */
int tly_hist__decay(struct tally_hist *h, bool zero)
{
	struct tally_hist fresh;
	uint64_t total = 0, nr = 0;
	int err = tly_hist__init(&fresh, h->keys, h->nr_keys, h->pool);

	if (err)
		return err;
	fresh.trees = h->trees;
	fresh.caller = h->caller;
	for (size_t i = 0; i < h->cap; i++) {
		struct tally_hist_entry *e = h->table[i], *n;

		if (!e)
			continue;
		e->period = decayed(e->period, zero);
		e->nr_samples = decayed(e->nr_samples, zero);
		e->period_acc = decayed(e->period_acc, zero);
		e->nr_samples_acc = decayed(e->nr_samples_acc, zero);
		if (!e->period && !e->period_acc)
			continue;
		n = tly_hist__findnew(&fresh, e);
		if (!n) {
			tly_hist__exit(&fresh);
			return -ENOMEM;
		}
		n->period = e->period;
		n->nr_samples = e->nr_samples;
		n->period_acc = e->period_acc;
		n->nr_samples_acc = e->nr_samples_acc;
		tly_cc_decay(&e->chain, zero);
		n->chain = e->chain;	/* moved: the new entry's tree was empty */
		tally_cc_root__init(&e->chain);
		total += n->period;
		nr += n->nr_samples;
	}
	fresh.totals.period = fresh.totals.filtered_period = total;
	fresh.totals.nr_samples = fresh.totals.nr_filtered = nr;
	tly_hist__exit(h);
	*h = fresh;
	return 0;
}
