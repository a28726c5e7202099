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
#include <stdlib.h>
#include <string.h>

#include <tally/session.h>
#include "internal/analysis.h"

#define SIGN_FLIP (UINT64_C(1) << 63)	/* signed to unsigned, order kept */
#define MAX_SLOTS (3 * TALLY_HIST_NR_COLS)

struct ref {
	const void *s;
	uint32_t id;	/* in order of first appearance */
};

typedef int (*ref_cmp_fn)(const void *a, const void *b);

static int by_value(const void *pa, const void *pb, void *cmp)
{
	return (*(ref_cmp_fn *)cmp)(((const struct ref *)pa)->s, ((const struct ref *)pb)->s);
}

static int text_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int sym_cmp(const void *a, const void *b)
{
	return tally_symbol__name_cmp(a, b);
}

/* ids[i]: s[i]'s number among the distinct pointers, u[id] the pointer; *nu of them */
static int number_refs(const void **s, size_t n, uint32_t *ids, struct ref *u, size_t *nu)
{
	size_t cap = 16;
	struct ref *t;

	while (cap < 2 * n)
		cap *= 2;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*nu = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = ((uintptr_t)s[i] >> 4) * UINT64_C(0x9e3779b97f4a7c15) & (cap - 1);

		while (t[j].s && t[j].s != s[i])
			j = (j + 1) & (cap - 1);
		if (!t[j].s) {
			t[j] = (struct ref){ .s = s[i], .id = (uint32_t)*nu };
			u[(*nu)++] = t[j];
		}
		ids[i] = t[j].id;
	}
	free(t);
	return 0;
}

/* rank[i * stride]: the place of s[i] among the distinct values as cmp orders them (equal
 * values, one rank); rows whose s is NULL get UINT64_MAX */
static int rank_refs(const void **s, size_t n, ref_cmp_fn cmp, uint64_t *rank, size_t stride)
{
	struct ref *u = malloc((n ? n : 1) * sizeof(*u));
	uint32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
	uint64_t *by_id = malloc((n ? n : 1) * sizeof(*by_id)), k = 0;
	size_t nu = 0;
	int err = u && ids && by_id ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++)	/* NULL: no value (the hash's empty slot) */
		if (!s[i])
			s[i] = &k;
	if (!err)
		err = number_refs(s, n, ids, u, &nu);
	for (size_t i = 0; !err && i < nu; i++)
		by_id[u[i].id] = UINT64_MAX;
	for (size_t i = 0; !err && i < nu; i++)
		if (u[i].s == &k)
			u[i--] = u[--nu];
	if (!err)
		qsort_r(u, nu, sizeof(*u), by_value, &cmp);
	for (size_t i = 0; !err && i < nu; i++) {
		if (i && cmp(u[i - 1].s, u[i].s))
			k++;
		by_id[u[i].id] = k;
	}
	for (size_t i = 0; !err && i < n; i++)
		rank[i * stride] = by_id[ids[i]];
	free(u);
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
	const void **s = malloc((n ? n : 1) * sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++)
		s[j] = column_ref(v[j], c);
	err = rank_refs(s, n, c == TALLY_HIST_SYM && sym_names ? sym_cmp : text_cmp, rank, stride);
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

/* A red-black tree over indices (CLRS insertion, which is what the kernel's rbtree
 * does); a node's links side by side, and where the caller keeps its rows' keys next to
 * them (a node every stride bytes), a step down the tree touches one cache line. */
struct rb_node {
	uint32_t c[2];	/* left, right */
	uint32_t p;
	uint32_t red;
};

struct rb {
	char *base;
	size_t stride;
	uint32_t root;
};

#define NIL UINT32_MAX

static inline struct rb_node *rb_at(const struct rb *rb, uint32_t i)
{
	return (struct rb_node *)(rb->base + (size_t)i * rb->stride);
}

/* rotate x down to the side left (true) or right */
static void rb_rotate(struct rb *rb, uint32_t x, bool left)
{
	struct rb_node *nx = rb_at(rb, x), *ny;
	int a = left ? 1 : 0, b = !a;
	uint32_t y = nx->c[a];

	ny = rb_at(rb, y);
	nx->c[a] = ny->c[b];
	if (ny->c[b] != NIL)
		rb_at(rb, ny->c[b])->p = x;
	ny->p = nx->p;
	if (nx->p == NIL)
		rb->root = y;
	else {
		struct rb_node *pp = rb_at(rb, nx->p);

		pp->c[x == pp->c[0] ? 0 : 1] = y;
	}
	ny->c[b] = x;
	nx->p = y;
}

