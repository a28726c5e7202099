/*
 * tally record: the file and the recording loop.
 *
 * Order of the file, as perf 6.1 writes it: attrs (+ ids), then the synthesized
 * side-band (kernel map, modules, existing threads and their maps), FINISHED_INIT,
 * then ring contents pass after pass, each pass closed by FINISHED_ROUND so readers
 * may sort by time within it; at the end LOST_SAMPLES records for samples the kernel
 * could not store, then the header features.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tally/synth.h>
#include <tally/tally.h>

#include "cmd.h"
#include "record.h"
#include "target.h"

/* Same sample_type everywhere: PERF_SAMPLE_ID; otherwise (or with --sample-identifier)
 * IDENTIFIER, so that readers find the id at a fixed place (perf's rule). */
static void set_sample_id(struct record *r)
{
	uint64_t bit = r->o->sample_identifier ? PERF_SAMPLE_IDENTIFIER : PERF_SAMPLE_ID;
	size_t i;

	if (r->nr_ev < 2)
		return;
	for (i = 1; i < r->nr_ev; i++)
		if (r->ev[i].attr.sample_type != r->ev[0].attr.sample_type)
			bit = PERF_SAMPLE_IDENTIFIER;
	for (i = 0; i < r->nr_ev; i++) {
		r->ev[i].attr.sample_type &= ~(uint64_t)(PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER);
		r->ev[i].attr.sample_type |= bit;
	}
}

