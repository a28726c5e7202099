/*
 * Targets and scheduling that record and top share: -u USER as the processes the user
 * runs (perf's uid target: the processes there when the tool starts, their threads
 * and the children they start later), and -r PRIO (SCHED_FIFO for the tool itself).
 */
#ifndef TALLY_CLI_TARGET_H
#define TALLY_CLI_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

struct tally_threadmap;

/* -u: the processes of USER (a name or a uid) as a -p list "PID,PID,..." (malloc'd).
 * 0, or the exit status after the message (129: no such user; 1: none runs). */
int cli_uid_pids(const char *user, char **list);
/* The threads of the processes in LIST; with DROP_GONE a process that ended since the
 * list was made is taken out of LIST (as perf's uid target leaves it out). 0 or -errno
 * (-ESRCH: *bad is the process that is gone). */
int cli_pids_threads(char *list, bool drop_gone, struct tally_threadmap **out, pid_t *bad);
/* The mount point of the perf_event cgroup controller into buf: a cgroup v1 mount with
 * it, else the cgroup2 mount (as perf). 0 or -ENOENT. */
int cli_cgroup_mount(char *buf, size_t len);
/* Open cgroup NAME (a path under that mount; "" is the root) for perf_event_open's
 * PERF_FLAG_PID_CGROUP. The fd, or -1 after a message naming OPT. */
int cli_cgroup_open(const char *name, const char *opt);
/* -r PRIO: run with SCHED_FIFO priority PRIO. 0, or 1 after a message naming OPT. */
int cli_realtime(int prio, const char *cmd);

#endif
