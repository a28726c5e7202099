/*
 * perf's three trees of report rows (tally_hist__sort_by), on compact keys: per row a few
 * integers (ranks of its strings, its addresses, its values) in one array, so a step down
 * a tree reads one small row instead of an entry far away in memory.
 *
 * The input and collapsed trees: rows inserted one by one into a binary tree where ties go
 * right come out of its in-order walk sorted by the tree's comparator, ties in insertion
 * order, whatever the tree's shape, as long as the comparator is consistent (transitive).
 * perf's is, unless address differences wrap (junk addresses of frames without frame
 * pointers, 2^63 apart, within one comm and dso) or an inlined function's name meets an
 * address. Without those, one stable sort gives both trees' order; with wrapping
 * addresses, the trees are emulated on the keys; with inlined names, hist.c emulates them
 * on the rows. The output tree is emulated on the keys (its caller-above-callee tie break
 * is not consistent either).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <tally/cpumap.h>
#include <tally/session.h>
#include "internal/analysis.h"
#include "internal/util.h"

#define SIGN_FLIP (UINT64_C(1) << 63)	/* signed to unsigned, order kept */
#define MAX_SLOTS (3 * TALLY_HIST_NR_COLS)

struct ref {
	const void *s;
	uint32_t id;	/* in order of first appearance */
};

/* A distinct text or symbol name of a column, and its length (a symbol's without the
 * inlined suffix: tally_symbol__name_cmp's order) */
struct name {
	const char *s;
	size_t len;
	uint32_t id;
};

static int name_cmp(const void *pa, const void *pb)
{
	const struct name *a = pa, *b = pb;
	int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int value_desc(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)((const struct ref *)pa)->s;
	uint64_t b = *(const uint64_t *)((const struct ref *)pb)->s;

	return (a < b) - (a > b);
}


/* A hash map of 64-bit keys to their numbers in order of first appearance, as big as
 * the distinct keys need (a file has many rows but few comms or dsos). */
struct idmap {
	uint64_t *key;
	uint32_t *id;	/* number + 1; 0: an empty slot */
	unsigned bits;	/* 2^bits slots */
	uint32_t nr;
};

static int idmap_init(struct idmap *m)
{
	m->bits = 10;
	m->nr = 0;
	m->key = tly_malloc_big(((size_t)1 << m->bits) * sizeof(*m->key));
	m->id = tly_calloc_big((size_t)1 << m->bits, sizeof(*m->id));
	return m->key && m->id ? 0 : -ENOMEM;
}

static void idmap_exit(struct idmap *m)
{
	free(m->key);
	free(m->id);
}

static size_t idmap_slot(const struct idmap *m, uint64_t k)
{
	size_t mask = ((size_t)1 << m->bits) - 1;
	size_t i = (size_t)((k * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - m->bits));

	while (m->id[i] && m->key[i] != k)
		i = (i + 1) & mask;
	return i;
}

static int idmap_grow(struct idmap *m)
{
	struct idmap o = *m;

	m->bits++;
	m->key = tly_malloc_big(((size_t)1 << m->bits) * sizeof(*m->key));
	m->id = tly_calloc_big((size_t)1 << m->bits, sizeof(*m->id));
	if (!m->key || !m->id) {
		idmap_exit(m);
		*m = o;
		return -ENOMEM;
	}
	for (size_t i = 0; i < (size_t)1 << o.bits; i++) {
		if (o.id[i]) {
			size_t j = idmap_slot(m, o.key[i]);

			m->key[j] = o.key[i];
			m->id[j] = o.id[i];
		}
	}
	idmap_exit(&o);
	return 0;
}

/* *id: k's number; 1: a new key, 0: one seen before, -ENOMEM */
static int idmap_number(struct idmap *m, uint64_t k, uint32_t *id)
{
	size_t i = idmap_slot(m, k);

	if (!m->id[i]) {
		if ((size_t)m->nr * 2 + 2 > (size_t)1 << m->bits) {
			if (idmap_grow(m))
				return -ENOMEM;
			i = idmap_slot(m, k);
		}
		m->key[i] = k;
		m->id[i] = ++m->nr;
		*id = m->nr - 1;
		return 1;
	}
	*id = m->id[i] - 1;
	return 0;
}

/* ids[i]: s[i]'s number among the distinct pointers, u[id] the pointer; *nu of them */
static int number_refs(const void **s, size_t n, uint32_t *ids, struct ref *u, size_t *nu)
{
	struct idmap m;
	int err = idmap_init(&m);

	for (size_t i = 0; !err && i < n; i++) {
		if (i && s[i] == s[i - 1]) {	/* runs of one comm or dso */
			ids[i] = ids[i - 1];
			continue;
		}
		err = idmap_number(&m, (uintptr_t)s[i], &ids[i]);
		if (err == 1)
			u[ids[i]] = (struct ref){ .s = s[i], .id = ids[i] };
		err = err < 0 ? err : 0;
	}
	*nu = m.nr;
	idmap_exit(&m);
	return err;
}

/* rank[i * stride]: the place of s[i] (texts, or symbols by name) among the distinct
 * values (equal values, one rank); rows whose s is NULL get UINT64_MAX */