/* Offset of the time field in samples, when all events put it at the same place. */
static int sample_time_offset(const struct record *r)
{
	int off = -1;
	size_t i;

	for (i = 0; i < r->nr_ev; i++) {
		uint64_t t = r->ev[i].attr.sample_type;
		int o = 8;

		if (!(t & PERF_SAMPLE_TIME))
			return -1;
		o += (t & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
		o += (t & PERF_SAMPLE_IP) ? 8 : 0;
		o += (t & PERF_SAMPLE_TID) ? 8 : 0;
		if (off >= 0 && o != off)
			return -1;
		off = o;
	}
	return off;
}

static int write_error(struct record *r, int err)
{
	/* Cut the file after the last complete record and make the header say so. */
	if (r->w)
		tally_writer__finish(r->w);
	if (err == -EPIPE)
		return -1;	/* the reader went away (… | head): nothing to explain */
	if (err == -ENOSPC || err == -EFBIG || err == -EDQUOT)
		cli_error("writing %s failed: %s. Recording stopped; the file holds the complete "
			  "records written before the error", r->path, strerror(-err));
	else
		cli_error("writing %s failed: %s", r->path, strerror(-err));
	return -1;
}

static int emit(void *arg, const struct perf_event_header *h)
{
	struct record *r = arg;

	if (r->bt)
		buildid_tracker__record(r->bt, h);
	return tally_writer__write(r->w, h, h->size);
}

static int put_user_record(struct record *r, uint32_t type)
{
	struct perf_event_header h = { type, 0, sizeof(h) };

	return tally_writer__write(r->w, &h, sizeof(h));
}

/* --all-cgroups: a CGROUP record for each cgroup there is (perf's order: before the
 * tasks). Without a perf_event cgroup hierarchy there is none to name. */
static int synth_cgroups(struct record *r, const struct tally_synth_opts *so)
{
	char mnt[PATH_MAX];
	int err;

	if (cli_cgroup_mount(mnt, sizeof(mnt)))
		return 0;
	err = tally_synth__cgroups(mnt, so, emit, r);
	return err == -ENOENT || err == -EACCES ? 0 : err;
}

/* Side-band for what already runs (or is about to exec); AGAIN: at the start of a
 * --switch-output file, when a command has long since exec'd. */
static int synthesize(struct record *r, bool again)
{
	struct tally_synth_opts so = { .id_hdr_size = r->id_hdr_size, .data_maps = r->o->sample_addr,
				       .build_ids = r->o->buildid_mmap };
	int err;

	err = tally_synth__kernel_map(&so, emit, r);
	if (err == -ENOENT || err == -EACCES) {
		if (verbose)
			cli_warn("kernel addresses are hidden (/proc/sys/kernel/kptr_restrict): "
				 "kernel samples will not be symbolized");
		err = 0;
	}
	if (!err)
		err = tally_synth__modules(&so, emit, r);
	if (!err && r->o->all_cgroups && (r->o->synth & RECORD_SYNTH_CGROUP))
		err = synth_cgroups(r, &so);
	if (err)
		return err;
	so.no_maps = !(r->o->synth & RECORD_SYNTH_MMAP);
	so.namespaces = r->o->namespaces;
	if (!(r->o->synth & RECORD_SYNTH_TASK) && (!r->wl_target || again)) {
		;	/* --synth=no: existing targets are not described (the command still is) */
	} else if (r->o->system_wide) {
		err = tally_synth__all(&so, emit, r);
	} else if (r->wl_target && again) {
		err = tally_synth__process(r->wl.pid, &so, emit, r);
		if (err == -ESRCH)
			err = 0;
	} else if (r->wl_target) {
		/* The forked child still has our image until it execs: name it only; the
		 * kernel reports its exec, COMM and maps once enable_on_exec fires. */
		err = tally_synth__comm(r->wl.pid, r->wl.pid, "tally-exec", &so, emit, r);
	} else {
		size_t i;

		/* -p/-t: one pass per process (threads of one process share its maps). */
		const pid_t *tids = r->threads->tid;

		for (i = 0; !err && i < r->threads->nr; i++) {
			size_t k;

			for (k = 0; k < i; k++)
				if (tids[k] == tids[i])
					break;
			if (k < i)
				continue;
			err = r->o->pid_list ? 0 : tally_synth__thread(tids[i], &so, emit, r);
		}
		if (!err && r->o->pid_list) {
			const char *p = r->o->pid_list;

			while (!err && *p) {
				char *end;
				long pid = strtol(p, &end, 10);

				if (end == p)
					break;
				err = tally_synth__process((pid_t)pid, &so, emit, r);
				if (err == -ESRCH)
					err = 0;
				p = *end ? end + 1 : end;
			}
		}
		if (err == -ESRCH)
			err = 0;
	}
	if (!err)
		err = put_user_record(r, TALLY_RECORD_FINISHED_INIT);
	return err;
}

/* --affinity: the CPUs the reader runs on while it reads each ring: the ring's CPU, or
 * the CPUs of its NUMA node (sysfs), as perf. Rings of no CPU (--per-thread) keep the
 * reader where it is. 0 or -1 (message printed). */
static int affinity_setup(struct record *r)
{
	size_t nr = tally_sampler__nr_rings(r->sampler);

	r->affine_ring = -1;
	if (r->o->affinity == AFFINITY_SYS)
		return 0;
	r->ring_cpus = calloc(nr ? nr : 1, sizeof(*r->ring_cpus));
	if (!r->ring_cpus) {
		cli_error("out of memory");
		return -1;
	}
	for (size_t i = 0; i < tally_sampler__nr_fds(r->sampler); i++) {
		const struct tally_sampler_fd *f = tally_sampler__fd(r->sampler, i);
		cpu_set_t *set;

		if (f->ring < 0 || f->cpu < 0 || CPU_COUNT(&r->ring_cpus[f->ring]))
			continue;
		set = &r->ring_cpus[f->ring];
		CPU_SET(f->cpu, set);
		if (r->o->affinity == AFFINITY_NODE) {
			struct tally_cpumap *node = NULL;
			char path[128];

			for (int n = 0; n < 1024 && !node; n++) {
				snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/node%d",
					 f->cpu, n);
				if (access(path, F_OK))
					continue;
				snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", n);
				if (tally_cpumap__read_file(path, &node))
					break;
			}
			for (size_t k = 0; node && k < node->nr; k++)
				if (node->cpu[k] < CPU_SETSIZE)
					CPU_SET(node->cpu[k], set);
			tally_cpumap__delete(node);
		}
	}
	return 0;
}

static void affinity_for(struct record *r, size_t ring)
{
	if (!r->ring_cpus || r->affine_ring == (int)ring || !CPU_COUNT(&r->ring_cpus[ring]))
		return;
	if (!sched_setaffinity(0, sizeof(cpu_set_t), &r->ring_cpus[ring]))
		r->affine_ring = (int)ring;
}

/* One pass over all rings, each when it holds FLUSH bytes or more (--mmap-flush);
 * returns bytes taken or -errno (write error). */
