/*
 * Counting events on targets, and scaling multiplexed counts (include/tally/counter.h).
 */
#include "tally/counter.h"

uint64_t tally_scale(uint64_t val, uint64_t ena, uint64_t run)
{
	unsigned __int128 r;

	if (run == 0)
		return 0;
	if (run >= ena)
		return val;
	r = (unsigned __int128)val * ena / run;
	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

/* ---- counter sets ---------------------------------------------------------- */

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>

#include "tally/cpumap.h"
#include "tally/sampler.h"
#include "internal/sys.h"

/* The set (opaque to callers: tally/counter.h). */
struct tally_counters {
	const struct tally_cpumap *cpus;	/* borrowed: must outlive the set */
	const struct tally_threadmap *threads;	/* borrowed */
	size_t nr;			/* events */
	struct tally_counter *ev;
	/* Where open failed fatally (tally_counters__open returned an error). */
	int fail_event, fail_cpu_idx, fail_thread_idx;
	/* RLIMIT_NOFILE was raised to make room (once). */
	bool raised_nofile;
	/* Set by the caller before open: when EACCES/EPERM refuses an event that counts
	 * the kernel, retry it user-space only (exclude_kernel|exclude_hv), as perf does
	 * for unprivileged users at perf_event_paranoid 2; the event gets user_only. */
	bool user_only_fallback;
};

size_t tally_counters__nr(const struct tally_counters *set)
{
	return set->nr;
}

struct tally_counter *tally_counters__event(struct tally_counters *set, size_t i)
{
	return i < set->nr ? &set->ev[i] : NULL;
}

void tally_counters__set_user_only_fallback(struct tally_counters *set, bool on)
{
	set->user_only_fallback = on;
}

int tally_counters__failure(const struct tally_counters *set, int *cpu_idx, int *thread_idx)
{
	if (cpu_idx)
		*cpu_idx = set->fail_cpu_idx;
	if (thread_idx)
		*thread_idx = set->fail_thread_idx;
	return set->fail_event;
}

bool tally_counters__raised_nofile(const struct tally_counters *set)
{
	return set->raised_nofile;
}

int tally_counters__new(const struct tally_cpumap *cpus, const struct tally_threadmap *threads,
			struct tally_counters **out)
{
	struct tally_counters *set;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!cpus || !threads || !cpus->nr || !threads->nr)
		return -EINVAL;
	set = calloc(1, sizeof(*set));
	if (!set)
		return -ENOMEM;
	set->cpus = cpus;
	set->threads = threads;
	set->fail_event = set->fail_cpu_idx = set->fail_thread_idx = -1;
	*out = set;
	return 0;
}

size_t tally_counters__nr_pairs(const struct tally_counters *set)
{
	return set->cpus->nr * set->threads->nr;
}

size_t tally_counters__idx(const struct tally_counters *set, size_t cpu_idx, size_t thread_idx)
{
	return cpu_idx * set->threads->nr + thread_idx;
}

