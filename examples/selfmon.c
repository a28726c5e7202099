/*
 * selfmon: count a region of this program with libtally's self-monitoring API.
 *
 * Opens instructions and cycles (user space only) as one group when the machine
 * has a hardware PMU, and always task-clock and page-faults; runs a small region
 * (a loop plus touching fresh memory) between enable and disable; prints each
 * count and how it was read: the fast path (user page + rdpmc/mrs, no system
 * call) or read(), with the reason.
 *
 * Usage: selfmon [ITERATIONS]     (default 20000000 loop iterations)
 * Uses only the public API: #include <tally/tally.h>, link with -ltally.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tally/tally.h>

struct counter {
	const char *name;
	uint32_t type;
	uint64_t config;
	struct tally_selfmon *c;
	int err;
	struct tally_count start, end;
	int read_err;
};

static void region(long iters)
{
	size_t len = 256 * 4096;
	char *p;

	for (volatile long i = 0; i < iters; i++)
		;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	munmap(p, len);
}

int main(int argc, char **argv)
{
	struct counter cs[] = {
		{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, NULL, 0 },
		{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, NULL, 0 },
		{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, NULL, 0 },
		{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, NULL, 0 },
	};
	const size_t n = sizeof(cs) / sizeof(cs[0]);
	long iters = 20000000;
	bool any_fast = false, opened = false;
	char *end;

	if (argc > 1) {
		errno = 0;
		iters = strtol(argv[1], &end, 10);
		if (errno || *end || iters < 0) {
			fprintf(stderr, "usage: %s [ITERATIONS]\n", argv[0]);
			return 2;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct perf_event_attr a;
		/* cycles joins instructions' group when that opened */
		struct tally_selfmon *leader = (i == 1 && cs[0].c) ? cs[0].c : NULL;

		memset(&a, 0, sizeof(a));
		a.type = cs[i].type;
		a.config = cs[i].config;
		a.disabled = 1;
		a.exclude_kernel = cs[i].type == PERF_TYPE_HARDWARE ||
				   cs[i].config == PERF_COUNT_SW_TASK_CLOCK;
		a.exclude_hv = 1;
		cs[i].err = tally_selfmon__open(&cs[i].c, &a, 0, -1, leader, 0);
		opened |= cs[i].err == 0;
	}
	if (!opened) {
		fprintf(stderr, "selfmon: cannot open any event: %s (perf_event_paranoid is "
			"too strict? try: sysctl kernel.perf_event_paranoid=2)\n",
			strerror(-cs[n - 1].err));
		return 1;
	}

	/* Read while the counters run, as a program timing its own code would: the
	 * fast path is only possible while the event sits on a hardware counter. */
	for (size_t i = 0; i < n; i++)
		if (cs[i].c)
			tally_selfmon__enable(cs[i].c, false);
	for (size_t i = 0; i < n; i++)
		if (cs[i].c)
			cs[i].read_err = tally_selfmon__read(cs[i].c, &cs[i].start);
	region(iters);
	for (size_t i = 0; i < n; i++)
		if (cs[i].c && !cs[i].read_err)
			cs[i].read_err = tally_selfmon__read(cs[i].c, &cs[i].end);
	for (size_t i = 0; i < n; i++)
		if (cs[i].c)
			tally_selfmon__disable(cs[i].c, false);

	printf("selfmon: region of %ld loop iterations and 256 touched pages\n", iters);
	for (size_t i = 0; i < n; i++) {
		struct tally_count v;
		enum tally_self_path path;

		if (!cs[i].c) {
			bool no_pmu = cs[i].type == PERF_TYPE_HARDWARE &&
				      (cs[i].err == -ENOENT || cs[i].err == -EOPNOTSUPP);

			printf("%20s  %-16s  (%s)\n", "<not supported>", cs[i].name,
			       no_pmu ? "this machine has no hardware PMU for it"
				      : strerror(-cs[i].err));
			continue;
		}
		if (cs[i].read_err) {
			printf("%20s  %-16s  (read: %s)\n", "<not counted>", cs[i].name,
			       strerror(-cs[i].read_err));
			continue;
		}
		v.val = cs[i].end.val - cs[i].start.val;
		v.ena = cs[i].end.ena - cs[i].start.ena;
		v.run = cs[i].end.run - cs[i].start.run;
		path = tally_selfmon__last_path(cs[i].c);
		any_fast |= path == TALLY_SELF_PATH_FAST;
		printf("%20llu  %-16s  %s\n", (unsigned long long)tally_scale(v.val, v.ena, v.run),
		       cs[i].name, tally_self_path_str(path));
	}
	printf("fast path used: %s\n", any_fast ? "yes" : "no");
	for (size_t i = 0; i < n; i++)
		tally_selfmon__delete(cs[i].c);
	if (fflush(stdout) || ferror(stdout)) {
		perror("selfmon: stdout");
		return 1;
	}
	return 0;
}