static void rb_fixup(struct rb *rb, uint32_t z)
{
	while (rb_at(rb, z)->p != NIL && rb_at(rb, rb_at(rb, z)->p)->red) {
		uint32_t p = rb_at(rb, z)->p, g = rb_at(rb, p)->p;
		bool pleft = p == rb_at(rb, g)->c[0];
		uint32_t u = rb_at(rb, g)->c[pleft ? 1 : 0];

		if (u != NIL && rb_at(rb, u)->red) {
			rb_at(rb, p)->red = rb_at(rb, u)->red = false;
			rb_at(rb, g)->red = true;
			z = g;
			continue;
		}
		if (z == rb_at(rb, p)->c[pleft ? 1 : 0]) {
			z = p;
			rb_rotate(rb, z, pleft);
			p = rb_at(rb, z)->p;
			g = rb_at(rb, p)->p;
		}
		rb_at(rb, p)->red = false;
		rb_at(rb, g)->red = true;
		rb_rotate(rb, g, !pleft);
	}
	rb_at(rb, rb->root)->red = false;
}

/* Insert 0..n) in order into a red-black tree where goes_left(new, existing) sends a row
 * left; perm: its in-order walk. The nodes: every stride bytes from base (NULL: an array
 * of their own). Inlined where goes_left is known, so that a step down the tree is a
 * comparison in place rather than a call. */
static inline __attribute__((always_inline)) int
rb_order_with(size_t n, void *base, size_t stride,
	      bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx, size_t *perm)
{
	struct rb rb = { .base = base, .stride = base ? stride : sizeof(struct rb_node), .root = NIL };
	uint32_t *stack, x;
	size_t sp = 0, k = 0;

	if (n >= NIL)
		return -ENOMEM;
	if (!base)
		rb.base = malloc((n ? n : 1) * sizeof(struct rb_node));
	stack = malloc((n ? n : 1) * sizeof(*stack));
	if (!rb.base || !stack) {
		if (!base)
			free(rb.base);
		free(stack);
		return -ENOMEM;
	}
	for (uint32_t z = 0; z < n; z++) {
		uint32_t y = NIL;
		int side = 0;

		for (x = rb.root; x != NIL; x = rb_at(&rb, x)->c[side]) {
			y = x;
			side = !goes_left(z, x, ctx);
		}
		*rb_at(&rb, z) = (struct rb_node){ .c = { NIL, NIL }, .p = y, .red = true };
		if (y == NIL)
			rb.root = z;
		else
			rb_at(&rb, y)->c[side] = z;
		rb_fixup(&rb, z);
	}
	for (x = rb.root; x != NIL || sp;) {	/* in-order walk */
		for (; x != NIL; x = rb_at(&rb, x)->c[0])
			stack[sp++] = x;
		x = stack[--sp];
		perm[k++] = x;
		x = rb_at(&rb, x)->c[1];
	}
	if (!base)
		free(rb.base);
	free(stack);
	return 0;
}

