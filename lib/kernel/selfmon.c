/*
 * Self-monitoring (include/tally/selfmon.h): counters on the calling thread read
 * through the mmap'd user page when the kernel allows it, read() otherwise.
 *
 * The fast path follows the protocol documented in <linux/perf_event.h>: a seqlock
 * loop around the page fields and the counter register, the register sign-extended
 * from pmc_width, time_enabled/time_running extrapolated from the timestamp counter.
 * Everything that decides whether the path may be taken is checked on a consistent
 * snapshot; anything doubtful falls back to read(), which is always right.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal/selfmon.h"
#include "internal/sys.h"
#include "internal/util.h"
#include "tally/selfmon.h"

/* Bits of perf_event_mmap_page.capabilities (read as one word, not via bitfields). */
#define CAP_BIT0		(1ull << 0)
#define CAP_BIT0_IS_DEPRECATED	(1ull << 1)
#define CAP_USER_RDPMC		(1ull << 2)
#define CAP_USER_TIME		(1ull << 3)
#define CAP_USER_TIME_ZERO	(1ull << 4)
#define CAP_USER_TIME_SHORT	(1ull << 5)

/* The seqlock is held only for a few stores by the kernel; a reader that keeps
 * losing the race this long is better served by read(). */
#define SEQ_MAX_TRIES 1000

/* x86 Icelake+ PERF_METRICS rdpmc index (INTEL_PMC_FIXED_RDPMC_METRICS). */
#define X86_RDPMC_METRICS (1u << 29)

/* arm64 config1 format bits of the CPU PMU: "long" (64-bit counter), "rdpmc". */
#define ARM64_CONFIG1_LONG	(1ull << 0)
#define ARM64_CONFIG1_RDPMC	(1ull << 1)

#define READ_FORMAT (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | \
		     PERF_FORMAT_ID)

struct tally_selfmon {
	int fd;
	char *name;			/* from tally_selfmon__open_events, or NULL */
	bool page_borrowed;		/* page belongs to a self-sampling ring */
	unsigned int flags;
	enum tly_arch arch;
	struct perf_event_mmap_page *page;
	size_t page_len;
	enum tally_self_path fixed;	/* reason the fast path is never possible, or FAST */
	enum tally_self_path last;
	uint64_t id;
	struct tally_selfmon *leader;	/* NULL for a leader; only used during open */
	size_t nr_members;		/* leader: members including itself */
	uint64_t *gbuf;			/* leader with GROUP: read buffer */
	size_t gbuf_words;
};

#if defined(__x86_64__) || defined(__i386__)
#define NATIVE_ARCH TLY_ARCH_X86
#elif defined(__aarch64__)
#define NATIVE_ARCH TLY_ARCH_ARM64
#else
#define NATIVE_ARCH TLY_ARCH_OTHER
#endif

/* Overridable only by tests (tly_selfmon__set_arch). */
static enum tly_arch open_arch = NATIVE_ARCH;
static const char *user_access_path = "/proc/sys/kernel/perf_user_access";

enum tly_arch tly_arch_native(void)
{
	return NATIVE_ARCH;
}

void tly_selfmon__set_arch(enum tly_arch arch, const char *path)
{
	open_arch = arch;
	user_access_path = path ? path : "/proc/sys/kernel/perf_user_access";
}

