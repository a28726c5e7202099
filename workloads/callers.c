/*
 * A workload for flame graphs and pprof of --call-graph dwarf recordings
 * (tests/cli/test-flamegraph.sh, test-data-convert.sh): built -O2 -fomit-frame-pointer
 * -g, so only unwinding by CFI finds a sample's callers. shared() is called by two
 * callers of different names, alpha and beta (beta twice as long): a sample in shared
 * belongs under the caller that made that call, and anything that remembered a
 * stack by the sampled address alone would put all of them under one. step() is
 * inlined into shared, so its frame comes from the DWARF inline tree: once per stack.
 */
#include <stdlib.h>

static volatile double sink;

static inline __attribute__((always_inline)) double step(double acc, long i)
{
	return acc * 0.999999 + (double)(i & 7);
}

__attribute__((noinline)) static double shared(double x, long n)
{
	double acc = x;

	for (long i = 0; i < n; i++)
		acc = step(acc, i);
	return acc;
}

__attribute__((noinline)) static double alpha(double x, long n)
{
	return shared(x, n) + 1;
}

__attribute__((noinline)) static double beta(double x, long n)
{
	return shared(x * 2, n * 2) - 1;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;

	for (long r = 0; r < rounds; r++)
		sink += alpha((double)r, 100000) + beta((double)r, 100000);
	return 0;
}
