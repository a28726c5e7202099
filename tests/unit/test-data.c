/*
 * The perf.data reader: files recorded by perf 6.1 (tests/data/perf), hand-built
 * streams for the cases perf does not write (attr size 136, COMPRESSED2, unknown
 * records, rounds out of order), and damaged input (cut short, zero-size records,
 * offsets outside the file).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <zstd.h>
#include <cmocka.h>

#include "tally/data.h"

static char *fixture(const char *name)
{
	static char path[4096];
	const char *top = getenv("TALLY_TOP");
	snprintf(path, sizeof(path), "%s/tests/data/perf/%s", top ? top : "..", name);
	return path;
}

struct counts {
	unsigned by_type[128];
	unsigned samples_per_event[8];
	uint64_t last_time;
	unsigned out_of_order;
	unsigned compressed;
	unsigned no_event;
	const struct tally_data *d;
};

static int count_cb(void *arg, const struct perf_event_header *hdr,
		    const struct tally_record_ctx *ctx)
{
	struct counts *c = arg;
	if (hdr->type < 128)
		c->by_type[hdr->type]++;
	if (ctx->compressed)
		c->compressed++;
	if (hdr->type == PERF_RECORD_SAMPLE) {
		struct tally_sample s;
		if (ctx->evidx < 0) {
			c->no_event++;
			return 0;
		}
		if (ctx->evidx < 8)
			c->samples_per_event[ctx->evidx]++;
		const struct tally_data_event *ev = tally_data__event(c->d, (size_t)ctx->evidx);
		assert_int_equal(tally_sample__parse(&ev->layout, hdr, &s), 0);
		if (s.time < c->last_time)
			c->out_of_order++;
		c->last_time = s.time;
	}
	return 0;
}

static void walk(const char *name, unsigned flags, struct counts *c, struct tally_data **dp)
{
	struct tally_data *d;
	struct tally_data_error err;
	int ret = tally_data__open(&d, fixture(name), NULL, &err);
	if (ret)
		fail_msg("%s: %s at 0x%llx", name, err.msg, (unsigned long long)err.offset);
	memset(c, 0, sizeof(*c));
	c->d = d;
	assert_int_equal(tally_data__for_each(d, flags, count_cb, c, &err), 0);
	assert_int_equal(tally_data__truncated(d), 0);
	assert_int_equal(tally_data__nr_unknown_records(d), 0);
	*dp = d;
}

/* Expected counts per fixture, written by tests/data/regen.sh from `perf report -D`
 * (perf 6.1) on the same files: "FILE SAMPLES MMAP2 COMM" per line. */
struct fixture_counts {
	char name[64];
	unsigned samples, mmap2, comm;
};

static size_t load_counts(struct fixture_counts *out, size_t max)
{
	FILE *f = fopen(fixture("COUNTS"), "r");
	size_t n = 0;

	assert_non_null(f);
	while (n < max && fscanf(f, "%63s %u %u %u", out[n].name, &out[n].samples,
				 &out[n].mmap2, &out[n].comm) == 4)
		n++;
	fclose(f);
	return n;
}

static void perf_files(void **state)
{
	struct fixture_counts files[16];
	size_t nfiles = load_counts(files, 16);

	(void)state;
	assert_int_equal(nfiles, 8);
	for (size_t i = 0; i < nfiles; i++) {
		struct counts c;
		struct tally_data *d;
		walk(files[i].name, TALLY_DATA_ORDERED, &c, &d);
		assert_int_equal(c.by_type[PERF_RECORD_SAMPLE], files[i].samples);
		assert_int_equal(c.by_type[PERF_RECORD_MMAP2], files[i].mmap2);
		assert_int_equal(c.by_type[PERF_RECORD_COMM], files[i].comm);
		assert_int_equal(c.out_of_order, 0);
		assert_int_equal(c.no_event, 0);
		assert_true(c.by_type[TALLY_RECORD_FINISHED_ROUND] >= 1);
		assert_int_equal(c.by_type[TALLY_RECORD_HEADER_ATTR], 0);
		assert_int_equal(c.by_type[TALLY_RECORD_COMPRESSED], 0);
		assert_string_equal(tally_data__feature_string(d, TALLY_FEAT_ARCH), "x86_64");
		assert_true(tally_data__has_feature(d, TALLY_FEAT_EVENT_DESC));
		tally_data__delete(d);
	}
}

