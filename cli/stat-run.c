/*
 * tally stat's counting: signals, one run (fork the workload held before exec, open
 * the counters, start, wait, read), and the wait loop that prints -I intervals, stops
 * at --timeout or --interval-count and follows -p targets until they exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tally/counter.h>
#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/topology.h>

#include "cmd.h"
#include "stat.h"
#include "open-error.h"
#include "workload.h"

/* ---- signals ---------------------------------------------------------------- */

static volatile sig_atomic_t child_pid = -1;
static volatile sig_atomic_t got_signal;

int stat_got_signal(void)
{
	return got_signal;
}

static void on_signal(int sig)
{
	got_signal = sig;
	exiting = 1;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

void stat_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits return EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
}

/* ---- counting ------------------------------------------------------------------ */

int stat_run__open_counters(struct stat_run *r)
{
	int err;

	tally_counters__delete(r->set);
	r->set = NULL;
	err = tally_counters__new(r->cpus, r->threads, &r->set);
	if (err)
		return err;
	free(r->set_idx);
	r->set_idx = calloc((size_t)r->nr_ev + 1, sizeof(int));
	if (!r->set_idx)
		return -ENOMEM;
	for (int i = 0; i < r->nr_ev; i++) {
		int lead = r->ev[i].leader == i ? -1 : r->set_idx[r->ev[i].leader];

		err = tally_counters__add(r->set, &r->ev[i].attr, lead, &r->set_idx[i]);
		if (!err && r->ev[i].cgroup >= 0)
			err = tally_counters__set_cgroup(r->set, (size_t)r->set_idx[i],
							 r->cgroups[r->ev[i].cgroup].fd);
		if (err)
			return err;
	}
	/* like perf: a per-task count refused for the kernel part is retried as :u */
	tally_counters__set_user_only_fallback(r->set, !r->opts->system_wide);
	err = tally_counters__open(r->set, 0);
	for (int i = 0; !err && i < r->nr_ev; i++) {
		int fe;

		if (!r->ev[i].filter || tally_counters__event(r->set, r->set_idx[i])->open_err)
			continue;
		fe = tally_counters__set_filter(r->set, (size_t)r->set_idx[i], r->ev[i].filter);
		if (fe) {
			cli_error("failed to set filter \"%s\" on event %s with %d (%s)",
				  r->ev[i].filter, r->ev[i].name, -fe, strerror(-fe));
			return 1;
		}
	}
	for (int i = 0; i < r->nr_ev; i++) {
		struct tally_counter *c = tally_counters__event(r->set, r->set_idx[i]);

		r->ev[i].supported = c->open_err == 0;
		if (c->user_only && !strchr(r->ev[i].name, ':')) {
			char *n = malloc(strlen(r->ev[i].name) + 3);

			if (n) {
				sprintf(n, "%s:u", r->ev[i].name);
				free(r->ev[i].name);
				r->ev[i].name = n;
			}
		}
	}
	if (err) {
		struct cli_open_ctx ctx = { r->opts->system_wide, -1, -1, false };
		bool other_task = r->opts->pid_list || r->opts->tid_list;
		int fcpu, fthread;
		int fe = tally_counters__failure(r->set, &fcpu, &fthread);

		if (fcpu >= 0)
			ctx.cpu = r->cpus->cpu[fcpu];
		if (fthread >= 0 && other_task)
			ctx.pid = r->threads->tid[fthread];
		if (fe >= 0)
			ctx.exclude_kernel = tally_counters__event(r->set, fe)->attr->exclude_kernel;
		for (int i = 0; i < r->nr_ev; i++)
			if (r->set_idx[i] == fe)
				fe = i;
		cli_open_error(fe >= 0 && fe < r->nr_ev ? r->ev[fe].name : "?", err, &ctx);
		return 1;
	}
	if (verbose) {
		for (int i = 0; i < r->nr_ev; i++)
			if (!r->ev[i].supported)
				fprintf(stderr, "tally: %s: not supported (%s)\n", r->ev[i].name,
					strerror(-tally_counters__event(r->set, r->set_idx[i])->open_err));
	}
	return 0;
}

double stat_ts_ns(const struct timespec *t)
{
	return (double)t->tv_sec * 1e9 + (double)t->tv_nsec;
}

struct timespec stat_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

struct timespec stat_ts_sub(struct timespec a, struct timespec b)
{
	struct timespec d = { a.tv_sec - b.tv_sec, a.tv_nsec - b.tv_nsec };

	if (d.tv_nsec < 0) {
		d.tv_nsec += 1000000000L;
		d.tv_sec--;
	}
	return d;
}

