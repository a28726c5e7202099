/*
 * Messages for failed perf_event_open calls (cli/open-error.h).
 *
 * Permission errors are the ones users cannot fix without being told how: the
 * message names the current perf_event_paranoid value, what each level allows, the
 * capability that lifts the restriction on this kernel (CAP_PERFMON from 5.8, before
 * that CAP_SYS_ADMIN), whether this process has it, how to grant it, and what works
 * anyway. Other errnos get one sentence each with the usual cause and fix.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include "open-error.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

struct msg {
	char *buf;
	size_t len, pos;
};

__attribute__((format(printf, 2, 3)))
static void put(struct msg *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (m->pos >= m->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->pos, m->len - m->pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		m->pos += (size_t)n;
	if (m->pos >= m->len)
		m->pos = m->len - 1;
}

static int read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v;

	if (!f)
		return -100;
	if (fscanf(f, "%d", &v) != 1)
		v = -100;
	fclose(f);
	return v;
}

/* Kernel >= 5.8 knows CAP_PERFMON. */
static bool kernel_has_perfmon(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return true;
	return major > 5 || (major == 5 && minor >= 8);
}

/* 1: effective, 0: not, -1: unknown. */
static int have_cap(cap_value_t cap)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;
	int ret = -1;

	if (!caps)
		return -1;
	if (cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) == 0)
		ret = v == CAP_SET;
	cap_free(caps);
	return ret;
}

static void permission(struct msg *m, const char *name, int err, const struct cli_open_ctx *ctx)
{
	int level = read_paranoid();
	bool perfmon = kernel_has_perfmon();
	const char *capname = perfmon ? "CAP_PERFMON" : "CAP_SYS_ADMIN";
	int has = ctx && ctx->assume_cap ? ctx->assume_cap == 1 :
		  have_cap(perfmon ? CAP_PERFMON : CAP_SYS_ADMIN);
	const char *what = "this event";

	if (ctx && ctx->system_wide)
		what = "system-wide counting (-a)";
	else if (ctx && ctx->cpu >= 0)
		what = "counting on a CPU (-a/-C)";
	else if (ctx && ctx->pid > 0)
		what = "counting another process (-p/-t)";

	put(m, "no permission to open event '%s' (%s) for %s.\n", name, strerror(err), what);
	if (has == 1) {
		put(m, "  This process has %s, so the kernel's paranoid level (%d) is not the"
		       " cause: an LSM (SELinux, AppArmor), a seccomp filter or a container"
		       " refuses perf_event_open. Check the security policy (audit log) or run"
		       " outside the container.", capname, level);
		return;
	}
	if (level > -100)
		put(m, "  kernel.perf_event_paranoid is %d and this process does not have %s%s.\n",
		    level, capname, perfmon ? "" : " (this kernel is older than 5.8, which"
						   " introduced CAP_PERFMON)");
	else
		put(m, "  This process does not have %s.\n", capname);
	put(m, "  perf_event_paranoid levels (/proc/sys/kernel/perf_event_paranoid):\n"
	       "    -1  everything allowed, including raw tracepoints\n"
	       "     0  CPU-wide (-a, -C) counting and kernel profiling; no raw tracepoints\n"
	       "     1  your own processes, user and kernel space; no CPU-wide counting\n"
	       "     2  your own processes, user space only (:u)\n"
	       "     3  nothing for unprivileged users (Debian/Android kernels)\n");
	put(m, "  To allow it: run as root, or grant the capability to the binary, e.g.\n"
	       "    sudo setcap %s=ep $(command -v tally)\n"
	       "  or lower the level: sudo sysctl -w kernel.perf_event_paranoid=%d\n",
	    perfmon ? "cap_perfmon" : "cap_sys_admin",
	    ctx && (ctx->system_wide || ctx->cpu >= 0) ? 0 : 1);
	if (ctx && ctx->pid > 0)
		put(m, "  Counting process %d also needs ptrace access to it: it must belong to"
		       " your user (or you need CAP_PERFMON / CAP_SYS_PTRACE).\n", (int)ctx->pid);
	if (ctx && ctx->exclude_kernel)
		put(m, "  What works now: '%s' already counts user space only, so the target is"
		       " what is refused: count your own processes (tally stat -- CMD).", name);
	else if (level == 2 || level == -100)
		put(m, "  What works now: counting your own processes (tally stat -- CMD,"
		       " -p/-t on your own tasks) in user space only, e.g. -e %s:u.", name);
	else if (level == 1)
		put(m, "  What works now: counting your own processes, user and kernel space"
		       " (tally stat -- CMD, -p/-t on your own tasks); not -a/-C.");
	else if (level <= 0)
		put(m, "  At level %d the paranoid setting allows this; check the process's"
		       " credentials and security policy.", level);
	else
		put(m, "  At level %d nothing works without the capability.", level);
}