int tally_counters__add(struct tally_counters *set, const struct perf_event_attr *attr,
			int leader, int *idx)
{
	struct tally_counter *ev, *c;
	size_t np;

	if (!set || !attr || leader < -1 || (leader >= 0 && (size_t)leader >= set->nr))
		return -EINVAL;
	if (leader >= 0 && set->ev[leader].leader != leader)
		return -EINVAL;
	ev = realloc(set->ev, (set->nr + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	set->ev = ev;
	c = &ev[set->nr];
	memset(c, 0, sizeof(*c));
	np = tally_counters__nr_pairs(set);
	c->attr = malloc(sizeof(*c->attr));
	c->fd = malloc(np * sizeof(*c->fd));
	c->id = calloc(np, sizeof(*c->id));
	c->count = calloc(np, sizeof(*c->count));
	if (!c->attr || !c->fd || !c->id || !c->count) {
		free(c->attr);
		free(c->fd);
		free(c->id);
		free(c->count);
		return -ENOMEM;
	}
	*c->attr = *attr;
	if (c->attr->size == 0)
		c->attr->size = sizeof(*c->attr);
	for (size_t i = 0; i < np; i++)
		c->fd[i] = -1;
	c->leader = leader >= 0 ? leader : (int)set->nr;
	c->cgroup_fd = -1;
	c->nr_members = leader >= 0 ? 0 : 1;
	if (leader >= 0)
		set->ev[leader].nr_members++;
	if (idx)
		*idx = (int)set->nr;
	set->nr++;
	return 0;
}

bool tally_counters__unsupported_err(int err)
{
	if (err < 0)
		err = -err;
	return err == ENOENT || err == EOPNOTSUPP || err == ENXIO || err == ENOSYS ||
	       err == EINVAL || err == ENODEV;
}

static void close_event(struct tally_counters *set, struct tally_counter *c)
{
	size_t np = tally_counters__nr_pairs(set);

	for (size_t i = 0; i < np; i++) {
		if (c->fd[i] >= 0)
			tly_sys__close(c->fd[i]);
		c->fd[i] = -1;
	}
}

void tally_counters__close(struct tally_counters *set)
{
	if (!set)
		return;
	/* Members before leaders, so no group is left headless mid-way. */
	for (size_t i = set->nr; i-- > 0;)
		close_event(set, &set->ev[i]);
}

/* Open one pair, through the sampler's fallback policy (tally/sampler.h): events that
 * PMUs cannot filter by guest, user space only when allowed, a higher fd limit once. */
static int open_one(struct tally_counters *set, struct tally_counter *c, size_t ci, size_t ti,
		    int group_fd, unsigned long flags)
{
	pid_t pid = c->cgroup_fd >= 0 ? c->cgroup_fd : set->threads->tid[ti];
	int cpu = set->cpus->cpu[ci];
	unsigned allowed = TALLY_FALLBACK_NO_GUEST |
			   (set->user_only_fallback ? TALLY_FALLBACK_USER_ONLY : 0) |
			   (set->raised_nofile ? 0 : TALLY_FALLBACK_NOFILE);

	if (c->cgroup_fd >= 0)
		flags |= PERF_FLAG_PID_CGROUP;
	for (;;) {
		int fd = tly_sys__perf_event_open(c->attr, pid, cpu, group_fd, flags);
		enum tally_fallback kind;

		if (fd >= 0)
			return fd;
		kind = tally_fallback__find(c->attr, fd, allowed);
		if (kind == TALLY_FALLBACK_NONE || tally_fallback__apply(c->attr, kind))
			return fd;
		if (kind == TALLY_FALLBACK_USER_ONLY)
			c->user_only = true;
		if (kind == TALLY_FALLBACK_NOFILE) {
			set->raised_nofile = true;
			allowed &= ~(unsigned)TALLY_FALLBACK_NOFILE;
		}
	}
}

int tally_counters__open(struct tally_counters *set, unsigned long flags)
{
	if (!set)
		return -EINVAL;
	flags |= PERF_FLAG_FD_CLOEXEC;
	for (size_t e = 0; e < set->nr; e++) {
		struct tally_counter *c = &set->ev[e];
		struct tally_counter *lead = &set->ev[c->leader];
		bool is_leader = c->leader == (int)e;

		c->open_err = 0;
		c->attr->read_format |= PERF_FORMAT_TOTAL_TIME_ENABLED |
					PERF_FORMAT_TOTAL_TIME_RUNNING;
		if (lead->nr_members > 1)
			c->attr->read_format |= PERF_FORMAT_ID | PERF_FORMAT_GROUP;
		if (!is_leader && lead->open_err) {
			c->open_err = lead->open_err;
			continue;
		}
		for (size_t ci = 0; ci < set->cpus->nr; ci++) {
			for (size_t ti = 0; ti < set->threads->nr; ti++) {
				size_t k = tally_counters__idx(set, ci, ti);
				int gfd = is_leader ? -1 : lead->fd[k];
				int fd;

				if (!is_leader && gfd < 0)
					continue;	/* the leader skipped this pair */
				fd = open_one(set, c, ci, ti, gfd, flags);
				if (fd >= 0) {
					uint64_t id = 0;

					c->fd[k] = fd;
					/* ids match group reads to members and STAT
					 * records to events (stat record) */
					if (tly_sys__ioctl(fd, PERF_EVENT_IOC_ID,
							   (unsigned long)&id) == 0)
						c->id[k] = id;
					continue;
				}
				/* A thread that exited between listing and opening is not
				 * an error for multi-thread targets (perf skips it too). */
				if (fd == -ESRCH && set->threads->nr > 1 &&
				    set->threads->tid[ti] > 0)
					continue;
				if (tally_counters__unsupported_err(fd)) {
					close_event(set, c);
					c->open_err = fd;
					goto next_event;
				}
				set->fail_event = (int)e;
				set->fail_cpu_idx = (int)ci;
				set->fail_thread_idx = (int)ti;
				c->open_err = fd;
				tally_counters__close(set);
				return fd;
			}
		}
next_event:;
	}
	return 0;
}

/* req(arg) on every open fd of event i: 0, or the first -errno (all are tried). */
static int ioctl_event(struct tally_counters *set, size_t i, unsigned long req,
		       unsigned long arg)
{
	size_t np = tally_counters__nr_pairs(set);
	int err = 0;

	for (size_t k = 0; k < np; k++) {
		int fd = set->ev[i].fd[k], r;

		if (fd < 0)
			continue;
		r = tly_sys__ioctl(fd, req, arg);
		if (r < 0 && !err)
			err = r;
	}
	return err;
}

/*
 * req on every open fd of events from..to-1: 0, or the first -errno (all are tried).
 * With events on CPUs, CPU
 * by CPU with the calling thread moved onto each in turn (its affinity restored after),
 * as perf does: the kernel then acts on the CPU's events locally, not through an
 * interrupt that lands on whatever task runs there. A cgroup event enabled through
 * that interrupt while a task of another cgroup ran could keep time running 0 for the
 * whole run (stat -A -G: <not counted> on the CPU the cgroup's task ran on, in about 1
 * run of 10 on a loaded machine; never when enabled from the CPU itself). Best effort:
 * where the thread may not run on a CPU, its fds get the ioctl from where it is.
 */
static int ioctl_cpus(struct tally_counters *set, size_t from, size_t to, unsigned long req)
{
	cpu_set_t saved, one;
	bool moved = false;
	int err = 0;

	for (size_t ci = 0; ci < set->cpus->nr; ci++) {
		int cpu = set->cpus->cpu[ci];

		if (cpu >= 0 && cpu < CPU_SETSIZE &&
		    (moved || !sched_getaffinity(0, sizeof(saved), &saved))) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			moved = true;
			sched_setaffinity(0, sizeof(one), &one);
		}
		for (size_t e = from; e < to; e++) {
			for (size_t ti = 0; ti < set->threads->nr; ti++) {
				int fd = set->ev[e].fd[tally_counters__idx(set, ci, ti)], r;

				if (fd < 0)
					continue;
				r = tly_sys__ioctl(fd, req, 0);
				if (r < 0 && !err)
					err = r;
			}
		}
	}
	if (moved)
		sched_setaffinity(0, sizeof(saved), &saved);
	return err;
}

static int ioctl_all(struct tally_counters *set, unsigned long req)
{
	return set ? ioctl_cpus(set, 0, set->nr, req) : -EINVAL;
}

/* One event on or off, CPU by CPU from each CPU as ioctl_all (--control, -D). */
int tally_counters__enable_event(struct tally_counters *set, size_t i, bool enable)
{
	if (!set || i >= set->nr)
		return -EINVAL;
	return ioctl_cpus(set, i, i + 1, enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE);
}

int tally_counters__set_filter(struct tally_counters *set, size_t i, const char *filter)
{
	if (!set || i >= set->nr || !filter)
		return -EINVAL;
	return ioctl_event(set, i, PERF_EVENT_IOC_SET_FILTER, (unsigned long)filter);
}

int tally_counters__set_cgroup(struct tally_counters *set, size_t i, int cgroup_fd)
{
	if (!set || i >= set->nr || cgroup_fd < -1)
		return -EINVAL;
	if (cgroup_fd >= 0 && (set->threads->nr != 1 || set->threads->tid[0] != -1))
		return -EINVAL;
	set->ev[i].cgroup_fd = cgroup_fd;
	return 0;
}

int tally_counters__enable(struct tally_counters *set)
{
	return ioctl_all(set, PERF_EVENT_IOC_ENABLE);
}

int tally_counters__disable(struct tally_counters *set)
{
	return ioctl_all(set, PERF_EVENT_IOC_DISABLE);
}

int tally_counters__reset(struct tally_counters *set)
{
	return ioctl_all(set, PERF_EVENT_IOC_RESET);
}

static int read_group(struct tally_counters *set, size_t e, size_t k)
{
	struct tally_counter *lead = &set->ev[e];
	uint64_t stackbuf[3 + 2 * 16], *buf = stackbuf;
	size_t want = (3 + 2 * (size_t)lead->nr_members) * sizeof(uint64_t);
	ssize_t n;
	uint64_t nr, ena, run;
	int ret = 0;

	if (want > sizeof(stackbuf)) {
		buf = malloc(want);
		if (!buf)
			return -ENOMEM;
	}
	n = tly_sys__read(lead->fd[k], buf, want);
	if (n < 0) {
		ret = (int)n;
		goto out;
	}
	if (n < (ssize_t)(3 * sizeof(uint64_t))) {
		ret = -EIO;
		goto out;
	}
	nr = buf[0];
	ena = buf[1];
	run = buf[2];
	if ((size_t)n < (3 + 2 * nr) * sizeof(uint64_t)) {
		ret = -EIO;
		goto out;
	}
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t val = buf[3 + 2 * i], id = buf[4 + 2 * i];

		for (size_t m = e; m < set->nr; m++) {
			struct tally_counter *c = &set->ev[m];

			if (c->leader != (int)e || c->fd[k] < 0 || c->id[k] != id)
				continue;
			c->count[k].val = val;
			c->count[k].ena = ena;
			c->count[k].run = run;
			break;
		}
	}
out:
	if (buf != stackbuf)
		free(buf);
	return ret;
}