void stat_run__print_interval(struct stat_run *r, struct timespec t)
{
	if (tally_counters__read(r->set) < 0)
		return;
	r->span_ns = (double)r->opts->interval_ms * 1e6;
	stat_run__reduce(r, true);
	r->out.interval = true;
	r->out.ts = stat_ts_sub(t, r->start);
	r->out.walltime_ns = (double)r->opts->interval_ms * 1e6;
	if (r->opts->interval_clear) {
		/* perf clears the terminal (on stdout) and repeats the header */
		fputs("\033[H\033[2J\n", stdout);
		fflush(stdout);
		r->out.nr_headers_printed = 0;
	}
	stat_print_rows(&r->out, r->ev, r->nr_ev, r->ids, r->nr_ids, r->rows);
	fflush(r->out.f);
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void ts_add_ms(struct timespec *t, long ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_nsec -= 1000000000L;
		t->tv_sec++;
	}
}

/* Counting stopped before the workload ended: end it as perf does (SIGTERM), reap it. */
static void end_workload(struct stat_run *r, struct workload *w, int *wstatus)
{
	pid_t x = wait4(w->pid, wstatus, WNOHANG, &r->ru);

	if (x == 0 && !exiting) {
		kill(w->pid, SIGTERM);
		r->stopped_workload = true;	/* perf then exits 0 */
	}
	if (x == 0) {
		while (wait4(w->pid, wstatus, 0, &r->ru) < 0 && errno == EINTR)
			;
	}
}

/* Wait for the end of counting: the workload exiting, the targets exiting, a signal,
 * --timeout or --interval-count; print intervals on the way. */
static void wait_loop(struct stat_run *r, struct workload *w, int *wstatus)
{
	struct stat_opts *o = r->opts;
	int pfd = -1;
	struct timespec next = r->start, deadline = { 0, 0 };
	long nr_intervals = 0;
	bool reaped = false, ctl = r->ctl.ctl_fd >= 0;

	if (w && w->pid > 0)
		pfd = pidfd_open_(w->pid);
	else if (r->threads->nr && r->threads->tid[0] > 0)
		pfd = pidfd_open_(r->threads->tid[0]);
	if (o->timeout_ms) {
		deadline = r->start;
		ts_add_ms(&deadline, o->timeout_ms);
	}
	for (;;) {
		struct timespec t = stat_now(), wake = { 0, 0 }, rel;
		/* the workload or target (pidfd), and --control's descriptor */
		struct pollfd p[2] = { { pfd, POLLIN, 0 }, { ctl ? r->ctl.ctl_fd : -1, POLLIN, 0 } };
		bool have_wake = false;
		int n;

		if (exiting)
			break;
		if (o->interval_ms) {
			while (stat_ts_ns(&next) <= stat_ts_ns(&t))
				ts_add_ms(&next, o->interval_ms);
			wake = next;
			have_wake = true;
		}
		if (o->timeout_ms && (!have_wake || stat_ts_ns(&deadline) < stat_ts_ns(&wake))) {
			wake = deadline;
			have_wake = true;
		}
		if (have_wake) {
			rel = stat_ts_ns(&wake) > stat_ts_ns(&t) ? stat_ts_sub(wake, t) : (struct timespec){ 0, 0 };
		}
		if (pfd < 0 && w && w->pid > 0) {
			/* no pidfd: fall back to polling the child */
			pid_t x = wait4(w->pid, wstatus, WNOHANG, &r->ru);

			if (x == w->pid) {
				reaped = true;
				break;
			}
			if (!have_wake || stat_ts_ns(&rel) > 1e7) {
				rel = (struct timespec){ 0, 10000000L };
				have_wake = true;
			}
		}
		n = ppoll(p, 2, have_wake ? &rel : NULL, NULL);	/* fd -1: not polled */
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && p[1].revents)
			ctl = stat_run__control(r);
		if (n > 0 && p[0].revents)
			break;	/* the workload or target exited */
		if (n > 0)
			continue;
		t = stat_now();
		if (o->timeout_ms && stat_ts_ns(&t) >= stat_ts_ns(&deadline)) {
			if (o->interval_ms && stat_ts_ns(&t) >= stat_ts_ns(&next))
				stat_run__print_interval(r, t);
			break;
		}
		if (o->interval_ms && stat_ts_ns(&t) >= stat_ts_ns(&next)) {
			stat_run__print_interval(r, t);
			if (o->interval_count && ++nr_intervals >= o->interval_count)
				break;
		}
	}
	if (pfd >= 0)
		close(pfd);
	if (w && w->pid > 0 && !reaped)
		end_workload(r, w, wstatus);
	if (o->interval_ms && (!o->interval_count || nr_intervals < o->interval_count)) {
		struct timespec t = stat_now();

		/* the last, partial interval (perf prints it when the workload ends) */
		if (w && w->pid > 0)
			stat_run__print_interval(r, t);
	}
}

/* One run: fork (when there is a command), open, count, read. Returns 0 or an exit code. */
/* Targets, buckets, counters and the -I buffers for this run (the workload, when
 * there is one, already forked and held). 0 or an exit status. */
