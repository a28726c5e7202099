/*
 * One actionable message for a failed perf_event_open, shared by stat, record and top.
 *
 * The message depends on what was asked (a CPU, the whole system, a process) so the
 * advice fits: a permission error for -a names the paranoid level that forbids it and
 * the capability that would allow it; ENOENT in a VM says there is no hardware PMU.
 */
#ifndef TALLY_CLI_OPEN_ERROR_H
#define TALLY_CLI_OPEN_ERROR_H

#include <stdbool.h>
#include <sys/types.h>

struct cli_open_ctx {
	bool system_wide;	/* -a */
	int cpu;		/* the CPU the open was for, -1 for any */
	pid_t pid;		/* the task the open was for, -1 for none (per-CPU) */
	bool exclude_kernel;	/* the event already had :u */
	int assume_cap;		/* tests: 1 = has CAP_PERFMON, 2 = has not; 0 = ask libcap */
};

/* Print one actionable message for a failed perf_event_open of event NAME (err = -errno)
 * to stderr. ctx may be NULL (treated as "this process's children, any CPU"). */
void cli_open_error(const char *event_name, int err, const struct cli_open_ctx *ctx);

/* The same message written into buf (always NUL-terminated); returns buf. For tests and
 * for callers that want to prefix it. */
char *cli_open_error_text(char *buf, size_t len, const char *event_name, int err,
			  const struct cli_open_ctx *ctx);

#endif
