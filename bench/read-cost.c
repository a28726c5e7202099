/*
 * read-cost: what one counter read costs, in ns, through libtally and bare.
 *
 *   tally   tally_selfmon__read() on a task-clock counter of this thread (a software
 *           event: the kernel publishes no counter index, so it is the library's
 *           checks plus one read() system call);
 *   raw     read() on the same fd with the same buffer, nothing else;
 *   rdpmc   tally_selfmon__read() on a hardware counter when the fast path serves it
 *           (a machine with a PMU that allows user-space reads); otherwise the reason.
 *
 * Rounds alternate tally and raw so that machine noise hits both alike; each figure
 * is the median over the rounds. The last line is exactly
 *   tally_read_ns=X raw_read_ns=Y ratio=Z
 * Usage: read-cost [READS_PER_ROUND [ROUNDS]]   (defaults 200000, 9)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally/tally.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long parse(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0) {
		fprintf(stderr, "read-cost: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

/* ns per tally_selfmon__read over @reads reads; -1 on a read error. */
static double time_tally(struct tally_selfmon *c, long reads)
{
	struct tally_count v;
	uint64_t sink = 0;
	double t0 = now_ns();

	for (long i = 0; i < reads; i++) {
		if (tally_selfmon__read(c, &v))
			return -1;
		sink += v.val;
	}
	__asm__ volatile("" : : "r"(sink));
	return (now_ns() - t0) / (double)reads;
}

static double time_raw(int fd, long reads)
{
	uint64_t buf[4], sink = 0;
	double t0 = now_ns();

	for (long i = 0; i < reads; i++) {
		if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return -1;
		sink += buf[0];
	}
	__asm__ volatile("" : : "r"(sink));
	return (now_ns() - t0) / (double)reads;
}

int main(int argc, char **argv)
{
	long reads = argc > 1 ? parse(argv[1], "reads per round") : 200000;
	int rounds = argc > 2 ? (int)parse(argv[2], "rounds") : 9;
	struct perf_event_attr a;
	struct tally_selfmon *sw, *hw = NULL;
	double *t_tally, *t_raw, *t_fast, mt, mr;
	enum tally_self_path hw_path = TALLY_SELF_PATH_NO_PAGE;
	int err, hw_err;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	err = tally_selfmon__open(&sw, &a, 0, -1, NULL, 0);
	if (err) {
		fprintf(stderr, "read-cost: cannot open task-clock: %s\n", strerror(-err));
		return 1;
	}
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	hw_err = tally_selfmon__open(&hw, &a, 0, -1, NULL, 0);
	if (!hw_err)
		hw_path = tally_selfmon__fast_path(hw);

	t_tally = calloc((size_t)rounds, sizeof(double));
	t_raw = calloc((size_t)rounds, sizeof(double));
	t_fast = calloc((size_t)rounds, sizeof(double));
	if (!t_tally || !t_raw || !t_fast)
		return 1;
	/* warm up both paths */
	time_tally(sw, reads / 10 + 1);
	time_raw(tally_selfmon__fd(sw), reads / 10 + 1);
	for (int r = 0; r < rounds; r++) {
		if (r % 2) {
			t_raw[r] = time_raw(tally_selfmon__fd(sw), reads);
			t_tally[r] = time_tally(sw, reads);
		} else {
			t_tally[r] = time_tally(sw, reads);
			t_raw[r] = time_raw(tally_selfmon__fd(sw), reads);
		}
		if (t_tally[r] < 0 || t_raw[r] < 0) {
			fprintf(stderr, "read-cost: read failed\n");
			return 1;
		}
		if (hw_path == TALLY_SELF_PATH_FAST)
			t_fast[r] = time_tally(hw, reads);
	}
	mt = median(t_tally, rounds);
	mr = median(t_raw, rounds);
	printf("events: task-clock (software event): %s\n",
	       tally_self_path_str(tally_selfmon__fast_path(sw)));
	printf("reads: %ld per round, %d rounds, median of rounds\n", reads, rounds);
	if (hw_err)
		printf("rdpmc: not available on this machine: cannot open instructions (%s)\n",
		       strerror(-hw_err));
	else if (hw_path != TALLY_SELF_PATH_FAST)
		printf("rdpmc: not available on this machine: %s\n", tally_self_path_str(hw_path));
	else
		printf("rdpmc_read_ns=%.1f (instructions, fast path)\n", median(t_fast, rounds));
	printf("tally_read_ns=%.1f raw_read_ns=%.1f ratio=%.3f\n", mt, mr, mt / mr);
	tally_selfmon__delete(hw);
	tally_selfmon__delete(sw);
	free(t_tally);
	free(t_raw);
	free(t_fast);
	return fflush(stdout) ? 1 : 0;
}
