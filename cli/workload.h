/*
 * The workload: the command a user names after the options (tally stat -- ls).
 *
 * prepare() forks a child that waits on a pipe before it execs, so counters can be
 * opened on its pid with enable_on_exec first; start() releases it and reports an
 * exec failure (ENOENT, EACCES) as -errno so the caller can print perf's message.
 */
#ifndef TALLY_CLI_WORKLOAD_H
#define TALLY_CLI_WORKLOAD_H

#include <stdbool.h>
#include <sys/types.h>

struct workload {
	pid_t pid;
	int go_fd;	/* write end: one byte releases the child */
	int err_fd;	/* read end: the child's errno if exec failed, EOF if it succeeded */
	bool started;
};

/* Fork a child for argv (argv[0] looked up in PATH). 0 or -errno. */
int workload__prepare(struct workload *w, char **argv);
/* Let the child exec. 0, or -errno of a failed exec (the child has then exited). */
int workload__start(struct workload *w);
/* Wait for the child (retrying on EINTR unless *stop is set). Stores the raw wait
 * status. 0, -EINTR when interrupted with *stop set, or -errno. */
int workload__wait(struct workload *w, int *status, volatile int *stop);
/* Kill and reap a child that was prepared but will not be started. */
void workload__abort(struct workload *w);
/* The exit code tally returns for a wait status: the exit code, or 128+signal. */
int workload__exit_code(int status);

#endif
