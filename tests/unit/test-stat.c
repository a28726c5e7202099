/*
 * perf stat's arithmetic through the public API (tally/stat.h): buckets per mode over
 * a topology, readings reduced by perf 6.1's rules (scaling, <not counted> CPUs, merged
 * events), and the running mean and deviation of -r.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <tally/stat.h>

/* 4 CPUs: cpu0, cpu1 in core 0 / 1 of socket 0; cpu2, cpu3 in core 0 / 1 of socket 1,
 * cpu3 on node 1. */
static struct tally_topology *topology(void)
{
	struct tally_topology *t = malloc(sizeof(*t) + 4 * sizeof(t->cpu[0]));

	assert_non_null(t);
	t->nr = 4;
	for (int c = 0; c < 4; c++)
		t->cpu[c] = (struct tally_cpu_topo){ .cpu = c, .core = c % 2, .die = 0,
						     .socket = c / 2, .node = c == 3 };
	return t;
}

struct maps {
	struct tally_cpumap *cpus;
	struct tally_threadmap *threads;
};

static struct maps maps(const char *cpus, const char *tids)
{
	struct maps m;
	size_t bad;

	assert_int_equal(tally_cpumap__parse(cpus, &m.cpus, &bad), 0);
	if (tids)
		assert_int_equal(tally_threadmap__parse_tids(tids, &m.threads), 0);
	else	/* per-CPU counting: no thread */
		assert_int_equal(tally_threadmap__single(-1, &m.threads), 0);
	return m;
}

static void maps_free(struct maps *m)
{
	tally_cpumap__delete(m->cpus);
	tally_threadmap__delete(m->threads);
}

static void buckets_per_mode(void **state)
{
	struct tally_topology *t = topology();
	struct maps m = maps("0-3", NULL);
	struct tally_stat_buckets *b;
	const struct tally_stat_bucket *k;

	(void)state;
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_GLOBAL, m.cpus, m.threads, t, 0), 0);
	assert_int_equal(tally_stat_buckets__nr(b), 1);
	assert_int_equal(tally_stat_buckets__get(b, 0)->nr_cpus, 4);
	assert_null(tally_stat_buckets__get(b, 1));
	tally_stat_buckets__delete(b);

	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_NONE, m.cpus, m.threads, t, 0), 0);
	assert_int_equal(tally_stat_buckets__nr(b), 4);
	assert_int_equal(tally_stat_buckets__get(b, 2)->cpu, 2);
	assert_int_equal(tally_stat_buckets__of_pair(b, 3), 3);
	tally_stat_buckets__delete(b);

	/* per socket: two buckets of two CPUs */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_SOCKET, m.cpus, m.threads, t, 0), 0);
	assert_int_equal(tally_stat_buckets__nr(b), 2);
	k = tally_stat_buckets__get(b, 1);
	assert_int_equal(k->socket, 1);
	assert_int_equal(k->nr_cpus, 2);
	assert_int_equal(k->core, 0);		/* not a key of this mode */
	assert_int_equal(tally_stat_buckets__of_pair(b, 1), 0);
	assert_int_equal(tally_stat_buckets__of_pair(b, 2), 1);
	tally_stat_buckets__delete(b);

	/* per core: (socket, core) pairs, sorted by socket first */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_CORE, m.cpus, m.threads, t, 0), 0);
	assert_int_equal(tally_stat_buckets__nr(b), 4);
	k = tally_stat_buckets__get(b, 3);
	assert_int_equal(k->socket, 1);
	assert_int_equal(k->core, 1);
	assert_int_equal(k->nr_cpus, 1);
	tally_stat_buckets__delete(b);

	/* per node: cpu3 alone on node 1, sorted after node 0 */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_NODE, m.cpus, m.threads, t, 0), 0);
	assert_int_equal(tally_stat_buckets__nr(b), 2);
	assert_int_equal(tally_stat_buckets__get(b, 0)->nr_cpus, 3);
	assert_int_equal(tally_stat_buckets__of_pair(b, 3), 1);
	tally_stat_buckets__delete(b);

	/* no topology: every CPU in one core */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_CORE, m.cpus, m.threads, NULL, 0), 0);
	assert_int_equal(tally_stat_buckets__nr(b), 1);
	assert_int_equal(tally_stat_buckets__get(b, 0)->nr_cpus, 4);
	tally_stat_buckets__delete(b);
	tally_stat_buckets__delete(NULL);
	maps_free(&m);

	/* per thread over CPUs: pairs are cpu-major */
	m = maps("0-1", "100,200,300");
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_THREAD, m.cpus, m.threads, t, 0), 0);
	assert_int_equal(tally_stat_buckets__nr(b), 3);
	assert_int_equal(tally_stat_buckets__get(b, 2)->thread_idx, 2);
	assert_int_equal(tally_stat_buckets__of_pair(b, 1 * 3 + 2), 2);
	tally_stat_buckets__delete(b);
	maps_free(&m);
	free(t);
}

