/*
 * tally stat -r: each run's rows folded into running means (tally/stat.h), and the
 * averaged rows perf prints with their relative standard deviation.
 */
#include <stddef.h>

#include "stat.h"

void stat_run__accumulate(struct stat_run *r)
{
	size_t n = (size_t)r->nr_ev * (size_t)r->nr_ids;

	for (size_t i = 0; i < n; i++) {
		tally_stat_mean__add(&r->acc[i].val, r->rows[i].val);
		tally_stat_mean__add(&r->acc[i].ena, r->rows[i].ena);
		tally_stat_mean__add(&r->acc[i].run, r->rows[i].run);
		r->acc[i].counted += r->rows[i].counted;
	}
	tally_stat_mean__add(&r->wall, r->last_wall_ns);
	if (r->wall_runs)
		r->wall_runs[r->nr_runs_done] = r->last_wall_ns;
	r->nr_runs_done++;
}

void stat_run__averaged_rows(struct stat_run *r)
{
	size_t n = (size_t)r->nr_ev * (size_t)r->nr_ids;

	for (size_t i = 0; i < n; i++) {
		r->rows[i].val = r->acc[i].val.mean;
		r->rows[i].ena = r->acc[i].ena.mean;
		r->rows[i].run = r->acc[i].run.mean;
		r->rows[i].counted = r->acc[i].counted > 0 && r->acc[i].run.mean > 0;
		r->rows[i].variance = tally_stat_mean__rel_stddev(&r->acc[i].val);
	}
}
