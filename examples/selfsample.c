/*
 * selfsample: a program that profiles itself with libtally's self-sampling reader.
 *
 * Samples its own thread on task-clock (every 100 us of CPU) while two functions
 * burn CPU in a 3:1 ratio, drains the ring as it goes, and attributes each sample's
 * IP to a function with dladdr() (the program is linked with --export-dynamic so its
 * functions are in the dynamic symbol table). Prints samples per function, and the
 * ring's statistics.
 *
 * Usage: selfsample [MILLISECONDS]    (CPU time to burn, default 300)
 * Uses only the public API: #include <tally/tally.h>, link with -ltally.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tally/tally.h>

/* Exported (not static) so that dladdr() can name them. */
void burn_a(void);
void burn_b(void);

__attribute__((noinline)) void burn_a(void)
{
	for (volatile int i = 0; i < 300000; i++)
		;
}

__attribute__((noinline)) void burn_b(void)
{
	for (volatile int i = 0; i < 100000; i++)
		;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct tallies {
	unsigned long a, b, other, total;
};

static void drain(struct tally_selfsample *s, struct tallies *t)
{
	struct tally_sample smp;
	Dl_info info;

	while (tally_selfsample__next(s, &smp) == 1) {
		const char *name = NULL;

		if (dladdr((void *)(uintptr_t)smp.ip, &info) && info.dli_sname)
			name = info.dli_sname;
		if (name && !strcmp(name, "burn_a"))
			t->a++;
		else if (name && !strcmp(name, "burn_b"))
			t->b++;
		else
			t->other++;
		t->total++;
	}
}

static double pct(unsigned long n, unsigned long total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

int main(int argc, char **argv)
{
	struct perf_event_attr a;
	struct tally_selfsample *s;
	struct tally_ring_stats st;
	struct tallies t = {0};
	long ms = 300;
	double t0;
	char *end;
	int err;

	if (argc > 1) {
		errno = 0;
		ms = strtol(argv[1], &end, 10);
		if (errno || *end || ms <= 0) {
			fprintf(stderr, "usage: %s [MILLISECONDS]\n", argv[0]);
			return 2;
		}
	}
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 100000;	/* ns of task-clock */
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	err = tally_selfsample__open(&s, &a, 16);
	if (err) {
		fprintf(stderr, "selfsample: cannot sample this thread: %s%s\n", strerror(-err),
			err == -EPERM ? " (mlock limit? try ulimit -l)" : "");
		return 1;
	}
	tally_selfmon__enable(tally_selfsample__counter(s), false);
	t0 = cpu_ms();
	while (cpu_ms() - t0 < (double)ms) {
		burn_a();
		burn_b();
		drain(s, &t);
	}
	tally_selfmon__disable(tally_selfsample__counter(s), false);
	drain(s, &t);
	tally_ring__stats(tally_selfsample__ring(s), &st);

	printf("selfsample: %lu samples of this thread over %ld ms of CPU\n", t.total, ms);
	printf("%8.2f%%  %6lu  burn_a\n", pct(t.a, t.total), t.a);
	printf("%8.2f%%  %6lu  burn_b\n", pct(t.b, t.total), t.b);
	printf("%8.2f%%  %6lu  [other]\n", pct(t.other, t.total), t.other);
	printf("ring: %llu records, %llu lost, %llu throttled, %llu wrapped\n",
	       (unsigned long long)st.records, (unsigned long long)st.lost,
	       (unsigned long long)st.throttle, (unsigned long long)st.wraps);
	tally_selfsample__delete(s);
	if (fflush(stdout) || ferror(stdout)) {
		perror("selfsample: stdout");
		return 1;
	}
	return t.total ? 0 : 1;
}
