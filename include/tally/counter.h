/*
 * Counting: opening events on targets (a task, threads, CPUs) and reading their
 * counts, single or as groups, with multiplexing scaled by time enabled/running.
 *
 * (The counting API proper is declared below by the stat work; the scaling helper is
 * shared with the self-monitoring fast path.)
 */
#ifndef TALLY_COUNTER_H
#define TALLY_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A raw reading: value, time enabled, time running (ns). */
struct tally_count {
	uint64_t val;
	uint64_t ena;
	uint64_t run;
};

/* val * ena / run without overflow (exact for any 64-bit inputs, saturating at
 * UINT64_MAX). run == 0 returns 0; run >= ena returns val unchanged. */
uint64_t tally_scale(uint64_t val, uint64_t ena, uint64_t run);

#ifdef __cplusplus
}
#endif
#endif