int tly_rb_order(size_t n, bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx,
		 size_t *perm)
{
	return rb_order_with(n, NULL, 0, goes_left, ctx, perm);
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
	size_t *perm = malloc((n ? n : 1) * sizeof(*perm));
	struct tally_hist_entry **out = malloc((n ? n : 1) * sizeof(*out));
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
	uint32_t *idx = malloc(n * sizeof(*idx));
	struct tally_hist_entry **out = malloc(n * sizeof(*out));
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
	size_t *perm = malloc(n * sizeof(*perm)), nk = rk->nk;
	uint64_t *moved = malloc(n * nk * sizeof(*moved));
	struct tally_hist_entry **out = malloc(n * sizeof(*out));
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
 * is unresolved (lowest bit) in one integer, then its address and end (key_slots). */
struct packed_in {
	struct rb_node node;	/* the row's in the trees */
	uint64_t pre, addr, end;
};

/* key_goes_left on packed rows */
static bool packed_goes_left(size_t z, size_t x, const void *arg)
{
	const struct packed_in *n = (const struct packed_in *)arg + z, *e = (const struct packed_in *)arg + x;
	int64_t d;

	if (n->pre != e->pre)
		return n->pre < e->pre;
	d = (int64_t)(n->addr - e->addr);
	if (!d)
		d = (int64_t)(n->end - e->end);
	return d < 0;
}

static int packed_cmp(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct packed_in *x = (const struct packed_in *)arg + a, *y = (const struct packed_in *)arg + b;

	if (x->pre != y->pre)
		return x->pre < y->pre ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (a > b) - (a < b);	/* ties: in insertion order */
}

/* spreads_fit on packed rows, without sorting them: per group of rows equal on the keys
 * before the symbol, the spread of unresolved addresses, starts and ends. */
static int packed_fits(const struct packed_in *p, size_t n)
{
	struct grp {
		uint64_t lo[3], hi[3];
	} *g = malloc(n * sizeof(*g));
	size_t cap = 16, ng = 0;
	uint64_t *ks;
	uint32_t *id;
	int fits = 1;

	while (cap < 2 * n)
		cap *= 2;
	ks = malloc(cap * sizeof(*ks));
	id = calloc(cap, sizeof(*id));	/* group + 1 */
	if (!g || !ks || !id) {
		fits = -ENOMEM;
		goto out;
	}
	for (size_t j = 0; j < n; j++) {
		uint64_t k = p[j].pre >> 1;
		size_t i = (k * UINT64_C(0x9e3779b97f4a7c15)) >> 20 & (cap - 1);
		struct grp *r;

		while (id[i] && ks[i] != k)
			i = (i + 1) & (cap - 1);
		if (!id[i]) {
			ks[i] = k;
			id[i] = (uint32_t)++ng;
			g[ng - 1] = (struct grp){ .lo = { UINT64_MAX, UINT64_MAX, UINT64_MAX } };
		}
		r = &g[id[i] - 1];
		for (int m = 0; m < 3; m++) {	/* unresolved addresses, starts, ends */
			uint64_t x = m == 2 ? p[j].end : p[j].addr;

			if ((m == 0) != (p[j].pre & 1))
				continue;
			r->lo[m] = x < r->lo[m] ? x : r->lo[m];
			r->hi[m] = x > r->hi[m] ? x : r->hi[m];
		}
	}
	for (size_t i = 0; i < ng && fits == 1; i++)
		for (int m = 0; m < 3; m++)
			if (g[i].hi[m] >= g[i].lo[m] && g[i].hi[m] - g[i].lo[m] >= SIGN_FLIP)
				fits = 0;
out:
	free(g);
	free(ks);
	free(id);
	return fits;
}

static int packed_tree(size_t n, struct packed_in *p, size_t *perm)
{
	return rb_order_with(n, (void *)p, sizeof(*p), packed_goes_left, p, perm);
}

/* tly_hist__in_order when the symbol is the last key and the keys before it pack into
 * one integer with the resolved bit; 1: they do not */
static int packed_in_order(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			   const uint64_t *key, size_t nk, size_t sym_slot)
{
	struct slot_pack sp[MAX_SLOTS];
	struct packed_in *p, *moved = NULL;
	struct tally_hist_entry **out = NULL;
	size_t *perm = NULL;
	uint32_t *idx = NULL;
	bool collapse = false;
	int err, fits;

	if (sym_slot != nk - 3 || !plan_pack(key, n, nk, 0, sym_slot, 1, sp))
		return 1;
	p = malloc(n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		const uint64_t *k = key + j * nk;

		p[j] = (struct packed_in){ .pre = pack(k, sym_slot, sp) | (k[sym_slot] & 1),
					   .addr = k[sym_slot + 1], .end = k[sym_slot + 2] };
	}
	for (size_t i = 0; i < h->nr_keys; i++)
		collapse = collapse || h->keys[i] == TALLY_HIST_COMM;
	fits = packed_fits(p, n);
	out = malloc(n * sizeof(*out));
	if (fits == 1) {	/* consistent: one stable sort is both trees */
		idx = malloc(n * sizeof(*idx));
		err = idx && out ? 0 : -ENOMEM;
		for (size_t i = 0; !err && i < n; i++)
			idx[i] = (uint32_t)i;
		if (!err) {
			qsort_r(idx, n, sizeof(*idx), packed_cmp, p);
			for (size_t i = 0; i < n; i++)
				out[i] = v[idx[i]];
			memcpy(v, out, n * sizeof(*out));
		}
		goto done;
	}
	/* addresses far apart: the trees' shapes decide; the keys move with their rows */
	perm = malloc(n * sizeof(*perm));
	moved = malloc(n * sizeof(*moved));
	err = fits < 0 || !perm || !moved || !out ? -ENOMEM : 0;
	for (int tree = 0; !err && tree < (collapse ? 2 : 1); tree++) {
		struct packed_in *t;

		err = packed_tree(n, p, perm);
		for (size_t i = 0; !err && i < n; i++) {
			moved[i] = p[perm[i]];
			out[i] = v[perm[i]];
		}
		if (!err) {
			t = p, p = moved, moved = t;
			memcpy(v, out, n * sizeof(*out));
		}
	}
done:
	free(p);
	free(moved);
	free(out);
	free(perm);
	free(idx);
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
	key = malloc(n * nk * sizeof(*key));
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
	const void **refs = malloc((n ? n : 1) * h->nr_keys * sizeof(*refs));
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
		    rank_refs(refs + i * n, n, c == TALLY_HIST_SYM ? sym_cmp : text_cmp,
			      key + first + i, nk))
			ok = false;
	}
	free(refs);
	return ok;
}

