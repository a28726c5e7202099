/*
 * Histogram entries: hashing by sort keys, output order, and perf 6.1's --stdio table
 * (column names, widths, "# " prefix, dotted rule, "[.]"/"[k]" symbol levels).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tally/session.h>

#include "fmt.h"
#include "hist.h"

static const struct {
	const char *name;
	enum hist_col col;
} col_names[] = {
	{ "overhead", HC_OVERHEAD }, { "overhead_children", HC_CHILDREN },
	{ "sample", HC_SAMPLE }, { "period", HC_PERIOD }, { "comm", HC_COMM },
	{ "pid", HC_PID }, { "tid", HC_PID }, { "dso", HC_DSO }, { "sym", HC_SYM },
	{ "symbol", HC_SYM }, { "cpu", HC_CPU }, { "trace", HC_TRACE },
};

int hist_col_parse(const char *name)
{
	for (size_t i = 0; i < sizeof(col_names) / sizeof(col_names[0]); i++)
		if (!strcmp(name, col_names[i].name))
			return (int)col_names[i].col;
	return -1;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t entry_hash(const struct hists *h, const struct hist_entry *e)
{
	uint64_t x = 0x12345;

	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case HC_COMM:
			x = mix(x, (uintptr_t)e->comm);
			break;
		case HC_PID:
			x = mix(x, (uint64_t)(uint32_t)e->tid);
			break;
		case HC_DSO:
			x = mix(x, (uintptr_t)e->dso_key);
			break;
		case HC_SYM:
			x = mix(x, (uintptr_t)e->dso_key);
			x = mix(x, e->sym ? e->sym->start : e->ip);
			break;
		case HC_CPU:
			x = mix(x, (uint64_t)(uint32_t)e->cpu);
			break;
		case HC_TRACE:	/* interned */
			x = mix(x, (uintptr_t)e->trace);
			break;
		default:
			break;
		}
	}
	return x;
}

static bool entry_eq(const struct hists *h, const struct hist_entry *a,
		     const struct hist_entry *b)
{
	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case HC_COMM:
			if (a->comm != b->comm)
				return false;
			break;
		case HC_PID:
			if (a->tid != b->tid)
				return false;
			break;
		case HC_DSO:
			if (a->dso_key != b->dso_key)
				return false;
			break;
		case HC_SYM:
			/* a symbol is its dso and start address (dsos may be per process) */
			/* the level is not part of the key: the first sample's is shown */
			if (!a->sym != !b->sym || a->dso_key != b->dso_key)
				return false;
			if (a->sym ? a->sym->start != b->sym->start : a->ip != b->ip)
				return false;
			break;
		case HC_CPU:
			if (a->cpu != b->cpu)
				return false;
			break;
		case HC_TRACE:
			if (a->trace != b->trace)
				return false;
			break;
		default:
			break;
		}
	}
	return true;
}

int hists__init(struct hists *h, const enum hist_col *keys, size_t nr_keys)
{
	return hists__init_shared(h, keys, nr_keys, NULL);
}

int hists__init_shared(struct hists *h, const enum hist_col *keys, size_t nr_keys,
		       struct strpool *pool)
{
	memset(h, 0, sizeof(*h));
	h->pool = pool ? pool : &h->own_pool;
	h->nr_members = 1;
	if (nr_keys > HC_NR)
		return -EINVAL;
	memcpy(h->keys, keys, nr_keys * sizeof(*keys));
	h->nr_keys = nr_keys;
	h->cap = 1024;
	h->table = calloc(h->cap, sizeof(*h->table));
	h->hashes = calloc(h->cap, sizeof(*h->hashes));
	return h->table && h->hashes ? 0 : -ENOMEM;
}

void hists__exit(struct hists *h)
{
	free(h->hashes);
	h->hashes = NULL;
	if (!h->table)
		return;
	for (size_t i = 0; i < h->cap; i++) {
		if (h->table[i]) {
			if (!h->arena)
				cc_root_free(&h->table[i]->chain);
			free(h->table[i]->members);
			free(h->table[i]);
		}
	}
	free(h->table);
	free(h->sorted);
	strpool__exit(&h->own_pool);
	memset(h, 0, sizeof(*h));
}

static uint64_t str_hash(const char *s)
{
	uint64_t x = 1469598103934665603ull;

	while (*s)
		x = (x ^ (unsigned char)*s++) * 1099511628211ull;
	return x;
}

