/*
 * tally stat record: the counts written as perf's STAT records (STAT_CONFIG, one STAT
 * per counter, cpu and thread, STAT_ROUND) into a perf.data that perf stat report reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally/counter.h>
#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/topology.h>
#include <tally/format.h>
#include <tally/writer.h>
#include "tally-config.h"

#include "cmd.h"
#include "stat.h"

/* ---- stat record: perf's STAT records in a perf.data file ---------------------------- */

/* perf's aggr_mode numbers in STAT_CONFIG. */
static uint64_t perf_aggr_mode(enum stat_aggr a)
{
	switch (a) {
	case AGGR_NONE: return 0;
	case AGGR_SOCKET: return 2;
	case AGGR_DIE: return 3;
	case AGGR_CORE: return 4;
	case AGGR_THREAD: return 5;
	case AGGR_NODE: return 7;
	default: return 1;	/* global */
	}
}

static int put_record(struct tally_writer *w, uint32_t type, void *rec, size_t len)
{
	struct perf_event_header *h = rec;

	h->type = type;
	h->misc = 0;
	h->size = (uint16_t)len;
	return tally_writer__write(w, rec, len);
}

/* The attrs with the ids of their fds, and the groups. */
static int write_attrs(struct stat_run *r, struct tally_writer *w)
{
	size_t np = tally_counters__nr_pairs(r->set);
	int err = 0;

	for (int e = 0; e < r->nr_ev && !err; e++) {
		struct tally_counter *c = tally_counters__event(r->set, r->set_idx[e]);
		uint64_t *ids = calloc(np + 1, sizeof(*ids));
		size_t n = 0;
		int idx;

		if (!ids)
			return -ENOMEM;
		for (size_t k = 0; k < np; k++)
			if (c->fd[k] >= 0)
				ids[n++] = c->id[k];
		idx = tally_writer__add_event(w, c->attr, r->ev[e].name, ids, n);
		free(ids);
		if (idx < 0)
			err = idx;
	}
	for (int e = 0; e < r->nr_ev && !err; e++) {
		int members = tally_counters__event(r->set, r->set_idx[e])->nr_members;

		if (r->ev[e].leader == e && members > 1)
			err = tally_writer__add_group(w, NULL, e, members);
	}
	return err;
}

/* CMDLINE ("tally stat record …"), the host features and STAT; then the header. */
static int write_features(struct stat_run *r, struct tally_writer *w)
{
	const struct stat_opts *o = r->opts;
	char **cl = calloc((size_t)o->cmdline_argc + 2, sizeof(*cl));
	int err;

	if (!cl)
		return -ENOMEM;
	cl[0] = "tally";
	memcpy(cl + 1, o->cmdline, (size_t)o->cmdline_argc * sizeof(*cl));
	err = tally_writer__set_cmdline(w, o->cmdline_argc + 1, cl);
	free(cl);
	if (!err)
		err = tally_writer__set_host_features(w, TALLY_VERSION);
	if (!err)
		err = tally_writer__set_feature(w, TALLY_FEAT_STAT, NULL, 0);
	if (!err)
		err = tally_writer__start(w);
	return err;
}

/* EVENT_UPDATE: unit and scale of events that have them (perf: task-clock msec) */
static int write_event_updates(struct stat_run *r, struct tally_writer *w)
{
	size_t np = tally_counters__nr_pairs(r->set);
	int err = 0;

	for (int e = 0; e < r->nr_ev && !err; e++) {
		struct tally_counter *c = tally_counters__event(r->set, r->set_idx[e]);
		uint64_t rec[6];
		uint64_t id = 0;
		double sc = r->ev[e].scale;

		if (!*r->ev[e].unit)
			continue;
		for (size_t k = 0; k < np; k++)
			if (c->fd[k] >= 0) {
				id = c->id[k];
				break;
			}
		memset(rec, 0, sizeof(rec));
		rec[1] = TALLY_EVENT_UPDATE_UNIT;
		rec[2] = id;
		snprintf((char *)&rec[3], 3 * sizeof(uint64_t), "%s", r->ev[e].unit);
		err = put_record(w, TALLY_RECORD_EVENT_UPDATE, rec, sizeof(rec));
		if (err)
			break;
		memset(rec, 0, sizeof(rec));
		rec[1] = TALLY_EVENT_UPDATE_SCALE;
		rec[2] = id;
		memcpy(&rec[3], &sc, sizeof(sc));
		err = put_record(w, TALLY_RECORD_EVENT_UPDATE, rec, sizeof(rec));
	}
	return err;
}

