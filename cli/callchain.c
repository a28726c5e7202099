/*
 * Call-chain trees printed the way perf 6.1 prints them (graph / fractal / flat /
 * folded, thresholds, caller or callee order). The layout rules (12-column margin, "|",
 * "---", "--NN.NN%--", 11-column levels, the single-chain shortcut) were read off perf
 * 6.1's output; the trees themselves are the library's (tally/callchain.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tally/session.h>

#include "callchain.h"
#include "fmt.h"

/* A run: perf's radix node, from head down single-child hit-less nodes to end. */
struct run {
	struct tally_cc_node *head, *end;
};

static struct tally_cc_node *run_end(struct tally_cc_node *n)
{
	while (n->hits == 0 && n->nr_kids == 1)
		n = tally_cc_node__kid(n, 0);
	return n;
}

/* Order of branches: heaviest first; perf breaks ties by its insertion tree, ordered by
 * (dso object, address) descending. perf compares dso objects by address, which grow
 * in the order the file's maps make them: tally compares that order itself
 * (tally_dso__index), not its own heap addresses. */
/* The source line of a frame named "sym file:line" (-g srcline), or NULL. */
static const char *frame_line(const struct tally_cc_node *n)
{
	const char *sp = n->f.sym && n->f.sym->name ? strrchr(n->f.sym->name, ' ') : NULL;
	const char *colon = sp ? strrchr(sp, ':') : NULL;

	if (!colon || !colon[1])
		return NULL;
	for (const char *c = colon + 1; *c; c++)
		if (*c < '0' || *c > '9')
			return NULL;
	return sp + 1;
}

/* by_line: perf compares frames that both have a source line by its text; by_function:
 * an inlined function's frame by its name (to any frame) */
static bool tie_after(const struct tally_cc_node *a, const struct tally_cc_node *b, bool by_line,
		      bool by_function)
{
	uint64_t x, y;
	const char *la, *lb;
	int c;

	if (by_function && a->f.sym && b->f.sym &&
	    (tally_symbol__is_inlined(a->f.sym) || tally_symbol__is_inlined(b->f.sym)) &&
	    (c = tally_symbol__name_cmp(a->f.sym, b->f.sym)))
		return c < 0;
	/* -g srcline: perf compares source lines first: a frame without one (outside any
	 * map, a kernel frame without debug info) before any frame with one, lines by their
	 * text (below); frames without a line by function, as the other keys */
	if (by_line) {
		la = frame_line(a);
		lb = frame_line(b);
		if (!la != !lb)
			return la != NULL;
		if (la && (c = strcmp(la, lb)))
			return c < 0;
	}
	if (a->f.dso_key != b->f.dso_key) {
		if (!a->f.dso_key || !b->f.dso_key)
			return !a->f.dso_key;
		return tally_dso__index(a->f.dso) < tally_dso__index(b->f.dso);
	}
	x = a->f.sym ? a->f.sym->start : a->f.ip;
	y = b->f.sym ? b->f.sym->start : b->f.ip;
	return x < y;
}

static bool run_after(const struct tally_cc_node *a, const struct tally_cc_node *b, bool by_line,
		      bool by_function)
{
	if (a->cumul != b->cumul)
		return a->cumul < b->cumul;
	return tie_after(a, b, by_line, by_function);
}

/* Runs kept on the stack by sorted_runs' callers: most nodes have a few kids. */
#define NR_STACK_RUNS 16

/* The runs below node (children of its run end), sorted by weight, pruned: in buf (room
 * for NR_STACK_RUNS) or, for more kids, an allocation (NULL: out of memory). */
static struct run *sorted_runs(struct tally_cc_node *end, uint64_t min_hit,
			       const struct cc_print_opts *o, size_t *nr, struct run *buf)
{
	struct run *r = buf;
	size_t n = 0;

	*nr = 0;
	if (end->nr_kids > NR_STACK_RUNS && !(r = malloc(end->nr_kids * sizeof(*r))))
		return NULL;
	for (size_t i = 0; i < end->nr_kids; i++) {
		struct tally_cc_node *k = tally_cc_node__kid(end, (uint32_t)i);

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

		while (j > 0 && run_after(r[j - 1].head, t.head, o->by_line, o->by_function)) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = t;
	}
	*nr = n;
	return r;
}

struct printer {
	struct fmt_buf *b;
	const struct cc_print_opts *o;
	int err;
};

