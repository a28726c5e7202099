/*
 * perf stat's arithmetic, for any program that counts with tally_counters:
 *
 *  - buckets: which line each (cpu, thread) reading belongs to in an aggregation mode
 *    (the whole run, -A per CPU, --per-core/die/socket/node from the topology,
 *    --per-thread), in the order perf 6.1 prints them;
 *  - reduction: one event's readings added into its buckets by perf's rules (scaling
 *    for multiplexing, a bucket with a CPU that never ran is <not counted>);
 *  - repeats (-r): a running mean and the relative standard deviation of the mean perf
 *    prints as "( +-  1.23% )".
 *
 * Formats (perf's text, CSV and JSON lines) are the caller's.
 */
#ifndef TALLY_STAT_H
#define TALLY_STAT_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/counter.h>
#include <tally/cpumap.h>
#include <tally/topology.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How readings are grouped into lines (perf stat's options in brackets). */
enum tally_aggr {
	TALLY_AGGR_GLOBAL,	/* one bucket: the whole run (default) */
	TALLY_AGGR_NONE,	/* one per CPU (-A, --no-aggr) */
	TALLY_AGGR_THREAD,	/* one per thread (--per-thread) */
	TALLY_AGGR_CORE,	/* --per-core */
	TALLY_AGGR_DIE,		/* --per-die */
	TALLY_AGGR_SOCKET,	/* --per-socket */
	TALLY_AGGR_NODE,	/* --per-node */
};

/* One bucket. The topology keys the mode does not group by are 0. */
struct tally_stat_bucket {
	int cpu;		/* TALLY_AGGR_NONE: the CPU */
	int core, die, socket, node;
	int thread_idx;		/* TALLY_AGGR_THREAD: the thread's index in the map */
	int nr_cpus;		/* CPUs in the bucket (perf's "cpus" column); 0 per thread */
};

struct tally_stat_buckets;

/* tally_stat_buckets__new's flags: */
#define TALLY_STAT_NO_SCALE	1u	/* counts as read, not scaled for multiplexing
					 * (perf stat --no-scale) */

/* The buckets of cpus x threads (the maps of a tally_counters set) in mode. topo: the
 * machine's (tally_topology__read), used by the core/die/socket/node modes; NULL puts
 * every CPU in core 0 of die 0, socket 0, node 0. The maps are borrowed: they must
 * outlive the buckets. flags: TALLY_STAT_*. 0 or -ENOMEM. */
TALLY_API int tally_stat_buckets__new(struct tally_stat_buckets **out, enum tally_aggr mode,
				      const struct tally_cpumap *cpus,
				      const struct tally_threadmap *threads,
				      const struct tally_topology *topo, unsigned flags);
TALLY_API void tally_stat_buckets__delete(struct tally_stat_buckets *b);
TALLY_API size_t tally_stat_buckets__nr(const struct tally_stat_buckets *b);
/* Bucket i (sorted by socket, die, node, core; CPUs and threads in map order). */
TALLY_API const struct tally_stat_bucket *
tally_stat_buckets__get(const struct tally_stat_buckets *b, size_t i);
/* The bucket of a pair (tally_counters__idx(set, cpu_idx, thread_idx)). */
TALLY_API size_t tally_stat_buckets__of_pair(const struct tally_stat_buckets *b, size_t pair);

/* A bucket's sum: the scaled count and the times enabled and running (ns). */
struct tally_stat_sum {
	uint64_t val, ena, run;
	int nr;			/* core/die/socket/node: CPUs added (with first) */
};

/*
 * Add one event's readings (one tally_count per pair, as tally_counters keeps them)
 * into sums[tally_stat_buckets__nr(b)] as perf 6.1 adds them:
 *  - the whole run: raw values, times summed, then scaled once;
 *  - per CPU: each CPU's reading scaled;
 *  - per core/die/socket/node: each CPU's reading scaled, then summed; a CPU that was
 *    never enabled or never ran zeroes the bucket's times (<not counted>) and ends this
 *    event's part of it;
 *  - per thread: each reading scaled, summed over CPUs.
 * Scaling is perf's: val * ena / run in doubles, truncated (a sum can differ from the
 * exact tally_scale in its last digit, as perf's does); none with TALLY_STAT_NO_SCALE.
 * A line that shows several events (merged PMUs) adds each in turn into the same sums,
 * with first set for the first only.
 */
TALLY_API void tally_stat_buckets__add(const struct tally_stat_buckets *b,
				       const struct tally_count *v, struct tally_stat_sum *sums,
				       bool first);

/* A running mean and variance (Welford) over the values of -r's runs. */
struct tally_stat_mean {
	double mean, m2;
	int n;
};

TALLY_API void tally_stat_mean__add(struct tally_stat_mean *m, double x);
/* The standard deviation of the mean: sqrt(variance / n); 0 below two values. */
TALLY_API double tally_stat_mean__stddev(const struct tally_stat_mean *m);
/* The same relative to the mean, in percent (perf's "+- N%"); 0 for a mean of 0. */
TALLY_API double tally_stat_mean__rel_stddev(const struct tally_stat_mean *m);

#ifdef __cplusplus
}
#endif
#endif