static void reduce_by_perf_rules(void **state)
{
	struct tally_topology *t = topology();
	struct maps m = maps("0-3", NULL);
	struct tally_stat_buckets *b;
	struct tally_stat_sum s[4];
	/* cpu1 ran a third of the time it was enabled; cpu2 never ran */
	const struct tally_count v[4] = {
		{ 100, 1000, 1000 }, { 100, 3000, 1000 }, { 50, 1000, 0 }, { 7, 1000, 1000 },
	};

	(void)state;
	/* the whole run: summed, then scaled once: (257 * 6000 / 3000) */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_GLOBAL, m.cpus, m.threads, t, 0), 0);
	memset(s, 0, sizeof(s));
	tally_stat_buckets__add(b, v, s, true);
	assert_int_equal(s[0].val, 514);
	assert_int_equal(s[0].ena, 6000);
	assert_int_equal(s[0].run, 3000);
	/* a merged event's readings add to the same line */
	tally_stat_buckets__add(b, v, s, false);
	assert_int_equal(s[0].val, 1028);
	tally_stat_buckets__delete(b);

	/* --no-scale: the counts as read */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_GLOBAL, m.cpus, m.threads, t,
						 TALLY_STAT_NO_SCALE), 0);
	memset(s, 0, sizeof(s));
	tally_stat_buckets__add(b, v, s, true);
	assert_int_equal(s[0].val, 257);
	tally_stat_buckets__delete(b);

	/* -A: each CPU scaled; the CPU that never ran counts 0 */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_NONE, m.cpus, m.threads, t, 0), 0);
	memset(s, 0, sizeof(s));
	tally_stat_buckets__add(b, v, s, true);
	assert_int_equal(s[1].val, 300);
	assert_int_equal(s[2].val, 0);
	assert_int_equal(s[2].run, 0);
	tally_stat_buckets__delete(b);

	/* per socket: socket 0 scales and sums its CPUs; socket 1 has a CPU that never
	 * ran: not counted (times 0) */
	assert_int_equal(tally_stat_buckets__new(&b, TALLY_AGGR_SOCKET, m.cpus, m.threads, t, 0), 0);
	memset(s, 0, sizeof(s));
	tally_stat_buckets__add(b, v, s, true);
	assert_int_equal(s[0].val, 400);
	assert_int_equal(s[0].ena, 4000);
	assert_int_equal(s[0].nr, 2);
	assert_int_equal(s[1].ena, 0);
	assert_int_equal(s[1].run, 0);
	assert_int_equal(s[1].nr, 1);		/* it stopped at cpu2 */
	tally_stat_buckets__delete(b);
	maps_free(&m);
	free(t);
}

static void mean_and_deviation(void **state)
{
	struct tally_stat_mean m = { 0 };
	const double x[] = { 10, 12, 14 };

	(void)state;
	tally_stat_mean__add(&m, x[0]);
	assert_true(tally_stat_mean__stddev(&m) == 0);
	assert_true(tally_stat_mean__rel_stddev(&m) == 0);
	tally_stat_mean__add(&m, x[1]);
	tally_stat_mean__add(&m, x[2]);
	assert_int_equal(m.n, 3);
	assert_true(fabs(m.mean - 12) < 1e-9);
	/* sample variance 4, of the mean 4 / 3 */
	assert_true(fabs(tally_stat_mean__stddev(&m) - sqrt(4.0 / 3)) < 1e-9);
	assert_true(fabs(tally_stat_mean__rel_stddev(&m) - 100 * sqrt(4.0 / 3) / 12) < 1e-9);
	m = (struct tally_stat_mean){ 0 };
	tally_stat_mean__add(&m, 0);
	tally_stat_mean__add(&m, 0);
	assert_true(tally_stat_mean__rel_stddev(&m) == 0);	/* a mean of 0 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buckets_per_mode),
		cmocka_unit_test(reduce_by_perf_rules),
		cmocka_unit_test(mean_and_deviation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