const char *tally_self_path_str(enum tally_self_path path)
{
	switch (path) {
	case TALLY_SELF_PATH_FAST:
		return "fast path: user page and counter register, no system call";
	case TALLY_SELF_PATH_NO_PAGE:
		return "read(): the event's user page is not mapped";
	case TALLY_SELF_PATH_NOT_SELF:
		return "read(): the event is attached to another task or bound to a CPU; "
		       "user-space counter reads only work for the calling thread";
	case TALLY_SELF_PATH_NO_INDEX:
		return "read(): the kernel publishes no counter index (software event, or "
			"the event is not scheduled on a hardware counter right now)";
	case TALLY_SELF_PATH_NO_RDPMC:
		return "read(): the kernel does not allow user-space counter reads "
			"(no hardware PMU, or rdpmc disabled: "
			"/sys/bus/event_source/devices/cpu*/rdpmc is 0)";
	case TALLY_SELF_PATH_OLD_CAPS:
		return "read(): this kernel's user page capabilities are ambiguous "
			"(cap_bit0 predates cap_bit0_is_deprecated)";
	case TALLY_SELF_PATH_NO_TIME:
		return "read(): the kernel does not publish cap_user_time, so time "
			"enabled/running cannot be extrapolated";
	case TALLY_SELF_PATH_METRICS:
		return "read(): Intel topdown PERF_METRICS reads packed ratios, not counts";
	case TALLY_SELF_PATH_BAD_INDEX:
		return "read(): counter index or width this architecture cannot read";
	case TALLY_SELF_PATH_ARCH:
		return "read(): no user-space counter access on this architecture";
	case TALLY_SELF_PATH_BUSY:
		return "read(): the user page kept changing during the read";
	case TALLY_SELF_PATH_INHERIT:
		return "read(): an inherited counter also counts child tasks, which only "
			"read() can sum";
	case TALLY_SELF_PATH_USER_ACCESS_OFF:
		return "read(): user-space counter access is off "
			"(/proc/sys/kernel/perf_user_access is 0; as root: "
			"sysctl kernel.perf_user_access=1)";
	}
	return "read(): unknown reason";
}

uint64_t tly_pmc_extend(uint64_t raw, unsigned int width)
{
	uint64_t sign;

	if (width == 0 || width >= 64)
		return raw;
	sign = 1ull << (width - 1);
	raw &= (1ull << width) - 1;
	/* (raw ^ sign) - sign: two's-complement sign extension in unsigned arithmetic,
	 * no signed shifts, no undefined behaviour. */
	return (raw ^ sign) - sign;
}

uint64_t tly_mul_u64_u32_shr(uint64_t x, uint32_t mult, unsigned int shift)
{
	unsigned __int128 p = (unsigned __int128)x * mult;

	return shift >= 128 ? 0 : (uint64_t)(p >> shift);
}

/* One field of the page, read once (the kernel changes it under us). */
#define PAGE_READ(pc, field) (*(const volatile __typeof__((pc)->field) *)&(pc)->field)

static bool index_readable(enum tly_arch arch, uint32_t index, uint16_t width)
{
	if (width == 0 || width > 64)
		return false;
	if (arch == TLY_ARCH_X86)
		return index - 1 != X86_RDPMC_METRICS;
	if (arch == TLY_ARCH_ARM64)
		return index - 1 <= 31;	/* 0..30 event counters, 31 the cycle counter */
	return false;
}

struct page_snap {
	uint64_t caps, enabled, running, offset;
	uint32_t index;
	uint16_t width;
	bool have_time, have_pmc;
	uint64_t cyc, time_offset;
	uint32_t time_mult;
	uint16_t time_shift;
	uint64_t time_cycles, time_mask;
	uint64_t pmc;
};

static bool caps_trusted(uint64_t caps)
{
	return caps & CAP_BIT0_IS_DEPRECATED;
}

/* The seqlock loop of the uapi header: returns false if it never settled. */
static bool page_snapshot(const struct perf_event_mmap_page *pc, enum tly_arch arch,
			  struct page_snap *s)
{
	const struct tly_sys_ops *ops = tly_sys();

	for (int tries = 0; tries < SEQ_MAX_TRIES; tries++) {
		uint32_t seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);

