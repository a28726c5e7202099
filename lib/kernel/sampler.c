/*
 * Sampling events on targets (include/tally/sampler.h): one open loop with one
 * fallback policy, shared by tally record and tally top, and the rings the fds write
 * into. tally_counters (counter.c) applies the same fallbacks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

#include "tally/cpumap.h"
#include "tally/ring.h"
#include "tally/sampler.h"
#include "internal/sys.h"
#include "internal/util.h"

/* ---- the fallback policy ---------------------------------------------------- */

static bool nofile_below_max(void)
{
	struct rlimit rl;

	return !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max;
}

static bool is_cycles(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_HARDWARE && a->config == PERF_COUNT_HW_CPU_CYCLES;
}

enum tally_fallback tally_fallback__find(const struct perf_event_attr *attr, int err,
					 unsigned allowed)
{
	bool denied = err == -EACCES || err == -EPERM;

	if (!attr)
		return TALLY_FALLBACK_NONE;
	if ((allowed & TALLY_FALLBACK_NOFILE) && err == -EMFILE && nofile_below_max())
		return TALLY_FALLBACK_NOFILE;
	if ((allowed & TALLY_FALLBACK_NO_LOST) && err == -EINVAL &&
	    (attr->read_format & PERF_FORMAT_LOST))
		return TALLY_FALLBACK_NO_LOST;
	if ((allowed & TALLY_FALLBACK_NO_GUEST) && err == -EINVAL &&
	    (attr->exclude_guest || attr->exclude_host))
		return TALLY_FALLBACK_NO_GUEST;
	if ((allowed & TALLY_FALLBACK_USER_ONLY) && denied && !attr->exclude_kernel)
		return TALLY_FALLBACK_USER_ONLY;
	if ((allowed & TALLY_FALLBACK_NO_KERNEL) && denied && !attr->exclude_kernel)
		return TALLY_FALLBACK_NO_KERNEL;
	if ((allowed & TALLY_FALLBACK_CPU_CLOCK) && is_cycles(attr) &&
	    (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV || err == -EINVAL))
		return TALLY_FALLBACK_CPU_CLOCK;
	return TALLY_FALLBACK_NONE;
}

int tally_fallback__apply(struct perf_event_attr *attr, enum tally_fallback kind)
{
	struct rlimit rl;

	if (!attr)
		return -EINVAL;
	switch (kind) {
	case TALLY_FALLBACK_NOFILE:
		if (getrlimit(RLIMIT_NOFILE, &rl))
			return -errno;
		rl.rlim_cur = rl.rlim_max;
		return setrlimit(RLIMIT_NOFILE, &rl) ? -errno : 0;
	case TALLY_FALLBACK_NO_LOST:
		attr->read_format &= ~(uint64_t)PERF_FORMAT_LOST;
		return 0;
	case TALLY_FALLBACK_NO_GUEST:
		attr->exclude_guest = 0;
		attr->exclude_host = 0;
		return 0;
	case TALLY_FALLBACK_USER_ONLY:
		attr->exclude_kernel = 1;
		attr->exclude_hv = 1;
		return 0;
	case TALLY_FALLBACK_NO_KERNEL:
		attr->exclude_kernel = 1;
		return 0;
	case TALLY_FALLBACK_CPU_CLOCK:
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_CPU_CLOCK;
		return 0;
	case TALLY_FALLBACK_NONE:
		break;
	}
	return -EINVAL;
}

