/*
 * A workload whose hot code is inlined: mix() is inlined into stir(), stir() into
 * churn(), so nearly every sample lands at an address where DWARF names two inlined
 * functions above churn(). Flame graphs draw them as inlined frames and pprof as
 * several lines of one location (tests/cli/test-flamegraph.sh, test-data-convert.sh).
 * Usage: inlined [SECONDS] (default 1).
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)
{
	for (int i = 0; i < 64; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

static inline __attribute__((always_inline)) unsigned long stir(unsigned long x)
{
	return mix(x ^ (x >> 17));
}

__attribute__((noinline)) static unsigned long churn(unsigned long n)
{
	unsigned long x = sink;

	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	for (unsigned long i = 0; i < n; i++)
		x = stir(x + i);
	return x;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 1.0);

	while (now() < end)
		sink = churn(20000);
	return 0;
}