		if (seq & 1)	/* an update is in progress on another CPU */
			continue;
		memset(s, 0, sizeof(*s));
		s->caps = PAGE_READ(pc, capabilities);
		s->enabled = PAGE_READ(pc, time_enabled);
		s->running = PAGE_READ(pc, time_running);
		if (caps_trusted(s->caps) && (s->caps & CAP_USER_TIME)) {
			s->have_time = true;
			s->cyc = ops->read_timer();
			s->time_offset = PAGE_READ(pc, time_offset);
			s->time_mult = PAGE_READ(pc, time_mult);
			s->time_shift = PAGE_READ(pc, time_shift);
			if (s->caps & CAP_USER_TIME_SHORT) {
				s->time_cycles = PAGE_READ(pc, time_cycles);
				s->time_mask = PAGE_READ(pc, time_mask);
			}
		}
		s->index = PAGE_READ(pc, index);
		s->offset = (uint64_t)PAGE_READ(pc, offset);
		s->width = PAGE_READ(pc, pmc_width);
		/* The register may only be touched when the kernel says so: rdpmc
		 * without CR4.PCE faults. */
		if (caps_trusted(s->caps) && (s->caps & CAP_USER_RDPMC) && s->index &&
		    index_readable(arch, s->index, s->width)) {
			s->have_pmc = true;
			s->pmc = ops->read_pmc(s->index - 1);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pc->lock, __ATOMIC_RELAXED) == seq)
			return true;
	}
	return false;
}

static uint64_t time_delta(const struct page_snap *s)
{
	uint64_t cyc = s->cyc;

	if (s->caps & CAP_USER_TIME_SHORT)
		cyc = s->time_cycles + ((cyc - s->time_cycles) & s->time_mask);
	return s->time_offset + tly_mul_u64_u32_shr(cyc, s->time_mult, s->time_shift);
}

enum tally_self_path tly_userpage__read(const struct perf_event_mmap_page *pc,
					enum tly_arch arch, struct tally_count *out)
{
	struct page_snap s;
	uint64_t delta;

	if (!pc)
		return TALLY_SELF_PATH_NO_PAGE;
	if (arch != TLY_ARCH_X86 && arch != TLY_ARCH_ARM64)
		return TALLY_SELF_PATH_ARCH;
	if (!page_snapshot(pc, arch, &s))
		return TALLY_SELF_PATH_BUSY;
	if (!caps_trusted(s.caps))
		return TALLY_SELF_PATH_OLD_CAPS;
	if (!s.index)
		return TALLY_SELF_PATH_NO_INDEX;
	if (!(s.caps & CAP_USER_RDPMC))
		return TALLY_SELF_PATH_NO_RDPMC;
	if (arch == TLY_ARCH_X86 && s.index - 1 == X86_RDPMC_METRICS)
		return TALLY_SELF_PATH_METRICS;
	if (!s.have_pmc)
		return TALLY_SELF_PATH_BAD_INDEX;
	if (!s.have_time)
		return TALLY_SELF_PATH_NO_TIME;
	delta = time_delta(&s);
	out->val = s.offset + tly_pmc_extend(s.pmc, s.width);
	out->ena = s.enabled + delta;
	out->run = s.running + delta;	/* index != 0: the event is running now */
	return TALLY_SELF_PATH_FAST;
}

int tly_userpage__times(const struct perf_event_mmap_page *pc, uint64_t *ena,
			uint64_t *run)
{
	struct page_snap s;
	uint64_t delta;

	if (!pc)
		return -EINVAL;
	if (!page_snapshot(pc, TLY_ARCH_OTHER, &s))
		return -EBUSY;
	if (!s.have_time)
		return -EOPNOTSUPP;
	delta = time_delta(&s);
	*ena = s.enabled + delta;
	*run = s.index ? s.running + delta : s.running;
	return 0;
}

enum tally_self_path tally_userpage_read(const struct perf_event_mmap_page *pc,
					 struct tally_count *out)
{
	return tly_userpage__read(pc, NATIVE_ARCH, out);
}