static int read_single(struct tally_counter *c, size_t k)
{
	uint64_t buf[4];
	ssize_t n = tly_sys__read(c->fd[k], buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (n < (ssize_t)(3 * sizeof(uint64_t)))
		return -EIO;
	c->count[k].val = buf[0];
	c->count[k].ena = buf[1];
	c->count[k].run = buf[2];
	return 0;
}

int tally_counters__read(struct tally_counters *set)
{
	size_t np;

	if (!set)
		return -EINVAL;
	np = tally_counters__nr_pairs(set);
	for (size_t e = 0; e < set->nr; e++) {
		struct tally_counter *c = &set->ev[e];

		for (size_t k = 0; k < np; k++) {
			int r;

			if (c->fd[k] < 0) {
				memset(&c->count[k], 0, sizeof(c->count[k]));
				continue;
			}
			if (!(c->attr->read_format & PERF_FORMAT_GROUP))
				r = read_single(c, k);
			else if (c->leader == (int)e)
				r = read_group(set, e, k);
			else
				continue;	/* filled by the leader's group read */
			if (r < 0)
				return r;
		}
	}
	return 0;
}

struct tally_count tally_counters__sum(const struct tally_counters *set, size_t i)
{
	struct tally_count s = { 0, 0, 0 };
	size_t np;

	if (!set || i >= set->nr)
		return s;
	np = tally_counters__nr_pairs(set);
	for (size_t k = 0; k < np; k++) {
		s.val += set->ev[i].count[k].val;
		s.ena += set->ev[i].count[k].ena;
		s.run += set->ev[i].count[k].run;
	}
	return s;
}

void tally_counters__delete(struct tally_counters *set)
{
	if (!set)
		return;
	tally_counters__close(set);
	for (size_t i = 0; i < set->nr; i++) {
		free(set->ev[i].attr);
		free(set->ev[i].fd);
		free(set->ev[i].id);
		free(set->ev[i].count);
	}
	free(set->ev);
	free(set);
}