static int64_t drain(struct record *r, size_t flush)
{
	int64_t total = 0;
	size_t i;

	for (i = 0; i < tally_sampler__nr_rings(r->sampler); i++) {
		struct tally_ring *ring = tally_sampler__ring(r->sampler, i);
		const struct perf_event_header *h;
		const void *p1, *p2;
		size_t l1, l2, n;
		int rc, err = 0;

		if (flush > 1 && tally_ring__avail(ring) < flush)
			continue;
		affinity_for(r, i);

		while ((rc = tally_ring__read(ring, &h)) == 1) {
			if (h->type == PERF_RECORD_SAMPLE && r->time_off >= 0 &&
			    h->size >= r->time_off + 8) {
				uint64_t t;

				memcpy(&t, (const char *)h + r->time_off, 8);
				if (!r->first_time || t < r->first_time)
					r->first_time = t;
				if (t > r->last_time)
					r->last_time = t;
			}
			if (r->bt)
				buildid_tracker__record(r->bt, h);
		}
		n = tally_ring__span(ring, &p1, &l1, &p2, &l2);
		if (l1)
			err = tally_writer__write(r->w, p1, l1);
		if (!err && l2)
			err = tally_writer__write(r->w, p2, l2);
		tally_ring__consume(ring);
		if (err)
			return err;
		total += (int64_t)n;
		if (rc < 0) {
			/* The records before it are written; what follows cannot be framed. */
			cli_warn("ring buffer %zu holds a damaged record: skipping the rest of it", i);
			tally_ring__skip_all(ring);
		}
	}
	if (total) {
		int err = put_user_record(r, TALLY_RECORD_FINISHED_ROUND);

		if (err)
			return err;
	}
	return total;
}

/* A LOST_SAMPLES record for fd F: {header; u64 lost; sample_id trailer}. */
static int write_lost_samples(struct record *r, const struct tally_sampler_fd *f, uint64_t lost)
{
	const struct perf_event_attr *a = &r->ev[f->ev].attr;
	uint64_t buf[16];
	size_t n = 2;
	struct perf_event_header *h = (struct perf_event_header *)buf;

	buf[1] = lost;
	if (a->sample_id_all) {
		uint64_t t = a->sample_type;

		if (t & PERF_SAMPLE_TID)
			buf[n++] = 0;
		if (t & PERF_SAMPLE_TIME)
			buf[n++] = r->last_time;
		if (t & PERF_SAMPLE_ID)
			buf[n++] = f->id;
		if (t & PERF_SAMPLE_STREAM_ID)
			buf[n++] = f->id;
		if (t & PERF_SAMPLE_CPU)
			buf[n++] = (uint64_t)(uint32_t)(f->cpu < 0 ? 0 : f->cpu);
		if (t & PERF_SAMPLE_IDENTIFIER)
			buf[n++] = f->id;
	}
	h->type = PERF_RECORD_LOST_SAMPLES;
	h->misc = 0;
	h->size = (uint16_t)(n * 8);
	return tally_writer__write(r->w, buf, n * 8);
}

/* Samples the kernel dropped per fd (read_format LOST), as LOST_SAMPLES records. */
static int read_lost(struct record *r)
{
	size_t i;
	int err = 0;

	for (i = 0; !err && i < tally_sampler__nr_fds(r->sampler); i++) {
		const struct tally_sampler_fd *f = tally_sampler__fd(r->sampler, i);
		const struct perf_event_attr *a = &r->ev[f->ev].attr;
		uint64_t v[1 + 3 * 64];
		ssize_t n;

		if (!(a->read_format & PERF_FORMAT_LOST))
			continue;
		if (!(a->read_format & PERF_FORMAT_GROUP)) {
			/* read_format ID|LOST: {value, id, lost} */
			n = tally_sampler__read(r->sampler, i, v, 3 * sizeof(uint64_t));
			if (n < 24 || !v[2])
				continue;
			r->lost_samples += v[2];
			err = write_lost_samples(r, f, v[2]);
			continue;
		}
		/* GROUP|ID|LOST, read on the leader: {nr; {value, id, lost}[nr]} */
		if (r->ev[f->ev].leader != f->ev)
			continue;
		n = tally_sampler__read(r->sampler, i, v, sizeof(v));
		if (n < 8) {
			continue;
		} else {
			uint64_t k, nr = v[0];

			for (k = 0; !err && k < nr && (ssize_t)(8 + 24 * (k + 1)) <= n; k++) {
				const struct tally_sampler_fd *m =
					tally_sampler__fd_of_id(r->sampler, v[1 + 3 * k + 1]);
				uint64_t lost = v[1 + 3 * k + 2];

				if (!lost || !m)
					continue;
				r->lost_samples += lost;
				err = write_lost_samples(r, m, lost);
			}
		}
	}
	return err;
}

/* ENABLE/DISABLE every group leader but -D's tracking dummy. */
static void toggle_events(struct record *r, bool enable)
{
	for (size_t i = 0; i < r->nr_ev; i++)
		if (r->ev[i].leader == (int)i && !r->ev[i].tracking)
			tally_sampler__enable_event(r->sampler, i, enable);
}

/* Only -D's tracking dummy. */
static void enable_tracking(struct record *r)
{
	for (size_t i = 0; i < r->nr_ev; i++)
		if (r->ev[i].tracking)
			tally_sampler__enable_event(r->sampler, i, true);
}

/* -k: CLOCKID (the clock's resolution in ns) and CLOCK_DATA (the clock and the wall
 * clock read together, so readers can convert times), as perf writes them. */