int tally_sysctl__read(const char *name, int64_t *value)
{
	char path[256];
	uint64_t v;
	int err;

	if (!name || !value || strchr(name, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	err = tly_read_file_u64(path, &v);
	if (!err)
		*value = (int64_t)v;
	return err;
}

/* ---- the sampler ------------------------------------------------------------ */

struct sampler_event {
	struct perf_event_attr attr;
	int leader;
	const char *filter;
	unsigned fell_back;
	int cgroup_fd;		/* -1: none */
};

struct sampler_ring {
	struct tally_ring *ring;
	int cpu;
	pid_t tid;
};

struct tally_sampler {
	const struct tally_cpumap *cpus;
	const struct tally_threadmap *threads;
	struct tally_sampler_opts o;
	struct sampler_event *ev;
	size_t nr_ev;
	struct tally_sampler_fd *fds;
	size_t nr_fds;
	size_t *by_id;		/* fd indexes sorted by id */
	struct sampler_ring *rings;
	size_t nr_rings;
};

int tally_sampler__new(struct tally_sampler **out, const struct tally_cpumap *cpus,
		       const struct tally_threadmap *threads, const struct tally_sampler_opts *opts)
{
	struct tally_sampler *s;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!cpus || !threads || !cpus->nr || !threads->nr)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cpus = cpus;
	s->threads = threads;
	if (opts)
		s->o = *opts;
	*out = s;
	return 0;
}

int tally_sampler__add(struct tally_sampler *s, const struct perf_event_attr *attr, int leader,
		       const char *filter, int *idx)
{
	struct sampler_event *n;

	if (!s || !attr || leader >= (int)s->nr_ev ||
	    (leader >= 0 && s->ev[leader].leader != leader))
		return -EINVAL;
	n = realloc(s->ev, (s->nr_ev + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->ev = n;
	n = &s->ev[s->nr_ev];
	memset(n, 0, sizeof(*n));
	n->attr = *attr;
	n->leader = leader < 0 ? (int)s->nr_ev : leader;
	n->filter = filter;
	n->cgroup_fd = -1;
	if (idx)
		*idx = (int)s->nr_ev;
	s->nr_ev++;
	return 0;
}

int tally_sampler__set_cgroup(struct tally_sampler *s, size_t ev, int cgroup_fd)
{
	if (!s || ev >= s->nr_ev)
		return -EINVAL;
	s->ev[ev].cgroup_fd = cgroup_fd < 0 ? -1 : cgroup_fd;
	return 0;
}

size_t tally_sampler__nr_events(const struct tally_sampler *s)
{
	return s ? s->nr_ev : 0;
}

struct perf_event_attr *tally_sampler__attr(struct tally_sampler *s, size_t ev)
{
	return s && ev < s->nr_ev ? &s->ev[ev].attr : NULL;
}

unsigned tally_sampler__fell_back(const struct tally_sampler *s, size_t ev)
{
	return s && ev < s->nr_ev ? s->ev[ev].fell_back : 0;
}

/* Apply the fallback for @err to event @ev if one is allowed and not vetoed. */
static bool fall_back(struct tally_sampler *s, size_t ev, int err)
{
	unsigned refused = 0;

	for (;;) {
		struct perf_event_attr *a = &s->ev[ev].attr;
		enum tally_fallback kind = tally_fallback__find(a, err, s->o.fallbacks & ~refused);

		if (kind == TALLY_FALLBACK_NONE)
			return false;
		if (s->o.fallback && !s->o.fallback(s->o.arg, s, ev, kind, err)) {
			refused |= kind;
			continue;
		}
		if (tally_fallback__apply(a, kind))
			return false;
		s->ev[ev].fell_back |= kind;
		/* read_format must agree across a group: no event keeps LOST */
		if (kind == TALLY_FALLBACK_NO_LOST)
			for (size_t i = 0; i < s->nr_ev; i++)
				s->ev[i].attr.read_format &= ~(uint64_t)PERF_FORMAT_LOST;
		return true;
	}
}

static int open_one(struct tally_sampler *s, size_t ev, pid_t tid, int cpu, int group_fd)
{
	for (;;) {
		bool cg = s->ev[ev].cgroup_fd >= 0 && tid == -1;
		int fd = tly_sys__perf_event_open(&s->ev[ev].attr, cg ? s->ev[ev].cgroup_fd : tid,
						  cpu, group_fd, PERF_FLAG_FD_CLOEXEC |
						  (cg ? PERF_FLAG_PID_CGROUP : 0));

		if (fd >= 0 || !fall_back(s, ev, fd))
			return fd;
	}
}

static int add_fd(struct tally_sampler *s, const struct tally_sampler_fd *f)
{
	struct tally_sampler_fd *n = realloc(s->fds, (s->nr_fds + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	s->fds = n;
	s->fds[s->nr_fds++] = *f;
	return 0;
}

/* The events on one (thread, CPU) pair. 0, 1 when the pair is skipped, or -errno. */
static int open_pair(struct tally_sampler *s, pid_t tid, int cpu, struct tally_sampler_error *w)
{
	size_t first = s->nr_fds;

	for (size_t i = 0; i < s->nr_ev; i++) {
		const struct sampler_event *e = &s->ev[i];
		struct tally_sampler_fd f = { -1, (int)i, cpu, tid, 0, -1 };
		int group_fd = -1, fd, err;

		if (e->leader != (int)i) {
			for (size_t k = first; k < s->nr_fds; k++)
				if (s->fds[k].ev == e->leader)
					group_fd = s->fds[k].fd;
			if (group_fd < 0)
				continue;	/* its leader was skipped on this pair */
		}
		fd = open_one(s, i, tid, cpu, group_fd);
		if ((fd == -ENODEV && cpu >= 0 && s->o.skip_offline) ||
		    (fd == -ESRCH && s->o.skip_exited))
			return 1;
		*w = (struct tally_sampler_error){ fd, (int)i, cpu, tid, false };
		if (fd < 0)
			return fd;
		if (e->filter) {
			err = tly_sys__ioctl(fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)e->filter);
			if (err < 0) {
				tly_sys__close(fd);
				w->err = err;
				w->filter = true;
				return err;
			}
		}
		f.fd = fd;
		if (tly_sys__ioctl(fd, PERF_EVENT_IOC_ID, (unsigned long)&f.id) < 0)
			f.id = 0;
		err = add_fd(s, &f);
		if (err) {
			tly_sys__close(fd);
			w->err = err;
			return err;
		}
	}
	return 0;
}

static int id_cmp(const void *a, const void *b, void *arg)
{
	const struct tally_sampler *s = arg;
	uint64_t x = s->fds[*(const size_t *)a].id, y = s->fds[*(const size_t *)b].id;

	return x < y ? -1 : x > y;
}

int tally_sampler__open(struct tally_sampler *s, struct tally_sampler_error *where)
{
	struct tally_sampler_error w = { 0, -1, -1, -1, false };
	int err = 0;

	if (!s || !s->nr_ev)
		return -EINVAL;
	tally_sampler__close(s);
	for (size_t t = 0; t < s->threads->nr && !err; t++)
		for (size_t c = 0; c < s->cpus->nr && !err; c++)
			err = open_pair(s, s->threads->tid[t], s->cpus->cpu[c], &w);
	if (err > 0)
		err = 0;
	if (!err && s->nr_fds) {
		s->by_id = malloc(s->nr_fds * sizeof(*s->by_id));
		if (!s->by_id)
			err = w.err = -ENOMEM;
	}
	if (err) {
		tally_sampler__close(s);
		if (where)
			*where = w;
		return err;
	}
	for (size_t i = 0; i < s->nr_fds; i++)
		s->by_id[i] = i;
	if (s->nr_fds)
		qsort_r(s->by_id, s->nr_fds, sizeof(*s->by_id), id_cmp, s);
	return 0;
}

static void unmap_rings(struct tally_sampler *s)
{
	for (size_t i = 0; i < s->nr_rings; i++)
		tally_ring__delete(s->rings[i].ring);
	free(s->rings);
	s->rings = NULL;
	s->nr_rings = 0;
	for (size_t i = 0; i < s->nr_fds; i++)
		s->fds[i].ring = -1;
}

/* One ring per CPU; fds on any CPU follow a task and get a ring per thread. */
static int map_rings(struct tally_sampler *s, size_t pages)
{
	int err;

	s->rings = calloc(s->nr_fds, sizeof(*s->rings));
	if (!s->rings)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_fds; i++) {
		struct tally_sampler_fd *f = &s->fds[i];
		size_t k;

		for (k = 0; k < s->nr_rings; k++)
			if (f->cpu >= 0 ? s->rings[k].cpu == f->cpu
					: s->rings[k].cpu < 0 && s->rings[k].tid == f->tid)
				break;
		if (k < s->nr_rings) {
			f->ring = (int)k;
			err = tly_sys__ioctl(f->fd, PERF_EVENT_IOC_SET_OUTPUT,
					     (unsigned long)tally_ring__fd(s->rings[k].ring));
			if (err < 0)
				return err;
			continue;
		}
		err = tally_ring__mmap(&s->rings[k].ring, f->fd, pages, true);
		if (err)
			return err;
		s->rings[k].cpu = f->cpu;
		s->rings[k].tid = f->tid;
		f->ring = (int)k;
		s->nr_rings++;
	}
	return 0;
}

int tally_sampler__mmap(struct tally_sampler *s, size_t *pages)
{
	int err;

	if (!s || !pages || !*pages)
		return -EINVAL;
	for (;;) {
		unmap_rings(s);
		err = map_rings(s, *pages);
		if (!err)
			return 0;
		if (err != -EPERM || *pages == 1)
			break;
		*pages /= 2;
	}
	unmap_rings(s);
	return err;
}

size_t tally_sampler__nr_fds(const struct tally_sampler *s)
{
	return s ? s->nr_fds : 0;
}

const struct tally_sampler_fd *tally_sampler__fd(const struct tally_sampler *s, size_t i)
{
	return s && i < s->nr_fds ? &s->fds[i] : NULL;
}

const struct tally_sampler_fd *tally_sampler__fd_of_id(const struct tally_sampler *s, uint64_t id)
{
	size_t lo = 0, hi;

	if (!s || !s->by_id)
		return NULL;
	hi = s->nr_fds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tally_sampler_fd *f = &s->fds[s->by_id[mid]];

		if (f->id == id)
			return f;
		if (f->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t tally_sampler__nr_rings(const struct tally_sampler *s)
{
	return s ? s->nr_rings : 0;
}

struct tally_ring *tally_sampler__ring(const struct tally_sampler *s, size_t i)
{
	return s && i < s->nr_rings ? s->rings[i].ring : NULL;
}

/* The ioctl on the fds of every leader (ev -1) or of event ev. */
static int ioctl_events(struct tally_sampler *s, int ev, unsigned long req)
{
	int err = 0;

	if (!s || ev >= (int)s->nr_ev)
		return -EINVAL;
	for (size_t i = 0; i < s->nr_fds; i++) {
		const struct tally_sampler_fd *f = &s->fds[i];
		int e;

		if (ev >= 0 ? f->ev != ev : s->ev[f->ev].leader != f->ev)
			continue;
		e = tly_sys__ioctl(f->fd, req, 0);
		if (e < 0 && !err)
			err = e;
	}
	return err;
}

int tally_sampler__enable(struct tally_sampler *s)
{
	return ioctl_events(s, -1, PERF_EVENT_IOC_ENABLE);
}

int tally_sampler__disable(struct tally_sampler *s)
{
	return ioctl_events(s, -1, PERF_EVENT_IOC_DISABLE);
}

int tally_sampler__enable_event(struct tally_sampler *s, size_t ev, bool enable)
{
	if (!s || ev >= s->nr_ev)
		return -EINVAL;
	return ioctl_events(s, (int)ev, enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE);
}

ssize_t tally_sampler__read(const struct tally_sampler *s, size_t i, void *buf, size_t len)
{
	if (!s || i >= s->nr_fds || !buf)
		return -EINVAL;
	return tly_sys__read(s->fds[i].fd, buf, len);
}

void tally_sampler__close(struct tally_sampler *s)
{
	if (!s)
		return;
	unmap_rings(s);
	/* members before leaders, so no group is left headless mid-way */
	for (size_t i = s->nr_fds; i-- > 0;)
		tly_sys__close(s->fds[i].fd);
	free(s->fds);
	s->fds = NULL;
	s->nr_fds = 0;
	free(s->by_id);
	s->by_id = NULL;
}

void tally_sampler__delete(struct tally_sampler *s)
{
	if (!s)
		return;
	tally_sampler__close(s);
	free(s->ev);
	free(s);
}
