/*
 * A simulated perf kernel for unit tests, installed through the sys seam.
 *
 * It "has" a hardware PMU: PERF_TYPE_HARDWARE / HW_CACHE / RAW events open, with
 * counts, time_enabled and time_running the test sets (to simulate multiplexing,
 * <not counted>, wrap-around). read() honours read_format including GROUP and ID,
 * ioctl handles ENABLE/DISABLE/RESET/ID/REFRESH/PERIOD, mmap hands out a zeroed
 * user page (plus ring pages) the test can fill, and read_pmc/read_timer return what
 * the test programmed. Tests can also make opens fail with a chosen errno.
 */
#ifndef TALLY_TEST_SIMKERNEL_H
#define TALLY_TEST_SIMKERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#define SIM_MAX_FDS 256

struct sim_event {
	bool used;
	int fd;
	struct perf_event_attr attr;
	pid_t pid;
	int cpu;
	int group_fd;		/* -1 for a leader */
	unsigned long flags;
	uint64_t id;
	uint64_t count;		/* value read() reports */
	uint64_t enabled;	/* time_enabled */
	uint64_t running;	/* time_running */
	uint64_t lost;
	bool is_enabled;
	int nr_enable, nr_disable, nr_reset, nr_refresh;
	uint64_t last_period;
	unsigned long last_ioctl_arg;	/* arg of the last ioctl (e.g. PERF_IOC_FLAG_GROUP) */
	void *page;		/* mmap'd area, if any */
	size_t page_len;
};

struct sim_kernel {
	struct sim_event ev[SIM_MAX_FDS];
	int nr_opened;		/* successful opens so far */
	int nr_open_calls;
	/* Open failure injection: if set, opens matching (type, config) fail with -errno. */
	struct {
		bool active;
		uint32_t type;
		uint64_t config;
		bool any_config;
		int err;	/* positive errno */
	} fail[16];
	int nr_fail;
	bool has_hw_pmu;	/* true: hardware events open; false: ENOENT like this VM */
	uint64_t pmc[64];	/* read_pmc(counter) returns pmc[counter] */
	uint64_t timer;		/* read_timer() value */
	uint64_t timer_step;	/* added after each read_timer() */
	/* Called on every read_pmc, e.g. to bump the page's lock mid-read. */
	void (*on_read_pmc)(struct sim_kernel *k, unsigned int counter);
	int nr_read_pmc;
	/* Called after every successful open, e.g. to give the new event its count,
	 * time_enabled and time_running (tests that drive a whole command). */
	void (*on_open)(struct sim_kernel *k, struct sim_event *e);
	/* Opens whose attr.config1 has all bits of fail_config1_mask set fail with
	 * fail_config1_err (e.g. arm64 hardware without 64-bit counters: config1 bit 0). */
	uint64_t fail_config1_mask;
	int fail_config1_err;
};

/* Install a fresh simulated kernel and return it (a static singleton). */
struct sim_kernel *sim_install(void);
/* Restore the real kernel. */
void sim_uninstall(void);
/* Lookup helpers. */
struct sim_event *sim_event_by_fd(int fd);
/* The n-th successfully opened event (in open order). */
struct sim_event *sim_event_nth(int n);
/* Make opens of (type, config) fail with errno err (positive). */
void sim_fail_open(uint32_t type, uint64_t config, bool any_config, int err);

#endif