static int set_clock_features(struct record *r)
{
	struct { uint32_t version, clockid; uint64_t wall_ns, clock_ns; } __attribute__((packed)) cd;
	struct timespec res = { 0, 1 }, wall, clk;
	uint64_t res_ns;
	int err;

	clock_getres(r->o->clockid, &res);
	res_ns = (uint64_t)res.tv_sec * 1000000000ull + (uint64_t)res.tv_nsec;
	err = tally_writer__set_feature(r->w, TALLY_FEAT_CLOCKID, &res_ns, sizeof(res_ns));
	if (err)
		return err;
	clock_gettime(CLOCK_REALTIME, &wall);
	clock_gettime(r->o->clockid, &clk);
	cd.version = 1;
	cd.clockid = (uint32_t)r->o->clockid;
	cd.wall_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	cd.clock_ns = (uint64_t)clk.tv_sec * 1000000000ull + (uint64_t)clk.tv_nsec;
	return tally_writer__set_feature(r->w, TALLY_FEAT_CLOCK_DATA, &cd, sizeof(cd));
}

static int setup_writer(struct record *r)
{
	struct tally_writer_opts wo = { .compress_level = r->o->comp_level, .aio = r->o->aio,
					.comp_mmap_len = (uint32_t)((r->mmap_pages + 1) *
								    (size_t)sysconf(_SC_PAGESIZE)) };
	char **cargv;
	size_t i, k;
	int err;

	if (r->out_fd >= 0) {
		wo.pipe = true;
		err = tally_writer__open_fd(&r->w, r->out_fd, &wo);
	} else {
		err = tally_writer__open(&r->w, r->path, &wo);
	}
	if (err) {
		cli_error("cannot open %s for writing: %s", r->path, strerror(-err));
		return -1;
	}
	for (i = 0; i < r->nr_ev; i++) {
		int idx = tally_writer__add_event(r->w, &r->ev[i].attr, r->ev[i].name, NULL, 0);

		if (idx < 0)
			goto nomem;
		for (k = 0; k < tally_sampler__nr_fds(r->sampler); k++)
			if (tally_sampler__fd(r->sampler, k)->ev == (int)i &&
			    tally_writer__add_event_ids(r->w, idx,
							&tally_sampler__fd(r->sampler, k)->id, 1))
				goto nomem;
		if (r->ev[i].leader == (int)i && (r->ev[i].nr_members > 1 || r->ev[i].group_name) &&
		    tally_writer__add_group(r->w, r->ev[i].group_name, (int)i, r->ev[i].nr_members))
			goto nomem;
	}
	if (tally_writer__set_host_features(r->w, tally_version()))
		goto nomem;
	if (r->o->use_clockid && set_clock_features(r))
		goto nomem;
	cargv = calloc((size_t)r->o->argc + 2, sizeof(*cargv));
	if (!cargv)
		goto nomem;
	cargv[0] = "tally";
	for (i = 0; i < (size_t)r->o->argc; i++)
		cargv[i + 1] = r->o->argv[i];
	err = tally_writer__set_cmdline(r->w, r->o->argc + 1, cargv);
	free(cargv);
	if (err)
		goto nomem;
	err = tally_writer__set_tracing_data(r->w);
	if (err) {
		char dir[PATH_MAX], why[512];

		tally_tracefs__strerror(tally_tracefs__find(NULL, dir, sizeof(dir)), dir, why,
					sizeof(why));
		cli_error("cannot read the tracepoint formats from tracefs: %s (%s); readers need "
			  "them to decode tracepoint samples", strerror(-err), why);
		return -1;
	}
	err = tally_writer__start(r->w);
	if (err)
		return write_error(r, err);
	return 0;
nomem:
	cli_error("out of memory");
	return -1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static volatile sig_atomic_t switch_hit;	/* SIGUSR2 with --switch-output=signal */

static void on_usr2(int sig)
{
	(void)sig;
	switch_hit = 1;
}

/* perf's file name stamp: local time to the centisecond, 2015122520103046 */
static int timestamp(char *buf, size_t len)
{
	struct timeval tv;
	struct tm tm;
	char dt[24];

	if (gettimeofday(&tv, NULL) || !localtime_r(&tv.tv_sec, &tm) ||
	    !strftime(dt, sizeof(dt), "%Y%m%d%H%M%S", &tm))
		return -1;
	snprintf(buf, len, "%s%02u", dt, (unsigned)(tv.tv_usec / 10000) % 100);
	return 0;
}

/* Keep the --switch-max-files newest names: the oldest file goes. 0 or -1 (no memory). */
static int keep_segment(struct record *r, char *name)
{
	size_t max = (size_t)r->o->switch_max_files;

	if (!max) {
		free(name);
		return 0;
	}
	if (r->nr_segments == max) {
		remove(r->segments[0]);
		free(r->segments[0]);
		memmove(r->segments, r->segments + 1, --r->nr_segments * sizeof(*r->segments));
	}
	if (!r->segments && !(r->segments = calloc(max, sizeof(*r->segments)))) {
		free(name);
		return -1;
	}
	r->segments[r->nr_segments++] = name;
	return 0;
}

/* The end of a file: its sample times, build-ids and header. 0 or -1 (error printed). */
static int finish_file(struct record *r)
{
	int err;

	if (r->first_time)
		tally_writer__set_sample_time(r->w, r->first_time, r->last_time);
	if (r->bt && buildid_tracker__write(r->bt, r->w, r->o))
		cli_warn("could not read all build-ids of the DSOs hit");
	err = tally_writer__finish(r->w);
	return err ? write_error(r, err) : 0;
}

/* --switch-output / --timestamp-filename: the finished file becomes PATH.<timestamp>
 * (perf's names); unless at the end, a new PATH starts with the side-band again, so each
 * file reads on its own. 0 or -1 (error printed). */
static int switch_output(struct record *r, bool at_exit)
{
	char ts[48], *name;

	if (!at_exit && finish_file(r))
		return -1;
	if (timestamp(ts, sizeof(ts)) || asprintf(&name, "%s.%s", r->path, ts) < 0) {
		cli_error("cannot name the next output file: %s", strerror(errno));
		return -1;
	}
	if (rename(r->path, name))
		cli_warn("cannot rename %s to %s: %s", r->path, name, strerror(errno));
	if (at_exit) {
		r->dumped = strdup(name);
		return keep_segment(r, name);
	}
	if (!r->o->quiet)
		fprintf(stderr, "[ tally record: Dump %s ]\n", name);
	if (keep_segment(r, name))
		goto nomem;
	tally_writer__delete(r->w);
	r->w = NULL;
	buildid_tracker__delete(r->bt);
	r->bt = NULL;
	r->first_time = r->last_time = 0;
	if (setup_writer(r))
		return -1;
	if (!r->o->no_buildid && buildid_tracker__new(&r->bt, r))
		goto nomem;
	if (synthesize(r, true))
		return write_error(r, -EIO);
	return 0;
nomem:
	cli_error("out of memory");
	return -1;
}

/* -D: the time of the next enable/disable (ms, monotonic), 0 when there is none. */
static uint64_t next_toggle(const struct record *r)
{
	const struct record_opts *o = r->o;

	if (o->delay_ms > 0)
		return r->sched ? 0 : r->t0_ms + (uint64_t)o->delay_ms;
	if (r->sched >= 2 * o->nr_ranges)
		return 0;
	return r->t0_ms + (r->sched % 2 ? o->ranges[r->sched / 2].end :
					     o->ranges[r->sched / 2].start);
}

/* Apply the -D changes that are due. Returns false after the last range ended (perf
 * then stops recording). */
static bool toggle_due(struct record *r, uint64_t now)
{
	uint64_t t;

	while ((t = next_toggle(r)) && t <= now) {
		bool enable = !(r->sched % 2);

		toggle_events(r, enable);
		if (!r->o->quiet)
			fprintf(stderr, "Events %s\n", enable ? "enabled" : "disabled");
		r->sched++;
		if (r->o->nr_ranges && r->sched == 2 * r->o->nr_ranges)
			return false;
	}
	return true;
}

static void earliest(uint64_t *at, uint64_t t)
{
	if (t && (!*at || t < *at))
		*at = t;
}

/* --switch-output: a new file when the signal came, the size or the time is reached
 * (t: now; *next_switch: when the time is up, 0 without a time). 0 or -1. */
static int switch_due(struct record *r, uint64_t t, uint64_t *next_switch)
{
	const struct record_opts *o = r->o;

	if (!(o->switch_signal && switch_hit) &&
	    !(o->switch_size && tally_writer__data_bytes(r->w) >= o->switch_size) &&
	    !(*next_switch && t >= *next_switch))
		return 0;
	switch_hit = 0;
	if (!o->quiet)
		fprintf(stderr, "[ tally record: dump data: Woken up %" PRIu64 " times ]\n",
			r->wakeups);
	r->wakeups = 0;
	if (switch_output(r, false))
		return -1;
	if (*next_switch)
		*next_switch = t + o->switch_time * 1000;
	return 0;
}

/* After ppoll found descriptors ready: --control's commands (true after 'stop'),
 * --switch-output-event's occurrences, a wakeup, the rings whose events are gone (no
 * longer polled). */
static bool polled(struct record *r, struct pollfd *pfd, size_t nr_rings, size_t *nr_hup)
{
	bool ring = false;

	if (pfd[nr_rings].revents) {
		int c = record__control(r);

		if (c > 0)
			return true;
		if (c < 0)
			pfd[nr_rings].fd = -1;
	}
	if (record_sideband__hit(r))
		switch_hit = 1;	/* as SIGUSR2 */
	for (size_t i = 0; i < nr_rings; i++) {
		ring |= pfd[i].revents != 0;
		if (pfd[i].revents & (POLLHUP | POLLERR)) {
			pfd[i].fd = -1;	/* stop polling a ring whose events are gone */
			(*nr_hup)++;
		}
	}
	r->wakeups += ring;
	return false;
}

/* Poll and drain until the end. Returns 0 or -1 (write error reported). */
static int loop(struct record *r, volatile sig_atomic_t *child_exited, int *wl_status,
		bool *wl_done)
{
	const struct record_opts *o = r->o;
	size_t nr_rings = tally_sampler__nr_rings(r->sampler), nr_hup = 0;
	size_t nr_pfd = nr_rings + 1 + record_sideband__nr_rings(r);
	/* the rings, --control's descriptor (-1: not polled), --switch-output-event's rings */
	struct pollfd *pfd = calloc(nr_pfd, sizeof(*pfd));
	uint64_t start = r->t0_ms;
	uint64_t deadline = o->timeout_ms ? start + o->timeout_ms : 0;
	uint64_t next_switch = o->switch_time ? start + o->switch_time * 1000 : 0;
	sigset_t block, old;
	size_t i;
	int rc = 0;

	if (!pfd) {
		cli_error("out of memory");
		return -1;
	}
	for (i = 0; i < nr_rings; i++) {
		pfd[i].fd = tally_ring__fd(tally_sampler__ring(r->sampler, i));
		pfd[i].events = POLLIN;
	}
	pfd[nr_rings].fd = r->ctl.ctl_fd;
	for (i = nr_rings; i < nr_pfd; i++) {
		if (i > nr_rings)
			pfd[i].fd = record_sideband__fd(r, i - nr_rings - 1);
		pfd[i].events = POLLIN;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR2);
	for (;;) {
		int64_t n = drain(r, r->flush);
		struct timespec ts, *tsp = NULL;
		uint64_t t, wake = 0;
		int pr;

		if (n < 0) {
			rc = write_error(r, (int)n);
			break;
		}
		if (r->have_wl && *child_exited && !*wl_done) {
			pid_t w = waitpid(r->wl.pid, wl_status, WNOHANG);

			if (w == r->wl.pid)
				*wl_done = true;
			*child_exited = 0;
		}
		if (exiting || *wl_done)
			break;
		t = now_ms();
		if (o->max_size && tally_writer__data_bytes(r->w) >= o->max_size) {
			if (!o->quiet)
				fprintf(stderr, "[ tally record: size limit reached (%" PRIu64 " KB), "
					"stopping session ]\n", tally_writer__data_bytes(r->w) >> 10);
			r->stop_wl = true;
			break;
		}
		if (switch_due(r, t, &next_switch)) {
			rc = -1;
			break;
		}
		if (!toggle_due(r, t)) {
			r->stop_wl = true;
			break;
		}
		if (deadline && t >= deadline)
			break;
		earliest(&wake, deadline);
		earliest(&wake, next_switch);
		earliest(&wake, next_toggle(r));
		if (wake) {
			ts.tv_sec = (time_t)((wake - t) / 1000);
			ts.tv_nsec = (long)((wake - t) % 1000) * 1000000;
			tsp = &ts;
		}
		/* Sleep until a ring reaches its wakeup watermark (half full) rather than
		 * spinning on every new record: the recorder's own CPU time is the cost.
		 * The stop signals stay blocked until ppoll, so none is missed. */
		sigprocmask(SIG_BLOCK, &block, &old);
		if (exiting || (*child_exited && r->have_wl) || (o->switch_signal && switch_hit)) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			continue;
		}
		pr = ppoll(pfd, nr_pfd, tsp, &old);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (pr > 0 && polled(r, pfd, nr_rings, &nr_hup)) {
			r->stop_wl = true;	/* --control's 'stop' */
			break;
		}
		if (!r->have_wl && !o->system_wide && nr_hup == nr_rings)
			break;	/* every target thread exited; the caller drains */
	}
	free(pfd);
	return rc;
}

