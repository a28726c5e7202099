/*
 * Number formatting for report's output without printf: a report prints tens of
 * thousands of percentages and padded cells, and printf's floating-point path is most of
 * the time spent printing. Each function writes exactly what the printf format named in
 * its comment would.
 */
#ifndef TALLY_CLI_FMT_H
#define TALLY_CLI_FMT_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * A line of text built in memory and written with one fwrite: a report row is a dozen
 * cells, and a stdio call per piece costs more than formatting it.
 */
struct fmt_buf {
	char *p;
	size_t len, cap;
	bool oom;	/* a growth failed: the text is cut */
};

/* fb_room's growth (false: out of memory, b->oom set) */
static __attribute__((noinline, unused)) bool fb_grow(struct fmt_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	char *p;

	if (b->oom)
		return false;
	while (cap < b->len + n + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

/* room for n more bytes (false: out of memory, b->oom set) */
static inline bool fb_room(struct fmt_buf *b, size_t n)
{
	return b->len + n + 1 <= b->cap || fb_grow(b, n);
}

static inline void fb_put(struct fmt_buf *b, const char *s, size_t n)
{
	if (!fb_room(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static inline void fb_putc(struct fmt_buf *b, char c)
{
	fb_put(b, &c, 1);
}

static inline void fb_puts(struct fmt_buf *b, const char *s)
{
	fb_put(b, s, strlen(s));
}

static inline void fb_spaces(struct fmt_buf *b, size_t n)
{
	static const char sp[32] = "                                ";

	if (n <= sizeof(sp) && b->len + sizeof(sp) + 1 <= b->cap) {
		/* the whole 32 (the bytes past n are overwritten next) */
		memcpy(b->p + b->len, sp, sizeof(sp));
	} else {
		if (!fb_room(b, n))
			return;
		memset(b->p + b->len, ' ', n);
	}
	b->len += n;
	b->p[b->len] = 0;
}

/* printf into b */
static inline __attribute__((format(printf, 2, 3))) void fb_printf(struct fmt_buf *b,
								      const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	if (n < 0 || !fb_room(b, (size_t)n))
		return;
	va_start(ap, f);
	vsnprintf(b->p + b->len, (size_t)n + 1, f, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* fb_pct's other cells: wide, negative, huge or near a rounding tie */
static __attribute__((noinline, unused)) void fb_pct_any(struct fmt_buf *b, double v, int width)
{
	char buf[FMT_FIXED2_MAX + 1];
	size_t n = fmt_fixed2(buf, v);

	if (width > 0 && (size_t)width > n)
		fb_spaces(b, (size_t)width - n);
	buf[n++] = '%';
	fb_put(b, buf, n);
}

/* "%*.2f%%" (width counts the number only; 0: no padding) */
static inline __attribute__((always_inline)) void fb_pct(struct fmt_buf *b, double v,
							    int width)
{
	static const char dig2[] = "00010203040506070809101112131415161718192021222324"
				   "25262728293031323334353637383940414243444546474849"
				   "50515253545556575859606162636465666768697071727374"
				   "75767778798081828384858687888990919293949596979899";
	double s = v * 100.0, frac;
	uint32_t d, ip;
	size_t nd, len;
	char t[32], *end;

	/* the common cell (as fmt_fixed2's), built right-aligned in 32 bytes copied whole */
	if (width >= 24 || signbit(v) || !(v < 1e7))
		return fb_pct_any(b, v, width);
	d = (uint32_t)s;	/* floor: s is below 2^32, not negative */
	frac = s - (double)d;
	if (!(fabs(frac - 0.5) > 1e-4) || !fb_room(b, sizeof(t)))
		return fb_pct_any(b, v, width);
	d += frac > 0.5;
	ip = d / 100;
	nd = ip < 10 ? 1 : ip < 100 ? 2 : ip < 1000 ? 3
	   : ip < 100000 ? 5 - (ip < 10000) : 7 - (ip < 1000000);
	len = width > 0 && (size_t)width + 1 > nd + 4 ? (size_t)width + 1 : nd + 4;
	memset(t, ' ', sizeof(t));
	end = t + len;
	end[-1] = '%';
	memcpy(end - 3, dig2 + 2 * (d - ip * 100), 2);
	end[-4] = '.';
	end -= 5;	/* the last digit of the whole part */
	for (; ip >= 100; ip /= 100, end -= 2)
		memcpy(end - 1, dig2 + 2 * (ip % 100), 2);
	if (ip >= 10)
		memcpy(end - 1, dig2 + 2 * ip, 2);
	else
		*end = (char)('0' + ip);
	memcpy(b->p + b->len, t, sizeof(t));
	b->len += len;
	b->p[b->len] = 0;
}

/* "%*" PRIu64 */
static inline void fb_u64_pad(struct fmt_buf *b, uint64_t v, int width)
{
	char buf[24];
	size_t n = fmt_u64(buf, v);

	if (width > 0 && (size_t)width > n)
		fb_spaces(b, (size_t)width - n);
	fb_put(b, buf, n);
}

/* "%-*.*s" when cut, else "%-*s": s left-aligned in width, cut to max bytes (0: no cut) */
static inline void fb_str_left(struct fmt_buf *b, const char *s, size_t width, size_t max)
{
	size_t n = strlen(s);

	if (max && n > max)
		n = max;
	fb_put(b, s, n);
	if (n < width)
		fb_spaces(b, width - n);
}

/* The 8 hex digits of x (lowercase), the first in the most significant byte. */
static inline uint64_t fmt_hex8(uint32_t x)
{
	uint64_t t = x, a;

	/* a nibble a byte, in order */
	t = (t | t << 16) & UINT64_C(0x0000ffff0000ffff);
	t = (t | t << 8) & UINT64_C(0x00ff00ff00ff00ff);
	t = (t | t << 4) & UINT64_C(0x0f0f0f0f0f0f0f0f);
	/* '0'-'9', or 'a'-'f' for the bytes above 9 */
	a = (t + UINT64_C(0x0606060606060606)) >> 4 & UINT64_C(0x0101010101010101);
	return t + UINT64_C(0x3030303030303030) + a * 0x27;
}

/* "%#.16" PRIx64: "0x" and 16 digits, or 16 zeros for 0 (no prefix); returns the length */
static inline size_t fb_addr16(struct fmt_buf *b, uint64_t v)
{
	char buf[18] = { '0', 'x' };
	size_t n = v ? 2 : 0;
	uint64_t hi = fmt_hex8((uint32_t)(v >> 32)), lo = fmt_hex8((uint32_t)v);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__	/* the first digit first in memory */
	hi = __builtin_bswap64(hi);
	lo = __builtin_bswap64(lo);
#endif
	memcpy(buf + n, &hi, 8);
	memcpy(buf + n + 8, &lo, 8);
	fb_put(b, buf, n + 16);
	return n + 16;
}

/* b's text to fp, b emptied; false: b had run out of memory */
static inline bool fb_flush(struct fmt_buf *b, FILE *fp)
{
	bool ok = !b->oom;

	if (b->len)
		fwrite_unlocked(b->p, 1, b->len, fp);
	b->len = 0;
	b->oom = false;
	return ok;
}

#endif
