/*
 * The demo workload: burns CPU for a fixed time, 75% in hot_a() and 25% in hot_b(),
 * both called from main(), with frame pointers, so profiles have a known answer.
 * Usage: hot [SECONDS] (default 1). Also sleeps/faults on request for stat tests:
 *   hot --sleeps N     sleep 1 ms N times (context switches)
 *   hot --faults PAGES touch PAGES fresh pages (page faults)
 *   hot --threads N [SECONDS]  the same burn in N threads named worker-0 … (the main
 *                      thread, "hot", waits): thread names for record -p / -a tests
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(unsigned long n)
{
	unsigned long x = sink;

	/* Keep a frame even in this leaf (gcc drops it otherwise) so stacks show the caller. */
	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x;
}

__attribute__((noinline)) void hot_a(void)
{
	spin(300000);
}

__attribute__((noinline)) void hot_b(void)
{
	spin(100000);
}

static double burn_until;

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	while (now() < burn_until) {
		hot_a();
		hot_b();
	}
	return NULL;
}

static int threads(int n, double secs)
{
	pthread_t t[64];
	int made = 0;

	burn_until = now() + secs;
	for (; made < n && made < 64; made++)
		if (pthread_create(&t[made], NULL, worker, (void *)(long)made))
			break;
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	return made == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	double secs = 1.0, end;

	if (argc > 2 && !strcmp(argv[1], "--threads"))
		return threads(atoi(argv[2]), argc > 3 ? atof(argv[3]) : 1.0);
	if (argc > 2 && !strcmp(argv[1], "--sleeps")) {
		int n = atoi(argv[2]);

		for (int i = 0; i < n; i++)
			usleep(1000);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--faults")) {
		long pages = atol(argv[2]), psz = sysconf(_SC_PAGESIZE);
		char *p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 1;
		for (long i = 0; i < pages; i++)
			p[i * psz] = 1;
		return 0;
	}
	if (argc > 1)
		secs = atof(argv[1]);
	end = now() + secs;
	while (now() < end) {
		hot_a();
		hot_b();
	}
	return 0;
}