static void summary(struct record *r, bool pipe)
{
	uint64_t bytes = tally_writer__output_bytes(r->w);

	if (r->o->quiet)
		return;
	fprintf(stderr, "[ tally record: Woken up %" PRIu64 " times to write data ]\n", r->wakeups);
	if (r->dumped)
		fprintf(stderr, "[ tally record: Dump %s ]\n", r->dumped);
	if (r->lost_records || r->lost_samples) {
		/* The kernel's LOST records and the per-event lost count (read_format LOST)
		 * describe the same drops: report the larger. */
		uint64_t n = r->lost > r->lost_samples ? r->lost : r->lost_samples;

		fprintf(stderr, "[ tally record: Lost %" PRIu64 " samples (%" PRIu64 " LOST records): "
			"the ring buffer was full; use a bigger -m or a lower -F ]\n",
			n, r->lost_records);
	}
	if (r->throttled)
		fprintf(stderr, "[ tally record: the kernel throttled sampling %" PRIu64 " times "
			"(see /proc/sys/kernel/perf_event_max_sample_rate, perf_cpu_time_max_percent): "
			"a lower -F gives even samples ]\n", r->throttled);
	if (pipe)
		fprintf(stderr, "[ tally record: Captured and wrote %.3f MB - ]\n",
			(double)bytes / 1024.0 / 1024.0);
	else if (r->dumped)	/* perf: the last file's size, and no count */
		fprintf(stderr, "[ tally record: Captured and wrote %.3f MB %s.<timestamp> ]\n",
			(double)bytes / 1024.0 / 1024.0, r->path);
	else
		fprintf(stderr, "[ tally record: Captured and wrote %.3f MB %s (%" PRIu64
			" samples) ]\n", (double)bytes / 1024.0 / 1024.0, r->path, r->samples);
}

