/*
 * Profiles and their differences: what perf diff computes. A profile is one perf.data
 * read into rows per event, keyed by names (command, dso, symbol, ...) rather than
 * addresses, so that a rebuilt binary's functions still pair with the old ones; a diff
 * pairs the rows of a baseline with those of other profiles and computes, per pair, the
 * change in share (delta), the ratio of periods or a weighted difference, and orders
 * the rows as perf diff does.
 *
 *   struct tally_profile *old, *new;
 *   tally_profile__load(&old, "perf.data.old", NULL, NULL);
 *   tally_profile__load(&new, "perf.data", NULL, NULL);
 *   struct tally_profile *files[] = { old, new };
 *   struct tally_diff *d;
 *   tally_diff__new(&d, files, 2, 0, NULL);     // first event of the baseline
 *   for (size_t i = 0; i < tally_diff__nr_rows(d); i++) { row = tally_diff__row(d, i); ... }
 */
#ifndef TALLY_DIFF_H
#define TALLY_DIFF_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/cpumap.h>
#include <tally/data.h>
#include <tally/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What rows are keyed by (perf's sort keys). */
enum tally_diff_key {
	TALLY_DIFF_KEY_COMM,
	TALLY_DIFF_KEY_PID,	/* the thread, shown as pid:command */
	TALLY_DIFF_KEY_DSO,	/* the dso's short name */
	TALLY_DIFF_KEY_SYM,	/* the symbol's name; samples with no symbol in one dso are
				 * one row */
	TALLY_DIFF_KEY_CPU,
};

struct tally_profile;

struct tally_profile_opts {
	const enum tally_diff_key *keys;	/* default: dso, sym */
	size_t nr_keys;
	/* filters (NULL-terminated lists; NULL: all). A sample they leave out still counts
	 * in its event's total, not in its filtered total. As in perf, a row is left out
	 * when its first sample is, and counts every sample of its keys (so a filter on a
	 * field that is no key, a command with the default keys, lets other samples in). */
	char *const *comms;
	char *const *dsos;		/* short or full names */
	char *const *syms;
	const int32_t *pids, *tids;	/* nr_pids, nr_tids entries */
	size_t nr_pids, nr_tids;
	const struct tally_cpumap *cpus;	/* samples on other cpus are dropped altogether */
	struct tally_session_opts session;
	bool force;			/* read files owned by another user */
};

/* Read the perf.data at path into rows (o may be NULL for the defaults). 0, or -errno
 * with err filled when reading failed. A file cut short is read up to the damage (see
 * tally_profile__truncated). */
TALLY_API int tally_profile__load(struct tally_profile **out, const char *path,
				  const struct tally_profile_opts *o, struct tally_data_error *err);
TALLY_API void tally_profile__delete(struct tally_profile *p);

TALLY_API const char *tally_profile__path(const struct tally_profile *p);
/* Bytes missing at the end of a file cut short (0: complete). */
TALLY_API uint64_t tally_profile__truncated(const struct tally_profile *p);
/* Records skipped because their type is unknown (a newer perf). */
TALLY_API uint64_t tally_profile__nr_unknown_records(const struct tally_profile *p);
/* Why kernel addresses went without symbols, or NULL (tally_session__kernel_symbols_problem). */
TALLY_API const char *tally_profile__kernel_problem(const struct tally_profile *p);
TALLY_API size_t tally_profile__nr_events(const struct tally_profile *p);
TALLY_API const struct tally_data_event *tally_profile__event(const struct tally_profile *p,
							      size_t ev);

struct tally_profile_total {
	uint64_t nr_samples;
	uint64_t period;		/* every sample of the event */
	uint64_t filtered_period;	/* the samples the filters kept */
};

TALLY_API struct tally_profile_total tally_profile__total(const struct tally_profile *p, size_t ev);

/* ---- differences ------------------------------------------------------------------- */

enum tally_diff_compute {
	TALLY_DIFF_DELTA,	/* new share - old share, in percent */
	TALLY_DIFF_DELTA_ABS,	/* the same, rows ordered by its absolute value */
	TALLY_DIFF_RATIO,	/* new period / old period */
	TALLY_DIFF_WDIFF,	/* new period * w2 - old period * w1 */
};

struct tally_diff_opts {
	enum tally_diff_compute compute;	/* default delta-abs */
	int64_t w1, w2;			/* wdiff's weights */
	bool relative;			/* shares of the filtered totals (--percentage relative) */
	bool baseline_only;		/* only rows the baseline has (perf diff -b) */
	size_t sort_idx;		/* the profile whose computed value orders the rows
					 * first (1 …); 0: by baseline period (perf's -o) */
};

struct tally_diff;

/* One value per profile of a row (index 0, the baseline, has only period and percent). */
struct tally_diff_cell {
	bool paired;			/* this profile has the row */
	uint64_t period;
	double percent;			/* of that profile's total */
	double delta;			/* percent - the baseline's percent */
	double ratio;			/* period / the baseline's period (1 for none) */
	int64_t wdiff;
};

struct tally_diff_row {
	const char *comm, *dso, *sym;	/* sym NULL: the dso's samples without a symbol */
	uint64_t ip;			/* without a symbol: the lowest address sampled */
	char level;			/* '.', 'k', 'g', 'u', 'H' */
	int32_t pid, tid, cpu;
	bool dummy;			/* not in the baseline (its values are 0) */
	const struct tally_diff_cell *cells;	/* one per profile */
};

/* Pair event ev of files[0] (the baseline) with the same event (type and config) of
 * each of files[1 .. nr-1], which must be keyed alike; o may be NULL (delta-abs,
 * ordered by profile 1). 0, -EINVAL (fewer than 2 files, ev out of range, different
 * keys, sort_idx past the files), -ENOMEM. */
TALLY_API int tally_diff__new(struct tally_diff **out, struct tally_profile *const *files,
			      size_t nr, size_t ev, const struct tally_diff_opts *o);
TALLY_API void tally_diff__delete(struct tally_diff *d);
/* Does profile i (>= 1) have the baseline's event? Without it no row pairs with it. */
TALLY_API bool tally_diff__matched(const struct tally_diff *d, size_t i);
/* Rows in perf diff's order: by the computed value of profile sort_idx (paired rows
 * first), then baseline period, then the other profiles' values, then the keys. */
TALLY_API size_t tally_diff__nr_rows(const struct tally_diff *d);
TALLY_API const struct tally_diff_row *tally_diff__row(const struct tally_diff *d, size_t i);
/* The total a profile's shares are of (filtered with o->relative); for the baseline
 * with baseline_only, the rows that remain. */
TALLY_API uint64_t tally_diff__total(const struct tally_diff *d, size_t i);

#ifdef __cplusplus
}
#endif
#endif
