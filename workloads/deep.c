/*
 * A deep call chain with frame pointers: dive() calls itself DEPTH times (default 80),
 * spinning at every level, again and again for SECONDS (default 0.3), so a report's
 * call graphs nest deeper than 32 and 64 levels (test-report.sh: perf draws the pipes
 * of a level past 32 with the bit of the level modulo 32).
 * Usage: deep [DEPTH [SECONDS]]
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins a while at every level, so samples end at every depth: in a callee-first graph
 * each dive node branches (a deeper dive, or main), one level deeper each time. */
__attribute__((noinline)) static void dive(int n)
{
	unsigned long x = sink;

	for (int i = 0; i < 20000; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x;
	if (n > 0)
		dive(n - 1);
	sink++;	/* not a tail call: every level keeps its frame */
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 80;
	double end = now() + (argc > 2 ? atof(argv[2]) : 0.3);

	while (now() < end)
		dive(depth);
	return 0;
}
