/*
 * perf stat's arithmetic (see tally/stat.h): buckets of (cpu, thread) pairs for an
 * aggregation mode, one event's readings reduced into them by perf 6.1's rules, and
 * the running mean and deviation of repeated runs.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tally/stat.h>

struct tally_stat_buckets {
	enum tally_aggr mode;
	bool scale;
	size_t ncpu, nthr;
	struct tally_stat_bucket *v;
	size_t nr;
	size_t *pair;		/* pair → bucket */
};

static int cmp_buckets(const void *x, const void *y)
{
	const struct tally_stat_bucket *a = x, *b = y;

	if (a->socket != b->socket)
		return a->socket - b->socket;
	if (a->die != b->die)
		return a->die - b->die;
	if (a->node != b->node)
		return a->node - b->node;
	return a->core - b->core;
}

/* A CPU's keys as the mode groups them: the keys it does not group by are 0. */
static struct tally_stat_bucket cpu_key(enum tally_aggr mode, const struct tally_topology *topo,
					int cpu)
{
	const struct tally_cpu_topo *t = topo ? tally_topology__cpu(topo, cpu) : NULL;
	struct tally_stat_bucket k;

	memset(&k, 0, sizeof(k));
	k.cpu = cpu;
	if (t) {
		k.socket = t->socket;
		k.die = t->die;
		k.node = t->node;
		k.core = t->core;
	}
	switch (mode) {
	case TALLY_AGGR_SOCKET: k.die = 0; k.node = 0; k.core = 0; break;
	case TALLY_AGGR_DIE: k.node = 0; k.core = 0; break;
	case TALLY_AGGR_CORE: k.node = 0; break;
	case TALLY_AGGR_NODE: k.socket = 0; k.die = 0; k.core = 0; break;
	default: break;
	}
	return k;
}

/* core/die/socket/node: the CPUs' unique keys, sorted; each CPU's pairs to its key. */
static void topo_buckets(struct tally_stat_buckets *b, const struct tally_cpumap *cpus,
			 const struct tally_topology *topo)
{
	for (size_t c = 0; c < b->ncpu; c++) {
		struct tally_stat_bucket k = cpu_key(b->mode, topo, cpus->cpu[c]);
		size_t i;

		for (i = 0; i < b->nr; i++)
			if (!cmp_buckets(&b->v[i], &k))
				break;
		if (i == b->nr)
			b->v[b->nr++] = k;
	}
	qsort(b->v, b->nr, sizeof(*b->v), cmp_buckets);
	for (size_t c = 0; c < b->ncpu; c++) {
		struct tally_stat_bucket k = cpu_key(b->mode, topo, cpus->cpu[c]);

		for (size_t i = 0; i < b->nr; i++) {
			if (cmp_buckets(&b->v[i], &k))
				continue;
			b->v[i].nr_cpus++;
			for (size_t t = 0; t < b->nthr; t++)
				b->pair[c * b->nthr + t] = i;
		}
	}
}

int tally_stat_buckets__new(struct tally_stat_buckets **out, enum tally_aggr mode,
			    const struct tally_cpumap *cpus, const struct tally_threadmap *threads,
			    const struct tally_topology *topo, unsigned flags)
{
	struct tally_stat_buckets *b = calloc(1, sizeof(*b));
	size_t np;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->mode = mode;
	b->scale = !(flags & TALLY_STAT_NO_SCALE);
	b->ncpu = cpus->nr;
	b->nthr = threads->nr;
	np = b->ncpu * b->nthr;
	b->pair = calloc(np ? np : 1, sizeof(*b->pair));
	b->v = calloc(np ? np : 1, sizeof(*b->v));
	if (!b->pair || !b->v) {
		tally_stat_buckets__delete(b);
		return -ENOMEM;
	}
	if (mode == TALLY_AGGR_GLOBAL) {
		b->nr = 1;
		b->v[0].nr_cpus = (int)b->ncpu;
	} else if (mode == TALLY_AGGR_THREAD) {
		b->nr = b->nthr;
		for (size_t t = 0; t < b->nthr; t++) {
			b->v[t].thread_idx = (int)t;
			for (size_t c = 0; c < b->ncpu; c++)
				b->pair[c * b->nthr + t] = t;
		}
	} else if (mode == TALLY_AGGR_NONE) {
		b->nr = b->ncpu;
		for (size_t c = 0; c < b->ncpu; c++) {
			b->v[c].cpu = cpus->cpu[c];
			b->v[c].nr_cpus = 1;
			for (size_t t = 0; t < b->nthr; t++)
				b->pair[c * b->nthr + t] = c;
		}
	} else {
		topo_buckets(b, cpus, topo);
	}
	*out = b;
	return 0;
}

