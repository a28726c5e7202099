/*
 * The simulated perf kernel used by unit tests (see simkernel.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "simkernel.h"
#include "internal/sys.h"

#define SIM_FD_BASE 1000

static struct sim_kernel sim;
static int order[SIM_MAX_FDS];

struct sim_event *sim_event_by_fd(int fd)
{
	int i = fd - SIM_FD_BASE;

	if (i < 0 || i >= SIM_MAX_FDS || !sim.ev[i].used)
		return NULL;
	return &sim.ev[i];
}

struct sim_event *sim_event_nth(int n)
{
	if (n < 0 || n >= sim.nr_opened)
		return NULL;
	return &sim.ev[order[n]];
}

void sim_fail_open(uint32_t type, uint64_t config, bool any_config, int err)
{
	if (sim.nr_fail >= 16)
		return;
	sim.fail[sim.nr_fail].active = true;
	sim.fail[sim.nr_fail].type = type;
	sim.fail[sim.nr_fail].config = config;
	sim.fail[sim.nr_fail].any_config = any_config;
	sim.fail[sim.nr_fail].err = err;
	sim.nr_fail++;
}

static int sim_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
		    unsigned long flags)
{
	struct sim_event *e = NULL;
	int i;

	sim.nr_open_calls++;
	for (i = 0; i < sim.nr_fail; i++) {
		if (sim.fail[i].active && sim.fail[i].type == attr->type &&
		    (sim.fail[i].any_config || sim.fail[i].config == attr->config)) {
			errno = sim.fail[i].err;
			return -1;
		}
	}
	if (sim.fail_config1_mask &&
	    (attr->config1 & sim.fail_config1_mask) == sim.fail_config1_mask) {
		errno = sim.fail_config1_err;
		return -1;
	}
	if (!sim.has_hw_pmu && (attr->type == PERF_TYPE_HARDWARE ||
				attr->type == PERF_TYPE_HW_CACHE || attr->type == PERF_TYPE_RAW)) {
		errno = ENOENT;
		return -1;
	}
	if (group_fd >= 0 && !sim_event_by_fd(group_fd)) {
		errno = EBADF;
		return -1;
	}
	for (i = 0; i < SIM_MAX_FDS; i++) {
		if (!sim.ev[i].used) {
			e = &sim.ev[i];
			break;
		}
	}
	if (!e) {
		errno = EMFILE;
		return -1;
	}
	memset(e, 0, sizeof(*e));
	e->used = true;
	e->fd = SIM_FD_BASE + i;
	e->attr = *attr;
	e->pid = pid;
	e->cpu = cpu;
	e->group_fd = group_fd;
	e->flags = flags;
	e->id = 100 + (uint64_t)sim.nr_opened;
	e->is_enabled = !attr->disabled;
	order[sim.nr_opened++] = i;
	if (sim.on_open)
		sim.on_open(&sim, e);
	return e->fd;
}

static void put_u64(char **p, uint64_t v)
{
	memcpy(*p, &v, 8);
	*p += 8;
}

static ssize_t sim_read(int fd, void *buf, size_t count)
{
	struct sim_event *e = sim_event_by_fd(fd), *lead;
	uint64_t rf;
	char tmp[8 * (3 + 3 * SIM_MAX_FDS)], *p = tmp;
	size_t len;

	if (!e) {
		errno = EBADF;
		return -1;
	}
	rf = e->attr.read_format;
	lead = e->group_fd >= 0 ? sim_event_by_fd(e->group_fd) : e;
	if (rf & PERF_FORMAT_GROUP) {
		uint64_t nr = 1;

		if (e != lead) {	/* the kernel reads the whole group from any member */
			e = lead;
		}
		for (int i = 0; i < SIM_MAX_FDS; i++)
			if (sim.ev[i].used && sim.ev[i].group_fd == lead->fd)
				nr++;
		put_u64(&p, nr);
		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			put_u64(&p, lead->enabled);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			put_u64(&p, lead->running);
		for (int n = 0; n < sim.nr_opened; n++) {
			struct sim_event *m = &sim.ev[order[n]];

			if (!m->used || (m != lead && m->group_fd != lead->fd))
				continue;
			put_u64(&p, m->count);
			if (rf & PERF_FORMAT_ID)
				put_u64(&p, m->id);
			if (rf & PERF_FORMAT_LOST)
				put_u64(&p, m->lost);
		}
	} else {
		put_u64(&p, e->count);
		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			put_u64(&p, e->enabled);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			put_u64(&p, e->running);
		if (rf & PERF_FORMAT_ID)
			put_u64(&p, e->id);
		if (rf & PERF_FORMAT_LOST)
			put_u64(&p, e->lost);
	}
	len = (size_t)(p - tmp);
	if (count < len) {
		errno = ENOSPC;
		return -1;
	}
	memcpy(buf, tmp, len);
	return (ssize_t)len;
}