static int rank_refs(const void **s, size_t n, bool syms, uint64_t *rank, size_t stride)
{
	struct ref *u = tly_malloc_big((n ? n : 1) * sizeof(*u));
	struct name *t = tly_malloc_big((n ? n : 1) * sizeof(*t));
	uint32_t *ids = tly_malloc_big((n ? n : 1) * sizeof(*ids));
	uint64_t *by_id = tly_malloc_big((n ? n : 1) * sizeof(*by_id)), k = 0;
	size_t nu = 0, nt = 0;
	int err = u && t && ids && by_id ? 0 : -ENOMEM;

	if (!err)
		err = number_refs(s, n, ids, u, &nu);
	for (size_t i = 0; !err && i < nu; i++) {
		const struct tally_symbol *sym = u[i].s;
		const char *text;
		size_t len;

		by_id[u[i].id] = UINT64_MAX;	/* NULL: no value */
		if (!u[i].s)
			continue;
		text = syms ? sym->name : u[i].s;
		len = strlen(text);
		if (syms && tally_symbol__is_inlined(sym))
			len -= sizeof(TALLY_INLINED_SUFFIX) - 1;
		t[nt++] = (struct name){ .s = text, .len = len, .id = u[i].id };
	}
	if (!err)
		qsort(t, nt, sizeof(*t), name_cmp);
	for (size_t i = 0; !err && i < nt; i++) {
		if (i && name_cmp(&t[i - 1], &t[i]))
			k++;
		by_id[t[i].id] = k;
	}
	for (size_t i = 0; !err && i < n; i++)
		rank[i * stride] = by_id[ids[i]];
	free(u);
	free(t);
	free(ids);
	free(by_id);
	return err;
}

/* The slots each key takes in a row's compact key; 0: a key this file does not order. */
static size_t key_slots(const struct tally_hist *h)
{
	size_t nk = 0;
	bool dso = false;

	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case TALLY_HIST_COMM:
		case TALLY_HIST_PID:
		case TALLY_HIST_CPU:
			nk++;
			break;
		case TALLY_HIST_DSO:
			dso = true;
			nk++;
			break;
		case TALLY_HIST_SYM:	/* ordered here only within one dso */
			if (!dso)
				return 0;
			nk += 3;
			break;
		default:
			return 0;
		}
	}
	return nk;
}

/* A row's dso slot is its name's rank when the rows merging by dso_key are one name. */
static bool dso_consistent(const struct tally_hist_entry *e)
{
	if (!e->dso)
		return !e->dso_key;
	return e->dso_key && (e->dso_key == e->dso_name || !strcmp(e->dso_key, e->dso_name));
}

/* what a row is ranked by in a string key's column (comm, dso, sym; NULL: none) */
static const void *column_ref(const struct tally_hist_entry *e, enum tally_hist_col c)
{
	if (c == TALLY_HIST_COMM)
		return e->comm;
	if (c == TALLY_HIST_DSO)
		return e->dso ? e->dso_name : NULL;
	return e->sym && e->sym->name ? e->sym : NULL;
}

/* rank[i * stride]: row i's place among the rows by a string key (its text) or the
 * symbol's name (sym_names), UINT64_MAX for rows without one (perf puts those last) */
static int rank_column(struct tally_hist_entry **v, size_t n, enum tally_hist_col c,
		       bool sym_names, uint64_t *rank, size_t stride)
{
	const void **s = tly_malloc_big((n ? n : 1) * sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++)
		s[j] = column_ref(v[j], c);
	err = rank_refs(s, n, c == TALLY_HIST_SYM && sym_names, rank, stride);
	free(s);
	return err;
}

static int fill_ranks(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
		      uint64_t *key, size_t nk)
{
	size_t slot = 0;
	int err = 0;

	for (size_t i = 0; i < h->nr_keys && !err; i++) {
		enum tally_hist_col c = h->keys[i];

		if (c == TALLY_HIST_COMM || c == TALLY_HIST_DSO)
			err = rank_column(v, n, c, false, key + slot, nk);
		slot += c == TALLY_HIST_SYM ? 3 : 1;
	}
	return err;
}

/* The other slots; false: perf's comparator is not consistent on this row. */
static bool fill_row(const struct tally_hist *h, const struct tally_hist_entry *e, uint64_t *k)
{
	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case TALLY_HIST_PID:
			*k++ = (uint64_t)(int64_t)e->tid ^ SIGN_FLIP;
			break;
		case TALLY_HIST_CPU:
			*k++ = (uint64_t)(int64_t)e->cpu ^ SIGN_FLIP;
			break;
		case TALLY_HIST_DSO:
			if (!dso_consistent(e))
				return false;
			k++;
			break;
		case TALLY_HIST_SYM:	/* resolved by start and end, then the others by address */
			if (e->sym && tally_symbol__is_inlined(e->sym))
				return false;
			*k++ = !e->sym;
			*k++ = e->sym ? e->sym->start : e->ip;
			*k++ = e->sym ? e->sym->start + e->sym->size : 0;
			break;
		default:	/* comm: ranked */
			k++;
			break;
		}
	}
	return true;
}

/* perf compares addresses by their difference taken as signed: right only when the
 * addresses it compares, those of rows equal on the keys before the symbol, lie within
 * 2^63 of each other. idx: the rows sorted by their keys (such rows are adjacent). */
static bool spreads_fit(const uint64_t *key, const uint32_t *idx, size_t n, size_t nk,
			size_t sym_slot)
{
	for (size_t i = 0, j; i < n; i = j) {
		const uint64_t *first = key + (size_t)idx[i] * nk;
		uint64_t lo[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX }, hi[3] = { 0, 0, 0 };

		for (j = i; j < n; j++) {
			const uint64_t *k = key + (size_t)idx[j] * nk;

			if (j > i && memcmp(k, first, sym_slot * sizeof(*k)))
				break;
			for (int m = 0; m < 3; m++) {	/* unresolved addresses, starts, ends */
				uint64_t x = k[sym_slot + (m ? m : 1)];

				if ((m == 0) != (k[sym_slot] == 1))
					continue;
				lo[m] = x < lo[m] ? x : lo[m];
				hi[m] = x > hi[m] ? x : hi[m];
			}
		}
		for (int m = 0; m < 3; m++)
			if (hi[m] >= lo[m] && hi[m] - lo[m] >= SIGN_FLIP)
				return false;
	}
	return true;
}

/* A red-black tree over an array of nodes (CLRS insertion, which is what the kernel's
 * rbtree does); a node's links side by side and the caller's keys of its row next to
 * them, in NODE_SIZE bytes: a step down the tree touches one cache line. The links are
 * the nodes' byte offsets (node i: i * NODE_SIZE), so that a step is one addition. */
