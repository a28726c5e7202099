/*
 * A workload for DWARF unwinding (tests/cli/test-unwind.sh): built -O2
 * -fomit-frame-pointer, so only its CFI tells callers apart. top -> mid -> leaf are
 * kept out of line, and leaf spends its time in libm's sin, so samples land in the
 * program and in a shared library, several calls deep.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) static double leaf(double x, int n)
{
	double acc = 0;

	for (int i = 0; i < n; i++) {
		acc += sin(x + i * 1e-3);
		for (int j = 0; j < 8; j++)	/* some time of its own */
			acc = acc * 0.999999 + j;
	}
	return acc;
}

__attribute__((noinline)) static double mid(double x, int n)
{
	double acc = 0;

	for (int i = 0; i < 4; i++) {
		acc += leaf(x + i, n) * 0.5;
		for (int j = 0; j < n; j++)	/* and mid too */
			acc = acc * 0.999999 + j;
	}
	return acc + 1;
}

__attribute__((noinline)) static double top(double x, int n)
{
	return mid(x, n) + mid(x * 2, n / 2);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200;

	for (long r = 0; r < rounds; r++)
		sink += top((double)r, 20000);
	printf("%f\n", sink);
	return 0;
}