char *cli_open_error_text(char *buf, size_t len, const char *name, int err,
			  const struct cli_open_ctx *ctx)
{
	struct msg m = { buf, len, 0 };

	if (!buf || !len)
		return buf;
	buf[0] = 0;
	if (!name)
		name = "?";
	if (err < 0)
		err = -err;
	switch (err) {
	case EACCES:
	case EPERM:
		permission(&m, name, err, ctx);
		break;
	case ENOENT:
	case EOPNOTSUPP:
		put(&m, "event '%s' is not supported on this machine (%s): the kernel has no PMU"
			 " that counts it (virtual machines usually have no hardware PMU). Software"
			 " events such as cpu-clock, task-clock and page-faults work everywhere;"
			 " 'tally list' shows what is available.", name, strerror(err));
		break;
	case EMFILE: {
		struct rlimit rl = { 0, 0 };

		getrlimit(RLIMIT_NOFILE, &rl);
		put(&m, "too many open files opening event '%s': one file descriptor is needed per"
			 " event, CPU and thread, and the limit (RLIMIT_NOFILE) is %llu (hard %llu)"
			 " even after raising it. Raise it with 'ulimit -n', count fewer events,"
			 " or use -a/--per-thread less widely.", name,
		    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
		break;
	}
	case ESRCH:
		if (ctx && ctx->pid > 0)
			put(&m, "cannot open event '%s' for process %d: no such process (it may"
				 " have exited).", name, (int)ctx->pid);
		else
			put(&m, "cannot open event '%s': no such process (it may have exited).", name);
		break;
	case EINVAL:
		put(&m, "invalid event attributes for '%s': the kernel rejected a modifier or term"
			 " (e.g. :p precise levels, :H/:G, exclude bits, a config term or a sample"
			 " period this PMU does not accept)%s. Try the event without modifiers;"
			 " -vv shows the attributes sent.", name,
		    ctx && ctx->cpu >= 0 ? ", or the CPU does not exist" : "");
		break;
	case EBUSY:
		put(&m, "event '%s' is busy: another user holds the PMU resource exclusively (an"
			 " exclusive or pinned event, or a hypervisor/profiler using the counters).",
		    name);
		break;
	case ENODEV:
		put(&m, "event '%s' cannot be opened%s: no such device (the CPU is offline or the"
			 " PMU does not cover it).", name,
		    ctx && ctx->cpu >= 0 ? "" : " here");
		if (ctx && ctx->cpu >= 0)
			put(&m, " CPU %d.", ctx->cpu);
		break;
	case ENOSPC:
		put(&m, "event '%s': no free hardware slot (breakpoint events are limited by the"
			 " debug registers, usually 4 per CPU). Use fewer breakpoint events.", name);
		break;
	case E2BIG:
		put(&m, "event '%s': the kernel does not understand this perf_event_attr size"
			 " (kernel older than tally's headers).", name);
		break;
	case EOVERFLOW:
		put(&m, "event '%s': sample_max_stack/callchain depth exceeds"
			 " kernel.perf_event_max_stack.", name);
		break;
	default:
		put(&m, "cannot open event '%s': %s.", name, strerror(err));
		break;
	}
	return buf;
}

void cli_open_error(const char *event_name, int err, const struct cli_open_ctx *ctx)
{
	char buf[2048];

	cli_open_error_text(buf, sizeof(buf), event_name, err, ctx);
	fflush(stdout);
	fprintf(stderr, "tally: %s\n", buf);
}