/* The SAMPLE count of fixture NAME in COUNTS. */
static unsigned expected_samples(const char *name)
{
	struct fixture_counts files[16];
	size_t nfiles = load_counts(files, 16);

	for (size_t i = 0; i < nfiles; i++)
		if (strcmp(files[i].name, name) == 0)
			return files[i].samples;
	fail_msg("%s is not in COUNTS", name);
	return 0;
}

static void events_and_features(void **state)
{
	struct counts c;
	struct tally_data *d;
	(void)state;

	walk("multi.data", 0, &c, &d);
	assert_false(tally_data__is_pipe(d));
	assert_int_equal(tally_data__nr_events(d), 3);
	assert_string_equal(tally_data__event(d, 0)->name, "cpu-clock");
	assert_string_equal(tally_data__event(d, 1)->name, "task-clock");
	assert_string_equal(tally_data__event(d, 2)->name, "sched:sched_switch");
	assert_int_equal(tally_data__event(d, 2)->attr.type, PERF_TYPE_TRACEPOINT);
	assert_true(tally_data__event(d, 0)->nr_ids > 0);
	assert_true(c.samples_per_event[0] > 0 && c.samples_per_event[1] > 0);
	assert_int_equal(c.samples_per_event[0] + c.samples_per_event[1] + c.samples_per_event[2],
			 expected_samples("multi.data"));
	assert_true(tally_data__has_feature(d, TALLY_FEAT_TRACING_DATA));
	assert_null(tally_data__event(d, 3));
	tally_data__delete(d);

	walk("group.data", 0, &c, &d);
	assert_int_equal(tally_data__event(d, 0)->leader, 0);
	assert_int_equal(tally_data__event(d, 0)->nr_members, 2);
	assert_int_equal(tally_data__event(d, 1)->leader, 0);
	tally_data__delete(d);

	walk("pipe.data", TALLY_DATA_RAW, &c, &d);
	assert_true(tally_data__is_pipe(d));
	assert_int_equal(tally_data__nr_events(d), 1);
	/* perf adds H (exclude_guest) to the name where the kernel has guest support */
	assert_string_equal(tally_data__event(d, 0)->name,
			    tally_data__event(d, 0)->attr.exclude_guest ? "cpu-clock:pppH"
									: "cpu-clock:ppp");
	assert_int_equal(c.by_type[TALLY_RECORD_HEADER_ATTR], 1);
	assert_int_equal(c.by_type[TALLY_RECORD_HEADER_FEATURE], 19);
	assert_non_null(tally_data__feature_string(d, TALLY_FEAT_HOSTNAME));
	tally_data__delete(d);

	walk("zstd.data", TALLY_DATA_ORDERED, &c, &d);
	/* everything but the header records came out of COMPRESSED records */
	assert_true(c.compressed >= c.by_type[PERF_RECORD_SAMPLE] + c.by_type[PERF_RECORD_MMAP2]);
	assert_int_equal(c.by_type[PERF_RECORD_SAMPLE], expected_samples("zstd.data"));
	assert_true(c.compressed >= expected_samples("zstd.data"));
	tally_data__delete(d);
}

/* ---- hand-built streams ------------------------------------------------- */

struct out {
	uint8_t buf[1 << 16];
	size_t len;
};

static void emit(struct out *o, const void *p, size_t n)
{
	assert_true(o->len + n <= sizeof(o->buf));
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void emit_u64(struct out *o, uint64_t v)
{
	emit(o, &v, 8);
}

static void emit_hdr(struct out *o, uint32_t type, uint16_t size)
{
	struct perf_event_header h = { .type = type, .misc = 0, .size = size };
	emit(o, &h, sizeof(h));
}

/* A pipe stream with one attr of size ASZ, sample_type IP|TID|TIME. */
static void pipe_start(struct out *o, uint32_t asz)
{
	uint8_t attr[256] = { 0 };
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .config = 1,
				     .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						    PERF_SAMPLE_TIME,
				     .sample_id_all = 1, .exclude_guest = 1 };
	o->len = 0;
	emit_u64(o, TALLY_PERF_MAGIC2);
	emit_u64(o, 16);
	a.size = asz;
	memcpy(attr, &a, sizeof(a));
	if (asz > sizeof(a))
		attr[128] = 0x77;	/* config3 */
	emit_hdr(o, TALLY_RECORD_HEADER_ATTR, (uint16_t)(8 + asz + 8));
	emit(o, attr, asz);
	emit_u64(o, 42);
}

static void sample(struct out *o, uint64_t ip, uint64_t time)
{
	emit_hdr(o, PERF_RECORD_SAMPLE, 32);
	emit_u64(o, ip);
	emit_u64(o, 7ULL << 32 | 7);
	emit_u64(o, time);
}

