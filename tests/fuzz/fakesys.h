/*
 * A small fake sysfs/tracefs tree for the event and PMU fuzz targets (created once per
 * process under /dev/shm, else $TMPDIR or /tmp; removed at exit), so a run never depends on the
 * machine's PMUs and stays fast.
 */
#ifndef FUZZ_FAKESYS_H
#define FUZZ_FAKESYS_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fakesys_root[256];

static int fakesys_write(const char *rel, const void *text, size_t len)
{
	char path[512], *slash;

	snprintf(path, sizeof(path), "%s/%s", fakesys_root, rel);
	for (slash = path + strlen(fakesys_root) + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -1;
		*slash = '/';
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static int fakesys_puts(const char *rel, const char *text)
{
	return fakesys_write(rel, text, strlen(text));
}

static int fakesys_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void fakesys_cleanup(void)
{
	if (fakesys_root[0])
		nftw(fakesys_root, fakesys_rm, 16, FTW_DEPTH | FTW_PHYS);
}

#define PMU_DIR "bus/event_source/devices/"

/* Create the tree once: cpu (x86-like formats and aliases), msr, an uncore PMU with a
 * cpumask, scale and unit, the software/tracepoint/breakpoint PMUs, and two tracepoints. */
static const char *fakesys_init(void)
{
	if (fakesys_root[0])
		return fakesys_root;
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	snprintf(fakesys_root, sizeof(fakesys_root), "%s/tally-fuzz-sys.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(fakesys_root)) {
		fakesys_root[0] = 0;
		return NULL;
	}
	atexit(fakesys_cleanup);
	static const char *const files[][2] = {
		{ PMU_DIR "cpu/type", "4\n" },
		{ PMU_DIR "cpu/format/event", "config:0-7\n" },
		{ PMU_DIR "cpu/format/umask", "config:8-15\n" },
		{ PMU_DIR "cpu/format/edge", "config:18\n" },
		{ PMU_DIR "cpu/format/inv", "config:23\n" },
		{ PMU_DIR "cpu/format/cmask", "config:24-31\n" },
		{ PMU_DIR "cpu/format/ldlat", "config1:0-15\n" },
		{ PMU_DIR "cpu/format/frontend", "config1:0-23\n" },
		{ PMU_DIR "cpu/events/cpu-cycles", "event=0x3c\n" },
		{ PMU_DIR "cpu/events/instructions", "event=0xc0\n" },
		{ PMU_DIR "cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n" },
		{ PMU_DIR "cpu/events/topdown-retiring", "event=0x00,umask=0x80\n" },
		{ PMU_DIR "cpu/events/topdown-retiring.scale", "5\n" },
		{ PMU_DIR "cpu/caps/max_precise", "3\n" },
		{ PMU_DIR "cpu/caps/branches", "32\n" },
		{ PMU_DIR "msr/type", "10\n" },
		{ PMU_DIR "msr/format/event", "config:0-63\n" },
		{ PMU_DIR "msr/events/tsc", "event=0x00\n" },
		{ PMU_DIR "msr/events/aperf", "event=0x01\n" },
		{ PMU_DIR "uncore_imc/type", "20\n" },
		{ PMU_DIR "uncore_imc/cpumask", "0\n" },
		{ PMU_DIR "uncore_imc/format/event", "config:0-7\n" },
		{ PMU_DIR "uncore_imc/format/umask", "config:8-15\n" },
		{ PMU_DIR "uncore_imc/events/cas_count_read", "event=0x04,umask=0x03\n" },
		{ PMU_DIR "uncore_imc/events/cas_count_read.scale", "6.103515625e-5\n" },
		{ PMU_DIR "uncore_imc/events/cas_count_read.unit", "MiB\n" },
		{ PMU_DIR "power/type", "21\n" },
		{ PMU_DIR "power/format/event", "config:0-7\n" },
		{ PMU_DIR "power/events/energy-pkg", "event=0x02\n" },
		{ PMU_DIR "power/events/energy-pkg.unit", "Joules\n" },
		{ PMU_DIR "power/events/energy-pkg.scale", "2.3283064365386962890625e-10\n" },
		{ PMU_DIR "software/type", "1\n" },
		{ PMU_DIR "tracepoint/type", "2\n" },
		{ PMU_DIR "breakpoint/type", "5\n" },
		{ "kernel/tracing/events/sched/sched_switch/id", "316\n" },
		{ "kernel/tracing/events/sched/sched_wakeup/id", "318\n" },
		{ "kernel/tracing/events/syscalls/sys_enter_read/id", "700\n" },
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (fakesys_puts(files[i][0], files[i][1]) < 0)
			return NULL;
	return fakesys_root;
}

#endif
