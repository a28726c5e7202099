/*
 * CPU and thread lists: what a counter or a recording is attached to.
 *
 * A cpumap is a sorted, duplicate-free list of CPU numbers, parsed from perf's list
 * syntax ("0-3,5") or read from sysfs (online CPUs, a PMU's cpumask). A threadmap is
 * a list of thread ids, from explicit tids or from the tasks of processes
 * (/proc/PID/task). Both are plain arrays the caller may index directly.
 */
#ifndef TALLY_CPUMAP_H
#define TALLY_CPUMAP_H

#include <tally/api.h>

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_cpumap {
	size_t nr;
	int cpu[];	/* sorted, unique */
};

/* Parse "0-3,5,7" (perf's -C syntax). Returns 0 or -EINVAL (bad syntax, *bad_pos set to
 * the offending character's index when non-NULL) or -ENOMEM. */
TALLY_API int tally_cpumap__parse(const char *list, struct tally_cpumap **out, size_t *bad_pos);
/* Online CPUs from /sys/devices/system/cpu/online (falls back to sysconf). */
TALLY_API int tally_cpumap__online(struct tally_cpumap **out);
/* How many CPUs the calling thread may run on: its affinity mask (taskset, cpusets),
 * else the online count; at least 1. What a helper thread is worth: with 1 it would
 * only take turns with the caller. */
TALLY_API int tally_cpumap__nr_usable(void);
/* Read a CPU list file such as <pmu>/cpumask. -ENOENT when absent. */
TALLY_API int tally_cpumap__read_file(const char *path, struct tally_cpumap **out);
/* The single "any CPU" entry (-1), for per-task counting. */
TALLY_API int tally_cpumap__any(struct tally_cpumap **out);
/* Index of @cpu in the map or -1. */
TALLY_API int tally_cpumap__idx(const struct tally_cpumap *map, int cpu);
/* Format as "0-3,5" into buf (always NUL-terminated). Returns the length needed. */
TALLY_API size_t tally_cpumap__format(const struct tally_cpumap *map, char *buf, size_t len);
TALLY_API void tally_cpumap__delete(struct tally_cpumap *map);

struct tally_threadmap {
	size_t nr;
	pid_t tid[];
};

/* Threads listed as "TID[,TID…]" (perf's -t). */
TALLY_API int tally_threadmap__parse_tids(const char *list, struct tally_threadmap **out);
/* All threads of the processes in "PID[,PID…]" (perf's -p), from /proc/PID/task.
 * -ESRCH when a PID does not exist (the message can name it: *bad_pid is set). */
TALLY_API int tally_threadmap__from_pids(const char *list, struct tally_threadmap **out,
					 pid_t *bad_pid);
/* Every thread of every process in /proc (perf's system-wide --per-thread), grouped
 * by process; processes that exit while it is read are left out. */
TALLY_API int tally_threadmap__all(struct tally_threadmap **out);
/* A map of one thread (or -1: "any thread", for per-CPU counting). */
TALLY_API int tally_threadmap__single(pid_t tid, struct tally_threadmap **out);
TALLY_API void tally_threadmap__delete(struct tally_threadmap *map);

#ifdef __cplusplus
}
#endif
#endif