struct order {
	uint64_t times[64];
	unsigned n, rounds;
};

static int order_cb(void *arg, const struct perf_event_header *hdr,
		    const struct tally_record_ctx *ctx)
{
	struct order *ord = arg;
	(void)ctx;
	if (hdr->type == PERF_RECORD_SAMPLE && ord->n < 64) {
		uint64_t t;
		memcpy(&t, (const uint8_t *)hdr + 24, 8);
		ord->times[ord->n++] = t;
	}
	if (hdr->type == TALLY_RECORD_FINISHED_ROUND)
		ord->rounds++;
	return 0;
}

static void pipe_attr136_and_ordering(void **state)
{
	static struct out o;
	struct tally_data *d;
	struct tally_data_error err;
	struct order ord = { 0 };
	(void)state;

	pipe_start(&o, 136);
	sample(&o, 1, 30);
	sample(&o, 2, 10);
	emit_hdr(&o, TALLY_RECORD_FINISHED_ROUND, 8);
	sample(&o, 3, 20);	/* older than the previous round's newest: perf still sorts it */
	sample(&o, 4, 40);
	emit_hdr(&o, 200, 16);	/* unknown type, skipped by size */
	emit_u64(&o, 0);
	emit_hdr(&o, TALLY_RECORD_FINISHED_ROUND, 8);
	sample(&o, 5, 35);
	/* no final FINISHED_ROUND: flushed at the end */
	assert_int_equal(tally_data__open_mem(&d, o.buf, o.len, &err), 0);
	assert_true(tally_data__is_pipe(d));
	assert_int_equal(tally_data__event(d, 0)->disk_attr_size, 136);
	assert_int_equal(tally_data__event(d, 0)->config3, 0x77);
	assert_string_equal(tally_data__event(d, 0)->name, "task-clock");
	assert_int_equal(tally_data__event(d, 0)->nr_ids, 1);
	assert_int_equal(tally_data__for_each(d, TALLY_DATA_ORDERED, order_cb, &ord, &err), 0);
	assert_int_equal(ord.n, 5);
	uint64_t want[] = { 10, 20, 30, 35, 40 };
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(ord.times[i], want[i]);
	assert_int_equal(ord.rounds, 2);
	assert_int_equal(tally_data__nr_unknown_records(d), 1);

	/* unordered: file order */
	memset(&ord, 0, sizeof(ord));
	assert_int_equal(tally_data__for_each(d, 0, order_cb, &ord, &err), 0);
	assert_int_equal(ord.times[0], 30);
	assert_int_equal(ord.times[1], 10);
	tally_data__delete(d);

	/* cut short in the middle of the last record: everything before it is read */
	for (size_t cut = 1; cut < 32; cut += 7) {
		memset(&ord, 0, sizeof(ord));
		assert_int_equal(tally_data__open_mem(&d, o.buf, o.len - cut, &err), 0);
		assert_int_equal(tally_data__for_each(d, TALLY_DATA_ORDERED, order_cb, &ord, &err), 0);
		assert_int_equal(ord.n, 4);
		/* with the header itself cut, the size is unknown: at least the header is missing */
		if (cut <= 24)
			assert_int_equal(tally_data__truncated(d), cut);
		else
			assert_true(tally_data__truncated(d) > 0);
		tally_data__delete(d);
	}
}

/* Rounds of several per-CPU runs, each in time order, with times repeated across runs:
 * delivered in time order, equal times in the order the file has them. */
struct seen_ips {
	uint64_t ip[2048], time[2048];
	unsigned n;
};

static int ips_cb(void *arg, const struct perf_event_header *hdr,
		  const struct tally_record_ctx *ctx)
{
	struct seen_ips *s = arg;
	(void)ctx;
	if (hdr->type == PERF_RECORD_SAMPLE && s->n < 2048) {
		memcpy(&s->ip[s->n], (const uint8_t *)hdr + 8, 8);
		memcpy(&s->time[s->n], (const uint8_t *)hdr + 24, 8);
		s->n++;
	}
	return 0;
}