static int sim_ioctl(int fd, unsigned long req, unsigned long arg)
{
	struct sim_event *e = sim_event_by_fd(fd);

	if (!e) {
		errno = EBADF;
		return -1;
	}
	e->last_ioctl_arg = arg;
	switch (req) {
	case PERF_EVENT_IOC_ENABLE:
		e->is_enabled = true;
		e->nr_enable++;
		return 0;
	case PERF_EVENT_IOC_DISABLE:
		e->is_enabled = false;
		e->nr_disable++;
		return 0;
	case PERF_EVENT_IOC_RESET:
		e->count = 0;
		e->nr_reset++;
		return 0;
	case PERF_EVENT_IOC_REFRESH:
		e->nr_refresh += (int)arg;
		e->is_enabled = true;
		return 0;
	case PERF_EVENT_IOC_PERIOD:
		memcpy(&e->last_period, (void *)arg, sizeof(uint64_t));
		return 0;
	case PERF_EVENT_IOC_ID:
		memcpy((void *)arg, &e->id, sizeof(uint64_t));
		return 0;
	case PERF_EVENT_IOC_SET_OUTPUT:
	case PERF_EVENT_IOC_SET_FILTER:
		return 0;
	default:
		errno = ENOTTY;
		return -1;
	}
}

static void *sim_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct sim_event *e = sim_event_by_fd(fd);
	void *p;

	(void)addr;
	(void)prot;
	(void)flags;
	(void)off;
	if (!e) {
		errno = EBADF;
		return MAP_FAILED;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return p;
	e->page = p;
	e->page_len = len;
	return p;
}

static int sim_munmap(void *addr, size_t len)
{
	for (int i = 0; i < SIM_MAX_FDS; i++)
		if (sim.ev[i].page == addr)
			sim.ev[i].page = NULL;
	return munmap(addr, len);
}

static int sim_close(int fd)
{
	struct sim_event *e = sim_event_by_fd(fd);

	if (!e) {
		errno = EBADF;
		return -1;
	}
	e->used = false;
	return 0;
}

static uint64_t sim_read_pmc(unsigned int counter)
{
	sim.nr_read_pmc++;
	if (sim.on_read_pmc)
		sim.on_read_pmc(&sim, counter);
	return counter < 64 ? sim.pmc[counter] : 0;
}

static uint64_t sim_read_timer(void)
{
	uint64_t t = sim.timer;

	sim.timer += sim.timer_step;
	return t;
}

static const struct tly_sys_ops sim_ops = {
	.perf_event_open = sim_open,
	.ioctl = sim_ioctl,
	.read = sim_read,
	.mmap = sim_mmap,
	.munmap = sim_munmap,
	.close = sim_close,
	.read_pmc = sim_read_pmc,
	.read_timer = sim_read_timer,
};

struct sim_kernel *sim_install(void)
{
	for (int i = 0; i < SIM_MAX_FDS; i++)
		if (sim.ev[i].page)
			munmap(sim.ev[i].page, sim.ev[i].page_len);
	memset(&sim, 0, sizeof(sim));
	sim.has_hw_pmu = true;
	tly_sys__set(&sim_ops);
	return &sim;
}

void sim_uninstall(void)
{
	tly_sys__set(NULL);
}
