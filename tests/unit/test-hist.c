/*
 * Histograms (tally/hist.h) through the public API, on a session fed synthetic records:
 * rows by sort keys, output order, children periods and trees (built per sample or
 * deferred: the same), filters, the memo across side-band records, group members,
 * decay, and entries found across hists that share a string pool. Real symbols come
 * from this test's own executable, mapped into a made-up process.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <tally/cpumap.h>
#include <tally/hist.h>
#include <tally/record.h>
#include <tally/session.h>

/* the functions samples land in: called so they stay, never inlined */
__attribute__((noinline)) int hist_fn_leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int hist_fn_mid(int x) { return hist_fn_leaf(x) + 2; }
__attribute__((noinline)) int hist_fn_top(int x) { return hist_fn_mid(x) * 5; }

#define IP(fn) ((uint64_t)(uintptr_t)&(fn) + 1)

static union {
	struct perf_event_header hdr;
	uint8_t b[4096];
	uint64_t align;
} rec;

static void comm(struct tally_session *s, uint32_t pid, const char *name)
{
	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = PERF_RECORD_COMM;
	memcpy(rec.b + 8, &pid, 4);
	memcpy(rec.b + 12, &pid, 4);
	strcpy((char *)rec.b + 16, name);
	rec.hdr.size = (uint16_t)((16 + strlen(name) + 1 + 7) & ~7u);
	assert_int_equal(tally_session__process(s, &rec.hdr), 0);
}

static void mmap2(struct tally_session *s, uint32_t pid, uint64_t start, uint64_t len,
		  uint64_t pgoff, const char *name)
{
	uint64_t v[3] = { start, len, pgoff };

	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = PERF_RECORD_MMAP2;
	rec.hdr.misc = PERF_RECORD_MISC_USER;
	memcpy(rec.b + 8, &pid, 4);
	memcpy(rec.b + 12, &pid, 4);
	memcpy(rec.b + 16, v, 24);
	strcpy((char *)rec.b + 72, name);
	rec.hdr.size = (uint16_t)((72 + strlen(name) + 1 + 7) & ~7u);
	assert_int_equal(tally_session__process(s, &rec.hdr), 0);
}

/* This executable's text, as process pid's: samples in it get real symbols. */
static void map_self(struct tally_session *s, uint32_t pid)
{
	char line[4096], exe[PATH_MAX];
	uint64_t ip = IP(hist_fn_leaf);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = fopen("/proc/self/maps", "r");

	assert_true(n > 0);
	exe[n] = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, o;

		if (sscanf(line, "%lx-%lx %*s %lx", &a, &b, &o) == 3 && ip >= a && ip < b) {
			mmap2(s, pid, a, b - a, o, exe);
			break;
		}
	}
	fclose(f);
}

static struct tally_session *session(void)
{
	struct tally_session_opts o = { .kallsyms = "/nonexistent", .buildid_dir = "/nonexistent" };
	struct tally_session *s = NULL;

	assert_int_equal(tally_session__new(&s, &o), 0);
	comm(s, 10, "alpha");
	comm(s, 20, "beta");
	mmap2(s, 10, 0x10000, 0x1000, 0, "/fake/liba.so");
	mmap2(s, 20, 0x20000, 0x1000, 0, "/fake/libb.so");
	map_self(s, 30);
	comm(s, 30, "self");
	return s;
}

/* A user-space sample; chain: the callchain after PERF_CONTEXT_USER (callee first). */
static struct tally_sample sample(uint32_t pid, uint32_t cpu, uint64_t period,
				  const uint64_t *chain, size_t n)
{
	static uint64_t words[64];

	words[0] = PERF_CONTEXT_USER;
	memcpy(words + 1, chain, n * sizeof(*chain));
	return (struct tally_sample){
		.type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			PERF_SAMPLE_CALLCHAIN,
		.misc = PERF_RECORD_MISC_USER,
		.ip = chain[0], .pid = pid, .tid = pid, .cpu = cpu, .period = period,
		.callchain = words, .callchain_nr = n + 1,
	};
}

static void add(struct tally_hists *hs, size_t ev, uint32_t pid, uint32_t cpu, uint64_t period,
		uint64_t ip)
{
	struct tally_sample smp = sample(pid, cpu, period, &ip, 1);

	assert_int_equal(tally_hists__add_sample(hs, ev, &smp, period), 0);
}

