/*
 * Flame-graph folding (see tally/flame.h).
 *
 * Nodes live in one array; a hash of (parent, name, kind) finds a child in one probe
 * on average, so folding a stack costs one lookup per frame. Names are interned once:
 * a node holds the name's id, and siblings are put in name order only when the tree
 * is walked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/flame.h>
#include "internal/strpool.h"

#define NONE UINT32_MAX

struct fnode {
	uint32_t parent;
	uint32_t name;
	uint32_t hnext;		/* next node in its hash chain */
	uint32_t kind;
	uint64_t value[2];
	uint64_t samples[2];
};

struct tally_flame {
	struct fnode *nodes;
	uint32_t nr, cap;
	uint32_t *buckets;	/* first node of each chain */
	uint32_t nr_buckets;	/* power of two */
	struct tly_strpool pool;
};

static uint32_t node_hash(uint32_t parent, uint32_t name, uint32_t kind)
{
	uint64_t k = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)((k ^ (k >> 31) ^ kind) >> 7);
}

static int grow_buckets(struct tally_flame *f)
{
	uint32_t n = f->nr_buckets * 2;
	uint32_t *b = malloc(n * sizeof(*b));

	if (!b)
		return -ENOMEM;
	memset(b, 0xff, n * sizeof(*b));
	for (uint32_t id = 1; id < f->nr; id++) {
		struct fnode *nd = &f->nodes[id];
		uint32_t h = node_hash(nd->parent, nd->name, nd->kind) & (n - 1);

		nd->hnext = b[h];
		b[h] = id;
	}
	free(f->buckets);
	f->buckets = b;
	f->nr_buckets = n;
	return 0;
}

/* The child (name, kind) of parent, made if new; NONE on ENOMEM. */
static uint32_t child(struct tally_flame *f, uint32_t parent, uint32_t name, uint32_t kind)
{
	uint32_t h = node_hash(parent, name, kind), id;

	for (id = f->buckets[h & (f->nr_buckets - 1)]; id != NONE; id = f->nodes[id].hnext) {
		const struct fnode *nd = &f->nodes[id];

		if (nd->parent == parent && nd->name == name && nd->kind == kind)
			return id;
	}
	if (f->nr == UINT32_MAX - 1)
		return NONE;
	if (f->nr == f->cap) {
		uint32_t cap = f->cap * 2;
		struct fnode *v = realloc(f->nodes, cap * sizeof(*v));

		if (!v)
			return NONE;
		f->nodes = v;
		f->cap = cap;
	}
	if (f->nr >= f->nr_buckets && grow_buckets(f))
		return NONE;
	id = f->nr++;
	f->nodes[id] = (struct fnode){ .parent = parent, .name = name, .kind = kind };
	h &= f->nr_buckets - 1;
	f->nodes[id].hnext = f->buckets[h];
	f->buckets[h] = id;
	return id;
}

int tally_flame__new(struct tally_flame **out)
{
	struct tally_flame *f = calloc(1, sizeof(*f));
	int64_t root_name;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->cap = 1024;
	f->nr_buckets = 1024;
	f->nodes = calloc(f->cap, sizeof(*f->nodes));
	f->buckets = malloc(f->nr_buckets * sizeof(*f->buckets));
	root_name = f->nodes && f->buckets ? tly_strpool__intern(&f->pool, "all") : -ENOMEM;
	if (root_name < 0) {
		tally_flame__delete(f);
		return -ENOMEM;
	}
	memset(f->buckets, 0xff, f->nr_buckets * sizeof(*f->buckets));
	f->nodes[0] = (struct fnode){ .parent = 0, .name = (uint32_t)root_name,
				      .kind = TALLY_FLAME_ROOT, .hnext = NONE };
	f->nr = 1;
	*out = f;
	return 0;
}

void tally_flame__delete(struct tally_flame *f)
{
	if (!f)
		return;
	tly_strpool__exit(&f->pool);
	free(f->nodes);
	free(f->buckets);
	free(f);
}

int tally_flame__add_to(struct tally_flame *f, unsigned series, uint32_t node, uint64_t weight)
{
	if (series > 1 || node >= f->nr)
		return -EINVAL;
	for (;;) {
		struct fnode *nd = &f->nodes[node];

		nd->value[series] += weight;
		nd->samples[series]++;
		if (!node)
			return 0;
		node = nd->parent;
	}
}

int tally_flame__add(struct tally_flame *f, unsigned series, const struct tally_flame_frame *frames,
		     size_t nr, uint64_t weight, uint32_t *leaf)
{
	uint32_t node = 0;

	if (series > 1)
		return -EINVAL;
	for (size_t i = nr; i-- > 0;) {
		const char *name = frames[i].name ? frames[i].name : "[unknown]";
		int64_t id;

		if (frames[i].kind >= TALLY_FLAME_ROOT)
			return -EINVAL;
		id = tly_strpool__intern(&f->pool, name);
		if (id < 0)
			return -ENOMEM;
		node = child(f, node, (uint32_t)id, frames[i].kind);
		if (node == NONE)
			return -ENOMEM;
	}
	if (leaf)
		*leaf = node;
	return tally_flame__add_to(f, series, node, weight);
}