void tally_stat_buckets__delete(struct tally_stat_buckets *b)
{
	if (!b)
		return;
	free(b->v);
	free(b->pair);
	free(b);
}

size_t tally_stat_buckets__nr(const struct tally_stat_buckets *b)
{
	return b->nr;
}

const struct tally_stat_bucket *tally_stat_buckets__get(const struct tally_stat_buckets *b,
							size_t i)
{
	return i < b->nr ? &b->v[i] : NULL;
}

size_t tally_stat_buckets__of_pair(const struct tally_stat_buckets *b, size_t pair)
{
	return pair < b->ncpu * b->nthr ? b->pair[pair] : 0;
}

/* perf_counts_values__scale: val * ena / run in doubles, truncated (the value as read
 * without scaling). */
static uint64_t perf_scale(const struct tally_stat_buckets *b, const struct tally_count *c)
{
	if (!b->scale)
		return c->val;
	if (c->run == 0)
		return 0;
	if (c->run >= c->ena)
		return c->val;
	return (uint64_t)((double)c->val * (double)c->ena / (double)c->run);
}

static void add_scaled(const struct tally_stat_buckets *b, struct tally_stat_sum *s,
		       const struct tally_count *x)
{
	s->val += perf_scale(b, x);
	s->ena += x->ena;
	s->run += x->run;
}

void tally_stat_buckets__add(const struct tally_stat_buckets *b, const struct tally_count *v,
			     struct tally_stat_sum *sums, bool first)
{
	size_t nthr = b->nthr, ncpu = b->ncpu;
	struct tally_count sum = { 0, 0, 0 };

	switch (b->mode) {
	case TALLY_AGGR_GLOBAL:
		for (size_t k = 0; k < ncpu * nthr; k++) {
			sum.val += v[k].val;
			sum.ena += v[k].ena;
			sum.run += v[k].run;
		}
		sums[0].val += perf_scale(b, &sum);
		sums[0].ena += sum.ena;
		sums[0].run += sum.run;
		break;
	case TALLY_AGGR_THREAD:
		for (size_t t = 0; t < nthr; t++)
			for (size_t c = 0; c < ncpu; c++)
				add_scaled(b, &sums[t], &v[c * nthr + t]);
		break;
	case TALLY_AGGR_NONE:
		for (size_t c = 0; c < ncpu; c++)
			add_scaled(b, &sums[c], &v[c * nthr]);
		break;
	default:	/* core, die, socket, node: thread 0 of each CPU (system-wide) */
		for (size_t a = 0; a < b->nr; a++) {
			for (size_t c = 0; c < ncpu; c++) {
				const struct tally_count *x = &v[c * nthr];

				if (b->pair[c * nthr] != a)
					continue;
				if (first)
					sums[a].nr++;
				if (!x->ena || !x->run) {
					sums[a].ena = sums[a].run = 0;
					break;
				}
				add_scaled(b, &sums[a], x);
			}
		}
		break;
	}
}

void tally_stat_mean__add(struct tally_stat_mean *m, double x)
{
	double d = x - m->mean;

	m->n++;
	m->mean += d / m->n;
	m->m2 += d * (x - m->mean);
}

double tally_stat_mean__stddev(const struct tally_stat_mean *m)
{
	return m->n < 2 ? 0 : sqrt(m->m2 / (m->n - 1) / m->n);
}

double tally_stat_mean__rel_stddev(const struct tally_stat_mean *m)
{
	if (m->n < 2 || m->mean == 0)
		return 0;
	return 100.0 * tally_stat_mean__stddev(m) / m->mean;
}