static struct tally_hist_entry *const *sorted(struct tally_hist *h, bool children, size_t *nr)
{
	assert_int_equal(tally_hist__sort(h, children), 0);
	return tally_hist__sorted(h, nr);
}

static void rows_by_keys(void **state)
{
	static const enum tally_hist_col comm_dso[] = { TALLY_HIST_COMM, TALLY_HIST_DSO };
	struct tally_session *s = session();
	struct tally_hists_opts o = { .keys = comm_dso, .nr_keys = 2 };
	struct tally_hists *hs, *fine;
	struct tally_hist_entry *const *e;
	size_t nr;
	(void)state;

	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	assert_int_equal(tally_hists__new(&fine, s, 1, NULL), 0);	/* comm,dso,sym */
	for (int i = 0; i < 3; i++)
		add(hs, 0, 10, 0, 100, 0x10010);
	add(hs, 0, 10, 1, 50, 0x10020);
	add(hs, 0, 20, 0, 10, 0x20000);
	add(hs, 0, 20, 0, 10, 0x20000);
	for (int i = 0; i < 3; i++)
		add(fine, 0, 10, 0, 100, 0x10010);
	add(fine, 0, 10, 1, 50, 0x10020);

	e = sorted(tally_hists__hist(hs, 0), false, &nr);
	assert_int_equal(nr, 2);
	assert_string_equal(e[0]->comm, "alpha");
	assert_string_equal(e[0]->dso_name, "liba.so");
	assert_int_equal(e[0]->period, 350);
	assert_int_equal(e[0]->nr_samples, 4);
	assert_int_equal(e[0]->level, '.');
	assert_string_equal(e[1]->comm, "beta");
	assert_int_equal(e[1]->period, 20);
	assert_int_equal(tally_hist__totals(tally_hists__hist(hs, 0))->period, 370);
	assert_int_equal(tally_hist__totals(tally_hists__hist(hs, 0))->nr_samples, 6);
	/* by symbol too: two unresolved addresses are two rows, at dso offsets */
	e = sorted(tally_hists__hist(fine, 0), false, &nr);
	assert_int_equal(nr, 2);
	assert_null(e[0]->sym);
	assert_int_equal(e[0]->ip, 0x10);
	assert_int_equal(e[0]->period, 300);
	assert_int_equal(e[1]->ip, 0x20);
	/* keys that are not keys */
	tally_hists__delete(fine);
	o.keys = (const enum tally_hist_col[]){ TALLY_HIST_OVERHEAD };
	o.nr_keys = 1;
	assert_int_equal(tally_hists__new(&fine, s, 1, &o), -EINVAL);
	assert_null(fine);
	assert_int_equal(tally_hist_col__parse("symbol"), TALLY_HIST_SYM);
	assert_int_equal(tally_hist_col__parse("tid"), TALLY_HIST_PID);
	assert_int_equal(tally_hist_col__parse("nosuch"), -1);
	tally_hists__delete(hs);
	tally_session__delete(s);
}

static uint64_t plain_chain[3], rec_chain[4];

/* leaf <- mid <- top; and mid calling itself once (still counted once in its children
 * period) */
static void make_chains(void)
{
	plain_chain[0] = rec_chain[0] = IP(hist_fn_leaf);
	plain_chain[1] = rec_chain[1] = IP(hist_fn_mid);
	rec_chain[2] = IP(hist_fn_mid) + 1;
	plain_chain[2] = rec_chain[3] = IP(hist_fn_top);
}

/* (trees of hists that share a pool compare frame by frame) */
static struct tally_hists *children_hists(struct tally_session *s, enum tally_hist_trees trees,
					  bool caller, struct tally_strpool *pool)
{
	struct tally_hists_opts o = { .callchains = true, .children = true, .caller = caller,
				      .trees = trees, .tree_min_percent = 0.5, .pool = pool };
	struct tally_hists *hs;

	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	for (int i = 0; i < 4; i++) {
		struct tally_sample a = sample(30, 0, 10, plain_chain, 3);

		assert_int_equal(tally_hists__add_sample(hs, 0, &a, 10), 0);
		a = sample(30, 0, 5, rec_chain, 4);
		assert_int_equal(tally_hists__add_sample(hs, 0, &a, 5), 0);
	}
	assert_int_equal(tally_hists__finish(hs), 0);
	return hs;
}