const char *strpool__intern(struct strpool *p, const char *s)
{
	size_t i;

	if (p->nr * 2 >= p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		char **n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t j = 0; j < p->cap; j++) {
			if (!p->v[j])
				continue;
			for (i = str_hash(p->v[j]) & (cap - 1); n[i]; i = (i + 1) & (cap - 1))
				;
			n[i] = p->v[j];
		}
		free(p->v);
		p->v = n;
		p->cap = cap;
	}
	for (i = str_hash(s) & (p->cap - 1); p->v[i]; i = (i + 1) & (p->cap - 1))
		if (!strcmp(p->v[i], s))
			return p->v[i];
	p->v[i] = strdup(s);
	if (!p->v[i])
		return NULL;
	p->nr++;
	return p->v[i];
}

void strpool__exit(struct strpool *p)
{
	for (size_t i = 0; i < p->cap; i++)
		free(p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

const char *hists__comm(struct hists *h, const char *comm)
{
	return strpool__intern(h->pool, comm ? comm : "[unknown]");
}

static int grow(struct hists *h)
{
	size_t cap = h->cap * 2;
	struct hist_entry **t = calloc(cap, sizeof(*t));
	uint64_t *hs = calloc(cap, sizeof(*hs));

	if (!t || !hs) {
		free(t);
		free(hs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->cap; i++) {
		struct hist_entry *e = h->table[i];
		size_t j;

		if (!e)
			continue;
		for (j = e->hash & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
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

struct hist_entry *hists__findnew(struct hists *h, const struct hist_entry *tmpl_in)
{
	struct hist_entry keyed;
	const struct hist_entry *tmpl = tmpl_in;
	uint64_t hash;

	if (tmpl_in->dso && !tmpl_in->dso_key) {
		keyed = *tmpl_in;
		keyed.dso_key = strpool__intern(h->pool, tally_dso__short_name(tmpl_in->dso));
		if (!keyed.dso_key)
			return NULL;
		tmpl = &keyed;
	}
	hash = entry_hash(h, tmpl) | 1;	/* never 0: that marks an empty slot */
	struct hist_entry *e;
	size_t i;

	if ((h->nr + 1) * 4 >= h->cap * 3 && grow(h))
		return NULL;
	/* probe the hashes only: the entries themselves are far apart in memory */
	for (i = hash & (h->cap - 1); h->hashes[i]; i = (i + 1) & (h->cap - 1))
		if (h->hashes[i] == hash && entry_eq(h, h->table[i], tmpl))
			return h->table[i];
	e = malloc(sizeof(*e));
	if (!e)
		return NULL;
	*e = *tmpl;
	e->period = e->nr_samples = e->period_acc = e->nr_samples_acc = 0;
	e->max_depth = 0;
	e->members = NULL;
	e->id = 0;
	e->seq = (uint32_t)h->nr;
	cc_root_init(&e->chain);
	e->hash = hash;
	h->table[i] = e;
	h->hashes[i] = hash;
	h->nr++;
	return e;
}

static const char *sym_name(const struct hist_entry *e)
{
	return e->sym && e->sym->name ? e->sym->name : NULL;
}

static int key_cmp(const struct hists *h, const struct hist_entry *a,
		   const struct hist_entry *b)
{
	int c;

	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case HC_COMM:	/* interned: equal strings are one pointer */
			if (a->comm != b->comm && (c = strcmp(a->comm, b->comm)))
				return c;
			break;
		case HC_PID:
			if (a->tid != b->tid)
				return a->tid < b->tid ? -1 : 1;
			break;
		case HC_DSO:
			/* perf: rows outside any dso ([unknown]) after the others */
			if (!a->dso != !b->dso)
				return a->dso ? -1 : 1;
			if (a->dso_key != b->dso_key && (c = strcmp(a->dso_name, b->dso_name)))
				return c;
			break;
		case HC_SYM: {
			const char *x = sym_name(a), *y = sym_name(b);

			if (x && y && (c = strcmp(x, y)))
				return c;
			if (!x != !y)
				return x ? -1 : 1;
			/* perf's output sort leaves two unresolved rows tied */
			break;
		}
		case HC_CPU:
			if (a->cpu != b->cpu)
				return a->cpu < b->cpu ? -1 : 1;
			break;
		case HC_TRACE:	/* perf: strings in order; N/A rows tie */
			if (a->trace != b->trace && a->trace && b->trace && (c = strcmp(a->trace, b->trace)))
				return c;
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
static int64_t perf_in_cmp(const struct hists *h, const struct hist_entry *e,
			   const struct hist_entry *n)
{
	int64_t c;

	for (size_t i = 0; i < h->nr_keys; i++) {
		switch (h->keys[i]) {
		case HC_COMM:	/* interned: equal strings are one pointer */
			if (n->comm != e->comm && (c = strcmp(n->comm, e->comm)))
				return c;
			break;
		case HC_PID:
			if (n->tid != e->tid)
				return (int64_t)n->tid - e->tid;
			break;
		case HC_DSO:
			/* perf: rows outside any dso ([unknown]) after the others */
			if (!e->dso != !n->dso)
				return e->dso ? 1 : -1;
			if (e->dso_key != n->dso_key && (c = strcmp(n->dso_name, e->dso_name)))
				return c;
			break;
		case HC_SYM:
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
			if (e->sym->start != n->sym->start)
				return (int64_t)(n->sym->start - e->sym->start);
			if (e->sym->size != n->sym->size)
				return (int64_t)((n->sym->start + n->sym->size) -
						 (e->sym->start + e->sym->size));
			break;
		case HC_CPU:
			if (n->cpu != e->cpu)
				return (int64_t)n->cpu - e->cpu;
			break;
		case HC_TRACE:
			if (n->trace != e->trace && n->trace && e->trace && (c = strcmp(n->trace, e->trace)))
				return c;
			break;
		default:
			break;
		}
	}
	return 0;
}

static bool in_goes_left(const struct hist_entry *n, const struct hist_entry *e, const void *h)
{
	return perf_in_cmp(h, e, n) < 0;
}

static int seq_qcmp(const void *pa, const void *pb)
{
	uint32_t a = (*(struct hist_entry *const *)pa)->seq, b = (*(struct hist_entry *const *)pb)->seq;

	return (a > b) - (a < b);
}

struct sort_ctx {
	const struct hists *h;
	const enum hist_col *order;	/* value columns to sort by, in order */
	size_t nr_order;
};

static const struct hist_entry *member(const struct hist_entry *e, size_t k)
{
	return k == 0 ? e : e->members ? e->members[k] : NULL;
}

/* compare a field member by member (group view), heaviest first */
static int group_cmp(const struct hists *h, const struct hist_entry *a,
		     const struct hist_entry *b, bool acc)
{
	for (size_t k = 1; k < h->nr_members; k++) {
		const struct hist_entry *x = member(a, k), *y = member(b, k);
		uint64_t vx = x ? (acc ? x->period_acc : x->period) : 0;
		uint64_t vy = y ? (acc ? y->period_acc : y->period) : 0;

		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	return 0;
}

static uint64_t value_of(const struct hist_entry *e, enum hist_col c)
{
	switch (c) {
	case HC_CHILDREN:
		return e->period_acc;
	case HC_SAMPLE:
		return e->nr_samples;
	default:
		return e->period;
	}
}

static int out_cmp(const void *pa, const void *pb, void *arg)
{
	const struct hist_entry *a = *(struct hist_entry *const *)pa;
	const struct hist_entry *b = *(struct hist_entry *const *)pb;
	const struct sort_ctx *ctx = arg;
	int c;

	for (size_t i = 0; i < ctx->nr_order; i++) {
		enum hist_col col = ctx->order[i];
		uint64_t x = value_of(a, col), y = value_of(b, col);

		if (x != y)
			return x > y ? -1 : 1;
		if (ctx->h->nr_members > 1 && col != HC_SAMPLE &&
		    (c = group_cmp(ctx->h, a, b, col == HC_CHILDREN)))
			return c;
		/* perf: with equal children periods, a caller goes above its callees (rows
		 * made by one thread; whatever the sort keys, as 6.1 does it) */
		if (col == HC_CHILDREN && !ctx->h->no_depth_ties && a->tid == b->tid && a->pid == b->pid &&
		    a->max_depth != b->max_depth) {
			bool deeper_first = ctx->h->caller;

			if (a->max_depth > b->max_depth)
				return deeper_first ? -1 : 1;
			return deeper_first ? 1 : -1;
		}
	}
	return key_cmp(ctx->h, a, b);
}

static bool out_goes_left(const struct hist_entry *n, const struct hist_entry *e, const void *ctx)
{
	return out_cmp(&n, &e, (void *)ctx) < 0;
}

/* A red-black tree over indices (CLRS insertion, which is what the kernel's rbtree does). */
struct rb {
	size_t *l, *r, *p;
	bool *red;
	size_t root;
};

#define NIL ((size_t)-1)

static void rb_rotate(struct rb *t, size_t x, bool left)
{
	size_t *a = left ? t->r : t->l, *b = left ? t->l : t->r;
	size_t y = a[x];

	a[x] = b[y];
	if (b[y] != NIL)
		t->p[b[y]] = x;
	t->p[y] = t->p[x];
	if (t->p[x] == NIL)
		t->root = y;
	else if (x == t->l[t->p[x]])
		t->l[t->p[x]] = y;
	else
		t->r[t->p[x]] = y;
	b[y] = x;
	t->p[x] = y;
}

static void rb_fixup(struct rb *t, size_t z)
{
	while (t->p[z] != NIL && t->red[t->p[z]]) {
		size_t p = t->p[z], g = t->p[p];
		bool pleft = p == t->l[g];
		size_t u = pleft ? t->r[g] : t->l[g];

		if (u != NIL && t->red[u]) {
			t->red[p] = t->red[u] = false;
			t->red[g] = true;
			z = g;
			continue;
		}
		if (z == (pleft ? t->r[p] : t->l[p])) {
			z = p;
			rb_rotate(t, z, pleft);
			p = t->p[z];
			g = t->p[p];
		}
		t->red[p] = false;
		t->red[g] = true;
		rb_rotate(t, g, !pleft);
	}
	t->red[t->root] = false;
}

/* Insert v[0..n) in order into a red-black tree where goes_left(new, existing) sends a
 * row left, and put the in-order walk back into v. */
static int rb_order(struct hist_entry **v, size_t n,
		    bool (*goes_left)(const struct hist_entry *, const struct hist_entry *,
				      const void *), const void *ctx)
{
	struct rb t = { .root = NIL };
	struct hist_entry **out;
	size_t *stack, sp = 0, k = 0, x;
	int err = -ENOMEM;

	if (n < 2)
		return 0;
	t.l = malloc(n * sizeof(size_t));
	t.r = malloc(n * sizeof(size_t));
	t.p = malloc(n * sizeof(size_t));
	t.red = malloc(n * sizeof(bool));
	stack = malloc(n * sizeof(size_t));
	out = malloc(n * sizeof(*out));
	if (!t.l || !t.r || !t.p || !t.red || !stack || !out)
		goto out;
	for (size_t z = 0; z < n; z++) {
		size_t y = NIL;
		bool left = false;

		x = t.root;
		while (x != NIL) {
			y = x;
			left = goes_left(v[z], v[x], ctx);
			x = left ? t.l[x] : t.r[x];
		}
		t.l[z] = t.r[z] = NIL;
		t.p[z] = y;
		t.red[z] = true;
		if (y == NIL)
			t.root = z;
		else if (left)
			t.l[y] = z;
		else
			t.r[y] = z;
		rb_fixup(&t, z);
	}
	/* in-order walk */
	x = t.root;
	while (x != NIL || sp) {
		while (x != NIL) {
			stack[sp++] = x;
			x = t.l[x];
		}
		x = stack[--sp];
		out[k++] = v[x];
		x = t.r[x];
	}
	memcpy(v, out, n * sizeof(*out));
	err = 0;
out:
	free(t.l);
	free(t.r);
	free(t.p);
	free(t.red);
	free(stack);
	free(out);
	return err;
}

int hists__sort(struct hists *h, bool children)
{
	static const enum hist_col with_children[] = { HC_CHILDREN, HC_OVERHEAD };

	return hists__sort_by(h, with_children + (children ? 0 : 1), children ? 2 : 1);
}

int hists__sort_by(struct hists *h, const enum hist_col *order, size_t nr_order)
{
	struct sort_ctx ctx = { .h = h, .order = order, .nr_order = nr_order };
	size_t n = 0;

	free(h->sorted);
	h->sorted = malloc((h->nr ? h->nr : 1) * sizeof(*h->sorted));
	if (!h->sorted)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++)
		if (h->table[i])
			h->sorted[n++] = h->table[i];
	/* perf inserts the rows as they are made into its input tree, walks that into its
	 * collapsed tree, and walks that into its output tree, ordered by its comparator
	 * (ties go right); the first two orders are not total (see perf_in_cmp), nor is the
	 * last in children mode, so the trees' shapes decide ties: do exactly the same */
	qsort(h->sorted, n, sizeof(*h->sorted), seq_qcmp);
	if (rb_order(h->sorted, n, in_goes_left, h))
		return -ENOMEM;
	/* perf collapses only when a key needs it: comm (strings, not comm objects) */
	for (size_t i = 0; i < h->nr_keys; i++)
		if (h->keys[i] == HC_COMM && rb_order(h->sorted, n, in_goes_left, h))
			return -ENOMEM;
	return rb_order(h->sorted, n, out_goes_left, &ctx);
}

int hists__link_member(struct hists *leader, struct hists *m, size_t idx, size_t nr)
{
	leader->nr_members = nr;
	for (size_t i = 0; i < m->cap; i++) {
		struct hist_entry *e = m->table[i], *l;

		if (!e)
			continue;
		l = hists__findnew(leader, e);
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

/* --- printing --- */

/* Headers aligned right; perf's "    Pid:Command" carries its own indent and is left
 * aligned like the other key columns. */
static bool col_right(enum hist_col c)
{
	return c <= HC_PERIOD || c == HC_CPU;
}

static const char *col_header(enum hist_col c, bool self)
{
	switch (c) {
	case HC_OVERHEAD:
		return self ? "Self" : "Overhead";
	case HC_CHILDREN:
		return "Children";
	case HC_SAMPLE:
		return "Samples";
	case HC_PERIOD:
		return "Period";
	case HC_COMM:
		return "Command";
	case HC_PID:
		return "    Pid:Command";
	case HC_DSO:
		return "Shared Object";
	case HC_SYM:
		return "Symbol";
	case HC_CPU:
		return "CPU";
	case HC_TRACE:
		return "Trace output";
	default:
		return "";
	}
}

static size_t col_min_width(enum hist_col c)
{
	switch (c) {
	case HC_OVERHEAD:
	case HC_CHILDREN:
		return 8;
	case HC_SAMPLE:
	case HC_PERIOD:
		return 12;
	default:
		return 0;
	}
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static const char *thread_comm(const struct hist_entry *e)
{
	const char *c = e->thread ? tally_thread__comm(e->thread) : NULL;

	return c ? c : e->comm;
}

static void print_value_cell(FILE *fp, const struct hists *h, const struct hist_entry *e,
			     enum hist_col c, const struct hists_print_opts *o, uint64_t total)
{
	for (size_t k = 0; k < h->nr_members; k++) {
		const struct hist_entry *m = member(e, k);
		uint64_t t = k == 0 ? total : o->member_totals ? o->member_totals[k] : 0;

		switch (c) {
		case HC_OVERHEAD:
			fmt_pct(fp, pct(m ? m->period : 0, t), 7);
			break;
		case HC_CHILDREN:
			fmt_pct(fp, pct(m ? m->period_acc : 0, t), 7);
			break;
		case HC_SAMPLE:
			fmt_u64_pad(fp, m ? m->nr_samples : 0, 12);
			break;
		case HC_PERIOD:
			fmt_u64_pad(fp, m ? m->period : 0, 12);
			break;
		default:
			break;
		}
	}
}

static void print_cell(FILE *fp, const struct hist_entry *e, enum hist_col c, int w,
		       uint64_t total, bool last)
{
	switch (c) {
	case HC_OVERHEAD:
		fmt_pct(fp, pct(e->period, total), w - 1);
		break;
	case HC_CHILDREN:
		fmt_pct(fp, pct(e->period_acc, total), w - 1);
		break;
	case HC_SAMPLE:
		fmt_u64_pad(fp, e->nr_samples, w);
		break;
	case HC_PERIOD:
		fmt_u64_pad(fp, e->period, w);
		break;
	case HC_COMM:
		/* as perf: the width comes from the threads' current comms (cell_len), so
		 * an entry's older comm ("perf-exec" before the exec) is cut to it */
		fmt_str_left(fp, e->comm, (size_t)w, (size_t)w);
		break;
	case HC_PID:
		fprintf(fp, "%7d:%-*s", e->tid, w - 8, thread_comm(e));
		break;
	case HC_DSO:
		fmt_str_left(fp, e->dso_name, (size_t)w, 0);
		break;
	case HC_SYM: {
		int n;

		if (sym_name(e)) {
			const char lv[4] = { '[', e->level, ']', ' ' };

			fwrite_unlocked(lv, 1, 4, fp);
			fmt_puts(fp, sym_name(e));
			n = 4 + (int)strlen(sym_name(e));
		} else {
			n = fprintf(fp, "[%c] %-#.*" PRIx64, e->level, 16, e->ip);
		}
		if (!last && n < w)
			fmt_spaces(fp, (size_t)(w - n));
		break;
	}
	case HC_CPU:
		fprintf(fp, "%*.*d", w, 3, e->cpu);
		break;
	case HC_TRACE:	/* the last column is not padded, as perf's */
		fmt_str_left(fp, e->trace ? e->trace : "N/A", last ? 0 : (size_t)w, 0);
		break;
	default:
		break;
	}
}

static size_t cell_len(const struct hist_entry *e, enum hist_col c)
{
	char buf[32];

	switch (c) {
	case HC_COMM:
		return strlen(thread_comm(e));
	case HC_PID:
		return 8 + strlen(thread_comm(e));
	case HC_DSO:
		return strlen(e->dso_name);
	case HC_SYM:
		return 4 + (sym_name(e) ? strlen(sym_name(e)) : 18);
	case HC_CPU:
		return (size_t)snprintf(buf, sizeof(buf), "%.3d", e->cpu);
	case HC_TRACE:
		return e->trace ? strlen(e->trace) : 3;
	default:
		return 0;
	}
}

int hists__fprintf(struct hists *h, FILE *fp, const struct hists_print_opts *o)
{
	uint64_t total = o->relative ? h->filtered_period : h->total_period;
	enum hist_col cols[HC_NR * 2];
	size_t widths[HC_NR * 2], nr = 0, nshow = 0;
	int err = 0;

	for (size_t i = 0; i < o->nr_cols && nr < HC_NR * 2; i++)
		if (!o->elide[o->cols[i]])
			cols[nr++] = o->cols[i];
	if (!h->nr_members)
		h->nr_members = 1;
	for (size_t i = 0; i < nr; i++) {
		size_t minw = col_min_width(cols[i]) * (hist_col_is_key(cols[i]) ? 1 : h->nr_members);

		widths[i] = strlen(col_header(cols[i], o->overhead_is_self)) > minw
				    ? strlen(col_header(cols[i], o->overhead_is_self)) : minw;
	}
	/* widths over the entries that will be shown */
	for (size_t k = 0; k < h->nr; k++) {
		const struct hist_entry *e = h->sorted[k];
		uint64_t v = o->children ? e->period_acc : e->period;

		/* perf sizes columns over every entry, shown or under --percent-limit */
		if (!(o->percent_limit > 0 && pct(v, total) < o->percent_limit))
			nshow = k + 1;
		for (size_t i = 0; i < nr; i++) {
			size_t l = cell_len(e, cols[i]);

			if (cols[i] == HC_PID && l < 8 + 7)
				l = 8 + 7;
			if (l > widths[i])
				widths[i] = l;
		}
	}
	if (o->header) {
		fputs("# ", fp);
		for (size_t i = 0; i < nr; i++) {
			const char *hd = col_header(cols[i], o->overhead_is_self);

			if (i)
				fputs("  ", fp);
			if (col_right(cols[i]))
				fprintf(fp, "%*s", (int)widths[i], hd);
			else
				fprintf(fp, "%-*s", (int)widths[i], hd);
		}
		fputs("\n# ", fp);
		for (size_t i = 0; i < nr; i++) {
			if (i)
				fputs("  ", fp);
			for (size_t j = 0; j < widths[i]; j++)
				fputc('.', fp);
		}
		fputs("\n#\n", fp);
	}
	for (size_t k = 0; k < nshow; k++) {
		struct hist_entry *e = h->sorted[k];
		uint64_t v = o->children ? e->period_acc : e->period;

		if (o->percent_limit > 0 && pct(v, total) < o->percent_limit)
			continue;
		fputs("  ", fp);
		for (size_t i = 0; i < nr; i++) {
			if (i)
				fputs("  ", fp);
			if (h->nr_members > 1 && !hist_col_is_key(cols[i]))
				print_value_cell(fp, h, e, cols[i], o, total);
			else
				print_cell(fp, e, cols[i], (int)widths[i], total, i + 1 == nr);
		}
		fputc('\n', fp);
		if (o->cc.mode != CC_NONE && h->callchains) {
			struct cc_print_opts cc = o->cc;

			cc.total = total;
			cc.parent = v;
			err = cc_print(fp, &e->chain, &cc);
			if (err)
				break;
		}
	}
	return err;
}
