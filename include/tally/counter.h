/*
 * Counting: opening events on targets (a task, threads, CPUs) and reading their
 * counts, single or as groups, with multiplexing scaled by time enabled/running
 * (tally_scale is shared with the self-monitoring fast path, tally/selfmon.h).
 */
#ifndef TALLY_COUNTER_H
#define TALLY_COUNTER_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

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
TALLY_API uint64_t tally_scale(uint64_t val, uint64_t ena, uint64_t run);

/*
 * A counter set: events opened on every (cpu, thread) pair of a cpu map and a thread
 * map, perf stat style. Events may form groups (a leader and members opened with the
 * leader's fd as group_fd); a group with members is read in one read() with
 * PERF_FORMAT_GROUP|PERF_FORMAT_ID, and the values are matched to members by id.
 * Every event is read with TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING so multiplexed
 * counts can be scaled.
 *
 * A set is opaque; each event's struct tally_counter (tally_counters__event) is
 * read-only for callers but for priv. Index its per-pair arrays with
 * tally_counters__idx(set, cpu_idx, thread_idx).
 */
struct tally_cpumap;
struct tally_threadmap;

struct tally_counter {
	struct perf_event_attr *attr;	/* as opened (read_format filled in by open) */
	int leader;		/* index of the group leader (itself for a leader/single) */
	int nr_members;		/* leaders: events in the group including itself */
	int open_err;		/* 0, or the -errno that made this event unsupported */
	bool user_only;		/* opened with exclude_kernel/hv after EACCES (see below) */
	int cgroup_fd;		/* -1, or the cgroup it counts in (tally_counters__set_cgroup) */
	int *fd;		/* per pair; -1 where not open */
	uint64_t *id;		/* per pair: the kernel's event id */
	struct tally_count *count;	/* per pair: the last reading */
	void *priv;		/* the caller's */
};

struct tally_counters;		/* opaque: the accessors below */

/* A new, empty set over cpus x threads (use a cpumap of {-1} for per-task counting,
 * a threadmap of {-1} for per-CPU counting). 0 or -ENOMEM/-EINVAL. */
TALLY_API int tally_counters__new(const struct tally_cpumap *cpus,
				  const struct tally_threadmap *threads,
				  struct tally_counters **out);
/* Add an event (attr is copied). leader: index of an already added leader to join its
 * group, or -1 to start a new group/single event. The new index goes to *idx if
 * non-NULL. 0, -EINVAL (bad leader) or -ENOMEM. */
TALLY_API int tally_counters__add(struct tally_counters *set, const struct perf_event_attr *attr,
				  int leader, int *idx);

/* Number of events added. */
TALLY_API size_t tally_counters__nr(const struct tally_counters *set);
/* Event i (0 <= i < nr), or NULL. */
TALLY_API struct tally_counter *tally_counters__event(struct tally_counters *set, size_t i);
/* Before open: when EACCES/EPERM refuses an event that counts the kernel, retry it
 * user-space only (exclude_kernel|exclude_hv), as perf does for unprivileged users at
 * perf_event_paranoid 2; the event gets user_only. Off by default. */
TALLY_API void tally_counters__set_user_only_fallback(struct tally_counters *set, bool on);
/* Where tally_counters__open failed fatally: the event's index (-1: it did not fail),
 * and through non-NULL pointers the cpu and thread indexes (-1: any). */
TALLY_API int tally_counters__failure(const struct tally_counters *set, int *cpu_idx,
				      int *thread_idx);
/* Whether open raised RLIMIT_NOFILE to make room. */
TALLY_API bool tally_counters__raised_nofile(const struct tally_counters *set);

/* Errnos that mean "this event is not supported here" (perf stat shows <not supported>
 * and carries on): ENOENT, EOPNOTSUPP, ENXIO, ENOSYS, EINVAL, ENODEV. */
TALLY_API bool tally_counters__unsupported_err(int err);

/* Open every event on every pair (read_format gets TOTAL_TIME_ENABLED|RUNNING, and
 * GROUP|ID for every event of a group with members). An event failing with an "unsupported" errno is
 * closed everywhere and marked with open_err (members of a group whose leader is
 * unsupported are marked too); open continues. EMFILE raises RLIMIT_NOFILE to its hard
 * limit once and retries; EINVAL with exclude_guest/exclude_host set retries without
 * them (PMUs such as msr cannot filter guests). Any other failure closes everything,
 * records where it happened in fail_* and returns -errno. flags: perf_event_open flags (FD_CLOEXEC is
 * always added). */
TALLY_API int tally_counters__open(struct tally_counters *set, unsigned long flags);
/* ENABLE / DISABLE / RESET every open fd. 0 or the first -errno. With events on CPUs,
 * the calling thread runs on each of those CPUs in turn while it issues their ioctls
 * (as perf does), and gets its own CPU affinity back before the call returns. */
TALLY_API int tally_counters__enable(struct tally_counters *set);
TALLY_API int tally_counters__disable(struct tally_counters *set);
TALLY_API int tally_counters__reset(struct tally_counters *set);
/* ENABLE (enable true) or DISABLE every open fd of event i alone, CPU by CPU from each
 * CPU as tally_counters__enable. 0, the first -errno, or -EINVAL for a bad index. */
TALLY_API int tally_counters__enable_event(struct tally_counters *set, size_t i, bool enable);
/* Set a tracepoint filter (ftrace syntax, PERF_EVENT_IOC_SET_FILTER) on every open fd
 * of event i. 0, or the first -errno (EINVAL: the kernel rejects the filter). */
TALLY_API int tally_counters__set_filter(struct tally_counters *set, size_t i, const char *filter);
/* Count event i only while a task of a cgroup runs: cgroup_fd is an open directory of
 * the perf_event cgroup hierarchy (the caller keeps it open until the set is opened),
 * -1 for no cgroup. The kernel counts cgroups per CPU: the set's threads must be {-1}.
 * Takes effect at the next open. 0, or -EINVAL (bad index, or a set over threads). */
TALLY_API int tally_counters__set_cgroup(struct tally_counters *set, size_t i, int cgroup_fd);
/* Read every open event into its count[] (group leaders in one read). 0 or -errno. */
TALLY_API int tally_counters__read(struct tally_counters *set);
/* Index of the (cpu_idx, thread_idx) pair in per-pair arrays. */
TALLY_API size_t tally_counters__idx(const struct tally_counters *set, size_t cpu_idx,
				     size_t thread_idx);
/* Number of pairs (cpus x threads). */
TALLY_API size_t tally_counters__nr_pairs(const struct tally_counters *set);
/* Sum of event i's counts over all pairs (val, ena, run each summed). */
TALLY_API struct tally_count tally_counters__sum(const struct tally_counters *set, size_t i);
/* Close all fds (the set can be opened again). */
TALLY_API void tally_counters__close(struct tally_counters *set);
TALLY_API void tally_counters__delete(struct tally_counters *set);

#ifdef __cplusplus
}
#endif
#endif