int tally_userpage_time_conv(const struct perf_event_mmap_page *pc,
			     struct tally_time_conv *conv)
{
	if (!pc || !conv)
		return -EINVAL;
	for (int tries = 0; tries < SEQ_MAX_TRIES; tries++) {
		uint32_t seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		uint64_t caps;
		struct tally_time_conv c = {0};

		if (seq & 1)
			continue;
		caps = PAGE_READ(pc, capabilities);
		c.time_zero = PAGE_READ(pc, time_zero);
		c.time_mult = PAGE_READ(pc, time_mult);
		c.time_shift = PAGE_READ(pc, time_shift);
		c.has_short = caps & CAP_USER_TIME_SHORT;
		if (c.has_short) {
			c.time_cycles = PAGE_READ(pc, time_cycles);
			c.time_mask = PAGE_READ(pc, time_mask);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != seq)
			continue;
		if (!caps_trusted(caps) || !(caps & CAP_USER_TIME_ZERO) || !c.time_mult)
			return -EOPNOTSUPP;
		*conv = c;
		return 0;
	}
	return -EBUSY;
}

uint64_t tally_time_conv__to_perf(const struct tally_time_conv *conv, uint64_t cyc)
{
	if (conv->has_short)
		cyc = conv->time_cycles + ((cyc - conv->time_cycles) & conv->time_mask);
	return conv->time_zero + tly_mul_u64_u32_shr(cyc, conv->time_mult, conv->time_shift);
}

uint64_t tally_time_conv__to_cycles(const struct tally_time_conv *conv, uint64_t ts)
{
	uint64_t t = ts - conv->time_zero;
	unsigned __int128 q;

	if (!conv->time_mult || conv->time_shift >= 64)
		return 0;
	/* floor(t * 2^shift / mult): the exact inverse of to_perf, rounded down. */
	q = ((unsigned __int128)t << conv->time_shift) / conv->time_mult;
	return (uint64_t)q;
}

uint64_t tally_read_timestamp_counter(void)
{
	return tly_sys()->read_timer();
}

/* ---- counters ------------------------------------------------------------ */

static bool is_cpu_pmu_event(const struct perf_event_attr *attr)
{
	return attr->type == PERF_TYPE_HARDWARE || attr->type == PERF_TYPE_HW_CACHE ||
	       attr->type == PERF_TYPE_RAW;
}

static bool never_indexed(const struct perf_event_attr *attr)
{
	return attr->type == PERF_TYPE_SOFTWARE || attr->type == PERF_TYPE_TRACEPOINT ||
	       attr->type == PERF_TYPE_BREAKPOINT;
}

static int grow_group_buffer(struct tally_selfmon *leader)
{
	size_t words = 3 + 2 * leader->nr_members;
	uint64_t *b;

	if (words <= leader->gbuf_words)
		return 0;
	b = realloc(leader->gbuf, words * sizeof(*b));
	if (!b)
		return -ENOMEM;
	leader->gbuf = b;
	leader->gbuf_words = words;
	return 0;
}

/* arm64: ask for user access in config1 when the sysctl allows it, preferring a
 * 64-bit counter and falling back to 32 bits, then to no user access. */
static int open_arm64(struct tally_selfmon *c, struct perf_event_attr *attr, pid_t pid,
		      int cpu, int group_fd, unsigned long oflags)
{
	static const uint64_t tries[] = {
		ARM64_CONFIG1_RDPMC | ARM64_CONFIG1_LONG, ARM64_CONFIG1_RDPMC,
	};
	uint64_t access = 0, base = attr->config1;
	int fd = -EINVAL;

	if (tly_read_file_u64(user_access_path, &access) == 0 && access == 0) {
		c->fixed = TALLY_SELF_PATH_USER_ACCESS_OFF;
		return tly_sys__perf_event_open(attr, pid, cpu, group_fd, oflags);
	}
	for (size_t i = 0; i < TLY_ARRAY_SIZE(tries); i++) {
		attr->config1 = base | tries[i];
		fd = tly_sys__perf_event_open(attr, pid, cpu, group_fd, oflags);
		if (fd >= 0 || (fd != -EOPNOTSUPP && fd != -EINVAL))
			return fd;
	}
	attr->config1 = base;
	c->fixed = TALLY_SELF_PATH_NO_RDPMC;
	return tly_sys__perf_event_open(attr, pid, cpu, group_fd, oflags);
}