static const struct tally_hist_entry *by_name(struct tally_hist_entry *const *e, size_t nr,
					      const char *name)
{
	for (size_t i = 0; i < nr; i++)
		if (e[i]->sym && !strcmp(e[i]->sym->name, name))
			return e[i];
	fail_msg("no row for %s", name);
	return NULL;
}

/* x and y: the same trees (frames, weights, kid order) */
static void same_tree(const struct tally_cc_node *x, const struct tally_cc_node *y)
{
	assert_int_equal(x->cumul, y->cumul);
	assert_int_equal(x->hits, y->hits);
	assert_int_equal(x->nr_kids, y->nr_kids);
	for (uint32_t i = 0; i < x->nr_kids; i++) {
		assert_true(tally_cc_frame__same(&tally_cc_node__kid(x, i)->f,
						 &tally_cc_node__kid(y, i)->f));
		same_tree(tally_cc_node__kid(x, i), tally_cc_node__kid(y, i));
	}
}

static void children_and_trees(void **state)
{
	struct tally_session *s = session();
	struct tally_strpool *pool = tally_strpool__new();
	struct tally_hists *built = children_hists(s, TALLY_TREES_BUILD, false, pool);
	struct tally_hists *deferred = children_hists(s, TALLY_TREES_DEFER, false, pool);
	struct tally_hist_entry *const *e, *const *d;
	const struct tally_hist_entry *leaf, *mid, *top;
	const struct tally_cc_node *n;
	size_t nr, nd;
	(void)state;

	e = sorted(tally_hists__hist(built, 0), true, &nr);
	assert_int_equal(nr, 3);
	leaf = by_name(e, nr, "hist_fn_leaf");
	mid = by_name(e, nr, "hist_fn_mid");
	top = by_name(e, nr, "hist_fn_top");
	assert_int_equal(leaf->period, 60);
	assert_int_equal(leaf->period_acc, 60);
	assert_int_equal(mid->period, 0);
	assert_int_equal(mid->period_acc, 60);	/* recursion counted once */
	assert_int_equal(mid->nr_samples_acc, 8);
	assert_int_equal(top->period_acc, 60);
	/* equal children periods: the caller goes above its callees (perf's order) */
	assert_ptr_equal(e[0], top);
	assert_ptr_equal(e[1], mid);
	assert_ptr_equal(e[2], leaf);
	/* leaf's tree, callee first: leaf -> mid -> {top, mid -> top} */
	n = &leaf->chain;
	assert_int_equal(n->cumul, 60);
	assert_int_equal(n->nr_kids, 1);
	n = tally_cc_node__kid(n, 0);
	assert_string_equal(n->f.sym->name, "hist_fn_leaf");
	n = tally_cc_node__kid(n, 0);
	assert_string_equal(n->f.sym->name, "hist_fn_mid");
	assert_int_equal(n->nr_kids, 2);
	assert_int_equal(tally_cc_node__kid(n, 0)->hits, 40);
	assert_string_equal(tally_cc_node__kid(n, 1)->f.sym->name, "hist_fn_mid");
	assert_int_equal(tally_cc_node__kid(n, 1)->cumul, 20);
	/* deferred trees are the same trees */
	d = sorted(tally_hists__hist(deferred, 0), true, &nd);
	assert_int_equal(nd, nr);
	for (size_t i = 0; i < nr; i++) {
		assert_ptr_equal(d[i]->sym, e[i]->sym);
		assert_int_equal(d[i]->period_acc, e[i]->period_acc);
		same_tree(&d[i]->chain, &e[i]->chain);
	}
	tally_hists__delete(built);
	tally_hists__delete(deferred);
	/* caller order: top's tree starts at top */
	built = children_hists(s, TALLY_TREES_BUILD, true, NULL);
	e = sorted(tally_hists__hist(built, 0), true, &nr);
	n = tally_cc_node__kid(&by_name(e, nr, "hist_fn_leaf")->chain, 0);
	assert_string_equal(n->f.sym->name, "hist_fn_top");
	tally_hists__delete(built);
	tally_strpool__delete(pool);
	tally_session__delete(s);
}

/* Hists of 20,000 distinct 30-frame chains in /fake/liba.so, trees built per sample
 * (TREES_BUILD) or from the deferred log (its 1.3 M words are above the size
 * tally_hists__finish_start gives a thread). */
