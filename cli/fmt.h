/*
 * Number formatting for report's output without printf: a report prints tens of
 * thousands of percentages and padded cells, and printf's floating-point path is most of
 * the time spent printing. Each function writes exactly what the printf format named in
 * its comment would.
 */
#ifndef TALLY_CLI_FMT_H
#define TALLY_CLI_FMT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* "%u" of v into buf (at least 20 bytes); returns the length. */
static inline size_t fmt_u64(char *buf, uint64_t v)
{
	char t[20];
	size_t n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = t[n - 1 - i];
	return n;
}

/* Room fmt_fixed2 needs: "%.2f" of the largest double. */
#define FMT_FIXED2_MAX 320

/*
 * "%.2f" of v into buf (FMT_FIXED2_MAX bytes); returns the length. printf rounds the exact
 * binary value to two decimals (half to even on exact ties); v * 100 is within a few ulps
 * of that exact value, so its rounding is the same unless it lies very near a half, and
 * then (or for values outside the fast range) printf decides.
 */
static inline size_t fmt_fixed2(char *buf, double v)
{
	if (!signbit(v) && v < 1e9) {	/* -0.0 prints its sign: printf's */
		double s = v * 100.0, f = floor(s), frac = s - f;

		if (fabs(frac - 0.5) > 1e-4) {
			uint64_t n = (uint64_t)f + (frac > 0.5);
			size_t len = fmt_u64(buf, n / 100);

			buf[len] = '.';
			buf[len + 1] = (char)('0' + n % 100 / 10);
			buf[len + 2] = (char)('0' + n % 10);
			return len + 3;
		}
	}
	return (size_t)snprintf(buf, FMT_FIXED2_MAX, "%.2f", v);
}

static inline void fmt_spaces(FILE *fp, size_t n)
{
	static const char sp[] = "                                                                ";

	while (n > sizeof(sp) - 1) {
		fwrite_unlocked(sp, 1, sizeof(sp) - 1, fp);
		n -= sizeof(sp) - 1;
	}
	fwrite_unlocked(sp, 1, n, fp);
}

static inline void fmt_puts(FILE *fp, const char *s)
{
	fwrite_unlocked(s, 1, strlen(s), fp);
}

/* "%*.2f%%" (width counts the number only; 0: no padding) */
static inline void fmt_pct(FILE *fp, double v, int width)
{
	char buf[FMT_FIXED2_MAX + 1];
	size_t n = fmt_fixed2(buf, v);

	if (width > 0 && (size_t)width > n)
		fmt_spaces(fp, (size_t)width - n);
	buf[n++] = '%';
	fwrite_unlocked(buf, 1, n, fp);
}

/* "%*" PRIu64 */
static inline void fmt_u64_pad(FILE *fp, uint64_t v, int width)
{
	char buf[24];
	size_t n = fmt_u64(buf, v);

	if (width > 0 && (size_t)width > n)
		fmt_spaces(fp, (size_t)width - n);
	fwrite_unlocked(buf, 1, n, fp);
}

/* "%-*.*s" when cut, else "%-*s": s left-aligned in width, cut to max bytes (0: no cut) */
static inline void fmt_str_left(FILE *fp, const char *s, size_t width, size_t max)
{
	size_t n = strlen(s);

	if (max && n > max)
		n = max;
	fwrite_unlocked(s, 1, n, fp);
	if (n < width)
		fmt_spaces(fp, width - n);
}

#endif