size_t tally_flame__nr_nodes(const struct tally_flame *f)
{
	return f->nr;
}

uint64_t tally_flame__total(const struct tally_flame *f, unsigned series)
{
	return series < 2 ? f->nodes[0].value[series] : 0;
}

uint64_t tally_flame__total_samples(const struct tally_flame *f, unsigned series)
{
	return series < 2 ? f->nodes[0].samples[series] : 0;
}

/* ---- walking ---------------------------------------------------------------------- */

struct order {
	uint32_t *first;	/* index into kids of each node's first child */
	uint32_t *nkids;
	uint32_t *kids;		/* children of node 0, then of node 1, ... */
};

static int sibling_cmp(const void *x, const void *y, void *arg)
{
	const struct tally_flame *f = arg;
	const struct fnode *a = &f->nodes[*(const uint32_t *)x];
	const struct fnode *b = &f->nodes[*(const uint32_t *)y];
	int c = a->name == b->name ? 0 : strcmp(f->pool.names[a->name], f->pool.names[b->name]);

	if (c)
		return c;
	return a->kind < b->kind ? -1 : a->kind > b->kind;
}

static void order_exit(struct order *o)
{
	free(o->first);
	free(o->nkids);
	free(o->kids);
}

/* Each node's children, sorted. */
static int build_order(const struct tally_flame *f, struct order *o)
{
	uint32_t *fill;

	o->first = calloc(f->nr, sizeof(*o->first));
	o->nkids = calloc(f->nr, sizeof(*o->nkids));
	o->kids = malloc(f->nr * sizeof(*o->kids));
	fill = calloc(f->nr, sizeof(*fill));
	if (!o->first || !o->nkids || !o->kids || !fill) {
		free(fill);
		order_exit(o);
		return -ENOMEM;
	}
	for (uint32_t id = 1; id < f->nr; id++)
		o->nkids[f->nodes[id].parent]++;
	for (uint32_t id = 1, at = 0; id <= f->nr; id++) {
		at += o->nkids[id - 1];
		if (id < f->nr)
			o->first[id] = at;
	}
	for (uint32_t id = 1; id < f->nr; id++) {
		uint32_t p = f->nodes[id].parent;

		o->kids[o->first[p] + fill[p]++] = id;
	}
	free(fill);
	for (uint32_t id = 0; id < f->nr; id++)
		if (o->nkids[id] > 1)
			qsort_r(o->kids + o->first[id], o->nkids[id], sizeof(*o->kids), sibling_cmp,
				(void *)f);
	return 0;
}

int tally_flame__walk(struct tally_flame *f, tally_flame_fn fn, void *arg)
{
	struct order o = { 0 };
	struct { uint32_t id, depth; } *stack;
	size_t sp = 0;
	int ret = 0;

	if (build_order(f, &o))
		return -ENOMEM;
	stack = malloc(f->nr * sizeof(*stack));
	if (!stack) {
		order_exit(&o);
		return -ENOMEM;
	}
	stack[sp].id = 0;
	stack[sp++].depth = 0;
	while (sp && !ret) {
		uint32_t id = stack[--sp].id, depth = stack[sp].depth;
		const struct fnode *nd = &f->nodes[id];
		struct tally_flame_node n = {
			.id = id, .parent = nd->parent, .depth = depth,
			.name = f->pool.names[nd->name], .kind = nd->kind,
			.value = { nd->value[0], nd->value[1] },
			.samples = { nd->samples[0], nd->samples[1] },
			.nr_children = o.nkids[id],
		};

		ret = fn(arg, &n);
		/* children pushed last first, so the first pops next */
		for (uint32_t k = o.nkids[id]; k-- > 0;) {
			stack[sp].id = o.kids[o.first[id] + k];
			stack[sp++].depth = depth + 1;
		}
	}
	free(stack);
	order_exit(&o);
	return ret;
}

/* ---- folded text ------------------------------------------------------------------ */

struct folded {
	unsigned series, flags;
	char *path;		/* the current stack's text, names joined by ';' */
	size_t len, cap;
	size_t *at;		/* path length up to each depth's name */
	size_t nr_at;
	struct line {
		char *text;
		uint64_t v[2];
	} *lines;
	size_t nr, nr_cap;
	int err;
};

static int path_put(struct folded *fo, const char *s, size_t n)
{
	if (fo->len + n + 1 > fo->cap) {
		size_t cap = (fo->len + n + 1) * 2;
		char *p = realloc(fo->path, cap);

		if (!p)
			return -ENOMEM;
		fo->path = p;
		fo->cap = cap;
	}
	memcpy(fo->path + fo->len, s, n);
	fo->len += n;
	fo->path[fo->len] = 0;
	return 0;
}