static const char *output_path(const struct record_opts *o)
{
	struct stat st;

	if (o->output)
		return o->output;
	if (!fstat(STDOUT_FILENO, &st) && S_ISFIFO(st.st_mode))
		return "-";
	return "perf.data";
}

/* Everything before the workload runs: the output, the held workload, the events and
 * their rings, the file's preamble and side-band. 0 or 1 (message printed). */
static int record_prepare(struct record *r, bool pipe)
{
	struct record_opts *o = r->o;
	int err;

	if (pipe) {
		/* The stream owns stdout: the workload's output goes to stderr (as in perf). */
		r->out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (r->out_fd < 0 || (o->workload && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)) {
			cli_error("cannot set up the output pipe: %s", strerror(errno));
			return 1;
		}
	}
	if (o->workload) {
		err = workload__prepare(&r->wl, o->workload);
		if (err) {
			cli_error("cannot start '%s': %s", o->workload[0], strerror(-err));
			return 1;
		}
		r->have_wl = true;
		r->wl_target = !o->system_wide && !o->pid_list && !o->tid_list;
	}
	if (record__setup_events(r))
		return 1;
	set_sample_id(r);
	if (record__open(r) || record_sideband__open(r))
		return 1;
	r->time_off = sample_time_offset(r);
	r->id_hdr_size = tally_synth__id_hdr_size(&r->ev[0].attr);
	if (setup_writer(r))
		return 1;
	if (!o->no_buildid && !pipe && buildid_tracker__new(&r->bt, r)) {
		cli_error("out of memory");
		return 1;
	}
	err = synthesize(r, false);
	if (err) {
		write_error(r, err);
		return 1;
	}
	return 0;
}