static int prepare_run(struct stat_run *r, struct workload *w)
{
	struct stat_opts *o = r->opts;
	int err = stat_run__build_targets(r, w->pid);

	if (err) {
		if (err < 0)
			cli_error("cannot set up the targets: %s", strerror(-err));
		return err > 0 ? err : 1;
	}
	if (!r->buckets || r->opts->aggr == AGGR_THREAD) {
		tally_stat_buckets__delete(r->buckets);
		free(r->ids);
		r->buckets = NULL;
		r->ids = NULL;
		if (stat_run__build_buckets(r))
			return 1;
		free(r->rows);
		r->rows = calloc((size_t)r->nr_ev * (size_t)r->nr_ids + 1, sizeof(*r->rows));
		if (!r->rows)
			return 1;
	}
	if (r->nr_ev) {
		err = stat_run__open_counters(r);
		if (err) {
			if (err < 0)
				cli_error("cannot open counters: %s", strerror(-err));
			return 1;
		}
	}
	if (o->interval_ms) {
		size_t n = (size_t)r->nr_ev * tally_counters__nr_pairs(r->set) + 1;

		free(r->prev);
		free(r->cur);
		r->prev = calloc(n, sizeof(*r->prev));
		r->cur = calloc(n, sizeof(*r->cur));
		if (!r->prev || !r->cur)
			return 1;
	}
	return 0;
}

/* perf's "Events disabled" / "Events enabled" (not with --quiet) */
void stat_events_note(const struct stat_run *r, const char *state)
{
	if (r->opts->quiet)
		return;
	fprintf(stderr, "Events %s\n", state);
	fflush(stderr);
}

/* -D: wait with the events disabled, then enable them (the clock restarts); -D -1:
 * leave them disabled (--control's 'enable' starts them). */
static void delayed_enable(struct stat_run *r)
{
	long delay = r->opts->delay_ms;
	struct timespec d = { delay / 1000, (delay % 1000) * 1000000L };

	stat_events_note(r, "disabled");
	if (delay < 0)
		return;
	while (nanosleep(&d, &d) < 0 && errno == EINTR && !exiting)
		;
	tally_counters__enable(r->set);
	stat_events_note(r, "enabled");
	r->start = stat_now();	/* elapsed time counts from here, like perf */
}

/* Start counting and the workload. 0 or an exit status. */
static int start_run(struct stat_run *r, struct workload *w, bool have_w)
{
	struct stat_opts *o = r->opts;
	int err;

	/* Counters not armed by exec are enabled before the clock starts, like perf. */
	if (r->nr_ev && (!have_w || o->system_wide || o->pid_list || o->tid_list) &&
	    o->delay_ms == 0)
		tally_counters__enable(r->set);
	r->start = stat_now();
	if (have_w) {
		err = workload__start(w);
		if (err) {
			int st;

			while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
				;
			child_pid = -1;
			fflush(stdout);
			fprintf(stderr, "Workload failed: %s\n", strerror(-err));
			return 255;
		}
		r->workload_ran = true;
	}
	if (r->nr_ev && o->delay_ms)
		delayed_enable(r);
	return 0;
}

/* The workload's own rusage (wait4), for user_time, system_time and the footer; perf
 * keeps the mean over the runs so far. */
static void add_rusage(struct stat_run *r)
{
	double k;

	r->have_ru = true;
	k = ++r->nr_ru;
	r->ru_user_mean += ((double)r->ru.ru_utime.tv_sec * 1e9 +
			    (double)r->ru.ru_utime.tv_usec * 1e3 - r->ru_user_mean) / k;
	r->ru_sys_mean += ((double)r->ru.ru_stime.tv_sec * 1e9 +
			   (double)r->ru.ru_stime.tv_usec * 1e3 - r->ru_sys_mean) / k;
}

int stat_run__once(struct stat_run *r, int *child_status)
{
	struct stat_opts *o = r->opts;
	struct workload w = { .pid = -1, .go_fd = -1, .err_fd = -1 };
	bool have_w = o->argc > 0;
	struct timespec end;
	int err, status = 0;

	if (have_w) {
		err = workload__prepare(&w, o->argv);
		if (err) {
			cli_error("cannot start '%s': %s", o->argv[0], strerror(-err));
			return 255;
		}
		child_pid = w.pid;
	}
	err = prepare_run(r, &w);
	if (err) {
		workload__abort(&w);
		child_pid = -1;
		return err;
	}
	err = start_run(r, &w, have_w);
	if (err)
		return err;
	memset(&r->ru, 0, sizeof(r->ru));
	wait_loop(r, have_w ? &w : NULL, &status);
	end = stat_now();
	if (r->nr_ev) {
		tally_counters__disable(r->set);
		if (!o->interval_ms)
			tally_counters__read(r->set);
	}
	child_pid = -1;
	if (have_w) {
		*child_status = status;
		add_rusage(r);
	}
	r->last_wall_ns = stat_ts_ns(&end) - stat_ts_ns(&r->start);
	if (verbose)
		fprintf(stderr, "tally: run took %.0f ns\n", r->last_wall_ns);
	r->span_ns = r->last_wall_ns;
	if (r->nr_ev && !o->interval_ms)
		stat_run__reduce(r, false);
	return 0;
}
