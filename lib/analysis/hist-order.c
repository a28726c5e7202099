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

/* rank[i * stride]: row i's place among the rows by a string key (its text) or the
 * symbol's name (sym_names), UINT64_MAX for rows without one (perf puts those last) */
static int rank_column(struct tally_hist_entry **v, size_t n, enum tally_hist_col c,
		       bool sym_names, uint64_t *rank, size_t stride)
{
	const void **s = malloc((n ? n : 1) * sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		const struct tally_hist_entry *e = v[j];

		if (c == TALLY_HIST_COMM)
			s[j] = e->comm;
		else if (c == TALLY_HIST_DSO)
			s[j] = e->dso ? e->dso_name : NULL;
		else
			s[j] = e->sym && e->sym->name ? e->sym : NULL;
	}
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

/* A red-black tree over indices (CLRS insertion, which is what the kernel's rbtree does). */
/* A red-black tree over indices (CLRS insertion, which is what the kernel's rbtree
 * does); a node's links side by side: a step down the tree touches one cache line. */
struct rb_node {
	uint32_t c[2];	/* left, right */
	uint32_t p;
	uint32_t red;
};

struct rb {
	struct rb_node *t;
	uint32_t root;
};

#define NIL UINT32_MAX

/* rotate x down to the side left (true) or right */
static void rb_rotate(struct rb *rb, uint32_t x, bool left)
{
	struct rb_node *t = rb->t;
	int a = left ? 1 : 0, b = !a;
	uint32_t y = t[x].c[a];

	t[x].c[a] = t[y].c[b];
	if (t[y].c[b] != NIL)
		t[t[y].c[b]].p = x;
	t[y].p = t[x].p;
	if (t[x].p == NIL)
		rb->root = y;
	else
		t[t[x].p].c[x == t[t[x].p].c[0] ? 0 : 1] = y;
	t[y].c[b] = x;
	t[x].p = y;
}

static void rb_fixup(struct rb *rb, uint32_t z)
{
	struct rb_node *t = rb->t;

	while (t[z].p != NIL && t[t[z].p].red) {
		uint32_t p = t[z].p, g = t[p].p;
		bool pleft = p == t[g].c[0];
		uint32_t u = t[g].c[pleft ? 1 : 0];

		if (u != NIL && t[u].red) {
			t[p].red = t[u].red = false;
			t[g].red = true;
			z = g;
			continue;
		}
		if (z == t[p].c[pleft ? 1 : 0]) {
			z = p;
			rb_rotate(rb, z, pleft);
			p = t[z].p;
			g = t[p].p;
		}
		t[p].red = false;
		t[g].red = true;
		rb_rotate(rb, g, !pleft);
	}
	t[rb->root].red = false;
}

/* Insert 0..n) in order into a red-black tree where goes_left(new, existing) sends a row
 * left; perm: its in-order walk. */
int tly_rb_order(size_t n, bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx,
		 size_t *perm)
{
	struct rb rb = { .root = NIL };
	uint32_t *stack, x;
	size_t sp = 0, k = 0;

	if (n >= NIL)
		return -ENOMEM;
	rb.t = malloc((n ? n : 1) * sizeof(*rb.t));
	stack = malloc((n ? n : 1) * sizeof(*stack));
	if (!rb.t || !stack) {
		free(rb.t);
		free(stack);
		return -ENOMEM;
	}
	for (uint32_t z = 0; z < n; z++) {
		uint32_t y = NIL;
		int side = 0;

		for (x = rb.root; x != NIL; x = rb.t[x].c[side]) {
			y = x;
			side = !goes_left(z, x, ctx);
		}
		rb.t[z] = (struct rb_node){ .c = { NIL, NIL }, .p = y, .red = true };
		if (y == NIL)
			rb.root = z;
		else
			rb.t[y].c[side] = z;
		rb_fixup(&rb, z);
	}
	for (x = rb.root; x != NIL || sp;) {	/* in-order walk */
		for (; x != NIL; x = rb.t[x].c[0])
			stack[sp++] = x;
		x = stack[--sp];
		perm[k++] = x;
		x = rb.t[x].c[1];
	}
	free(rb.t);
	free(stack);
	return 0;
}

int tly_rb_sort_rows(struct tally_hist_entry **v, size_t n,
		     bool (*goes_left)(size_t z, size_t x, const void *ctx), const void *ctx)
{
	size_t *perm = malloc((n ? n : 1) * sizeof(*perm));
	struct tally_hist_entry **out = malloc((n ? n : 1) * sizeof(*out));
	int err = perm && out ? tly_rb_order(n, goes_left, ctx, perm) : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++)
		out[i] = v[perm[i]];
	if (!err)
		memcpy(v, out, n * sizeof(*out));
	free(perm);
	free(out);
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
static bool fill_out_keys(const struct tally_hist *h, struct tally_hist_entry **v, size_t n,
			  uint64_t *key, size_t nk, size_t first)
{
	for (size_t i = 0; i < h->nr_keys; i++) {
		enum tally_hist_col c = h->keys[i];

		for (size_t j = 0; j < n; j++) {
			const struct tally_hist_entry *e = v[j];
			uint64_t *k = key + j * nk + first + i;

			if (c == TALLY_HIST_PID)
				*k = (uint64_t)(int64_t)e->tid ^ SIGN_FLIP;
			else if (c == TALLY_HIST_CPU)
				*k = (uint64_t)(int64_t)e->cpu ^ SIGN_FLIP;
			else if (c == TALLY_HIST_DSO && !dso_consistent(e))
				return false;
			else if (c != TALLY_HIST_COMM && c != TALLY_HIST_DSO && c != TALLY_HIST_SYM)
				return false;
		}
		if ((c == TALLY_HIST_COMM || c == TALLY_HIST_DSO || c == TALLY_HIST_SYM) &&
		    rank_column(v, n, c, true, key + first + i, nk))
			return false;
	}
	return true;
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
	if (fill_out_keys(h, v, n, key, ok.nk, nr_order + 3)) {
		for (size_t j = 0; j < n; j++) {
			uint64_t *k = key + j * ok.nk;

			for (size_t i = 0; i < nr_order; i++)
				k[i] = tly_hist_entry__value(v[j], order[i]);
			k[nr_order] = (uint32_t)v[j]->pid;
			k[nr_order + 1] = (uint32_t)v[j]->tid;
			k[nr_order + 2] = v[j]->max_depth;
		}
		err = tly_rb_sort_rows(v, n, out_goes_left, &ok);
	}
	free(key);
	return err;
}
