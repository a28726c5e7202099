/*
 * Sampling events on targets: a sampler opens its events on every (thread, CPU) pair,
 * maps one ring per CPU (per thread for events that follow a task on any CPU) and
 * points the other fds of that CPU or thread into it, so one pass over the rings sees
 * every record once. tally record and tally top are written on it.
 *
 * What the kernel refuses is retried through one fallback policy (enum
 * tally_fallback), which tally_counters (counter.h) applies too: the caller says which
 * fallbacks it allows and may veto each one as it comes (to name the changed event, or
 * to keep a failure that perf would keep).
 */
#ifndef TALLY_SAMPLER_H
#define TALLY_SAMPLER_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_cpumap;
struct tally_threadmap;
struct tally_ring;

/*
 * What may be changed in an event perf_event_open refused before it is tried again,
 * as perf does. tally_fallback__find tries them in this order.
 */
enum tally_fallback {
	TALLY_FALLBACK_NONE	 = 0,
	/* EMFILE: raise the soft RLIMIT_NOFILE to the hard limit (many threads x CPUs) */
	TALLY_FALLBACK_NOFILE	 = 1u << 0,
	/* EINVAL with PERF_FORMAT_LOST in read_format: kernels before 6.0 lack it */
	TALLY_FALLBACK_NO_LOST	 = 1u << 1,
	/* EINVAL with exclude_guest/exclude_host: PMUs that cannot filter guests (msr) */
	TALLY_FALLBACK_NO_GUEST	 = 1u << 2,
	/* EACCES/EPERM for an event that counts the kernel (perf_event_paranoid 2 without
	 * CAP_PERFMON): user space only, exclude_kernel and exclude_hv (perf stat, top) */
	TALLY_FALLBACK_USER_ONLY = 1u << 3,
	/* the same with exclude_kernel alone, the bit perf record's files carry */
	TALLY_FALLBACK_NO_KERNEL = 1u << 4,
	/* hardware cycles refused with ENOENT/EOPNOTSUPP/ENODEV/EINVAL (no hardware PMU,
	 * as in most VMs): the cpu-clock software event; precise_ip is kept */
	TALLY_FALLBACK_CPU_CLOCK = 1u << 5,
};

/* The first fallback among the bits of @allowed that applies to @attr refused with
 * @err (-errno), or TALLY_FALLBACK_NONE. NOFILE applies only while the soft limit is
 * below the hard one. */
TALLY_API enum tally_fallback tally_fallback__find(const struct perf_event_attr *attr, int err,
						   unsigned allowed);
/* Apply one fallback to @attr (NOFILE raises the process's limit). 0 or -errno. */
TALLY_API int tally_fallback__apply(struct perf_event_attr *attr, enum tally_fallback kind);

/* Read /proc/sys/kernel/@name (e.g. "perf_event_paranoid", "perf_event_mlock_kb",
 * "perf_event_max_sample_rate") as a signed number. 0 or -errno. */
TALLY_API int tally_sysctl__read(const char *name, int64_t *value);

struct tally_sampler;

/* One open fd. */
struct tally_sampler_fd {
	int fd;
	int ev;		/* index of its event */
	int cpu;	/* -1: any CPU */
	pid_t tid;	/* -1: every task on the CPU */
	uint64_t id;	/* the kernel's sample id (PERF_EVENT_IOC_ID), 0 if unknown */
	int ring;	/* index of the ring it writes into, -1 before tally_sampler__mmap */
};

/* Where tally_sampler__open stopped. */
struct tally_sampler_error {
	int err;	/* -errno */
	int ev;		/* the event that failed */
	int cpu;	/* on this CPU (-1: any) */
	pid_t tid;	/* for this thread (-1: every task) */
	bool filter;	/* the kernel refused the event's filter (PERF_EVENT_IOC_SET_FILTER) */
};

/* Asked before fallback @kind changes event @ev (refused with @err): return false to
 * keep the failure. The attr is tally_sampler__attr(s, ev), changed after the call. */
typedef bool (*tally_sampler_fallback_fn)(void *arg, struct tally_sampler *s, size_t ev,
					  enum tally_fallback kind, int err);

struct tally_sampler_opts {
	unsigned fallbacks;		/* enum tally_fallback bits allowed */
	tally_sampler_fallback_fn fallback;	/* NULL: every allowed fallback applies */
	void *arg;			/* for fallback */
	bool skip_offline;		/* ENODEV on a CPU (it went offline): skip the CPU */
	bool skip_exited;		/* ESRCH (the thread exited): skip the thread */
};

