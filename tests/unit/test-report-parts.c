/*
 * Pieces of report and script that are easy to get subtly wrong: the printf-free number
 * formatting (must print what printf prints). The sample memo's tests are in
 * test-sample-memo.c.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <tally/format.h>

#include "fmt.h"

static void same_as_printf(double v)
{
	static struct fmt_buf b;
	static int width;
	char want[FMT_FIXED2_MAX + 40], got[FMT_FIXED2_MAX];
	size_t n;

	snprintf(want, sizeof(want), "%.2f", v);
	n = fmt_fixed2(got, v);
	got[n] = 0;
	if (strcmp(want, got))
		fail_msg("%.17g: printf \"%s\", fmt_fixed2 \"%s\"", v, want, got);
	/* fb_pct's own fast path, at widths -1 to 25 in turn */
	width = width == 25 ? -1 : width + 1;
	snprintf(want, sizeof(want), "%*.2f%%", width, v);
	b.len = 0;
	fb_pct(&b, v, width);
	if (b.oom || b.len != strlen(want) || strcmp(want, b.p))
		fail_msg("%.17g: printf \"%s\", fb_pct at %d \"%s\"", v, want, width, b.p);
}

static void fixed2_matches_printf(void **state)
{
	static const double special[] = {
		0.0, -0.0, 0.005, 0.015, 0.125, 0.375, 0.625, 0.875, 1.005, 2.675, 99.995,
		100.0, 0.004999999999999999, 0.0050000000000000001, 12.345, 1e-300, DBL_MIN,
		5e-324, 999999999.995, 1e9 - 0.005, 1e9, 1e12, 1e300, -1.0, -0.004, INFINITY,
		-INFINITY, NAN,
	};
	uint64_t seed = 88172645463325252ull;
	(void)state;

	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		same_as_printf(special[i]);
	/* every percentage a report prints for totals up to 1500 */
	for (uint64_t total = 1; total <= 1500; total++)
		for (uint64_t v = 0; v <= total; v++)
			same_as_printf(100.0 * (double)v / (double)total);
	/* exact quarters and eighths of a hundredth (ties) up to 1000 */
	for (int k = 0; k < 800000; k++)
		same_as_printf((double)k / 800.0);
	/* random doubles, and random ratios of large periods */
	for (int k = 0; k < 1000000; k++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		same_as_printf((double)(seed >> 11) / (double)(1ull << 53) * 1e9);
		same_as_printf(100.0 * (double)(seed % 1000000007) / 1000000007.0);
	}
}

static void padded_cells(void **state)
{
	struct fmt_buf b = { 0 };
	char want[256];
	(void)state;

	fb_pct(&b, 12.3456, 6);
	fb_pct(&b, 100.0, 0);
	fb_u64_pad(&b, 42, 5);
	fb_u64_pad(&b, 1234567, 3);
	fb_str_left(&b, "perf-exec", 7, 7);
	fb_str_left(&b, "ab", 4, 0);
	fb_spaces(&b, 70);
	fb_printf(&b, "%7d:", -3);
	fb_putc(&b, '|');
	assert_false(b.oom);
	snprintf(want, sizeof(want), "%6.2f%%%.2f%%%5d%3d%-7.7s%-4s%70s%7d:|", 12.3456, 100.0,
		 42, 1234567, "perf-exec", "ab", "", -3);
	assert_string_equal(b.p, want);
	free(b.p);
}

/* an unresolved row's address: "%-#.*" PRIx64 at 16 (no "0x" for 0) */
static void addresses(void **state)
{
	static const uint64_t v[] = { 0, 1, 0xabc, 0x7fffffffffffffffull, 0xffffffff81000000ull,
				      UINT64_MAX, 0x0123456789abcdefull, 0xfedcba9876543210ull };
	uint64_t seed = 88172645463325252ull;
	(void)state;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]) + 100000; i++) {
		struct fmt_buf b = { 0 };
		char want[64];
		uint64_t x = i < sizeof(v) / sizeof(v[0]) ? v[i] : seed >> (seed % 64);
		int n = snprintf(want, sizeof(want), "%-#.*" PRIx64, 16, x);

		assert_int_equal(fb_addr16(&b, x), n);
		assert_string_equal(b.p, want);
		free(b.p);
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fixed2_matches_printf),
		cmocka_unit_test(padded_cells),
		cmocka_unit_test(addresses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