#define NODE_SIZE 32
#define NIL UINT32_C(0xffffffe0)	/* no node; also the bound on the nodes' offsets */
#define RED UINT32_C(1)
#define MAX_NODES (NIL / NODE_SIZE)

struct rb_link {
	uint32_t c[2];	/* left, right (NIL: none) */
	uint32_t pr;	/* the parent (NIL: none), | RED for a red node */
};

struct rb {
	char *base;
	uint32_t root;
};

static inline struct rb_link *rb_at(const struct rb *rb, uint32_t off)
{
	return (struct rb_link *)(rb->base + off);
}

/* rotate x down to the left (a = 1: its right child comes up) or the right (a = 0);
 * xp: x's parent */
static inline __attribute__((always_inline)) void
rb_rotate(struct rb *rb, uint32_t x, struct rb_link *nx, int a)
{
	uint32_t y = nx->c[a], p = nx->pr & ~RED;
	struct rb_link *ny = rb_at(rb, y);
	uint32_t b = ny->c[!a];

	nx->c[a] = b;
	if (b != NIL)
		rb_at(rb, b)->pr = (rb_at(rb, b)->pr & RED) | x;
	ny->pr = (ny->pr & RED) | p;
	if (p == NIL) {
		rb->root = y;
	} else {
		struct rb_link *np = rb_at(rb, p);

		np->c[np->c[0] == x ? 0 : 1] = y;
	}
	ny->c[!a] = x;
	nx->pr = (nx->pr & RED) | y;
}

/* Hang the new node z under y on side (y NIL: z is the root) and rebalance. */
static void rb_link_new(struct rb *rb, uint32_t z, uint32_t y, int side)
{
	struct rb_link *nz = rb_at(rb, z), *np;

	nz->c[0] = nz->c[1] = NIL;
	if (y == NIL) {
		nz->pr = NIL;
		rb->root = z;
		return;
	}
	nz->pr = y | RED;
	np = rb_at(rb, y);
	np->c[side] = z;
	while (np->pr & RED) {	/* z and its parent p red: p is not the root */
		uint32_t p = nz->pr & ~RED, g = np->pr & ~RED, u;
		struct rb_link *ng = rb_at(rb, g), *nu;
		int pleft = ng->c[0] == p;

		u = ng->c[pleft];
		nu = u != NIL ? rb_at(rb, u) : NULL;
		if (nu && (nu->pr & RED)) {
			np->pr &= ~RED;
			nu->pr &= ~RED;
			if ((ng->pr & ~RED) == NIL)	/* the root stays black */
				return;
			ng->pr |= RED;
			z = g;
			nz = ng;
			np = rb_at(rb, ng->pr & ~RED);
			continue;
		}
		if (z == np->c[pleft]) {	/* the inner child: rotated outside first */
			rb_rotate(rb, p, np, pleft);
			np = nz;
		}
		np->pr &= ~RED;
		ng->pr |= RED;
		rb_rotate(rb, g, ng, !pleft);
		return;
	}
}

/* 1: z goes right of x (perf's comparator: not left) */
typedef int (*node_right_fn)(const void *z, const void *x, const void *ctx);

/* Insert node z: down from the root, right where goes_right(z's node, a node's) says.
 * Inlined where goes_right is known, so that a step down the tree is a comparison in
 * place rather than a call. true: z went right all the way (it is the greatest). */
static inline __attribute__((always_inline)) bool
rb_insert(struct rb *rb, uint32_t i, node_right_fn goes_right, const void *ctx)
{
	uint32_t z = i * NODE_SIZE;
	const void *zn = rb_at(rb, z);
	uint32_t y = NIL, x = rb->root;
	int side = 0, right = 1;

	while (x != NIL) {
		const struct rb_link *nx = rb_at(rb, x);

		y = x;
		side = goes_right(zn, nx, ctx);
		right &= side;
		x = nx->c[side];
	}
	rb_link_new(rb, z, y, side);
	return right;
}

/* perm[0..n): the tree's in-order walk, as node numbers (a red-black tree of < 2^32
 * nodes is at most 64 deep) */
static void rb_walk(const struct rb *rb, uint32_t *perm)
{
	uint32_t stack[64], x = rb->root;
	size_t sp = 0, k = 0;

	for (;;) {
		for (; x != NIL; x = rb_at(rb, x)->c[0])
			stack[sp++] = x;
		if (!sp)
			break;
		x = stack[--sp];
		perm[k++] = x / NODE_SIZE;
		x = rb_at(rb, x)->c[1];
	}
}

struct index_node {
	struct rb_link link;
	char pad[NODE_SIZE - sizeof(struct rb_link)];
};

struct index_left {
	const struct index_node *links;
	bool (*goes_left)(size_t z, size_t x, const void *ctx);
	const void *ctx;
};

static int by_index_right(const void *z, const void *x, const void *arg)
{
	const struct index_left *il = arg;

	return !il->goes_left((size_t)((const struct index_node *)z - il->links),
			     (size_t)((const struct index_node *)x - il->links), il->ctx);
}

int tly_rb_order(size_t n, bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx,
		 size_t *perm)
{
	struct index_node *links;
	uint32_t *walk;
	struct rb rb = { .root = NIL };
	struct index_left il = { .goes_left = goes_left, .ctx = ctx };

	if (n >= MAX_NODES)
		return -ENOMEM;
	links = tly_malloc_big((n ? n : 1) * sizeof(*links));
	walk = tly_malloc_big((n ? n : 1) * sizeof(*walk));
	if (!links || !walk) {
		free(links);
		free(walk);
		return -ENOMEM;
	}
	rb.base = (char *)links;
	il.links = links;
	for (uint32_t z = 0; z < n; z++)
		rb_insert(&rb, z, by_index_right, &il);
	rb_walk(&rb, walk);
	for (size_t i = 0; i < n; i++)
		perm[i] = walk[i];
	free(links);
	free(walk);
	return 0;
}