/* THREAD_MAP: nr, then {pid, comm[16]} */
static int write_thread_map(struct stat_run *r, struct tally_writer *w)
{
	size_t nt = r->threads->nr, len = 16 + nt * 24;
	char *rec = calloc(1, len);
	uint64_t nr = nt;
	int err;

	if (!rec)
		return -ENOMEM;
	memcpy(rec + 8, &nr, 8);
	for (size_t t = 0; t < nt; t++) {
		uint64_t pid = (uint64_t)(int64_t)r->threads->tid[t];

		memcpy(rec + 16 + t * 24, &pid, 8);
		if (r->threads->tid[t] > 0)
			stat_read_comm(r->threads->tid[t], rec + 16 + t * 24 + 8, 16);
	}
	err = put_record(w, TALLY_RECORD_THREAD_MAP, rec, len);
	free(rec);
	return err;
}

/* CPU_MAP, type 0 (a list of u16 cpus) */
static int write_cpu_map(struct stat_run *r, struct tally_writer *w)
{
	size_t nc = r->cpus->nr, len = (8 + 4 + 2 * nc + 7) & ~(size_t)7;
	char *rec = calloc(1, len);
	uint16_t type = 0, nr = (uint16_t)nc;
	int err;

	if (!rec)
		return -ENOMEM;
	memcpy(rec + 8, &type, 2);
	memcpy(rec + 10, &nr, 2);
	for (size_t i = 0; i < nc; i++) {
		uint16_t cpu = (uint16_t)r->cpus->cpu[i];

		memcpy(rec + 12 + 2 * i, &cpu, 2);
	}
	err = put_record(w, TALLY_RECORD_CPU_MAP, rec, len);
	free(rec);
	return err;
}

/* STAT_CONFIG, a STAT per counter fd (event × cpu × thread), the final STAT_ROUND */
static int write_counts(struct stat_run *r, struct tally_writer *w)
{
	uint64_t cfg[8] = { 0, 3, TALLY_STAT_CONFIG_AGGR_MODE, perf_aggr_mode(r->opts->aggr),
			    TALLY_STAT_CONFIG_INTERVAL, (uint64_t)r->opts->interval_ms,
			    TALLY_STAT_CONFIG_SCALE, 1 };
	uint64_t round[3] = { 0, TALLY_STAT_ROUND_FINAL, (uint64_t)r->last_wall_ns };
	int err = put_record(w, TALLY_RECORD_STAT_CONFIG, cfg, sizeof(cfg));

	for (int e = 0; e < r->nr_ev && !err; e++) {
		struct tally_counter *c = tally_counters__event(r->set, r->set_idx[e]);

		for (size_t ci = 0; ci < r->cpus->nr && !err; ci++) {
			for (size_t ti = 0; ti < r->threads->nr && !err; ti++) {
				size_t k = tally_counters__idx(r->set, ci, ti);
				uint64_t rec[6];
				uint32_t cpu = (uint32_t)r->cpus->cpu[ci], thr = (uint32_t)ti;

				if (c->fd[k] < 0)
					continue;
				rec[1] = c->id[k];
				memcpy((char *)&rec[2], &cpu, 4);
				memcpy((char *)&rec[2] + 4, &thr, 4);
				rec[3] = c->count[k].val;
				rec[4] = c->count[k].ena;
				rec[5] = c->count[k].run;
				err = put_record(w, TALLY_RECORD_STAT, rec, sizeof(rec));
			}
		}
	}
	if (!err)
		err = put_record(w, TALLY_RECORD_STAT_ROUND, round, sizeof(round));
	return err;
}

int stat_run__write_data(struct stat_run *r)
{
	const struct stat_opts *o = r->opts;
	struct tally_writer *w = NULL;
	int err;

	err = tally_writer__open(&w, o->record_path, NULL);
	if (err) {
		cli_error("cannot create '%s': %s", o->record_path, strerror(-err));
		return 1;
	}
	err = write_attrs(r, w);
	if (!err)
		err = write_features(r, w);
	if (!err)
		err = write_event_updates(r, w);
	if (!err)
		err = write_thread_map(r, w);
	if (!err)
		err = write_cpu_map(r, w);
	if (!err)
		err = write_counts(r, w);
	if (!err)
		err = tally_writer__finish(w);
	else
		tally_writer__finish(w);
	tally_writer__delete(w);
	if (err) {
		cli_error("writing '%s' failed: %s", o->record_path, strerror(-err));
		return 1;
	}
	return 0;
}