int tally_selfmon__open(struct tally_selfmon **out, const struct perf_event_attr *attr,
			pid_t pid, int cpu, struct tally_selfmon *leader, unsigned int flags)
{
	struct perf_event_attr a;
	struct tally_selfmon *c;
	bool self = (pid == 0 || pid == gettid()) && cpu == -1;
	int fd, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	/* a member cannot lead: groups are one level deep */
	if (!attr || (leader && leader->leader))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->flags = flags;
	c->arch = open_arch;
	c->leader = leader;
	c->nr_members = 1;
	c->fixed = TALLY_SELF_PATH_FAST;

	a = *attr;
	a.size = sizeof(a);
	a.read_format = READ_FORMAT;
	if ((flags & TALLY_SELF_GROUP) && !leader)
		a.read_format |= PERF_FORMAT_GROUP;

	if (!self)
		c->fixed = TALLY_SELF_PATH_NOT_SELF;
	else if (a.inherit)
		c->fixed = TALLY_SELF_PATH_INHERIT;
	else if (c->arch != TLY_ARCH_X86 && c->arch != TLY_ARCH_ARM64)
		c->fixed = TALLY_SELF_PATH_ARCH;
	else if (never_indexed(&a))
		c->fixed = TALLY_SELF_PATH_NO_INDEX;

	if (c->arch == TLY_ARCH_ARM64 && c->fixed == TALLY_SELF_PATH_FAST &&
	    !(flags & TALLY_SELF_NO_MMAP) && is_cpu_pmu_event(&a) &&
	    !(a.config1 & (ARM64_CONFIG1_RDPMC | ARM64_CONFIG1_LONG)))
		fd = open_arm64(c, &a, pid, cpu, leader ? leader->fd : -1,
				PERF_FLAG_FD_CLOEXEC);
	else
		fd = tly_sys__perf_event_open(&a, pid, cpu, leader ? leader->fd : -1,
					      PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		free(c);
		return fd;
	}
	c->fd = fd;

	err = tly_sys__ioctl(fd, PERF_EVENT_IOC_ID, (unsigned long)&c->id);
	if (err < 0)
		goto fail;
	if (a.read_format & PERF_FORMAT_GROUP) {
		err = grow_group_buffer(c);
		if (err < 0)
			goto fail;
	}
	if (leader) {
		leader->nr_members++;
		if (leader->gbuf) {
			err = grow_group_buffer(leader);
			if (err < 0) {
				leader->nr_members--;
				goto fail;
			}
		}
	}

	if (!(flags & TALLY_SELF_NO_MMAP)) {
		long psz = sysconf(_SC_PAGESIZE);
		void *p;

		c->page_len = psz > 0 ? (size_t)psz : 4096;
		p = tly_sys__mmap(c->page_len, PROT_READ, fd, 0, &err);
		/* No page is not an error: read() still works. */
		if (p != MAP_FAILED)
			c->page = p;
	}
	if (!c->page && c->fixed == TALLY_SELF_PATH_FAST)
		c->fixed = TALLY_SELF_PATH_NO_PAGE;
	c->last = c->fixed;
	*out = c;
	return 0;
fail:
	tly_sys__close(fd);
	free(c);
	return err;
}

void tally_selfmon__delete(struct tally_selfmon *c)
{
	if (!c)
		return;
	if (c->page && !c->page_borrowed)
		tly_sys__munmap(c->page, c->page_len);
	/* Members may outlive their leader (the kernel allows closing in any order), so
	 * nothing here touches c->leader; the leader's buffer stays sized for the most
	 * members it ever had. */
	tly_sys__close(c->fd);
	free(c->gbuf);
	free(c->name);
	free(c);
}

int tally_selfmon__fd(const struct tally_selfmon *c)
{
	return c ? c->fd : -EINVAL;
}