/* v[0..n) put in the order perm gives (out: room for n, scratch); err passed through */
static int permute_rows(struct tally_hist_entry **v, size_t n, const size_t *perm,
			struct tally_hist_entry **out, int err)
{
	for (size_t i = 0; !err && i < n; i++)
		out[i] = v[perm[i]];
	if (!err)
		memcpy(v, out, n * sizeof(*out));
	free(out);
	return err;
}

int tly_rb_sort_rows(struct tally_hist_entry **v, size_t n,
		     bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx)
{
	size_t *perm = tly_malloc_big((n ? n : 1) * sizeof(*perm));
	struct tally_hist_entry **out = tly_malloc_big((n ? n : 1) * sizeof(*out));
	int err = perm && out ? tly_rb_order(n, goes_left, ctx, perm) : -ENOMEM;

	err = permute_rows(v, n, perm, out, err);
	free(perm);
	return err;
}

struct row_keys {
	const uint64_t *key;
	size_t nk;
	const bool *sym;	/* sym[i]: slots i .. i+2 are a symbol's */
};

static int row_cmp(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct row_keys *rk = arg;
	const uint64_t *x = rk->key + (size_t)a * rk->nk, *y = rk->key + (size_t)b * rk->nk;

	for (size_t i = 0; i < rk->nk; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return (a > b) - (a < b);	/* ties: in insertion order */
}

/* 0: v sorted; 1: the addresses do not fit (v untouched) */
static int sort_rows(struct tally_hist_entry **v, size_t n, const struct row_keys *rk,
		     size_t sym_slot)
{
	uint32_t *idx = tly_malloc_big(n * sizeof(*idx));
	struct tally_hist_entry **out = tly_malloc_big(n * sizeof(*out));
	bool fits;

	if (!idx || !out) {
		free(idx);
		free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, n, sizeof(*idx), row_cmp, (void *)rk);
	fits = sym_slot == SIZE_MAX || spreads_fit(rk->key, idx, n, rk->nk, sym_slot);
	if (fits) {
		for (size_t i = 0; i < n; i++)
			out[i] = v[idx[i]];
		memcpy(v, out, n * sizeof(*out));
	}
	free(idx);
	free(out);
	return fits ? 0 : 1;
}

/* perf's comparator on two rows' keys, new minus existing (perf_in_cmp in hist.c) */
static bool key_goes_left(size_t z, size_t x, const void *arg)
{
	const struct row_keys *rk = arg;
	const uint64_t *n = rk->key + z * rk->nk, *e = rk->key + x * rk->nk;

	for (size_t i = 0; i < rk->nk; i++) {
		if (rk->sym[i] && n[i] == e[i]) {	/* both resolved or both not */
			int64_t d = (int64_t)(n[i + 1] - e[i + 1]);

			if (!d)
				d = (int64_t)(n[i + 2] - e[i + 2]);
			if (d)
				return d < 0;
			i += 2;
			continue;
		}
		if (n[i] != e[i])
			return n[i] < e[i];
	}
	return false;
}

/* The trees themselves, on the keys: the input tree, then the collapsed one (comm). The
 * keys move with their rows: a step down a tree reads one row's. */
static int emulate_trees(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			 uint64_t *key, const struct row_keys *rk)
{
	size_t *perm = tly_malloc_big(n * sizeof(*perm)), nk = rk->nk;
	uint64_t *moved = tly_malloc_big(n * nk * sizeof(*moved));
	struct tally_hist_entry **out = tly_malloc_big(n * sizeof(*out));
	bool collapse = false;
	int err = perm && moved && out ? 0 : -ENOMEM;

	for (size_t i = 0; i < h->nr_keys; i++)
		collapse = collapse || h->keys[i] == TALLY_HIST_COMM;
	for (int tree = 0; !err && tree < (collapse ? 2 : 1); tree++) {
		err = tly_rb_order(n, key_goes_left, rk, perm);
		for (size_t i = 0; !err && i < n; i++) {
			memcpy(moved + i * nk, key + perm[i] * nk, nk * sizeof(*key));
			out[i] = v[perm[i]];
		}
		if (!err) {
			memcpy(key, moved, n * nk * sizeof(*key));
			memcpy(v, out, n * sizeof(*out));
		}
	}
	free(perm);
	free(moved);
	free(out);
	return err;
}

/* ---- keys packed into one integer ---- */

/* How one slot's values go into a packed integer: minus the least, UINT64_MAX (a row
 * without a value, ordered last) as one past the greatest other value. */
struct slot_pack {
	uint64_t min, none;	/* none: what UINT64_MAX becomes */
	unsigned bits, shift;
};

static unsigned bit_len(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0;
}

/* Plan packing slots first .. first + ns of n rows of nk slots into the top bits of one
 * integer, leaving `spare` low bits free; false when they do not fit. */
static bool plan_pack(const uint64_t *key, size_t n, size_t nk, size_t first, size_t ns,
		      unsigned spare, struct slot_pack *sp)
{
	unsigned total = spare;

	for (size_t i = 0; i < ns; i++) {
		uint64_t lo = UINT64_MAX, hi = 0;
		bool none = false;

		for (size_t j = 0; j < n; j++) {
			uint64_t v = key[j * nk + first + i];

			if (v == UINT64_MAX) {
				none = true;
				continue;
			}
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		if (lo > hi)	/* every row without a value */
			lo = hi = 0;
		sp[i].min = lo;
		sp[i].none = hi - lo + 1;
		if (!sp[i].none)
			return false;
		sp[i].bits = bit_len(none ? sp[i].none : hi - lo);
		total += sp[i].bits;
		if (total > 64)
			return false;
	}
	for (size_t i = ns; i-- > 0;) {
		sp[i].shift = spare;
		spare += sp[i].bits;
	}
	return true;
}

static uint64_t pack(const uint64_t *k, size_t ns, const struct slot_pack *sp)
{
	uint64_t x = 0;

	for (size_t i = 0; i < ns; i++)
		if (sp[i].bits)
			x |= (k[i] == UINT64_MAX ? sp[i].none : k[i] - sp[i].min) << sp[i].shift;
	return x;
}

/* A row's keys when the symbol is the last key: the keys before it and whether the row
 * is unresolved (lowest bit) in one integer, then its address (start) and its symbol's
 * size; with the row's links in the trees, 32 bytes. */
struct in_node {
	struct rb_link link;
	uint32_t size;	/* 0: unresolved */
	uint64_t pre, addr;
};
_Static_assert(sizeof(struct in_node) == NODE_SIZE, "in_node: one tree node");

/* !key_goes_left on packed rows: with equal starts, the ends' difference is the sizes' */
static inline int in_node_right(const void *zn, const void *xn, const void *ctx)
{
	const struct in_node *n = zn, *e = xn;
	int64_t d;

	(void)ctx;
	if (n->pre != e->pre)
		return n->pre > e->pre;
	d = (int64_t)(n->addr - e->addr);
	if (!d)
		d = (int64_t)n->size - (int64_t)e->size;
	return d >= 0;
}

static int in_node_cmp(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct in_node *x = (const struct in_node *)arg + a, *y = (const struct in_node *)arg + b;

	if (x->pre != y->pre)
		return x->pre < y->pre ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return (a > b) - (a < b);	/* ties: in insertion order */
}

/* spreads_fit on packed rows, without sorting them: per group of rows equal on the keys
 * before the symbol, the spread of unresolved addresses, starts and ends. 1: all fit;
 * 0: bad[j] says whether row j's group does not. */
static int in_nodes_fit(const struct in_node *p, size_t n, bool *bad)
{
	struct grp {
		uint64_t lo[3], hi[3];
		bool bad;
	} *g = tly_malloc_big(n * sizeof(*g));
	uint32_t *gid = tly_malloc_big(n * sizeof(*gid));
	struct idmap m;
	int fits = 1, err = idmap_init(&m);

	for (size_t j = 0; !err && j < n; j++) {
		struct grp *r;

		if (!g || !gid) {
			err = -ENOMEM;
			break;
		}
		if (j && p[j].pre >> 1 == p[j - 1].pre >> 1) {
			gid[j] = gid[j - 1];
		} else {
			err = idmap_number(&m, p[j].pre >> 1, &gid[j]);
			if (err < 0)
				break;
			if (err)
				g[gid[j]] = (struct grp){ .lo = { UINT64_MAX, UINT64_MAX, UINT64_MAX } };
			err = 0;
		}
		r = &g[gid[j]];
		for (int k = 0; k < 3; k++) {	/* unresolved addresses, starts, ends */
			uint64_t x = p[j].addr + (k == 2 ? p[j].size : 0);

			if ((k == 0) != (p[j].pre & 1))
				continue;
			r->lo[k] = x < r->lo[k] ? x : r->lo[k];
			r->hi[k] = x > r->hi[k] ? x : r->hi[k];
		}
	}
	for (size_t i = 0; !err && i < m.nr; i++) {
		for (int k = 0; k < 3; k++)
			if (g[i].hi[k] >= g[i].lo[k] && g[i].hi[k] - g[i].lo[k] >= SIGN_FLIP)
				g[i].bad = true;
		fits = fits && !g[i].bad;
	}
	for (size_t j = 0; !err && !fits && j < n; j++)
		bad[j] = g[gid[j]].bad;
	free(g);
	free(gid);
	idmap_exit(&m);
	return err ? err : fits;
}

/* The input tree, then the collapsed one (collapse), on packed rows; perm: the rows in
 * the last tree's order. In the collapsed tree, rows come in the input tree's order,
 * which is sorted by pre and, within a group whose addresses fit, by address: such a row
 * goes right of every row before it, so it hangs under the greatest without a search. */
static int in_trees(struct in_node *p, size_t n, const bool *bad, bool collapse, uint32_t *perm)
{
	struct in_node *q = collapse ? tly_malloc_big(n * sizeof(*q)) : NULL;
	uint32_t *walk = collapse ? tly_malloc_big(n * sizeof(*walk)) : NULL;
	bool *bad2 = collapse ? tly_malloc_big(n * sizeof(*bad2)) : NULL;
	struct rb rb = { .base = (char *)p, .root = NIL };
	uint32_t max = NIL;

	if (collapse && (!q || !walk || !bad2)) {
		free(q);
		free(walk);
		free(bad2);
		return -ENOMEM;
	}
	for (uint32_t z = 0; z < n; z++)
		rb_insert(&rb, z, in_node_right, NULL);
	rb_walk(&rb, perm);
	if (!collapse)
		return 0;
	for (size_t i = 0; i < n; i++) {
		q[i] = p[perm[i]];
		bad2[i] = bad[perm[i]];
	}
	rb = (struct rb){ .base = (char *)q, .root = NIL };
	for (uint32_t z = 0; z < n; z++) {
		if (!bad2[z] && max != NIL)
			rb_link_new(&rb, z * NODE_SIZE, max, 1), max = z * NODE_SIZE;
		else if (rb_insert(&rb, z, in_node_right, NULL))
			max = z * NODE_SIZE;
	}
	rb_walk(&rb, walk);
	for (size_t i = 0; i < n; i++)
		walk[i] = perm[walk[i]];
	memcpy(perm, walk, n * sizeof(*perm));
	free(q);
	free(walk);
	free(bad2);
	return 0;
}

/* tly_hist__in_order when the symbol is the last key, the keys before it pack into one
 * integer with the resolved bit and the symbols' sizes are below 2^32; 1: they do not */
static int packed_in_order(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			   const uint64_t *key, size_t nk, size_t sym_slot)
{
	struct slot_pack sp[MAX_SLOTS];
	struct in_node *p;
	struct tally_hist_entry **out;
	uint32_t *perm;
	bool collapse = false, *bad;
	int err = 0, fits;

	if (sym_slot != nk - 3 || n >= MAX_NODES || !plan_pack(key, n, nk, 0, sym_slot, 1, sp))
		return 1;
	for (size_t j = 0; j < n; j++) {
		const uint64_t *k = key + j * nk + sym_slot;

		if (!(k[0] & 1) && k[2] - k[1] > UINT32_MAX)
			return 1;
	}
	p = tly_malloc_big(n * sizeof(*p));
	bad = tly_malloc_big(n * sizeof(*bad));
	perm = tly_malloc_big(n * sizeof(*perm));
	out = tly_malloc_big(n * sizeof(*out));
	if (!p || !bad || !perm || !out) {
		err = -ENOMEM;
		goto done;
	}
	for (size_t j = 0; j < n; j++) {
		const uint64_t *k = key + j * nk;

		p[j] = (struct in_node){ .pre = pack(k, sym_slot, sp) | (k[sym_slot] & 1),
					 .addr = k[sym_slot + 1],
					 .size = k[sym_slot] & 1 ? 0 : (uint32_t)(k[sym_slot + 2] - k[sym_slot + 1]) };
	}
	for (size_t i = 0; i < h->nr_keys; i++)
		collapse = collapse || h->keys[i] == TALLY_HIST_COMM;
	fits = in_nodes_fit(p, n, bad);
	if (fits < 0) {
		err = fits;
	} else if (fits) {	/* consistent: one stable sort is both trees */
		for (size_t i = 0; i < n; i++)
			perm[i] = (uint32_t)i;
		qsort_r(perm, n, sizeof(*perm), in_node_cmp, p);
	} else {	/* addresses far apart: the trees' shapes decide */
		err = in_trees(p, n, bad, collapse, perm);
	}
	for (size_t i = 0; !err && i < n; i++)
		out[i] = v[perm[i]];
	if (!err)
		memcpy(v, out, n * sizeof(*out));
done:
	free(p);
	free(bad);
	free(perm);
	free(out);
	return err;
}

int tly_hist__in_order(const struct tally_hist *h, struct tally_hist_entry **v, size_t n)
{
	size_t nk = key_slots(h), sym_slot = SIZE_MAX, slot = 0;
	bool sym[MAX_SLOTS] = { false };
	struct row_keys rk = { .nk = nk, .sym = sym };
	uint64_t *key;
	int err;

	if (!nk || n < 2 || n > UINT32_MAX || nk > MAX_SLOTS)
		return 1;
	key = tly_malloc_big(n * nk * sizeof(*key));
	if (!key)
		return -ENOMEM;
	rk.key = key;
	err = fill_ranks(h, v, n, key, nk);
	for (size_t i = 0; i < n && !err; i++)
		if (!fill_row(h, v[i], key + i * nk))
			err = 1;
	if (err) {	/* out of memory, or a row perf's comparator orders inconsistently */
		free(key);
		return err;
	}
	for (size_t i = 0; i < h->nr_keys; i++) {
		if (h->keys[i] == TALLY_HIST_SYM && sym_slot == SIZE_MAX)
			sym_slot = slot;
		sym[slot] = h->keys[i] == TALLY_HIST_SYM;
		slot += h->keys[i] == TALLY_HIST_SYM ? 3 : 1;
	}
	if (sym_slot != SIZE_MAX) {
		err = packed_in_order(h, v, n, key, nk, sym_slot);
		if (err != 1) {
			free(key);
			return err;
		}
	}
	err = sort_rows(v, n, &rk, sym_slot);
	if (err == 1)	/* addresses far apart: the trees' shapes decide */
		err = emulate_trees(h, v, n, key, &rk);
	free(key);
	return err;
}

/* ---- the output tree, on compact keys ---- */

#define MAX_ORDER 8

struct out_keys {
	const uint64_t *key;	/* per row: the order's values, pid, tid, depth, the keys */
	size_t nk, nr_order;
	bool children[MAX_ORDER];	/* perf's caller-above-callee tie break there */
	bool caller;
};

/* perf's output comparator (out_cmp in hist.c) on two rows' keys: new before existing */
static bool out_goes_left(size_t z, size_t x, const void *arg)
{
	const struct out_keys *ok = arg;
	const uint64_t *a = ok->key + z * ok->nk, *b = ok->key + x * ok->nk;
	const uint64_t *ta = a + ok->nr_order, *tb = b + ok->nr_order;	/* pid, tid, depth */

	for (size_t i = 0; i < ok->nr_order; i++) {
		if (a[i] != b[i])
			return a[i] > b[i];
		if (ok->children[i] && ta[0] == tb[0] && ta[1] == tb[1] && ta[2] != tb[2])
			return ok->caller ? ta[2] > tb[2] : ta[2] < tb[2];
	}
	for (size_t i = ok->nr_order + 3; i < ok->nk; i++)
		if (a[i] != b[i])
			return a[i] < b[i];
	return false;
}

/* The key slots of perf's output order (key_cmp in hist.c); false: a key not done here */
/* Every slot of the rows' output keys (out_keys), in one pass over the rows (which are
 * far apart in memory); false: a key not done here, or out of memory. */
static bool fill_out_keys(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			  uint64_t *key, size_t nk, const enum tally_hist_col *order, size_t nr_order)
{
	const void **refs = tly_malloc_big((n ? n : 1) * h->nr_keys * sizeof(*refs));
	size_t first = nr_order + 3;
	bool ok = refs != NULL;

	for (size_t j = 0; j < n && ok; j++) {
		const struct tally_hist_entry *e = v[j];
		uint64_t *k = key + j * nk;

		for (size_t i = 0; i < nr_order; i++)
			k[i] = tly_hist_entry__value(e, order[i]);
		k[nr_order] = (uint32_t)e->pid;
		k[nr_order + 1] = (uint32_t)e->tid;
		k[nr_order + 2] = e->max_depth;
		for (size_t i = 0; i < h->nr_keys && ok; i++) {
			enum tally_hist_col c = h->keys[i];

			if (c == TALLY_HIST_PID)
				k[first + i] = (uint64_t)(int64_t)e->tid ^ SIGN_FLIP;
			else if (c == TALLY_HIST_CPU)
				k[first + i] = (uint64_t)(int64_t)e->cpu ^ SIGN_FLIP;
			else if (c == TALLY_HIST_COMM || c == TALLY_HIST_SYM ||
				 (c == TALLY_HIST_DSO && dso_consistent(e)))
				refs[i * n + j] = column_ref(e, c);
			else
				ok = false;
		}
	}
	for (size_t i = 0; i < h->nr_keys && ok; i++) {
		enum tally_hist_col c = h->keys[i];

		if (c != TALLY_HIST_PID && c != TALLY_HIST_CPU &&
		    rank_refs(refs + i * n, n, c == TALLY_HIST_SYM,
			      key + first + i, nk))
			ok = false;
	}
	free(refs);
	return ok;
}

/* rank[j]: the place of row j's value (key[j * nk]) among the rows' distinct values,
 * greatest first; *bits: the bits the ranks take */
static int value_ranks(const uint64_t *key, size_t nk, size_t n, uint32_t *rank, unsigned *bits)
{
	struct ref *u = tly_malloc_big(n * sizeof(*u));	/* the distinct values, by their numbers */
	uint64_t *val = tly_malloc_big(n * sizeof(*val));
	uint32_t *at = tly_malloc_big(n * sizeof(*at));
	struct idmap m;
	int err = idmap_init(&m);

	if (!u || !val || !at)
		err = -ENOMEM;
	for (size_t j = 0; !err && j < n; j++) {
		if (j && key[j * nk] == key[(j - 1) * nk]) {
			rank[j] = rank[j - 1];
			continue;
		}
		err = idmap_number(&m, key[j * nk], &rank[j]);
		if (err == 1)
			val[rank[j]] = key[j * nk];
		err = err < 0 ? err : 0;
	}
	if (!err) {	/* sorted greatest first: the ids by their values */
		for (uint32_t i = 0; i < m.nr; i++)
			u[i] = (struct ref){ .s = &val[i], .id = i };
		qsort(u, m.nr, sizeof(*u), value_desc);
		for (uint32_t i = 0; i < m.nr; i++)
			at[u[i].id] = i;
		for (size_t j = 0; j < n; j++)
			rank[j] = at[rank[j]];
		*bits = bit_len(m.nr - 1);
	}
	free(u);
	free(val);
	free(at);
	idmap_exit(&m);
	return err;
}

/* A row's output keys: the ranks of its values and its keys packed into one integer,
 * its thread and depth (perf's caller-above-callee tie break); with its links in the
 * tree, 32 bytes. */
struct out_node {
	struct rb_link link;
	uint32_t depth;
	uint64_t thread;	/* pid << 32 | tid */
	uint64_t w;
};
_Static_assert(sizeof(struct out_node) == NODE_SIZE, "out_node: one tree node");

struct out_ctx {
	uint64_t tie;	/* the bits of w up to the children column's rank */
	bool ties;	/* there is one */
	bool caller;
};

/* !out_goes_left on packed rows */
static inline int out_node_right(const void *zn, const void *xn, const void *arg)
{
	const struct out_node *a = zn, *b = xn;
	const struct out_ctx *c = arg;

	if (a->thread == b->thread && a->depth != b->depth && c->ties && !((a->w ^ b->w) & c->tie))
		return c->caller ? a->depth < b->depth : a->depth > b->depth;
	return a->w >= b->w;
}

/* *pp[j]: row j's packed output keys (ok's rows), c: how they compare; 1: the keys do
 * not pack */
static int out_nodes(size_t n, const struct out_keys *ok, struct out_node **pp, struct out_ctx *c)
{
	struct slot_pack sp[TALLY_HIST_NR_COLS];
	size_t nr_keys = ok->nk - ok->nr_order - 3;
	unsigned bits[MAX_ORDER], shift[MAX_ORDER], total;
	struct out_node *p;
	uint32_t *rank;
	int err = 0;

	*c = (struct out_ctx){ .caller = ok->caller };
	if (n >= MAX_NODES || nr_keys > TALLY_HIST_NR_COLS ||
	    !plan_pack(ok->key, n, ok->nk, ok->nr_order + 3, nr_keys, 0, sp))
		return 1;
	total = nr_keys ? sp[0].shift + sp[0].bits : 0;
	rank = tly_malloc_big(n * ok->nr_order * sizeof(*rank));
	if (!rank)
		return -ENOMEM;
	for (size_t i = 0; !err && i < ok->nr_order; i++) {
		err = value_ranks(ok->key + i, ok->nk, n, rank + i * n, &bits[i]);
		total += bits[i];
	}
	if (err || total > 64) {
		free(rank);
		return err ? err : 1;
	}
	for (size_t i = ok->nr_order, s = nr_keys ? sp[0].shift + sp[0].bits : 0; i-- > 0;) {
		shift[i] = (unsigned)s;
		s += bits[i];
	}
	for (size_t i = 0; i < ok->nr_order && !c->ties; i++) {
		if (ok->children[i]) {
			c->ties = true;
			c->tie = shift[i] < 64 ? ~UINT64_C(0) << shift[i] : 0;
		}
	}
	p = tly_malloc_big(n * sizeof(*p));
	err = p ? 0 : -ENOMEM;
	for (size_t j = 0; !err && j < n; j++) {
		const uint64_t *k = ok->key + j * ok->nk, *t = k + ok->nr_order;

		p[j] = (struct out_node){ .thread = t[0] << 32 | t[1], .depth = (uint32_t)t[2],
					  .w = pack(t + 3, nr_keys, sp) };
		for (size_t i = 0; i < ok->nr_order; i++)
			if (bits[i])
				p[j].w |= (uint64_t)rank[i * n + j] << shift[i];
	}
	free(rank);
	*pp = p;
	return err;
}

/* v[0..n) into the output tree's order; p[j]: row v[j]'s node (its links overwritten) */
static int out_tree(struct tally_hist_entry **v, size_t n, struct out_node *p, const struct out_ctx *c)
{
	struct rb rb = { .base = (char *)p, .root = NIL };
	uint32_t *perm = tly_malloc_big(n * sizeof(*perm));
	struct tally_hist_entry **out = tly_malloc_big(n * sizeof(*out));
	int err = perm && out ? 0 : -ENOMEM;

	if (!err) {
		for (uint32_t z = 0; z < n; z++)
			rb_insert(&rb, z, out_node_right, c);
		rb_walk(&rb, perm);
		for (size_t i = 0; i < n; i++)
			out[i] = v[perm[i]];
		memcpy(v, out, n * sizeof(*out));
	}
	free(perm);
	free(out);
	return err;
}

static bool out_keys_init(struct out_keys *ok, const struct tally_hist *h, size_t n,
			  const enum tally_hist_col *order, size_t nr_order)
{
	*ok = (struct out_keys){ .nk = nr_order + 3 + h->nr_keys, .nr_order = nr_order,
				 .caller = h->caller };
	if (h->nr_members > 1 || nr_order > MAX_ORDER || n > UINT32_MAX)
		return false;
	for (size_t i = 0; i < nr_order; i++)
		ok->children[i] = order[i] == TALLY_HIST_CHILDREN && !h->no_depth_ties;
	return true;
}

/* ---- the output tree's keys made while the input trees are ---- */

#define OUT_PREP_MIN_ROWS 10000	/* fewer rows: no thread */

struct tly_out_prep {
	const struct tally_hist *h;
	struct tally_hist_entry **v;	/* the rows in creation order */
	size_t n, nr_order;
	enum tally_hist_col order[MAX_ORDER];
	struct out_node *p;	/* by creation number */
	struct out_ctx c;
	int err;		/* 0: p made; 1: not here; -ENOMEM */
	bool thread;		/* made by tid, not joined yet */
	pthread_t tid;
};

static int out_prepare(struct tly_out_prep *op)
{
	struct out_keys ok;
	uint64_t *key;
	int err = 1;

	for (size_t j = 0; j < op->n; j++)	/* the rows' numbers lead back to p */
		if (op->v[j]->seq != j)
			return 1;
	if (!out_keys_init(&ok, op->h, op->n, op->order, op->nr_order))
		return 1;
	key = tly_malloc_big(op->n * ok.nk * sizeof(*key));
	if (!key)
		return -ENOMEM;
	ok.key = key;
	if (fill_out_keys(op->h, op->v, op->n, key, ok.nk, op->order, op->nr_order))
		err = out_nodes(op->n, &ok, &op->p, &op->c);
	free(key);
	return err;
}

static void *out_prepare_fn(void *arg)
{
	struct tly_out_prep *op = arg;

	op->err = out_prepare(op);
	return NULL;
}

struct tly_out_prep *tly_out_prep__start(const struct tally_hist *h, struct tally_hist_entry *const *v,
					 size_t n, const enum tally_hist_col *order, size_t nr_order)
{
	struct tly_out_prep *op;

	/* (on one CPU the thread would only take turns with the caller's; a small table's
	 * keys take less than starting a thread and its malloc arena, whose pages were 10%
	 * of a 400-row report's peak RSS) */
	if (n < OUT_PREP_MIN_ROWS || n >= MAX_NODES || nr_order > MAX_ORDER ||
	    h->nr_members > 1 || tally_cpumap__nr_usable() < 2)
		return NULL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	*op = (struct tly_out_prep){ .h = h, .n = n, .nr_order = nr_order, .err = 1 };
	memcpy(op->order, order, nr_order * sizeof(*order));
	op->v = tly_malloc_big(n * sizeof(*op->v));
	if (!op->v) {
		free(op);
		return NULL;
	}
	memcpy(op->v, v, n * sizeof(*v));
	op->thread = pthread_create(&op->tid, NULL, out_prepare_fn, op) == 0;
	if (!op->thread)
		op->err = out_prepare(op);
	return op;
}

static void out_prep_join(struct tly_out_prep *op)
{
	if (op->thread)
		pthread_join(op->tid, NULL);
	op->thread = false;
}

int tly_out_prep__finish(struct tly_out_prep *op, struct tally_hist_entry **v, size_t n)
{
	struct out_node *q;
	int err;

	if (!op)
		return 1;
	out_prep_join(op);
	if (op->err || n != op->n)
		return op->err ? op->err : 1;
	q = tly_malloc_big(n * sizeof(*q));
	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		q[i] = op->p[v[i]->seq];
	err = out_tree(v, n, q, &op->c);
	free(q);
	return err;
}

void tly_out_prep__delete(struct tly_out_prep *op)
{
	if (!op)
		return;
	out_prep_join(op);
	free(op->v);
	free(op->p);
	free(op);
}

int tly_hist__out_order(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			const enum tally_hist_col *order, size_t nr_order)
{
	struct out_keys ok;
	struct out_node *p = NULL;
	struct out_ctx c;
	uint64_t *key;
	int err = 1;

	if (n < 2)
		return 0;
	if (!out_keys_init(&ok, h, n, order, nr_order))
		return 1;
	key = tly_malloc_big(n * ok.nk * sizeof(*key));
	if (!key)
		return -ENOMEM;
	ok.key = key;
	if (fill_out_keys(h, v, n, key, ok.nk, order, nr_order)) {
		err = out_nodes(n, &ok, &p, &c);
		if (!err)
			err = out_tree(v, n, p, &c);
		else if (err == 1)
			err = tly_rb_sort_rows(v, n, out_goes_left, &ok);
	}
	free(p);
	free(key);
	return err;
}
