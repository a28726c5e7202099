/*
 * tally stat's output framing: where the counts go (stderr, -o FILE, --log-fd), the
 * "Performance counter stats for ..." header, the footer with elapsed, user and sys
 * time, and the report of one run around the printers of stat-print.c.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally/counter.h>
#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/topology.h>

#include "cmd.h"
#include "stat.h"

void stat_target_text(struct stat_opts *o, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = 0;
	if (o->cpu_list) {
		snprintf(buf, len, "'CPU(s) %s'", o->cpu_list);
	} else if (o->system_wide) {
		snprintf(buf, len, "'system wide'");
	} else if (o->pid_list) {
		snprintf(buf, len, "process id '%s'", o->pid_list);
	} else if (o->tid_list) {
		snprintf(buf, len, "thread id '%s'", o->tid_list);
	} else {
		pos += (size_t)snprintf(buf, len, "'");
		for (int i = 0; i < o->argc && pos < len; i++)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", i ? " " : "", o->argv[i]);
		if (pos < len)
			snprintf(buf + pos, len - pos, "'");
	}
}

static void print_header(struct stat_run *r)
{
	char t[4096];

	stat_target_text(r->opts, t, sizeof(t));
	fprintf(r->out.f, "\n Performance counter stats for %s", t);
	if (r->opts->repeat > 1)
		fprintf(r->out.f, " (%d runs)", r->opts->repeat);
	fputs(":\n\n", r->out.f);
}

/* log10 is the only libm function tally takes, for this alone (perf stat -r's
 * deviation): it is loaded here, so that no other command maps libm (about 0.4 MB of
 * peak RSS, and its start-up relocations) */
static double (*load_log10(void))(double)
{
	static double (*fn)(double);
	void *h;

	if (!fn && (h = dlopen(LIBM_SO, RTLD_NOW | RTLD_LOCAL)))
		*(void **)&fn = dlsym(h, "log10");
	return fn;
}

static int get_precision(double num)
{
	double (*lg)(double) = load_log10();
	int k = 0;

	if (num > 1)
		return 0;
	if (lg)
		return (int)lround(ceil(-lg(num)));
	for (double p = 1; num > 0 && num < p && k < 400; p /= 10)	/* no libm */
		k++;
	return k;
}

/* perf's hint: the NMI watchdog holds a hardware counter, so supported events may go
 * uncounted. */
static bool any_not_counted(const struct stat_run *r)
{
	for (int e = 0; e < r->nr_ev; e++)
		for (int a = 0; a < r->nr_ids; a++) {
			const struct stat_row *row = &r->rows[(size_t)e * (size_t)r->nr_ids + (size_t)a];

			if (r->ev[e].supported && row->present && !row->counted && !r->ev[e].tool)
				return true;
		}
	return false;
}

static bool nmi_watchdog_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/nmi_watchdog", "re");
	int v = 0;

	if (!f)
		return false;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v != 0;
}

/* --table: each run's time, its distance from the mean and perf's bar (a '#' per 5% of
 * the distance, relative to the run), indented under the result's first digit. */
static void print_table(struct stat_run *r, int prec, double avg)
{
	FILE *f = r->out.f;
	char tmp[64];
	int indent = 0;

	snprintf(tmp, sizeof(tmp), " %17.*f", prec, avg);
	while (tmp[indent] == ' ')
		indent++;
	fprintf(f, "%*s# Table of individual measurements:\n", indent, "");
	for (int i = 0; i < r->nr_runs_done; i++) {
		double run = r->wall_runs[i] / 1e9;
		int n = 1 + abs((int)(100.0 * (run - avg) / run) / 5);

		fprintf(f, " %17.*f (%+.*f) ", prec, run, prec, run - avg);
		for (int h = 0; h < n; h++)
			fputc('#', f);
		fputc('\n', f);
	}
	fprintf(f, "\n%*s# Final result:\n", indent, "");
}

static void print_footer(struct stat_run *r)
{
	FILE *f = r->out.f;
	struct stat_opts *o = r->opts;

	if (!o->null_run)
		fputc('\n', f);
	if (o->repeat == 1) {
		fprintf(f, " %17.9f seconds time elapsed", r->last_wall_ns / 1e9);
		if (r->workload_ran && r->have_ru && !o->system_wide) {
			fputs("\n\n", f);
			fprintf(f, " %17.9f seconds user\n", r->ru.ru_utime.tv_sec +
				r->ru.ru_utime.tv_usec / 1e6);
			fprintf(f, " %17.9f seconds sys\n", r->ru.ru_stime.tv_sec +
				r->ru.ru_stime.tv_usec / 1e6);
		}
	} else {
		double avg = r->wall.mean / 1e9;
		double sd = tally_stat_mean__stddev(&r->wall) / 1e9;
		int prec = sd > 0 ? get_precision(sd) + 2 : 9;
		double pct = avg ? 100.0 * sd / avg : 0;

		if (r->wall_runs)
			print_table(r, prec, avg);
		fprintf(f, " %17.*f +- %.*f seconds time elapsed", prec, avg, prec, sd);
		if (pct)
			fprintf(f, "  ( +-%6.2f%% )", pct);
	}
	fputs("\n\n", f);
	if (any_not_counted(r) && nmi_watchdog_on())
		fputs("Some events weren't counted. Try disabling the NMI watchdog:\n"
		      "\techo 0 > /proc/sys/kernel/nmi_watchdog\n"
		      "\ttally stat ...\n"
		      "\techo 1 > /proc/sys/kernel/nmi_watchdog\n", f);
}

void stat_run__print_report(struct stat_run *r)
{
	struct stat_out *out = &r->out;

	out->interval = false;
	out->walltime_ns = r->opts->repeat > 1 ? r->wall.mean : r->last_wall_ns;
	if (out->fmt == FMT_STD)
		print_header(r);
	if (r->nr_ev)
		stat_print_rows(out, r->ev, r->nr_ev, r->ids, r->nr_ids, r->rows);
	if (out->fmt == FMT_STD)
		print_footer(r);
}

FILE *stat_open_output(struct stat_opts *o, bool *owned)
{
	FILE *f;

	*owned = false;
	if (o->output) {
		/* O_NOFOLLOW: never write through a symlink planted at the output path */
		int fd = open(o->output, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
			      (o->append ? O_APPEND : O_TRUNC), 0666);
		f = fd < 0 ? NULL : fdopen(fd, o->append ? "a" : "w");
		if (!f) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			cli_error("cannot open output file '%s': %s", o->output,
				  e == ELOOP ? "it is a symbolic link (not followed)" : strerror(e));
			return NULL;
		}
		*owned = true;
	} else if (o->log_fd >= 0) {
		f = fdopen(o->log_fd, o->append ? "a" : "w");
		if (!f) {
			cli_error("--log-fd %d: %s", o->log_fd, strerror(errno));
			return NULL;
		}
		*owned = true;
	} else {
		return stderr;
	}
	if (o->output || o->log_fd >= 0) {
		time_t t = time(NULL);
		char tb[64];

		if (!o->strict_json)
			fprintf(f, "# started on %s\n", ctime_r(&t, tb));
	}
	return f;
}