static struct tally_hists *long_log(struct tally_session *s, enum tally_hist_trees trees,
				    struct tally_strpool *pool)
{
	struct tally_hists_opts o = { .callchains = true, .trees = trees, .pool = pool };
	struct tally_hists *hs;
	uint64_t x = 1, chain[30];

	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	for (uint64_t i = 0; i < 20000; i++) {
		struct tally_sample a;

		for (size_t j = 0; j < 30; j++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			chain[j] = 0x10000 + (x >> 33) % 0x1000;
		}
		a = sample(10, 0, 1 + i % 7, chain, 30);
		assert_int_equal(tally_hists__add_sample(hs, 0, &a, 1 + i % 7), 0);
	}
	return hs;
}

/* x's rows and trees are y's (equal sorted rows: the same addresses and trees) */
static void same_rows(struct tally_hists *x, struct tally_hists *y)
{
	struct tally_hist_entry *const *a, *const *b;
	size_t na, nb;

	a = tally_hist__sorted(tally_hists__hist(x, 0), &na);
	b = tally_hist__sorted(tally_hists__hist(y, 0), &nb);
	assert_int_equal(na, nb);
	assert_true(na > 1000);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i]->ip, b[i]->ip);
		assert_int_equal(a[i]->period, b[i]->period);
		same_tree(&a[i]->chain, &b[i]->chain);
	}
}

/* Run on the first CPU of the affinity mask only (the mask before into *saved). */
static void pin_to_one_cpu(cpu_set_t *saved)
{
	cpu_set_t cpu;
	int first = -1;

	assert_int_equal(sched_getaffinity(0, sizeof(*saved), saved), 0);
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, saved))
			first = c;
	CPU_ZERO(&cpu);
	CPU_SET(first, &cpu);
	assert_int_equal(sched_setaffinity(0, sizeof(cpu), &cpu), 0);
}

/* n samples of 30-frame chains in /fake/liba.so (pids 10 and 20: pid 20's are filtered
 * out by tid), two in three a repeat of an earlier one (the memo's hits), with
 * children and deferred trees, added with the pipeline (tally_hists__pipeline_start)
 * or without. */
static struct tally_hists *piped(struct tally_session *s, struct tally_strpool *pool,
				 bool pipe, size_t n)
{
	static const pid_t tids[] = { 10 };
	struct tally_hist_filter f = { .tids = tids, .nr_tids = 1 };
	struct tally_hists_opts o = { .callchains = true, .children = true,
				      .trees = TALLY_TREES_DEFER, .tree_min_percent = 10,
				      .pool = pool, .filter = &f };
	struct tally_hists *hs;
	uint64_t chain[30];

	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	if (pipe)
		assert_int_equal(tally_hists__pipeline_start(hs), 1);
	for (uint64_t i = 0; i < n; i++) {
		/* two samples in three repeat an earlier one (the memo's hits) */
		uint64_t seed = i % 3 ? 3 * (i / 6) : i;
		struct tally_sample a;

		for (size_t j = 0; j < 30; j++) {
			uint64_t z = (seed * 31 + j) * 0x9e3779b97f4a7c15ull;

			z ^= z >> 29;
			/* the first frames' few addresses are the rows heavy enough for trees */
			chain[j] = 0x10000 + (z * 0xbf58476d1ce4e5b9ull >> 40) % (j < 3 ? 4 : 0x400);
		}
		a = sample(seed % 5 == 4 ? 20 : 10, 0, 1 + i % 7, chain, 30);
		if (a.pid == 20)	/* pid 20 maps libb.so */
			for (size_t j = 0; j + 1 < a.callchain_nr; j++)
				((uint64_t *)a.callchain)[j + 1] += 0x10000;
		a.ip = a.callchain[1];
		assert_int_equal(tally_hists__add_sample(hs, 0, &a, 1 + i % 7), 0);
	}
	assert_int_equal(tally_hists__pipeline_end(hs), 0);
	assert_int_equal(tally_hists__pipeline_end(hs), 0);	/* ended: nothing to do */
	assert_int_equal(tally_hists__finish(hs), 0);
	return hs;
}

/* tally_hists__pipeline_start: samples resolved here and added to the rows on a thread
 * give the rows, totals, children and trees of samples added here, through memo hits,
 * filtered samples and the memo starting over (its budget, TALLY_SAMPLE_MEMO_MAX_WORDS,
 * is reached by about 115,000 distinct 30-frame samples); with one CPU usable there is no
 * thread. */
