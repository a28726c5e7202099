/*
 * The sys seam (see internal/sys.h): the real kernel's perf interface and the
 * switch that lets unit tests replace it with a simulated one.
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal/sys.h"

static int real_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
				int group_fd, unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

static int real_ioctl(int fd, unsigned long request, unsigned long arg)
{
	return ioctl(fd, request, arg);
}

static void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

static uint64_t real_read_pmc(unsigned int counter)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v = 0;
#define MRS_CASE(n)                                                           \
	case n:                                                               \
		__asm__ volatile("mrs %0, pmevcntr" #n "_el0" : "=r"(v));     \
		break
	switch (counter) {
	MRS_CASE(0); MRS_CASE(1); MRS_CASE(2); MRS_CASE(3); MRS_CASE(4);
	MRS_CASE(5); MRS_CASE(6); MRS_CASE(7); MRS_CASE(8); MRS_CASE(9);
	MRS_CASE(10); MRS_CASE(11); MRS_CASE(12); MRS_CASE(13); MRS_CASE(14);
	MRS_CASE(15); MRS_CASE(16); MRS_CASE(17); MRS_CASE(18); MRS_CASE(19);
	MRS_CASE(20); MRS_CASE(21); MRS_CASE(22); MRS_CASE(23); MRS_CASE(24);
	MRS_CASE(25); MRS_CASE(26); MRS_CASE(27); MRS_CASE(28); MRS_CASE(29);
	MRS_CASE(30);
	case 31:
		__asm__ volatile("mrs %0, pmccntr_el0" : "=r"(v));
		break;
	default:
		break;
	}
#undef MRS_CASE
	return v;
#else
	(void)counter;
	return 0;
#endif
}

static uint64_t real_read_timer(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

const struct tly_sys_ops tly_sys_real = {
	.perf_event_open = real_perf_event_open,
	.ioctl = real_ioctl,
	.read = read,
	.mmap = real_mmap,
	.munmap = munmap,
	.close = close,
	.read_pmc = real_read_pmc,
	.read_timer = real_read_timer,
	.mount = mount,
};

static const struct tly_sys_ops *ops = &tly_sys_real;

const struct tly_sys_ops *tly_sys(void)
{
	return ops;
}

const struct tly_sys_ops *tly_sys__set(const struct tly_sys_ops *new_ops)
{
	const struct tly_sys_ops *old = ops;

	ops = new_ops ? new_ops : &tly_sys_real;
	return old;
}

int tly_sys__perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu,
			       int group_fd, unsigned long flags)
{
	int fd;

	errno = 0;
	fd = ops->perf_event_open(attr, pid, cpu, group_fd, flags);
	if (fd < 0)
		return errno ? -errno : -EINVAL;
	return fd;
}

int tly_sys__ioctl(int fd, unsigned long request, unsigned long arg)
{
	int ret;

	errno = 0;
	ret = ops->ioctl(fd, request, arg);
	if (ret < 0)
		return errno ? -errno : -EINVAL;
	return ret;
}

ssize_t tly_sys__read(int fd, void *buf, size_t count)
{
	ssize_t n;

	do {
		errno = 0;
		n = ops->read(fd, buf, count);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno ? -errno : -EIO;
	return n;
}

void *tly_sys__mmap(size_t len, int prot, int fd, off_t off, int *err)
{
	void *p;

	errno = 0;
	p = ops->mmap(NULL, len, prot, MAP_SHARED, fd, off);
	if (p == MAP_FAILED && err)
		*err = errno ? -errno : -ENOMEM;
	return p;
}

int tly_sys__munmap(void *addr, size_t len)
{
	if (!addr || addr == MAP_FAILED)
		return 0;
	return ops->munmap(addr, len) ? -errno : 0;
}

int tly_sys__close(int fd)
{
	if (fd < 0)
		return 0;
	return ops->close(fd) ? -errno : 0;
}

int tly_sys__mount(const char *source, const char *target, const char *fstype)
{
	if (!ops->mount)
		return -ENOSYS;
	errno = 0;
	return ops->mount(source, target, fstype, 0, NULL) ? (errno ? -errno : -EPERM) : 0;
}
