/*
 * The sys seam: the one place libtally talks to the kernel's perf interface.
 *
 * Every perf_event_open, ioctl, read, mmap/munmap and close on a perf fd, the
 * rdpmc/rdtsc instructions of the self-monitoring fast path, and the tracefs mount
 * tracepoints need go through the ops table below. Production code uses the real
 * system calls; unit tests install a simulated kernel (tests/unit/simkernel.c) that
 * has a hardware PMU, so groups, multiplexing, scaling and the user page are testable
 * on a machine without one.
 */
#ifndef TALLY_INTERNAL_SYS_H
#define TALLY_INTERNAL_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

struct tly_sys_ops {
	int (*perf_event_open)(struct perf_event_attr *attr, pid_t pid, int cpu,
			       int group_fd, unsigned long flags);
	int (*ioctl)(int fd, unsigned long request, unsigned long arg);
	ssize_t (*read)(int fd, void *buf, size_t count);
	void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
	int (*munmap)(void *addr, size_t len);
	int (*close)(int fd);
	/* Self-monitoring instructions: rdpmc(counter) on x86, the mrs table on arm64. */
	uint64_t (*read_pmc)(unsigned int counter);
	/* The timestamp counter the user page's time_* fields convert: rdtsc / cntvct_el0. */
	uint64_t (*read_timer)(void);
	/* mount(2), for tracefs mounted on demand. NULL: this kernel mounts nothing. */
	int (*mount)(const char *source, const char *target, const char *fstype,
		     unsigned long flags, const void *data);
};

/* The ops in force; never NULL. */
const struct tly_sys_ops *tly_sys(void);
/* Install @ops (NULL restores the real kernel). Returns the previous table. For tests. */
const struct tly_sys_ops *tly_sys__set(const struct tly_sys_ops *ops);
/* The real implementation, for simulators that forward some calls to it. */
extern const struct tly_sys_ops tly_sys_real;

/* Convenience wrappers; all return -errno on failure (never set errno for callers). */
int tly_sys__perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			       int group_fd, unsigned long flags);
int tly_sys__ioctl(int fd, unsigned long request, unsigned long arg);
ssize_t tly_sys__read(int fd, void *buf, size_t count);
/* Returns MAP_FAILED and stores -errno in *err on failure. */
void *tly_sys__mmap(size_t len, int prot, int fd, off_t off, int *err);
int tly_sys__munmap(void *addr, size_t len);
int tly_sys__close(int fd);
/* -ENOSYS when the ops in force have no mount. */
int tly_sys__mount(const char *source, const char *target, const char *fstype);

#endif