static void pipeline(void **state)
{
	struct tally_session *s = session();
	struct tally_strpool *pool = tally_strpool__new();
	size_t n = 360000;
	struct tally_hists *here = piped(s, pool, false, n), *there = piped(s, pool, true, n);
	const struct tally_hist_totals *a = tally_hist__totals(tally_hists__hist(here, 0));
	const struct tally_hist_totals *b = tally_hist__totals(tally_hists__hist(there, 0));
	struct tally_hist_entry *const *x, *const *y;
	cpu_set_t saved;
	struct tally_hists *one;
	size_t nx, ny;
	(void)state;

	assert_int_equal(a->nr_samples, n);
	assert_int_equal(a->nr_samples, b->nr_samples);
	assert_int_equal(a->period, b->period);
	assert_int_equal(a->nr_filtered, b->nr_filtered);
	assert_true(a->nr_filtered < a->nr_samples);
	assert_int_equal(a->filtered_period, b->filtered_period);
	x = sorted(tally_hists__hist(here, 0), true, &nx);
	y = sorted(tally_hists__hist(there, 0), true, &ny);
	assert_int_equal(nx, ny);
	assert_true(nx > 1000);
	assert_true(x[0]->chain.nr_kids > 0);	/* a heavy row: its tree */
	for (size_t i = 0; i < nx; i++) {
		assert_ptr_equal(x[i]->sym, y[i]->sym);
		assert_int_equal(x[i]->ip, y[i]->ip);
		assert_int_equal(x[i]->period, y[i]->period);
		assert_int_equal(x[i]->nr_samples, y[i]->nr_samples);
		assert_int_equal(x[i]->period_acc, y[i]->period_acc);
		assert_int_equal(x[i]->nr_samples_acc, y[i]->nr_samples_acc);
		same_tree(&x[i]->chain, &y[i]->chain);
	}
	tally_hists__delete(here);
	tally_hists__delete(there);
	/* one CPU: no thread, samples added here */
	pin_to_one_cpu(&saved);
	assert_int_equal(tally_hists__new(&one, s, 1, NULL), 0);
	assert_int_equal(tally_hists__pipeline_start(one), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
	add(one, 0, 10, 0, 5, 0x10010);
	assert_int_equal(tally_hist__totals(tally_hists__hist(one, 0))->period, 5);
	tally_hists__delete(one);
	/* deleted with the thread running */
	assert_int_equal(tally_hists__new(&one, s, 1, NULL), 0);
	assert_int_equal(tally_hists__pipeline_start(one), 1);
	assert_int_equal(tally_hists__pipeline_start(one), 1);
	add(one, 0, 10, 0, 5, 0x10010);
	tally_hists__delete(one);
	assert_int_equal(tally_hists__pipeline_start(NULL), -EINVAL);
	assert_int_equal(tally_hists__pipeline_end(NULL), -EINVAL);
	tally_strpool__delete(pool);
	tally_session__delete(s);
}

/* tally_hists__finish_start: the trees its thread builds while the rows are sorted are
 * those built sample by sample, and so are those it builds at once on one CPU; finish
 * waits for it, and a second finish does nothing. */
static void finish_on_a_thread(void **state)
{
	struct tally_session *s = session();
	struct tally_strpool *pool = tally_strpool__new();
	struct tally_hists *built = long_log(s, TALLY_TREES_BUILD, pool);
	struct tally_hists *two = long_log(s, TALLY_TREES_DEFER, pool);
	struct tally_hists *one = long_log(s, TALLY_TREES_DEFER, pool);
	cpu_set_t saved;
	(void)state;

	assert_int_equal(tally_hists__finish(built), 0);
	assert_int_equal(tally_hist__sort(tally_hists__hist(built, 0), false), 0);
	assert_int_equal(tally_hists__finish_start(two), 0);
	assert_int_equal(tally_hist__sort(tally_hists__hist(two, 0), false), 0);
	assert_int_equal(tally_hists__finish(two), 0);
	assert_int_equal(tally_hists__finish(two), 0);
	same_rows(built, two);
	pin_to_one_cpu(&saved);
	assert_int_equal(tally_hists__finish_start(one), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
	assert_int_equal(tally_hist__sort(tally_hists__hist(one, 0), false), 0);
	assert_int_equal(tally_hists__finish(one), 0);
	same_rows(built, one);
	/* deleted while its thread may still run: the thread ends first */
	tally_hists__delete(two);
	two = long_log(s, TALLY_TREES_DEFER, pool);
	assert_int_equal(tally_hists__finish_start(two), 0);
	tally_hists__delete(two);
	assert_int_equal(tally_hists__finish(NULL), -EINVAL);
	assert_int_equal(tally_hists__finish_start(NULL), -EINVAL);
	tally_hists__delete(built);
	tally_hists__delete(one);
	tally_strpool__delete(pool);
	tally_session__delete(s);
}

static void filters(void **state)
{
	static const char *const only_alpha[] = { "alpha", NULL };
	static const char *const only_libb[] = { "libb.so", NULL };
	static const pid_t pid20[] = { 20 };
	struct tally_session *s = session();
	struct tally_cpumap *cpu1 = NULL;
	struct tally_hist_filter f = { .comms = only_alpha };
	struct tally_hists_opts o = { .filter = &f };
	struct tally_hists *hs;
	const struct tally_hist_totals *t;
	size_t nr, bad;
	(void)state;

	assert_int_equal(tally_cpumap__parse("1", &cpu1, &bad), 0);
	for (int round = 0; round < 4; round++) {
		if (round == 1)
			f = (struct tally_hist_filter){ .dsos = only_libb };
		if (round == 2)
			f = (struct tally_hist_filter){ .pids = pid20, .nr_pids = 1 };
		if (round == 3)
			f = (struct tally_hist_filter){ .cpus = cpu1 };
		assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
		for (int i = 0; i < 3; i++) {	/* again: the memo must filter alike */
			add(hs, 0, 10, 0, 100, 0x10010);
			add(hs, 0, 20, 1, 10, 0x20000);
		}
		t = tally_hist__totals(tally_hists__hist(hs, 0));
		sorted(tally_hists__hist(hs, 0), false, &nr);
		assert_int_equal(nr, 1);
		if (round < 3) {	/* the others count in the totals, not in rows */
			assert_int_equal(t->period, 330);
			assert_int_equal(t->nr_samples, 6);
			assert_int_equal(t->filtered_period, round == 0 ? 300 : 30);
			assert_int_equal(t->nr_filtered, 3);
		} else {		/* other cpus: not even in the totals */
			assert_int_equal(t->period, 30);
			assert_int_equal(t->filtered_period, 30);
		}
		tally_hists__delete(hs);
	}
	tally_cpumap__delete(cpu1);
	tally_session__delete(s);
}

/* --time and -U: samples outside the span, or whose ip has no symbol, count nowhere
 * (not in the totals either); the filter's questions asked directly say the same. */
static void time_and_unresolved(void **state)
{
	struct tally_session *s = session();
	struct tally_hist_filter f = { .time_start = 150, .time_end = 250 };
	struct tally_hists_opts o = { .filter = &f };
	const struct tally_hist_totals *t;
	struct tally_hists *hs;
	uint64_t ip = 0x10010;
	(void)state;

	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	for (uint64_t when = 100; when <= 300; when += 50) {
		struct tally_sample smp = sample(10, 0, 10, &ip, 1);

		smp.type |= PERF_SAMPLE_TIME;
		smp.time = when;
		assert_int_equal(tally_hist_filter__keeps_time(&f, &smp), when >= 150 && when <= 250);
		assert_true(tally_hist_filter__keeps_time(NULL, &smp));
		assert_int_equal(tally_hists__add_sample(hs, 0, &smp, 10), 0);
	}
	t = tally_hist__totals(tally_hists__hist(hs, 0));
	assert_int_equal(t->nr_samples, 3);	/* 150, 200, 250: the bounds are in */
	assert_int_equal(t->period, 30);
	tally_hists__delete(hs);

	f = (struct tally_hist_filter){ .hide_unresolved = true };
	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	{
		uint64_t in_self = IP(hist_fn_leaf);
		struct tally_sample named = sample(30, 0, 7, &in_self, 1);
		struct tally_sample bare = sample(10, 0, 5, &ip, 1);	/* liba.so: no file */

		assert_true(tally_hist_filter__keeps_resolved(&f, s, &named));
		assert_false(tally_hist_filter__keeps_resolved(&f, s, &bare));
		assert_int_equal(tally_hists__add_sample(hs, 0, &named, 7), 0);
		assert_int_equal(tally_hists__add_sample(hs, 0, &bare, 5), 0);
	}
	t = tally_hist__totals(tally_hists__hist(hs, 0));
	assert_int_equal(t->nr_samples, 1);
	assert_int_equal(t->period, 7);
	tally_hists__delete(hs);
	tally_session__delete(s);
}

static void memo_follows_the_session(void **state)
{
	struct tally_session *s = session();
	struct tally_hists *hs;
	struct tally_hist_entry *const *e;
	size_t nr;
	(void)state;

	assert_int_equal(tally_hists__new(&hs, s, 1, NULL), 0);
	add(hs, 0, 10, 0, 1, 0x10010);
	add(hs, 0, 10, 0, 1, 0x10010);
	/* process 10 maps another library over the address: the same sample is another row */
	mmap2(s, 10, 0x10000, 0x1000, 0, "/fake/libc.so");
	add(hs, 0, 10, 0, 1, 0x10010);
	/* another process's records change nothing for it */
	mmap2(s, 20, 0x10000, 0x1000, 0, "/fake/libd.so");
	add(hs, 0, 10, 0, 1, 0x10010);
	e = sorted(tally_hists__hist(hs, 0), false, &nr);
	assert_int_equal(nr, 2);
	assert_string_equal(e[0]->dso_name, "liba.so");
	assert_int_equal(e[0]->period, 2);
	assert_string_equal(e[1]->dso_name, "libc.so");
	assert_int_equal(e[1]->period, 2);
	tally_hists__delete(hs);
	tally_session__delete(s);
}

static void group_members(void **state)
{
	struct tally_session *s = session();
	struct tally_hists *hs;
	struct tally_hist *leader, *member;
	struct tally_hist_entry *const *e;
	size_t nr;
	(void)state;

	assert_int_equal(tally_hists__new(&hs, s, 2, NULL), 0);
	add(hs, 0, 10, 0, 5, 0x10010);
	add(hs, 1, 10, 0, 7, 0x10010);
	add(hs, 1, 20, 0, 9, 0x20000);	/* only in the member */
	leader = tally_hists__hist(hs, 0);
	member = tally_hists__hist(hs, 1);
	assert_null(tally_hists__hist(hs, 2));
	assert_int_equal(tally_hist__link_member(leader, member, 1, 2), 0);
	assert_int_equal(tally_hist__nr_members(leader), 2);
	e = sorted(leader, false, &nr);
	assert_int_equal(nr, 2);
	assert_int_equal(e[0]->period, 5);
	assert_int_equal(e[0]->members[1]->period, 7);
	assert_int_equal(e[1]->period, 0);	/* an empty leader row */
	assert_int_equal(e[1]->members[1]->period, 9);
	assert_ptr_equal(tally_hist__find(member, e[1]), e[1]->members[1]);
	tally_hists__delete(hs);
	tally_session__delete(s);
}

/* A live view's group: linked, unlinked before the member gains rows and linked again;
 * decay drops the links (and the empty leader rows linking added). */
static void group_relink(void **state)
{
	struct tally_session *s = session();
	struct tally_hists_opts o = { .decay = true };
	struct tally_hists *hs;
	struct tally_hist *leader, *member;
	struct tally_hist_entry *const *e;
	size_t nr;
	(void)state;

	assert_int_equal(tally_hists__new(&hs, s, 2, &o), 0);
	leader = tally_hists__hist(hs, 0);
	member = tally_hists__hist(hs, 1);
	tally_hist__unlink_members(NULL);	/* NULL-safe */
	tally_hist__unlink_members(leader);	/* never linked: nothing to do */
	assert_int_equal(tally_hist__nr_members(leader), 1);
	add(hs, 0, 10, 0, 16, 0x10010);
	add(hs, 1, 10, 0, 24, 0x10010);
	assert_int_equal(tally_hist__link_member(leader, member, 1, 2), 0);
	tally_hist__unlink_members(leader);
	assert_int_equal(tally_hist__nr_members(leader), 1);
	e = sorted(leader, false, &nr);
	assert_int_equal(nr, 1);
	assert_null(e[0]->members);
	add(hs, 1, 20, 0, 40, 0x20000);	/* a new row of the member only */
	assert_int_equal(tally_hist__link_member(leader, member, 1, 2), 0);
	tally_hist__group_sort_idx(leader, 1);
	e = sorted(leader, false, &nr);
	assert_int_equal(nr, 2);
	assert_int_equal(e[0]->period, 0);	/* by the member's: 40, then 24 */
	assert_int_equal(e[0]->members[1]->period, 40);
	assert_int_equal(e[1]->members[1]->period, 24);
	assert_int_equal(tally_hists__decay(hs, false), 0);
	assert_int_equal(tally_hist__nr_members(leader), 1);
	e = sorted(leader, false, &nr);
	assert_int_equal(nr, 1);	/* the empty row went */
	assert_int_equal(e[0]->period, 14);
	assert_null(e[0]->members);
	assert_int_equal(tally_hist__link_member(leader, member, 1, 2), 0);
	e = sorted(leader, false, &nr);
	assert_int_equal(nr, 2);
	/* decay reset the sort index: by the leader's again */
	assert_int_equal(e[0]->period, 14);
	assert_int_equal(e[0]->members[1]->period, 21);
	assert_int_equal(e[1]->members[1]->period, 35);
	tally_hists__delete(hs);
	tally_session__delete(s);
}

static void decay(void **state)
{
	struct tally_session *s = session();
	struct tally_hists_opts o = { .callchains = true, .children = true, .caller = true,
				      .trees = TALLY_TREES_BUILD, .decay = true };
	struct tally_hists *hs;
	struct tally_hist_entry *const *e;
	struct tally_sample smp = sample(30, 0, 80, plain_chain, 3);
	size_t nr;
	(void)state;

	assert_int_equal(tally_hists__new(&hs, s, 1, &o), 0);
	assert_int_equal(tally_hists__add_sample(hs, 0, &smp, 80), 0);
	add(hs, 0, 10, 0, 1, 0x10010);
	assert_int_equal(tally_hists__decay(hs, false), 0);
	e = sorted(tally_hists__hist(hs, 0), true, &nr);
	assert_int_equal(nr, 3);	/* period 1 decays to 0: its row goes */
	assert_int_equal(by_name(e, nr, "hist_fn_leaf")->period, 70);
	assert_int_equal(by_name(e, nr, "hist_fn_top")->period_acc, 70);
	assert_int_equal(by_name(e, nr, "hist_fn_top")->chain.cumul, 70);
	assert_int_equal(tally_hist__totals(tally_hists__hist(hs, 0))->period, 70);
	assert_int_equal(tally_hists__decay(hs, true), 0);	/* -z */
	sorted(tally_hists__hist(hs, 0), true, &nr);
	assert_int_equal(nr, 0);
	tally_hists__delete(hs);
	/* hists made without decay refuse it */
	assert_int_equal(tally_hists__new(&hs, s, 1, NULL), 0);
	assert_int_equal(tally_hists__decay(hs, false), -EINVAL);
	tally_hists__delete(hs);
	tally_session__delete(s);
}

static void shared_pool(void **state)
{
	struct tally_session *s1 = session(), *s2 = session();
	struct tally_strpool *pool = tally_strpool__new();
	struct tally_hists_opts o = { .pool = pool };
	struct tally_hists *a, *b;
	struct tally_hist_entry *const *e;
	size_t nr;
	(void)state;

	/* two files (a diff): rows of one are found in the other */
	assert_non_null(pool);
	assert_int_equal(tally_hists__new(&a, s1, 1, &o), 0);
	assert_int_equal(tally_hists__new(&b, s2, 1, &o), 0);
	add(a, 0, 10, 0, 3, 0x10010);
	add(b, 0, 10, 0, 4, 0x10010);
	add(b, 0, 20, 0, 4, 0x20000);
	e = sorted(tally_hists__hist(a, 0), false, &nr);
	assert_int_equal(nr, 1);
	assert_non_null(tally_hist__find(tally_hists__hist(b, 0), e[0]));
	assert_int_equal(tally_hist__find(tally_hists__hist(b, 0), e[0])->period, 4);
	assert_ptr_equal(tally_strpool__intern(pool, "alpha"), e[0]->comm);
	tally_hists__delete(a);
	tally_hists__delete(b);
	tally_strpool__delete(pool);
	tally_session__delete(s1);
	tally_session__delete(s2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_by_keys),
		cmocka_unit_test(children_and_trees),
		cmocka_unit_test(filters),
		cmocka_unit_test(time_and_unresolved),
		cmocka_unit_test(memo_follows_the_session),
		cmocka_unit_test(group_members),
		cmocka_unit_test(group_relink),
		cmocka_unit_test(decay),
		cmocka_unit_test(shared_pool),
		cmocka_unit_test(finish_on_a_thread),
		cmocka_unit_test(pipeline),
	};

	/* the functions the samples land in exist (and are not folded away) */
	if (hist_fn_top(1) != 30)
		return 1;
	make_chains();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