/* Enable the events and let the workload go. 0 or 1. */
static int record_start(struct record *r, bool pipe)
{
	int err;

	/* Targets that do not exec under us (-a, -p, -t) are enabled now, before a command
	 * is let go, so its exec's COMM and maps are seen. */
	bool delayed = r->o->delay_ms || r->o->nr_ranges;

	if (!r->wl_target && !delayed)
		tally_sampler__enable(r->sampler);
	else if (!r->wl_target)
		enable_tracking(r);
	if (delayed && !r->o->quiet)
		fprintf(stderr, "Events disabled\n");
	r->t0_ms = now_ms();	/* -D and --switch-output times count from here */
	if (!r->have_wl)
		return 0;
	err = workload__start(&r->wl);
	if (err) {
		cli_error("cannot run '%s': %s", r->o->workload[0], strerror(-err));
		r->have_wl = false;	/* the child has exited */
		waitpid(r->wl.pid, NULL, 0);
		if (!pipe)
			unlink(r->path);	/* nothing was recorded: leave no file */
		return 1;
	}
	return 0;
}

/* After the loop: the last records, the lost counts, build-ids, the file's end. 0 or 1. */
static int record_finish(struct record *r)
{
	int64_t n;

	tally_sampler__disable(r->sampler);
	n = drain(r, 0);
	if (n >= 0)
		n = read_lost(r);
	if (n < 0) {
		write_error(r, (int)n);
		return 1;
	}
	for (size_t i = 0; i < tally_sampler__nr_rings(r->sampler); i++) {
		struct tally_ring_stats st;

		tally_ring__stats(tally_sampler__ring(r->sampler, i), &st);
		r->samples += st.samples;
		r->lost += st.lost;
		r->lost_records += st.lost_records;
		r->throttled += st.throttle;
		r->lost_samples += st.lost_samples;
	}
	if (finish_file(r))
		return 1;
	if (r->o->timestamp_filename && switch_output(r, true))
		return 1;
	return 0;
}