static void ordering_runs_and_ties(void **state)
{
	static struct out o;
	static struct seen_ips seen;
	struct tally_data *d;
	struct tally_data_error err;
	unsigned seed = 12345, nr = 0;
	(void)state;

	pipe_start(&o, 128);
	for (unsigned round = 0; round < 12; round++) {
		unsigned runs = 1 + round % 4;

		for (unsigned r = 0; r < runs; r++) {
			/* one CPU's run: times in [100 round, 100 round + 150), ascending, with
			 * repeats (a later round may reach below this one's newest, not below the
			 * one before: the order comes out whole) */
			uint64_t t = 100 * round;

			for (unsigned k = 0; k < 25; k++) {
				seed = seed * 1103515245 + 12345;
				t += (seed >> 16) % 3 == 0 ? 0 : (seed >> 16) % 6;
				if (t >= 100 * round + 150)
					t = 100 * round + 149;
				sample(&o, ++nr, t);
			}
		}
		emit_hdr(&o, TALLY_RECORD_FINISHED_ROUND, 8);
	}
	assert_int_equal(tally_data__open_mem(&d, o.buf, o.len, &err), 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(tally_data__for_each(d, TALLY_DATA_ORDERED, ips_cb, &seen, &err), 0);
	assert_int_equal(seen.n, nr);
	for (unsigned i = 1; i < seen.n; i++) {
		assert_true(seen.time[i - 1] <= seen.time[i]);
		if (seen.time[i - 1] == seen.time[i])
			assert_true(seen.ip[i - 1] < seen.ip[i]);
	}
	tally_data__delete(d);
}

static void compressed2(void **state)
{
	static struct out o, inner;
	uint8_t z[4096];
	struct tally_data *d;
	struct tally_data_error err;
	struct order ord = { 0 };
	(void)state;

	inner.len = 0;
	for (unsigned i = 0; i < 10; i++)
		sample(&inner, i, 100 + i);
	size_t zl = ZSTD_compress(z, sizeof(z), inner.buf, inner.len, 1);
	assert_false(ZSTD_isError(zl));
	pipe_start(&o, 128);
	/* split into two records so the decompressed stream straddles them */
	size_t half = zl / 2;
	size_t r1 = (16 + half + 7) & ~7ULL, r2 = (16 + (zl - half) + 7) & ~7ULL;
	uint8_t pad[8] = { 0 };
	emit_hdr(&o, TALLY_RECORD_COMPRESSED2, (uint16_t)r1);
	emit_u64(&o, half);
	emit(&o, z, half);
	emit(&o, pad, r1 - 16 - half);
	emit_hdr(&o, TALLY_RECORD_COMPRESSED2, (uint16_t)r2);
	emit_u64(&o, zl - half);
	emit(&o, z + half, zl - half);
	emit(&o, pad, r2 - 16 - (zl - half));
	assert_int_equal(tally_data__open_mem(&d, o.buf, o.len, &err), 0);
	assert_int_equal(tally_data__for_each(d, TALLY_DATA_ORDERED, order_cb, &ord, &err), 0);
	assert_int_equal(ord.n, 10);
	assert_int_equal(ord.times[9], 109);
	tally_data__delete(d);

	/* damaged zstd data is an error naming the record's offset */
	o.buf[o.len - 10] ^= 0xff;
	o.buf[o.len - 20] ^= 0xff;
	uint64_t c2 = 16 + 8 + 136 + r1;
	(void)c2;
	assert_int_equal(tally_data__open_mem(&d, o.buf, o.len, &err), 0);
	int ret = tally_data__for_each(d, 0, order_cb, &ord, &err);
	if (ret) {
		assert_int_equal(ret, -EINVAL);
		assert_non_null(strstr(err.msg, "zstd"));
	}
	tally_data__delete(d);
}

static int count_only(void *arg, const struct perf_event_header *hdr,
		      const struct tally_record_ctx *ctx);

/* One COMPRESSED (81, unpadded) record whose output is far larger than the decoder's
 * first guess: everything must come out, not only the first buffer-full. */
static void compressed_big_ratio(void **state)
{
	static struct out o, inner;
	static uint8_t z[1 << 16];
	struct tally_data *d;
	struct tally_data_error err;
	unsigned n = 0;
	(void)state;

	inner.len = 0;
	for (unsigned i = 0; i < 1500; i++)
		sample(&inner, 0x1000, 5);
	size_t zl = ZSTD_compress(z, sizeof(z), inner.buf, inner.len, 3);
	assert_false(ZSTD_isError(zl));
	assert_true(zl * 8 + 4096 < inner.len);
	pipe_start(&o, 128);
	emit_hdr(&o, TALLY_RECORD_COMPRESSED, (uint16_t)(8 + zl));
	emit(&o, z, zl);
	sample(&o, 0x2000, 6);	/* misaligned after the unpadded record */
	assert_int_equal(tally_data__open_mem(&d, o.buf, o.len, &err), 0);
	assert_int_equal(tally_data__for_each(d, TALLY_DATA_ORDERED, count_only, &n, &err), 0);
	assert_int_equal(n, 1501);
	tally_data__delete(d);
}

static int count_only(void *arg, const struct perf_event_header *hdr,
		      const struct tally_record_ctx *ctx)
{
	(void)hdr;
	(void)ctx;
	(*(unsigned *)arg)++;
	return 0;
}

static void damage(void **state)
{
	static struct out o;
	struct tally_data *d;
	struct tally_data_error err;
	unsigned n = 0;
	(void)state;

	/* zero-size record: an error with its offset, never a hang */
	pipe_start(&o, 128);
	sample(&o, 1, 1);
	size_t bad = o.len;
	emit_hdr(&o, PERF_RECORD_SAMPLE, 0);
	sample(&o, 2, 2);
	assert_int_equal(tally_data__open_mem(&d, o.buf, o.len, &err), 0);
	assert_int_equal(tally_data__for_each(d, 0, count_only, &n, &err), -EINVAL);
	assert_int_equal(err.offset, bad);
	assert_int_equal(n, 1);
	tally_data__delete(d);

	/* not perf.data at all, empty, tiny */
	assert_int_equal(tally_data__open_mem(&d, "hello world, not perf data", 26, &err), -EINVAL);
	assert_null(d);
	assert_int_equal(tally_data__open_mem(&d, "", 0, &err), -ENODATA);
	assert_int_equal(tally_data__open_mem(&d, "PERFILE2", 8, &err), -EINVAL);

	/* a real file with its header fields pointing outside it */
	FILE *f = fopen(fixture("plain.data"), "rb");
	assert_non_null(f);
	static uint8_t file[1 << 16];
	size_t len = fread(file, 1, sizeof(file), f);
	fclose(f);
	assert_true(len > 104 && len < sizeof(file));
	static uint8_t copy[1 << 16];
	for (size_t field = 16; field < 72; field += 8) {
		memcpy(copy, file, len);
		uint64_t v = 0xfffffffffff0ULL;
		memcpy(copy + field, &v, 8);
		if (tally_data__open_mem(&d, copy, len, &err) == 0) {
			n = 0;
			tally_data__for_each(d, TALLY_DATA_ORDERED, count_only, &n, &err);
			tally_data__delete(d);
		} else {
			assert_true(err.msg[0] != 0);
		}
	}
	/* every cut of the file opens or fails cleanly */
	for (size_t cut = 0; cut < len; cut += 97) {
		if (tally_data__open_mem(&d, file, cut, &err) == 0) {
			n = 0;
			int ret = tally_data__for_each(d, TALLY_DATA_ORDERED, count_only, &n, &err);
			assert_true(ret == 0 || ret == -EINVAL);
			tally_data__delete(d);
		}
	}
	/* the data section cut short: records up to the cut, the rest counted as missing */
	const struct tally_file_header *h = (const void *)file;
	size_t cut = h->data.offset + h->data.size / 2;
	assert_int_equal(tally_data__open_mem(&d, file, cut, &err), 0);
	n = 0;
	assert_int_equal(tally_data__for_each(d, 0, count_only, &n, &err), 0);
	assert_true(n > 10);
	assert_true(tally_data__truncated(d) >= h->data.size / 2);
	tally_data__delete(d);

	/* damage the robustness checks name: odd attrs size, a record running past the
	 * data section (file not cut), a feature section outside the file */
	memcpy(copy, file, len);
	uint64_t odd = h->attrs.size + 7;
	memcpy(copy + 32, &odd, 8);
	assert_int_equal(tally_data__open_mem(&d, copy, len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "multiple"));
	memcpy(copy, file, len);
	uint64_t big = 1ULL << 40;
	memcpy(copy + h->data.offset + h->data.size, &big, 8);	/* first feature's offset */
	assert_int_equal(tally_data__open_mem(&d, copy, len, &err), -EINVAL);
	assert_int_equal(err.offset, h->data.offset + h->data.size);
	memcpy(copy, file, len);
	{
		/* find the last record of the data section and make it huge */
		uint64_t ro = h->data.offset, last = ro;
		while (ro < h->data.offset + h->data.size) {
			uint16_t sz;
			memcpy(&sz, copy + ro + 6, 2);
			last = ro;
			ro += sz;
		}
		uint16_t huge = 0xfff8;
		memcpy(copy + last + 6, &huge, 2);
		assert_int_equal(tally_data__open_mem(&d, copy, len, &err), 0);
		n = 0;
		assert_int_equal(tally_data__for_each(d, 0, count_only, &n, &err), -EINVAL);
		assert_int_equal(err.offset, last);
		assert_non_null(strstr(err.msg, "data section"));
		tally_data__delete(d);
	}

	/* the legacy PERFFILE magic with the same layout: every record, as with PERFILE2 */
	unsigned whole = 0;
	assert_int_equal(tally_data__open_mem(&d, file, len, &err), 0);
	assert_int_equal(tally_data__for_each(d, 0, count_only, &whole, &err), 0);
	tally_data__delete(d);
	assert_true(whole > 20);
	memcpy(copy, file, len);
	uint64_t m1 = TALLY_PERF_MAGIC1;
	memcpy(copy, &m1, 8);
	assert_int_equal(tally_data__open_mem(&d, copy, len, &err), 0);
	n = 0;
	assert_int_equal(tally_data__for_each(d, 0, count_only, &n, &err), 0);
	assert_int_equal(n, whole);
	tally_data__delete(d);
	/* byte-swapped: refused with a message, not misread */
	uint64_t sw = __builtin_bswap64(TALLY_PERF_MAGIC2);
	memcpy(copy, &sw, 8);
	assert_int_equal(tally_data__open_mem(&d, copy, len, &err), -EPROTONOSUPPORT);
	assert_non_null(strstr(err.msg, "endian"));

	tally_data__delete(NULL);
	assert_int_equal(tally_data__open(&d, "/nonexistent/perf.data", NULL, &err), -ENOENT);
}

/* A pipe stream bigger than the reader's 4 MiB chunks, written by a thread while the
 * reader walks it: every record arrives once, in order, and a cut end is reported. */
struct writer {
	int fd;
	unsigned n;
	size_t cut;
};

static void *write_stream(void *arg)
{
	struct writer *w = arg;
	static struct out o;
	pipe_start(&o, 128);
	size_t total = o.len;
	if (write(w->fd, o.buf, o.len) != (ssize_t)o.len)
		goto out;
	for (unsigned i = 0; i < w->n; i++) {
		o.len = 0;
		sample(&o, i, 1000 + i);
		if (i % 1000 == 999)
			emit_hdr(&o, TALLY_RECORD_FINISHED_ROUND, 8);
		size_t len = o.len;
		if (w->cut && i == w->n - 1)
			len -= w->cut;
		if (write(w->fd, o.buf, len) != (ssize_t)len)
			break;
		total += len;
	}
out:
	close(w->fd);
	return NULL;
}

static void stream_from_pipe(void **state)
{
	(void)state;
	for (int cut = 0; cut <= 1; cut++) {
		int p[2];
		pthread_t th;
		struct writer w = { .n = 200000, .cut = cut ? 5 : 0 };
		struct tally_data *d;
		struct tally_data_error err;
		struct order ord = { 0 };
		char path[64];

		assert_int_equal(pipe(p), 0);
		w.fd = p[1];
		assert_int_equal(pthread_create(&th, NULL, write_stream, &w), 0);
		snprintf(path, sizeof(path), "/dev/fd/%d", p[0]);
		assert_int_equal(tally_data__open(&d, path, NULL, &err), 0);
		assert_true(tally_data__is_pipe(d));
		assert_int_equal(tally_data__nr_events(d), 1);
		unsigned n = 0;
		assert_int_equal(tally_data__for_each(d, TALLY_DATA_ORDERED, count_only, &n, &err), 0);
		/* samples plus a FINISHED_ROUND per 1000; the cut takes 5 bytes off the last
		 * round, so that one is missing */
		assert_int_equal(n, w.n + w.n / 1000 - (unsigned)cut);
		assert_int_equal(tally_data__truncated(d), cut ? 5 : 0);
		/* a stream is walked once */
		assert_int_equal(tally_data__for_each(d, 0, order_cb, &ord, &err), -ESPIPE);
		tally_data__delete(d);
		pthread_join(th, NULL);
		close(p[0]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(perf_files),
		cmocka_unit_test(events_and_features),
		cmocka_unit_test(pipe_attr136_and_ordering),
		cmocka_unit_test(ordering_runs_and_ties),
		cmocka_unit_test(compressed2),
		cmocka_unit_test(compressed_big_ratio),
		cmocka_unit_test(damage),
		cmocka_unit_test(stream_from_pipe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