/* A new sampler over @cpus x @threads (borrowed: they must outlive it). @opts may be
 * NULL (no fallback, no skipping). 0, -EINVAL or -ENOMEM. */
TALLY_API int tally_sampler__new(struct tally_sampler **out, const struct tally_cpumap *cpus,
				 const struct tally_threadmap *threads,
				 const struct tally_sampler_opts *opts);
TALLY_API void tally_sampler__delete(struct tally_sampler *s);
/* Add an event (attr copied). @leader: the index of an added group leader, or -1 for
 * an event of its own; @filter: a tracepoint filter for every fd, or NULL (borrowed).
 * The new index goes to *idx if non-NULL. 0, -EINVAL or -ENOMEM. */
TALLY_API int tally_sampler__add(struct tally_sampler *s, const struct perf_event_attr *attr,
				 int leader, const char *filter, int *idx);
/* Event @ev counts only while tasks of a cgroup run: @cgroup_fd is an open directory of
 * the perf_event cgroup hierarchy (kept open by the caller until the sampler is
 * opened), -1 for none. The kernel does it per CPU: only on pairs of thread -1 (system
 * wide). 0 or -EINVAL. */
TALLY_API int tally_sampler__set_cgroup(struct tally_sampler *s, size_t ev, int cgroup_fd);
TALLY_API size_t tally_sampler__nr_events(const struct tally_sampler *s);
/* Event @ev's attr: what is opened, fallbacks included. The caller may change it
 * before tally_sampler__open. NULL past the end. */
TALLY_API struct perf_event_attr *tally_sampler__attr(struct tally_sampler *s, size_t ev);
/* The fallbacks applied to event @ev (enum tally_fallback bits). */
TALLY_API unsigned tally_sampler__fell_back(const struct tally_sampler *s, size_t ev);

/* Open every event on every pair, threads outer, CPUs inner (a member joins its
 * leader's fd of the same pair; a pair whose leader was skipped has no members).
 * 0 (possibly with no fd at all: every CPU offline or thread gone, see
 * tally_sampler__nr_fds) or -errno with @where filled (if non-NULL) and every fd
 * closed. */
TALLY_API int tally_sampler__open(struct tally_sampler *s, struct tally_sampler_error *where);
/* Map a ring of *pages data pages (a power of two) per CPU, or per thread for fds on
 * any CPU, and redirect the other fds into it. When the mlock limit refuses (EPERM)
 * every ring is unmapped and the size halved, down to one page; *pages gets the size
 * mapped. 0 or -errno (-EPERM: not even one page). */
TALLY_API int tally_sampler__mmap(struct tally_sampler *s, size_t *pages);
TALLY_API size_t tally_sampler__nr_fds(const struct tally_sampler *s);
TALLY_API const struct tally_sampler_fd *tally_sampler__fd(const struct tally_sampler *s,
							   size_t i);
/* The fd whose events carry sample id @id, or NULL. */
TALLY_API const struct tally_sampler_fd *tally_sampler__fd_of_id(const struct tally_sampler *s,
								 uint64_t id);
TALLY_API size_t tally_sampler__nr_rings(const struct tally_sampler *s);
TALLY_API struct tally_ring *tally_sampler__ring(const struct tally_sampler *s, size_t i);
/* PERF_EVENT_IOC_ENABLE / _DISABLE on every group leader's fds. 0 or the first -errno. */
TALLY_API int tally_sampler__enable(struct tally_sampler *s);
TALLY_API int tally_sampler__disable(struct tally_sampler *s);
/* PERF_EVENT_IOC_ENABLE (or _DISABLE) on every fd of event @ev alone (e.g. a side-band
 * dummy that runs while the others wait). 0, the first -errno, or -EINVAL past the end. */
TALLY_API int tally_sampler__enable_event(struct tally_sampler *s, size_t ev, bool enable);
/* read() fd @i (its read_format's layout). Bytes read or -errno. */
TALLY_API ssize_t tally_sampler__read(const struct tally_sampler *s, size_t i, void *buf,
				      size_t len);
/* Unmap the rings and close every fd (the events stay: it can be opened again). */
TALLY_API void tally_sampler__close(struct tally_sampler *s);

#ifdef __cplusplus
}
#endif
#endif
