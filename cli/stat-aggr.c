/*
 * tally stat's aggregation: which buckets a line can stand for (the whole run, a CPU,
 * core, die, socket, NUMA node or thread, from the topology), the targets counted
 * (CPUs and threads), and the per-(cpu, thread) readings reduced into one row per event
 * and bucket by perf 6.1's rules (scaling for multiplexing, merged PMUs, tool events).
 */
#include <dirent.h>
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

/* ---- targets and buckets ------------------------------------------------------ */

void stat_read_comm(pid_t tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "%s", "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

int stat_run__build_buckets(struct stat_run *r)
{
	size_t nr;

	if (r->opts->aggr >= AGGR_CORE && !r->topo && tally_topology__read(NULL, &r->topo) < 0)
		r->topo = NULL;
	if (tally_stat_buckets__new(&r->buckets, (enum tally_aggr)r->opts->aggr, r->cpus,
				    r->threads, r->topo, r->opts->scale ? 0 : TALLY_STAT_NO_SCALE))
		return -ENOMEM;
	nr = tally_stat_buckets__nr(r->buckets);
	r->ids = calloc(nr ? nr : 1, sizeof(*r->ids));
	if (!r->ids)
		return -ENOMEM;
	r->nr_ids = (int)nr;
	for (size_t i = 0; i < nr; i++) {
		const struct tally_stat_bucket *b = tally_stat_buckets__get(r->buckets, i);
		struct stat_aggr_id *id = &r->ids[i];

		id->cpu = b->cpu;
		id->core = b->core;
		id->die = b->die;
		id->socket = b->socket;
		id->node = b->node;
		id->nr = b->nr_cpus;
		if (r->opts->aggr == AGGR_THREAD) {
			id->thread_idx = b->thread_idx;
			id->tid = r->threads->tid[b->thread_idx];
			stat_read_comm(id->tid, id->comm, sizeof(id->comm));
		}
	}
	return 0;
}

int stat_run__build_targets(struct stat_run *r, pid_t workload_pid)
{
	struct stat_opts *o = r->opts;
	int err;

	tally_counters__delete(r->set);	/* it borrows the maps */
	r->set = NULL;
	tally_cpumap__delete(r->cpus);
	tally_threadmap__delete(r->threads);
	r->cpus = NULL;
	r->threads = NULL;
	if (o->system_wide && o->aggr == AGGR_THREAD) {
		/* perf: every thread of the system, each counted wherever it runs */
		err = tally_cpumap__any(&r->cpus);
		if (!err)
			err = tally_threadmap__all(&r->threads);
		return err;
	}
	if (o->system_wide) {
		size_t bad = 0;

		if (o->cpu_list) {
			err = tally_cpumap__parse(o->cpu_list, &r->cpus, &bad);
			if (err == -EINVAL) {
				cli_error("invalid CPU list '%s' (at '%s'): expected e.g. 0-3,5",
					  o->cpu_list, o->cpu_list + bad);
				return 129;
			}
		} else {
			err = tally_cpumap__online(&r->cpus);
		}
		if (!err)
			err = tally_threadmap__single(-1, &r->threads);
		return err;
	}
	err = tally_cpumap__any(&r->cpus);
	if (err)
		return err;
	if (o->pid_list) {
		pid_t bad = 0;

		err = tally_threadmap__from_pids(o->pid_list, &r->threads, &bad);
		if (err == -ESRCH || err == -EINVAL) {
			if (bad > 0)
				cli_error("no such process: %d (from -p '%s')", (int)bad, o->pid_list);
			else
				cli_error("invalid -p '%s': expected PID[,PID…] of running processes",
					  o->pid_list);
			return 1;
		}
		return err;
	}
	if (o->tid_list) {
		err = tally_threadmap__parse_tids(o->tid_list, &r->threads);
		if (err == -EINVAL) {
			cli_error("invalid -t '%s': expected TID[,TID…]", o->tid_list);
			return 129;
		}
		if (!err) {
			for (size_t i = 0; i < r->threads->nr; i++) {
				if (kill(r->threads->tid[i], 0) < 0 && errno == ESRCH) {
					cli_error("no such thread: %d (from -t '%s')",
						  (int)r->threads->tid[i], o->tid_list);
					return 1;
				}
			}
		}
		return err;
	}
	return tally_threadmap__single(workload_pid, &r->threads);
}

/* ---- readings into rows, by perf 6.1's rules (tally/stat.h) ----------------------- */

/* The readings of this report: the totals, or (-I) what changed since the last one. */
static const struct tally_count *readings(struct stat_run *r, int e, bool delta)
{
	struct tally_counter *c = tally_counters__event(r->set, r->set_idx[e]);
	size_t np = tally_counters__nr_pairs(r->set);

	struct tally_count *d = &r->cur[(size_t)e * np];

	if (!delta)
		return c->count;
	for (size_t k = 0; k < np; k++) {
		struct tally_count *p = &r->prev[(size_t)e * np + k], cur = c->count[k];

		d[k].val = cur.val - p->val;
		d[k].ena = cur.ena - p->ena;
		d[k].run = cur.run - p->run;
		*p = cur;
	}
	return d;
}

/* perf's user_time / system_time: the workload's rusage (the mean over -r runs so far). */
static double tool_value(const struct stat_run *r, int tool)
{
	switch (tool) {
	case TALLY_TOOL_DURATION_TIME:
		return r->span_ns;	/* perf's user-space event: the wall time, in ns */
	case TALLY_TOOL_USER_TIME:
		return (double)(uint64_t)r->ru_user_mean;
	case TALLY_TOOL_SYSTEM_TIME:
		return (double)(uint64_t)r->ru_sys_mean;
	default:
		return 0;
	}
}

/* Reduce the readings (minus the previous ones with -I) into rows. */
void stat_run__reduce(struct stat_run *r, bool delta)
{
	struct tally_stat_sum *acc = calloc((size_t)r->nr_ids + 1, sizeof(*acc));
	const struct tally_count **v = calloc((size_t)r->nr_ev + 1, sizeof(*v));
	bool per_thread_all = r->opts->aggr == AGGR_THREAD && r->opts->system_wide;

	for (size_t i = 0; i < (size_t)r->nr_ev * (size_t)r->nr_ids; i++)
		memset(&r->rows[i], 0, sizeof(r->rows[i]));
	if (!acc || !v)
		goto out;
	/* every event's readings first: -I deltas are taken once per event */
	for (int e = 0; e < r->nr_ev; e++)
		if (!r->ev[e].tool && !(v[e] = readings(r, e, delta)))
			goto out;
	for (int e = 0; e < r->nr_ev; e++) {
		struct stat_evsel *ev = &r->ev[e];
		bool first_ran = true;

		if (ev->shown_with >= 0)
			continue;	/* its counts are on another event's line */
		memset(acc, 0, (size_t)r->nr_ids * sizeof(*acc));
		for (int x = e; !ev->tool && x < r->nr_ev; x++) {
			if (x != e && r->ev[x].shown_with != e)
				continue;
			tally_stat_buckets__add(r->buckets, v[x], acc, x == e);
			if (x == e && r->opts->aggr == AGGR_GLOBAL)
				first_ran = acc[0].run != 0;	/* perf: the line's own scaling */
		}
		for (int a = 0; a < r->nr_ids; a++) {
			struct stat_row *row = &r->rows[(size_t)e * (size_t)r->nr_ids + (size_t)a];

			row->present = true;
			row->nr = acc[a].nr;
			if (ev->tool) {
				row->val = row->ena = row->run = tool_value(r, ev->tool);
				row->counted = row->run != 0;
				row->nr = r->ids[a].nr;
				continue;
			}
			row->ena = (double)acc[a].ena;
			row->run = (double)acc[a].run;
			row->val = (double)acc[a].val;
			row->counted = ev->supported && acc[a].run && acc[a].ena && first_ran;
			if (!ev->supported)
				row->ena = row->run = row->val = 0;
			/* system-wide --per-thread lists only the threads that counted something */
			if (per_thread_all && row->val * ev->scale == 0.0)
				row->present = false;
		}
	}
out:
	free(acc);
	free(v);
}