static bool switching(const struct record_opts *o)
{
	return o->switch_signal || o->switch_size || o->switch_time;
}

/* perf's warning: files are cut only when a ring is drained, at half its size */
static void size_warning(const struct record *r)
{
	uint64_t wakeup = (r->mmap_pages + 1) * (uint64_t)sysconf(_SC_PAGESIZE) / 2, n = wakeup;
	const char *unit = "BKMG";
	int i = 0;

	if (r->o->switch_size >= wakeup || r->o->quiet)
		return;
	while (n / 1024 > 1 && i < 3) {
		n /= 1024;
		i++;
	}
	fprintf(stderr, "WARNING: switch-output data size lower than wakeup kernel buffer size "
		"(%" PRIu64 "%c) expect bigger perf.data sizes\n", n, unit[i]);
}

int record__run(struct record *r, struct record_opts *o, volatile sig_atomic_t *child_exited)
{
	bool pipe, wl_done = false;
	int wl_status = 0, rc = 1;

	memset(r, 0, sizeof(*r));
	r->o = o;
	r->out_fd = -1;
	r->time_off = -1;
	r->path = output_path(o);
	pipe = !strcmp(r->path, "-");
	if (switching(o) && !o->no_buildid_set && !o->no_buildid_cache_set)
		o->no_buildid = o->no_buildid_cache = true;	/* perf's default: switch fast */
	if (pipe && o->aio) {
		cli_error("--aio writes the file at its offsets: it cannot write to a pipe (use "
			  "-o FILE)");
		return 1;
	}
	if (pipe && o->timestamp_filename) {
		cli_error("--switch-output and --timestamp-filename rename the output file: "
			  "they cannot write to a pipe (use -o FILE)");
		return 1;
	}
	if (cli_control__open(&r->ctl, o->control))
		return 129;
	if (!o->no_buildid && !o->no_buildid_cache && !pipe &&
	    record_debuginfod__new(&r->debuginfod, o->debuginfod))
		goto out;
	if (record_prepare(r, pipe) || affinity_setup(r))
		goto out;
	/* perf's cap: a quarter of the ring */
	r->flush = (size_t)o->mmap_flush;
	if (r->flush > r->mmap_pages * (size_t)sysconf(_SC_PAGESIZE) / 4)
		r->flush = r->mmap_pages * (size_t)sysconf(_SC_PAGESIZE) / 4;
	/* after the fork: the command keeps the normal policy, as with perf */
	if (o->realtime && cli_realtime(o->realtime, "record"))
		goto out;
	/* after the fork: the command keeps the default disposition of SIGUSR2 */
	signal(SIGUSR2, o->switch_signal ? on_usr2 : SIG_IGN);
	if (o->switch_size)
		size_warning(r);
	if (record_start(r, pipe) ||
	    loop(r, child_exited, &wl_status, &wl_done) || record_finish(r))
		goto out;
	summary(r, pipe);
	rc = 0;
	if (r->have_wl && !wl_done && r->stop_wl) {
		/* perf stops the command it ran, and exits as it did (SIGTERM: 143) */
		kill(r->wl.pid, SIGTERM);
		wl_done = waitpid(r->wl.pid, &wl_status, 0) == r->wl.pid;
	}
	if (r->have_wl && wl_done)
		rc = workload__exit_code(wl_status);
out:
	if (r->have_wl && !wl_done) {
		kill(r->wl.pid, SIGTERM);
		if (!r->wl.started)
			workload__abort(&r->wl);
		else
			waitpid(r->wl.pid, &wl_status, 0);
	}
	cli_control__close(&r->ctl);
	record_sideband__close(r);
	record_debuginfod__delete(r->debuginfod, o->quiet || rc);
	buildid_tracker__delete(r->bt);
	tally_writer__delete(r->w);
	for (size_t i = 0; i < r->nr_segments; i++)
		free(r->segments[i]);
	free(r->segments);
	free(r->dumped);
	free(r->ring_cpus);
	record__close(r);
	if (r->out_fd >= 0)
		close(r->out_fd);
	return rc;
}