int tally_selfmon__id(const struct tally_selfmon *c, uint64_t *id)
{
	int err;

	if (!c || !id)
		return -EINVAL;
	err = tly_sys__ioctl(c->fd, PERF_EVENT_IOC_ID, (unsigned long)id);
	return err < 0 ? err : 0;
}

static int ctl(struct tally_selfmon *c, unsigned long req, bool group)
{
	int err;

	if (!c)
		return -EINVAL;
	err = tly_sys__ioctl(c->fd, req, group ? PERF_IOC_FLAG_GROUP : 0);
	return err < 0 ? err : 0;
}

int tally_selfmon__enable(struct tally_selfmon *c, bool group)
{
	return ctl(c, PERF_EVENT_IOC_ENABLE, group);
}

int tally_selfmon__disable(struct tally_selfmon *c, bool group)
{
	return ctl(c, PERF_EVENT_IOC_DISABLE, group);
}

int tally_selfmon__reset(struct tally_selfmon *c, bool group)
{
	return ctl(c, PERF_EVENT_IOC_RESET, group);
}

int tally_selfmon__enable_all(void)
{
	return prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0) ? -errno : 0;
}

int tally_selfmon__disable_all(void)
{
	return prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0) ? -errno : 0;
}

int tally_selfmon__read_syscall(struct tally_selfmon *c, struct tally_count *out)
{
	uint64_t v[4];
	ssize_t n;

	if (!c || !out)
		return -EINVAL;
	if (c->gbuf) {
		/* A GROUP leader reads the group; its own value comes first. */
		n = tly_sys__read(c->fd, c->gbuf, c->gbuf_words * sizeof(uint64_t));
		if (n < 0)
			return (int)n;
		if (n < (ssize_t)(5 * sizeof(uint64_t)) || c->gbuf[0] < 1)
			return -EIO;
		out->ena = c->gbuf[1];
		out->run = c->gbuf[2];
		out->val = c->gbuf[3];
		return 0;
	}
	n = tly_sys__read(c->fd, v, sizeof(v));
	if (n < 0)
		return (int)n;
	if (n != (ssize_t)sizeof(v))
		return -EIO;
	out->val = v[0];
	out->ena = v[1];
	out->run = v[2];
	return 0;
}

int tally_selfmon__read(struct tally_selfmon *c, struct tally_count *out)
{
	if (!c || !out)
		return -EINVAL;
	if (c->fixed == TALLY_SELF_PATH_FAST) {
		c->last = tly_userpage__read(c->page, c->arch, out);
		if (c->last == TALLY_SELF_PATH_FAST)
			return 0;
	} else {
		c->last = c->fixed;
	}
	return tally_selfmon__read_syscall(c, out);
}

int tally_selfmon__read_scaled(struct tally_selfmon *c, uint64_t *val)
{
	struct tally_count n;
	int err;

	if (!val)
		return -EINVAL;
	err = tally_selfmon__read(c, &n);
	if (err)
		return err;
	*val = tally_scale(n.val, n.ena, n.run);
	return 0;
}

int tally_selfmon__read_group(struct tally_selfmon *leader, struct tally_count *counts,
			      uint64_t *ids, size_t max, bool scaled)
{
	ssize_t n;
	uint64_t nr;

	if (!leader || !leader->gbuf || (max && !counts))
		return -EINVAL;
	n = tly_sys__read(leader->fd, leader->gbuf, leader->gbuf_words * sizeof(uint64_t));
	if (n < 0)
		return (int)n;
	nr = leader->gbuf[0];
	if (n < (ssize_t)(3 * sizeof(uint64_t)) ||
	    nr > ((size_t)n / sizeof(uint64_t) - 3) / 2)
		return -EIO;
	for (uint64_t i = 0; i < nr && i < max; i++) {
		uint64_t val = leader->gbuf[3 + 2 * i];

		counts[i].ena = leader->gbuf[1];
		counts[i].run = leader->gbuf[2];
		counts[i].val = scaled ? tally_scale(val, counts[i].ena, counts[i].run) : val;
		if (ids)
			ids[i] = leader->gbuf[3 + 2 * i + 1];
	}
	return nr > INT32_MAX ? -EOVERFLOW : (int)nr;
}

