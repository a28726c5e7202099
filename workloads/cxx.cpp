/*
 * A C++ workload whose hot functions have the names demangling must get right, to
 * compare tally's symbol names with perf's (tests/cli/test-demangle.sh builds it with
 * g++ -O2; the build system stays C only): function and class templates, named and
 * anonymous namespaces, lambdas (in a function and in a template), GCC clones
 * (.constprop, .isra), a constructor and a destructor, an operator, a virtual method
 * reached through a non-virtual thunk, and a C function. Usage: cxx [SECONDS]
 * (default 0.5): SECONDS of the process's own CPU time, not of the clock, so a
 * recording gets as many samples on a loaded machine as on an idle one.
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>

#define NOINLINE __attribute__((noinline))

volatile long sink;

namespace outer {
namespace inner {
template <typename T> struct Box {
	T v;
	NOINLINE T spin(long n) const
	{
		T x = v;
		for (long i = 0; i < n; i++)
			x = x * 3 + (T)i;
		return x;
	}
};
} // namespace inner

struct Counter {
	long n;
	NOINLINE explicit Counter(long start) : n(start)
	{
		for (long i = 0; i < 20000; i++)
			n = n * 5 + i;
	}
	NOINLINE ~Counter()
	{
		for (long i = 0; i < 20000; i++)
			n = n * 7 + i;
		sink = n;
	}
	NOINLINE Counter &operator+=(long k)
	{
		for (long i = 0; i < 50000; i++)
			n = n * 11 + k;
		return *this;
	}
};
} // namespace outer

namespace {
/* called with a constant second argument: GCC makes a .constprop clone */
NOINLINE long work(long n, long k)
{
	long x = 0;
	for (long i = 0; i < n; i++)
		x = x * 7 + k + i;
	return x;
}
} // namespace

template <int N> NOINLINE long tmpl(long n)
{
	long x = N;
	for (long i = 0; i < n; i++)
		x ^= x * 31 + i;
	return x;
}

template <typename F> NOINLINE long apply_twice(F f, long n)
{
	auto inner = [&](long m) NOINLINE {
		long x = 0;
		for (long i = 0; i < m; i++)
			x = x * 3 + f(i);
		return x;
	};
	return inner(n) + inner(n / 2);
}

/* multiple inheritance: calls through a Right* (opaque to the compiler) reach Both::right
 * through a non-virtual thunk */
struct Left {
	virtual ~Left() {}
	virtual long left(long n) = 0;
};
struct Right {
	virtual ~Right() {}
	virtual long right(long n) = 0;
};
struct Both : Left, Right {
	long left(long n) override { return n; }
	NOINLINE long right(long n) override
	{
		long x = 2;
		for (long i = 0; i < n; i++)
			x = x * 13 + i;
		return x;
	}
};

extern "C" NOINLINE long c_function(long n)
{
	long x = 1;
	for (long i = 0; i < n; i++)
		x = x * 17 + i;
	return x;
}

static double cpu_seconds()
{
	timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = cpu_seconds() + (argc > 1 ? atof(argv[1]) : 0.5);
	auto lam = [](long n) NOINLINE {
		long x = 1;
		for (long i = 0; i < n; i++)
			x = x * 5 + i;
		return x;
	};
	outer::inner::Box<long> b{3};
	outer::inner::Box<double> d{1.5};
	Both both;
	Right *volatile r = &both;

	while (cpu_seconds() < end) {
		sink = work(100000, 3);
		sink = tmpl<7>(100000);
		sink = lam(100000);
		sink = b.spin(100000);
		sink = (long)d.spin(50000);
		sink = apply_twice([](long m) { return m * 3 + 1; }, 60000);
		sink = r->right(100000);
		sink = c_function(100000);
		{
			outer::Counter c(sink);
			c += 5;
		}
	}
	return 0;
}