static void margin(struct printer *p, int left)
{
	fb_spaces(p->b, 12 + (size_t)(left > 0 ? left : 0));
}

static void print_value(struct printer *p, uint64_t v, uint64_t total)
{
	double pct = total ? 100.0 * (double)v / (double)total : 0.0;

	fb_pct(p->b, pct, 0);
}

/* The graph's depth mask as perf's: 32 bits, level n at bit n modulo 32 (perf shifts an
 * int by the level; x86 takes the count modulo 32), so past 32 levels its pipes repeat
 * the upper levels'. */
static inline uint32_t level_bit(int depth)
{
	return UINT32_C(1) << ((unsigned)depth & 31);
}

static void graph_line(struct printer *p, int depth, uint32_t mask, int left)
{
	margin(p, left);
	for (int i = 0; i < depth; i++)
		fb_put(p->b, mask & level_bit(i) ? "|          " : "           ", 11);
	fb_putc(p->b, '\n');
}

static void graph_frame(struct printer *p, uint64_t value, const char *name, int depth,
			uint32_t mask, int period, uint64_t total, int left)
{
	margin(p, left);
	for (int i = 0; i < depth; i++) {
		fb_putc(p->b, mask & level_bit(i) ? '|' : ' ');
		if (!period && i == depth - 1) {
			fb_put(p->b, "--", 2);
			print_value(p, value, total);
			fb_put(p->b, "--", 2);
		} else {
			fb_put(p->b, "          ", 10);
		}
	}
	fb_puts(p->b, name);
	fb_putc(p->b, '\n');
}

static uint64_t min_hit_for(const struct printer *p, uint64_t total)
{
	return (uint64_t)((double)total * (p->o->min_percent / 100.0));
}

/* The smallest branch shown in the graph, flat and folded views (not fractal's). */
static uint64_t min_hit_all(const struct printer *p)
{
	return min_hit_for(p, p->o->hit_total ? p->o->hit_total : p->o->total);
}

/* Print the branches below end; returns how many were printed at this level. */
static size_t graph_level(struct printer *p, struct tally_cc_node *end, uint64_t total, int depth,
			  uint32_t depth_mask, int left)
{
	bool rel = p->o->mode == CC_FRACTAL;
	uint64_t min_hit = rel ? min_hit_for(p, end->cumul - end->hits)
			       : min_hit_all(p);
	uint32_t new_mask = depth_mask;
	uint64_t remaining = total;
	size_t nr;
	struct run *runs, stack[NR_STACK_RUNS];
	char buf[64];

	runs = sorted_runs(end, min_hit, p->o, &nr, stack);
	if (!runs) {
		p->err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < nr; i++) {
		struct tally_cc_node *n = runs[i].head;
		int idx = 0;

		remaining -= n->cumul;
		if (i + 1 == nr && (!rel || !remaining))
			new_mask &= ~level_bit(depth - 1);
		graph_line(p, depth, depth_mask, left);
		for (;;) {
			graph_frame(p, runs[i].head->cumul, tally_cc_frame__name(&n->f, buf, sizeof(buf)),
				    depth, new_mask, idx++, total, left);
			if (n == runs[i].end)
				break;
			n = tally_cc_node__kid(n, 0);
		}
		graph_level(p, runs[i].end,
			    rel ? runs[i].end->cumul - runs[i].end->hits : total, depth + 1,
			    new_mask | level_bit(depth), left);
	}
	if (rel && remaining && remaining != total && nr) {
		new_mask &= ~level_bit(depth - 1);
		graph_frame(p, remaining, "[...]", depth, new_mask, 0, total, left);
	}
	if (runs != stack)
		free(runs);
	return nr;
}