enum tally_self_path tally_selfmon__last_path(const struct tally_selfmon *c)
{
	return c ? c->last : TALLY_SELF_PATH_NO_PAGE;
}

enum tally_self_path tally_selfmon__fast_path(const struct tally_selfmon *c)
{
	struct tally_count unused;

	if (!c)
		return TALLY_SELF_PATH_NO_PAGE;
	if (c->fixed != TALLY_SELF_PATH_FAST)
		return c->fixed;
	return tly_userpage__read(c->page, c->arch, &unused);
}

const struct perf_event_mmap_page *tally_selfmon__page(const struct tally_selfmon *c)
{
	return c ? c->page : NULL;
}

int tally_selfmon__set_signal(struct tally_selfmon *c, int signo)
{
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = gettid() };
	int fl;

	if (!c || signo <= 0)
		return -EINVAL;
	if (fcntl(c->fd, F_SETOWN_EX, &owner) < 0 || fcntl(c->fd, F_SETSIG, signo) < 0)
		return -errno;
	fl = fcntl(c->fd, F_GETFL);
	if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_ASYNC | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int tally_selfmon__refresh(struct tally_selfmon *c, int n)
{
	int err;

	if (!c || n <= 0)
		return -EINVAL;
	err = tly_sys__ioctl(c->fd, PERF_EVENT_IOC_REFRESH, (unsigned long)n);
	return err < 0 ? err : 0;
}

int tally_selfmon__set_period(struct tally_selfmon *c, uint64_t period)
{
	int err;

	if (!c)
		return -EINVAL;
	err = tly_sys__ioctl(c->fd, PERF_EVENT_IOC_PERIOD, (unsigned long)&period);
	return err < 0 ? err : 0;
}

int tally_selfmon__time_conv(const struct tally_selfmon *c, struct tally_time_conv *conv)
{
	if (!c)
		return -EINVAL;
	if (!c->page)
		return -ENODATA;
	return tally_userpage_time_conv(c->page, conv);
}

/* ---- opening from an event string ----------------------------------------- */

int tally_selfmon__open_events(const char *events, unsigned int flags,
			      struct tally_selfmon ***out, size_t *nr,
			      struct tally_parse_error *perr, size_t *failed)
{
	struct tally_evlist *list = NULL;
	struct tally_selfmon **cs = NULL;
	size_t i = 0;
	int err;

	if (!events || !out || !nr)
		return -EINVAL;
	*out = NULL;
	*nr = 0;
	err = tally_evlist__new(&list);
	if (err)
		return err;
	err = tally_evlist__add(list, events, perr);
	if (err)
		goto out;
	if (!tally_evlist__nr(list)) {
		err = -EINVAL;
		goto out;
	}
	cs = calloc(tally_evlist__nr(list), sizeof(*cs));
	if (!cs) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < tally_evlist__nr(list); i++) {
		const struct tally_event *ev = tally_evlist__event(list, i);
		struct tally_selfmon *leader = NULL;
		unsigned int f = flags & ~(unsigned int)TALLY_SELF_GROUP;
		struct perf_event_attr a = ev->attr;

		if (ev->tool != TALLY_TOOL_NONE) {
			err = -EOPNOTSUPP;
			goto out;
		}
		if (ev->leader != (int)i) {
			if (ev->leader < 0 || (size_t)ev->leader >= i) {
				err = -EINVAL;
				goto out;
			}
			leader = cs[ev->leader];
		} else if (ev->nr_members > 1) {
			f |= TALLY_SELF_GROUP;
		}
		/* leaders wait until their whole group is there; members follow their
		 * leader (see tally_selfmon__open) */
		a.disabled = leader ? 0 : 1;
		err = tally_selfmon__open(&cs[i], &a, 0, -1, leader, f);
		if (err)
			goto out;
		if (ev->name) {
			cs[i]->name = strdup(ev->name);
			if (!cs[i]->name) {
				i++;
				err = -ENOMEM;
				goto out;
			}
		}
	}
	if (!(flags & TALLY_SELF_START_DISABLED)) {
		for (i = 0; i < tally_evlist__nr(list); i++) {
			if (!tally_event__is_leader(list, i))
				continue;
			err = tally_selfmon__enable(cs[i], true);
			if (err)
				goto out;
		}
	}
	*out = cs;
	*nr = tally_evlist__nr(list);
	cs = NULL;
