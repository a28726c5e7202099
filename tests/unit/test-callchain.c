/*
 * Call-chain trees (tally/callchain.h) through the public API: weights, which frames
 * merge, kid order, the walk; and the arena-built trees a report's hists make (many kids
 * go through a hash table) against the node-by-node ones of a live view's (tally/hist.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <linux/perf_event.h>

#include <tally/callchain.h>
#include <tally/hist.h>
#include <tally/record.h>
#include <tally/session.h>

static const struct tally_symbol syms[] = {
	{ 0x1000, 0x100, "alpha" }, { 0x2000, 0x100, "beta" }, { 0x3000, 0x100, "gamma" },
	{ 0x4000, 0x100, "delta" }, { 0x5000, 0x100, "epsilon" },
};
static const struct tally_symbol beta_again = { 0x2000, 0x80, "beta" };
static const char *dso_a = "/usr/lib/liba.so", *dso_b = "/usr/lib/libb.so";

static struct tally_cc_frame fr(int i)
{
	return (struct tally_cc_frame){ .dso_key = dso_a, .sym = &syms[i], .ip = syms[i].start + 4 };
}

static void weights_and_shape(void **state)
{
	struct tally_cc_node root;
	struct tally_cc_frame abc[] = { fr(0), fr(1), fr(2) }, abd[] = { fr(0), fr(1), fr(3) };
	struct tally_cc_frame e[] = { fr(4) };
	struct tally_cc_node *a, *b;
	(void)state;

	tally_cc_root__init(&root);
	assert_int_equal(tally_cc_root__append(&root, abc, 3, 10), 0);
	assert_int_equal(tally_cc_root__append(&root, abd, 3, 5), 0);
	assert_int_equal(tally_cc_root__append(&root, abc, 2, 1), 0);	/* ends at beta */
	assert_int_equal(tally_cc_root__append(&root, e, 1, 2), 0);
	assert_int_equal(root.cumul, 18);
	assert_int_equal(root.hits, 0);
	assert_int_equal(root.nr_kids, 2);
	a = tally_cc_node__kid(&root, 0);	/* kids in the order first added */
	assert_string_equal(a->f.sym->name, "alpha");
	assert_int_equal(a->cumul, 16);
	assert_int_equal(a->hits, 0);
	assert_int_equal(a->nr_kids, 1);
	b = tally_cc_node__kid(a, 0);
	assert_string_equal(b->f.sym->name, "beta");
	assert_int_equal(b->cumul, 16);
	assert_int_equal(b->hits, 1);
	assert_int_equal(b->nr_kids, 2);
	assert_string_equal(tally_cc_node__kid(b, 0)->f.sym->name, "gamma");
	assert_int_equal(tally_cc_node__kid(b, 0)->hits, 10);
	assert_string_equal(tally_cc_node__kid(b, 1)->f.sym->name, "delta");
	assert_int_equal(tally_cc_node__kid(b, 1)->hits, 5);
	assert_int_equal(tally_cc_node__kid(&root, 1)->cumul, 2);
	tally_cc_root__exit(&root);
	assert_int_equal(root.nr_kids, 0);
	assert_int_equal(root.cumul, 0);
}

static void which_frames_merge(void **state)
{
	struct tally_cc_frame x = fr(1), y = fr(1);
	char buf[32];
	(void)state;

	/* the same function: one symbol, or two symbol objects at one start in one dso */
	assert_true(tally_cc_frame__same(&x, &y));
	y.sym = &beta_again;
	y.ip = 0x2010;
	assert_true(tally_cc_frame__same(&x, &y));
	y.dso_key = dso_b;			/* another dso */
	assert_false(tally_cc_frame__same(&x, &y));
	/* without symbols: the address */
	x = (struct tally_cc_frame){ .dso_key = dso_a, .ip = 0x10 };
	y = (struct tally_cc_frame){ .dso_key = dso_a, .ip = 0x10 };
	assert_true(tally_cc_frame__same(&x, &y));
	y.ip = 0x11;
	assert_false(tally_cc_frame__same(&x, &y));
	/* a symbol and no symbol never merge */
	y = fr(0);
	x.ip = y.ip;
	assert_false(tally_cc_frame__same(&x, &y));
	/* without a dso name, the dso object decides */
	x = (struct tally_cc_frame){ .dso = (const struct tally_dso *)&syms[0], .ip = 7 };
	y = (struct tally_cc_frame){ .dso = (const struct tally_dso *)&syms[1], .ip = 7 };
	assert_false(tally_cc_frame__same(&x, &y));

	assert_string_equal(tally_cc_frame__name(&y, buf, sizeof(buf)), "0x7");
	y = fr(2);
	assert_string_equal(tally_cc_frame__name(&y, buf, sizeof(buf)), "gamma");
}

struct walked {
	char text[4096];
	size_t len, max_depth, nodes, stop_at;
};

static int walk_fn(void *arg, const struct tally_cc_node *const *path, size_t depth)
{
	struct walked *w = arg;
	char buf[32];

	w->nodes++;
	if (depth > w->max_depth)
		w->max_depth = depth;
	if (depth <= 8 && w->len < sizeof(w->text) - 512) {
		for (size_t i = 0; i < depth; i++)
			w->len += (size_t)snprintf(w->text + w->len, sizeof(w->text) - w->len, "%s%s",
						   i ? ";" : "",
						   tally_cc_frame__name(&path[i]->f, buf, sizeof(buf)));
		w->len += (size_t)snprintf(w->text + w->len, sizeof(w->text) - w->len, " %llu\n",
					   (unsigned long long)path[depth - 1]->cumul);
	}
	return w->stop_at && w->nodes == w->stop_at ? 42 : 0;
}

