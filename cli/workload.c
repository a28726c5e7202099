/*
 * Forking the workload so counters are attached before it execs (see workload.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

int workload__prepare(struct workload *w, char **argv)
{
	int go[2], errp[2];
	pid_t pid;

	memset(w, 0, sizeof(*w));
	w->pid = -1;
	w->go_fd = w->err_fd = -1;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		return e;
	}
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		return e;
	}
	if (pid == 0) {
		char c;
		int e;
		ssize_t n;

		close(go[1]);
		close(errp[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		do {
			n = read(go[0], &c, 1);
		} while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(127);	/* tally went away before starting us */
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	w->pid = pid;
	w->go_fd = go[1];
	w->err_fd = errp[0];
	return 0;
}

int workload__start(struct workload *w)
{
	char c = 'g';
	int e = 0;
	ssize_t n;

	if (write(w->go_fd, &c, 1) != 1)
		return -errno;
	close(w->go_fd);
	w->go_fd = -1;
	w->started = true;
	do {
		n = read(w->err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(w->err_fd);
	w->err_fd = -1;
	if (n == (ssize_t)sizeof(e))
		return -e;
	return 0;
}

int workload__wait(struct workload *w, int *status, volatile int *stop)
{
	for (;;) {
		pid_t r = waitpid(w->pid, status, 0);

		if (r == w->pid)
			return 0;
		if (r < 0 && errno == EINTR) {
			if (stop && *stop)
				return -EINTR;
			continue;
		}
		return -errno;
	}
}

void workload__abort(struct workload *w)
{
	int st;

	if (w->go_fd >= 0)
		close(w->go_fd);
	if (w->err_fd >= 0)
		close(w->err_fd);
	w->go_fd = w->err_fd = -1;
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
			;
		w->pid = -1;
	}
}

int workload__exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}