out:
	if (err && failed)
		*failed = i;
	if (cs)
		tally_selfmon__close_events(cs, tally_evlist__nr(list));
	tally_evlist__delete(list);
	return err;
}

void tally_selfmon__close_events(struct tally_selfmon **counters, size_t nr)
{
	if (!counters)
		return;
	for (size_t i = nr; i-- > 0;)
		tally_selfmon__delete(counters[i]);
	free(counters);
}

const char *tally_selfmon__name(const struct tally_selfmon *c)
{
	return c ? c->name : NULL;
}

/* ---- self-sampling --------------------------------------------------------- */

struct tally_selfsample {
	struct tally_selfmon *c;
	struct tally_ring *ring;
	struct tally_sample_layout layout;
};

int tally_selfsample__open(struct tally_selfsample **out, const struct perf_event_attr *attr,
			   size_t data_pages)
{
	struct tally_selfsample *s;
	struct perf_event_attr a;
	int err;

	if (!out || !attr)
		return -EINVAL;
	*out = NULL;
	if (!attr->sample_period || !data_pages || (data_pages & (data_pages - 1)))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	a = *attr;
	err = tally_selfmon__open(&s->c, &a, 0, -1, NULL, TALLY_SELF_NO_MMAP);
	if (err)
		goto fail;
	err = tally_ring__mmap(&s->ring, s->c->fd, data_pages, true);
	if (err)
		goto fail;
	/* The ring's first page is the event's user page: the fast path and the time
	 * conversion use it as they would a page of their own. */
	s->c->page = tally_ring__meta(s->ring);
	s->c->page_borrowed = true;
	if (s->c->fixed == TALLY_SELF_PATH_NO_PAGE)
		s->c->fixed = TALLY_SELF_PATH_FAST;
	s->c->last = s->c->fixed;
	/* decode with what the kernel was given (read_format is set by the library) */
	a.read_format = READ_FORMAT;
	tally_sample_layout__from_attr(&s->layout, &a);
	*out = s;
	return 0;
fail:
	tally_selfsample__delete(s);
	return err;
}

void tally_selfsample__delete(struct tally_selfsample *s)
{
	if (!s)
		return;
	tally_ring__delete(s->ring);
	if (s->c)
		s->c->page = NULL;
	tally_selfmon__delete(s->c);
	free(s);
}

struct tally_selfmon *tally_selfsample__counter(struct tally_selfsample *s)
{
	return s ? s->c : NULL;
}

struct tally_ring *tally_selfsample__ring(struct tally_selfsample *s)
{
	return s ? s->ring : NULL;
}

int tally_selfsample__next(struct tally_selfsample *s, struct tally_sample *out)
{
	const struct perf_event_header *rec;
	int ret;

	if (!s || !out)
		return -EINVAL;
	tally_ring__consume(s->ring);
	for (;;) {
		ret = tally_ring__read(s->ring, &rec);
		if (ret == 0)
			return 0;
		if (ret < 0) {
			tally_ring__skip_all(s->ring);
			return ret;
		}
		if (rec->type != PERF_RECORD_SAMPLE)
			continue;
		ret = tally_sample__parse(&s->layout, rec, out);
		if (ret < 0)
			return ret;
		return 1;
	}
}