static void walk_gives_paths(void **state)
{
	struct tally_cc_node root;
	struct tally_cc_frame abc[] = { fr(0), fr(1), fr(2) }, ad[] = { fr(0), fr(3) };
	struct walked w = { 0 };
	struct tally_cc_frame *deep;
	(void)state;

	tally_cc_root__init(&root);
	assert_int_equal(tally_cc_root__append(&root, abc, 3, 3), 0);
	assert_int_equal(tally_cc_root__append(&root, ad, 2, 1), 0);
	assert_int_equal(tally_cc_root__walk(&root, walk_fn, &w), 0);
	assert_string_equal(w.text, "alpha 4\nalpha;beta 3\nalpha;beta;gamma 3\nalpha;delta 1\n");
	/* a nonzero return stops the walk and comes back */
	memset(&w, 0, sizeof(w));
	w.stop_at = 2;
	assert_int_equal(tally_cc_root__walk(&root, walk_fn, &w), 42);
	assert_int_equal(w.nodes, 2);
	tally_cc_root__exit(&root);

	/* paths deeper than 1024 are cut there */
	deep = calloc(1100, sizeof(*deep));
	assert_non_null(deep);
	for (size_t i = 0; i < 1100; i++)
		deep[i] = (struct tally_cc_frame){ .dso_key = dso_a, .ip = i };
	tally_cc_root__init(&root);
	assert_int_equal(tally_cc_root__append(&root, deep, 1100, 1), 0);
	memset(&w, 0, sizeof(w));
	assert_int_equal(tally_cc_root__walk(&root, walk_fn, &w), 0);
	assert_int_equal(w.max_depth, 1024);
	assert_int_equal(w.nodes, 1024);
	tally_cc_root__exit(&root);
	free(deep);
}

/* Two trees have the same shape, frames and weights, kids in the same order. */
static void assert_same_tree(const struct tally_cc_node *x, const struct tally_cc_node *y)
{
	assert_int_equal(x->cumul, y->cumul);
	assert_int_equal(x->hits, y->hits);
	assert_int_equal(x->nr_kids, y->nr_kids);
	for (uint32_t i = 0; i < x->nr_kids; i++) {
		const struct tally_cc_node *a = tally_cc_node__kid(x, i), *b = tally_cc_node__kid(y, i);

		assert_true(tally_cc_frame__same(&a->f, &b->f));
		assert_same_tree(a, b);
	}
}

/* The hists of 3000 samples of one process, all in one function (one row) called by
 * 300 callers, each seen a few times in a scrambled order; none resolves to a dso. A
 * report's hists (not decay) build the trees in an arena and index the 300 kids by hash;
 * a live view's (decay) build them node by node and scan. */
static struct tally_hists *callers_hists(struct tally_session *s, bool decay)
{
	struct tally_hists_opts o = { .callchains = true, .trees = TALLY_TREES_BUILD,
				      .decay = decay };
	struct tally_hists *hs = NULL;
	uint64_t chain[4] = { PERF_CONTEXT_USER, 0x401000 };

	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	for (uint64_t n = 0; n < 3000; n++) {
		uint64_t k = (n * 7919) % 300;
		struct tally_sample smp = {
			.type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_PERIOD |
				PERF_SAMPLE_CALLCHAIN,
			.misc = PERF_RECORD_MISC_USER, .ip = chain[1], .pid = 10, .tid = 10,
			.period = n + 1, .callchain = chain, .callchain_nr = 3 + (n & 1),
		};

		chain[2] = 0x402000 + 16 * k;
		chain[3] = 0x409000 + k % 3;
		assert_int_equal(tally_hists__add_sample(hs, 0, &smp, n + 1), 0);
	}
	assert_int_equal(tally_hists__finish(hs), 0);
	return hs;
}

/* The most kids any node of the tree has. */
static uint32_t max_kids(const struct tally_cc_node *n)
{
	uint32_t m = n->nr_kids;

	for (uint32_t i = 0; i < n->nr_kids; i++) {
		uint32_t k = max_kids(tally_cc_node__kid(n, i));

		if (k > m)
			m = k;
	}
	return m;
}

static void arena_trees_match(void **state)
{
	struct tally_session_opts so = { .kallsyms = "/nonexistent", .buildid_dir = "/nonexistent" };
	struct tally_session *s = NULL;
	struct tally_hists *arena, *heap;
	struct tally_hist_entry *const *ea, *const *eh;
	size_t nra, nrh;
	(void)state;

	assert_int_equal(tally_session__new(&s, &so), 0);
	arena = callers_hists(s, false);
	heap = callers_hists(s, true);
	assert_int_equal(tally_hist__sort(tally_hists__hist(arena, 0), false), 0);
	assert_int_equal(tally_hist__sort(tally_hists__hist(heap, 0), false), 0);
	ea = tally_hist__sorted(tally_hists__hist(arena, 0), &nra);
	eh = tally_hist__sorted(tally_hists__hist(heap, 0), &nrh);
	assert_int_equal(nra, 1);
	assert_int_equal(nrh, 1);
	assert_int_equal(ea[0]->nr_samples, 3000);
	assert_int_equal(ea[0]->chain.cumul, 3000 * 3001 / 2);
	assert_int_equal(max_kids(&ea[0]->chain), 300);
	assert_same_tree(&ea[0]->chain, &eh[0]->chain);
	tally_hists__delete(arena);
	tally_hists__delete(heap);
	tally_session__delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(weights_and_shape),
		cmocka_unit_test(which_frames_merge),
		cmocka_unit_test(walk_gives_paths),
		cmocka_unit_test(arena_trees_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