/* A row's output keys when there are at most two values to order by and the keys pack
 * into one integer: the values, pid and tid, depth, the keys. */
struct packed_out {
	struct rb_node node;	/* the row's in the tree */
	uint64_t v[2];
	uint64_t thread;
	uint64_t depth;
	uint64_t key;
};

struct packed_out_ctx {
	const struct packed_out *p;
	size_t nr_order;
	bool children[2];
	bool caller;
};

/* out_goes_left on packed rows */
static bool packed_out_goes_left(size_t z, size_t x, const void *arg)
{
	const struct packed_out_ctx *c = arg;
	const struct packed_out *a = c->p + z, *b = c->p + x;

	for (size_t i = 0; i < c->nr_order; i++) {
		if (a->v[i] != b->v[i])
			return a->v[i] > b->v[i];
		if (c->children[i] && a->thread == b->thread && a->depth != b->depth)
			return c->caller ? a->depth > b->depth : a->depth < b->depth;
	}
	return a->key < b->key;
}

/* tly_rb_sort_rows by packed_out_goes_left; 1: the keys do not pack */
static int packed_out_order(struct tally_hist_entry **v, size_t n, const struct out_keys *ok)
{
	struct slot_pack sp[TALLY_HIST_NR_COLS];
	struct packed_out_ctx c = { .nr_order = ok->nr_order, .caller = ok->caller };
	size_t nr_keys = ok->nk - ok->nr_order - 3, *perm;
	struct packed_out *p;
	struct tally_hist_entry **out;
	int err;

	if (ok->nr_order > 2 || nr_keys > TALLY_HIST_NR_COLS ||
	    !plan_pack(ok->key, n, ok->nk, ok->nr_order + 3, nr_keys, 0, sp))
		return 1;
	p = malloc(n * sizeof(*p));
	perm = malloc(n * sizeof(*perm));
	out = malloc(n * sizeof(*out));
	err = p && perm && out ? 0 : -ENOMEM;
	for (size_t j = 0; !err && j < n; j++) {
		const uint64_t *k = ok->key + j * ok->nk, *t = k + ok->nr_order;

		p[j] = (struct packed_out){ .thread = t[0] << 32 | t[1], .depth = t[2],
					    .key = pack(t + 3, nr_keys, sp) };
		for (size_t i = 0; i < ok->nr_order; i++)
			p[j].v[i] = k[i];
	}
	for (size_t i = 0; i < ok->nr_order; i++)
		c.children[i] = ok->children[i];
	c.p = p;
	if (!err)
		err = rb_order_with(n, p, sizeof(*p), packed_out_goes_left, &c, perm);
	err = permute_rows(v, n, perm, out, err);
	free(p);
	free(perm);
	return err;
}

int tly_hist__out_order(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			const enum tally_hist_col *order, size_t nr_order)
{
	struct out_keys ok = { .nk = nr_order + 3 + h->nr_keys, .nr_order = nr_order,
			       .caller = h->caller };
	uint64_t *key;
	int err = 1;

	if (n < 2)
		return 0;
	if (h->nr_members > 1 || nr_order > MAX_ORDER || n > UINT32_MAX)
		return 1;
	for (size_t i = 0; i < nr_order; i++)
		ok.children[i] = order[i] == TALLY_HIST_CHILDREN && !h->no_depth_ties;
	key = malloc(n * ok.nk * sizeof(*key));
	if (!key)
		return -ENOMEM;
	ok.key = key;
	if (fill_out_keys(h, v, n, key, ok.nk, order, nr_order)) {
		err = packed_out_order(v, n, &ok);
		if (err == 1)
			err = tly_rb_sort_rows(v, n, out_goes_left, &ok);
	}
	free(key);
	return err;
}