static void print_graph(struct printer *p, struct tally_cc_node *root)
{
	const struct cc_print_opts *o = p->o;
	uint64_t total = o->mode == CC_FRACTAL ? o->parent : o->total;
	uint64_t min_hit = o->mode == CC_FRACTAL ? min_hit_for(p, root->cumul - root->hits)
						 : min_hit_all(p);
	struct tally_cc_node *start = root;
	bool printed_any = false;
	int left = 0;
	size_t nr;
	struct run stack[NR_STACK_RUNS], *runs = sorted_runs(root, min_hit, o, &nr, stack);
	char buf[64];

	if (!runs) {
		p->err = -ENOMEM;
		return;
	}
	if (!nr) {	/* no branch at or above the threshold (graph_level's for the root) */
		if (runs != stack)
			free(runs);
		return;
	}
	if (nr == 1 && runs[0].head->cumul == o->parent) {
		struct tally_cc_node *n = runs[0].head;
		bool printed = false;
		int i = 0;

		for (;;) {
			if (!(i++ == 0 && o->skip_first)) {
				if (!printed) {
					margin(p, left);
					fb_put(p->b, "|\n", 2);
					margin(p, left);
					fb_put(p->b, "---", 3);
					left += 3;
					printed = true;
				} else {
					margin(p, left);
				}
				fb_puts(p->b, tally_cc_frame__name(&n->f, buf, sizeof(buf)));
				fb_putc(p->b, '\n');
				printed_any = true;
			}
			if (n == runs[0].end)
				break;
			n = tally_cc_node__kid(n, 0);
		}
		start = runs[0].end;
	}
	if (runs != stack)
		free(runs);
	if (graph_level(p, start, total, 1, 1, left))
		printed_any = true;
	if (printed_any)
		fb_putc(p->b, '\n');
}

/* Flat and folded: every node where chains end, heaviest first, with its full path. */
struct leaf {
	struct tally_cc_node *node;
	struct tally_cc_node **path;
	size_t depth;
};

struct leaves {
	struct leaf *v;
	size_t nr, cap;
	uint64_t min_hit;
	const struct cc_print_opts *o;
	struct tally_cc_node *stack[512];
	int err;
};

/* perf lists the nodes where chains end as it walks its tree: a node's kids first, in
 * the order of its insertion tree (tie_after's), then the node; the list is then
 * sorted by weight, ties kept in that order. */
static void collect(struct leaves *l, struct tally_cc_node *n, size_t depth)
{
	struct tally_cc_node **kids;

	if (depth >= sizeof(l->stack) / sizeof(l->stack[0]))
		return;
	if (depth > 0)
		l->stack[depth - 1] = n;
	kids = n->nr_kids ? malloc(n->nr_kids * sizeof(*kids)) : NULL;
	if (n->nr_kids && !kids) {
		l->err = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < n->nr_kids; i++) {
		struct tally_cc_node *k = tally_cc_node__kid(n, i);
		uint32_t j = i;

		while (j > 0 && tie_after(kids[j - 1], k, l->o->by_line, l->o->by_function)) {
			kids[j] = kids[j - 1];
			j--;
		}
		kids[j] = k;
	}
	for (uint32_t i = 0; i < n->nr_kids && !l->err; i++)
		collect(l, kids[i], depth + 1);
	free(kids);
	if (l->err)
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
		l->v[l->nr].path = malloc(depth * sizeof(struct tally_cc_node *));
		if (!l->v[l->nr].path) {
			l->err = -ENOMEM;
			return;
		}
		memcpy(l->v[l->nr].path, l->stack, depth * sizeof(struct tally_cc_node *));
		l->nr++;
	}
}

static void print_flat(struct printer *p, struct tally_cc_node *root)
{
	struct leaves l = { .min_hit = min_hit_all(p), .o = p->o };
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
			fb_put(p->b, "           ", 11);
			print_value(p, lf->node->cumul, p->o->total);
			fb_putc(p->b, '\n');
			for (size_t d = 0; d < lf->depth; d++) {
				fb_put(p->b, "                ", 16);
				fb_puts(p->b, tally_cc_frame__name(&lf->path[d]->f, buf, sizeof(buf)));
				fb_putc(p->b, '\n');
			}
			fb_putc(p->b, '\n');
		} else {
			print_value(p, lf->node->hits, p->o->total);
			fb_putc(p->b, ' ');
			for (size_t d = 0; d < lf->depth; d++) {
				if (d)
					fb_putc(p->b, ';');
				fb_puts(p->b, tally_cc_frame__name(&lf->path[d]->f, buf, sizeof(buf)));
			}
			fb_putc(p->b, '\n');
		}
	}
	for (size_t i = 0; i < l.nr; i++)
		free(l.v[i].path);
	free(l.v);
}

int cc_print(FILE *fp, struct tally_cc_node *root, const struct cc_print_opts *o)
{
	struct fmt_buf b = { 0 };
	int err = cc_print_buf(&b, root, o);

	if (!fb_flush(&b, fp) && !err)
		err = -ENOMEM;
	free(b.p);
	return err;
}

int cc_print_buf(struct fmt_buf *b, struct tally_cc_node *root, const struct cc_print_opts *o)
{
	struct printer p = { .b = b, .o = o };

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