static uint64_t folded_count(const struct folded *fo, const struct tally_flame_node *n,
			     unsigned series)
{
	return fo->flags & TALLY_FLAME_FOLDED_PERIOD ? n->value[series] : n->samples[series];
}

/* fo->path = the stack down to n: its parent's path, ';', its name */
static int folded_path(struct folded *fo, const struct tally_flame_node *n)
{
	static const char *const suffix[TALLY_FLAME_NR_KINDS] = {
		[TALLY_FRAME_KERNEL] = "_[k]", [TALLY_FRAME_INLINED] = "_[i]",
		[TALLY_FRAME_JIT] = "_[j]",
	};
	size_t start;

	if (n->depth >= fo->nr_at) {
		size_t nr = (size_t)n->depth * 2 + 8;
		size_t *v = realloc(fo->at, nr * sizeof(*v));

		if (!v)
			return -ENOMEM;
		fo->at = v;
		fo->nr_at = nr;
	}
	fo->len = n->depth > 1 ? fo->at[n->depth - 1] : 0;
	if (n->depth > 1 && path_put(fo, ";", 1))
		return -ENOMEM;
	start = fo->len;
	if (path_put(fo, n->name, strlen(n->name)))
		return -ENOMEM;
	for (char *c = fo->path + start; *c; c++) {
		if (*c == ';')
			*c = ':';
		else if (*c == '\n')
			*c = ' ';
		else if (*c == ' ' && n->kind == TALLY_FLAME_PROCESS)
			*c = '_';
	}
	if ((fo->flags & TALLY_FLAME_FOLDED_KINDS) && suffix[n->kind] &&
	    path_put(fo, suffix[n->kind], strlen(suffix[n->kind])))
		return -ENOMEM;
	fo->at[n->depth] = fo->len;
	return 0;
}

/* A line per node (its stack), with the node's own counts: its totals minus its
 * children's, which subtract themselves from their parent's line as the walk meets
 * them. */
struct folded_ctx {
	struct folded fo;
	int64_t *line_of;	/* node id -> line index, -1: none (the root) */
};

static int folded_collect(void *arg, const struct tally_flame_node *n)
{
	struct folded_ctx *c = arg;
	struct folded *fo = &c->fo;
	struct line *l;

	if (!n->depth) {
		c->line_of[n->id] = -1;
		return 0;
	}
	if (folded_path(fo, n))
		return -ENOMEM;
	if (fo->nr == fo->nr_cap) {
		size_t cap = fo->nr_cap ? fo->nr_cap * 2 : 1024;
		struct line *v = realloc(fo->lines, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		fo->lines = v;
		fo->nr_cap = cap;
	}
	l = &fo->lines[fo->nr];
	l->text = strdup(fo->path);
	if (!l->text)
		return -ENOMEM;
	for (unsigned s = 0; s < 2; s++)
		l->v[s] = folded_count(fo, n, s);
	c->line_of[n->id] = (int64_t)fo->nr++;
	if (c->line_of[n->parent] >= 0) {
		struct line *p = &fo->lines[c->line_of[n->parent]];

		for (unsigned s = 0; s < 2; s++)
			p->v[s] -= l->v[s];
	}
	return 0;
}

static int line_cmp(const void *x, const void *y)
{
	return strcmp(((const struct line *)x)->text, ((const struct line *)y)->text);
}

int tally_flame__write_folded(struct tally_flame *f, unsigned series, unsigned flags, FILE *fp)
{
	struct folded_ctx c = { .fo = { .series = series, .flags = flags } };
	int ret;

	if (series > 1)
		return -EINVAL;
	c.line_of = malloc(f->nr * sizeof(*c.line_of));
	ret = c.line_of ? tally_flame__walk(f, folded_collect, &c) : -ENOMEM;
	if (!ret) {
		if (c.fo.nr)
			qsort(c.fo.lines, c.fo.nr, sizeof(*c.fo.lines), line_cmp);
		for (size_t i = 0; i < c.fo.nr; i++) {
			struct line *l = &c.fo.lines[i];

			/* equal texts (a name as two kinds without suffixes) are one line */
			while (i + 1 < c.fo.nr && !strcmp(l->text, c.fo.lines[i + 1].text)) {
				c.fo.lines[i + 1].v[0] += l->v[0];
				c.fo.lines[i + 1].v[1] += l->v[1];
				l = &c.fo.lines[++i];
			}
			if (flags & TALLY_FLAME_FOLDED_DIFF) {
				if (l->v[0] || l->v[1])
					fprintf(fp, "%s %llu %llu\n", l->text,
						(unsigned long long)l->v[0], (unsigned long long)l->v[1]);
			} else if (l->v[series]) {
				fprintf(fp, "%s %llu\n", l->text, (unsigned long long)l->v[series]);
			}
		}
		if (ferror(fp))
			ret = -EIO;
	}
	for (size_t i = 0; i < c.fo.nr; i++)
		free(c.fo.lines[i].text);
	free(c.fo.lines);
	free(c.fo.path);
	free(c.fo.at);
	free(c.line_of);
	return ret;
}
