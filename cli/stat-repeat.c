/*
 * tally stat -r: each run's rows folded into a running mean and variance (Welford), and
 * the averaged rows perf prints with their relative standard deviation.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/counter.h>
#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/topology.h>

#include "cmd.h"
#include "stat.h"

void stat_run__accumulate(struct stat_run *r)
{
	size_t n = (size_t)r->nr_ev * (size_t)r->nr_ids;
	double k = (double)(r->nr_runs_done + 1);

	for (size_t i = 0; i < n; i++) {
		double x = r->rows[i].val, d = x - r->acc_mean[i];

		r->acc_mean[i] += d / k;
		r->acc_m2[i] += d * (x - r->acc_mean[i]);
		r->acc_ena[i] += (r->rows[i].ena - r->acc_ena[i]) / k;
		r->acc_run[i] += (r->rows[i].run - r->acc_run[i]) / k;
		r->acc_counted[i] += r->rows[i].counted;
	}
	{
		double d = r->last_wall_ns - r->wall_mean;

		r->wall_mean += d / k;
		r->wall_m2 += d * (r->last_wall_ns - r->wall_mean);
	}
	if (r->wall_runs)
		r->wall_runs[r->nr_runs_done] = r->last_wall_ns;
	r->nr_runs_done++;
}

static double rel_stddev(double m2, double mean, int n)
{
	double sd;

	if (n < 2 || mean == 0)
		return 0;
	sd = sqrt(m2 / (n - 1) / n);
	return 100.0 * sd / mean;
}

void stat_run__averaged_rows(struct stat_run *r)
{
	size_t n = (size_t)r->nr_ev * (size_t)r->nr_ids;

	for (size_t i = 0; i < n; i++) {
		r->rows[i].val = r->acc_mean[i];
		r->rows[i].ena = r->acc_ena[i];
		r->rows[i].run = r->acc_run[i];
		r->rows[i].counted = r->acc_counted[i] > 0 && r->acc_run[i] > 0;
		r->rows[i].variance = rel_stddev(r->acc_m2[i], r->acc_mean[i], r->nr_runs_done);
	}
}
