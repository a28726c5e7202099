/*
 * The perf.data writer, checked by reading its files back: with the library's reader
 * (tally_data: events, ids, features, records, decompression) and by looking at the
 * raw header where the layout itself is the point (attr.size, data size after a failed
 * write, the pipe-mode end marker).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tally/data.h>
#include <tally/synth.h>
#include <tally/tracefs.h>
#include <tally/writer.h>
#include "internal/util.h"

static char dir[] = "/tmp/tally-test-writer-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Feature payloads sit at any offset of the file: read them byte-wise. */
static uint32_t u32_at(const void *buf, size_t idx)
{
	uint32_t v;

	memcpy(&v, (const char *)buf + 4 * idx, 4);
	return v;
}

static uint64_t u64_at(const void *buf, size_t idx)
{
	uint64_t v;

	memcpy(&v, (const char *)buf + 8 * idx, 8);
	return v;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void sample_attr(struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = config;
	a->sample_freq = 4000;
	a->freq = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			 PERF_SAMPLE_PERIOD;
	a->read_format = PERF_FORMAT_ID;
	a->sample_id_all = 1;
	a->comm = a->mmap = a->mmap2 = a->task = 1;
}

/* SAMPLE record matching sample_attr: ip, pid/tid, time, id, period. */
struct sample_rec {
	struct perf_event_header h;
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time, id, period;
};

static void make_sample(struct sample_rec *s, uint64_t i, uint64_t id)
{
	memset(s, 0, sizeof(*s));
	s->h.type = PERF_RECORD_SAMPLE;
	s->h.misc = PERF_RECORD_MISC_USER;
	s->h.size = sizeof(*s);
	s->ip = 0x400000 + i * 16;
	s->pid = s->tid = 1234;
	s->time = 1000 + i;
	s->id = id;
	s->period = 250000;
}

struct counts {
	size_t samples, comm, other;
	uint64_t last_time;
	int bad_order;
	int evidx_of_id2;
};

static int count_cb(void *arg, const struct perf_event_header *h, const struct tally_record_ctx *ctx)
{
	struct counts *c = arg;

	if (h->type == PERF_RECORD_SAMPLE) {
		const struct sample_rec *s = (const void *)h;

		if (s->time < c->last_time)
			c->bad_order++;
		c->last_time = s->time;
		c->samples++;
		if (s->id == 2)
			c->evidx_of_id2 = ctx->evidx;
	} else if (h->type == PERF_RECORD_COMM) {
		c->comm++;
	} else {
		c->other++;
	}
	return 0;
}

static void write_comm(struct tally_writer *w)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		char comm[16];
		uint32_t spid, stid;	/* sample_id: TID */
		uint64_t time, id;	/* TIME, ID */
	} c;

	memset(&c, 0, sizeof(c));
	c.h.type = PERF_RECORD_COMM;
	c.h.size = sizeof(c);
	c.pid = c.tid = c.spid = c.stid = 1234;
	strcpy(c.comm, "loop");
	c.id = 1;
	assert_int_equal(tally_writer__write(w, &c, sizeof(c)), 0);
}

static void read_header(const char *path, struct tally_file_header *fh, struct stat *st)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, fh, sizeof(*fh)), sizeof(*fh));
	assert_int_equal(fstat(fd, st), 0);
	close(fd);
}

static void test_file_mode(void **state)
{
	struct perf_event_attr a, b;
	struct tally_writer *w;
	struct tally_data *d;
	struct tally_data_error derr;
	struct tally_file_header fh;
	struct sample_rec s;
	struct counts c = { 0 };
	struct utsname u;
	struct stat st;
	char path[256];
	uint64_t ids_a[2] = { 1, 3 }, ids_b[1] = { 2 };
	const char *args[] = { "tally", "record", "-o", "x" };
	uint8_t bid[20];
	const void *buf;
	size_t len, i;

	(void)state;
	path_of(path, sizeof(path), "file.data");
	assert_int_equal(tally_writer__open(&w, path, NULL), 0);
	assert_false(tally_writer__is_pipe(w));
	sample_attr(&a, PERF_COUNT_SW_CPU_CLOCK);
	a.size = 136;	/* a newer attr: must be stored as 128 */
	sample_attr(&b, PERF_COUNT_SW_TASK_CLOCK);
	assert_int_equal(tally_writer__add_event(w, &a, "cpu-clock", ids_a, 1), 0);
	assert_int_equal(tally_writer__add_event_ids(w, 0, ids_a + 1, 1), 0);
	assert_int_equal(tally_writer__add_event(w, &b, "task-clock", ids_b, 1), 1);
	assert_int_equal(tally_writer__add_group(w, NULL, 0, 2), 0);
	assert_int_equal(tally_writer__set_host_features(w, "0.1.0"), 0);
	assert_int_equal(tally_writer__set_feature_strings(w, TALLY_FEAT_CMDLINE, args, 4), 0);
	assert_int_equal(tally_writer__start(w), 0);
	assert_int_equal(tally_writer__add_event(w, &a, "late", NULL, 0), -EBUSY);
	write_comm(w);
	for (i = 0; i < 1000; i++) {
		make_sample(&s, i, i % 2 ? 2 : 1);
		assert_int_equal(tally_writer__write(w, &s, sizeof(s)), 0);
	}
	assert_int_equal(tally_writer__set_sample_time(w, 1000, 1999), 0);
	memset(bid, 0xab, sizeof(bid));
	assert_int_equal(tally_writer__add_build_id(w, -1, bid, 20, "/usr/bin/true", false), 0);
	assert_int_equal(tally_writer__finish(w), 0);
	assert_int_equal(tally_writer__data_bytes(w), 56 + 1000 * sizeof(s));
	tally_writer__delete(w);

	read_header(path, &fh, &st);
	assert_int_equal(fh.magic, TALLY_PERF_MAGIC2);
	assert_int_equal(fh.size, 104);
	assert_int_equal(fh.attr_size, 144);
	assert_int_equal(fh.attrs.size, 2 * 144);
	assert_int_equal(fh.data.size, 56 + 1000 * sizeof(s));
	assert_true(fh.adds_features[0] & (1ULL << TALLY_FEAT_HOSTNAME));
	assert_false(fh.adds_features[0] & (1ULL << TALLY_FEAT_TRACING_DATA));

	assert_int_equal(tally_data__open(&d, path, NULL, &derr), 0);
	assert_int_equal(tally_data__nr_events(d), 2);
	assert_int_equal(tally_data__event(d, 0)->disk_attr_size, 128);
	assert_string_equal(tally_data__event(d, 0)->name, "cpu-clock");
	assert_string_equal(tally_data__event(d, 1)->name, "task-clock");
	assert_int_equal(tally_data__event(d, 0)->nr_ids, 2);
	assert_int_equal(tally_data__event(d, 0)->ids[1], 3);
	assert_int_equal(tally_data__event(d, 1)->ids[0], 2);
	assert_int_equal(tally_data__event(d, 1)->leader, 0);
	assert_int_equal(tally_data__event(d, 0)->nr_members, 2);
	assert_int_equal(uname(&u), 0);
	assert_string_equal(tally_data__feature_string(d, TALLY_FEAT_HOSTNAME), u.nodename);
	assert_string_equal(tally_data__feature_string(d, TALLY_FEAT_OSRELEASE), u.release);
	assert_string_equal(tally_data__feature_string(d, TALLY_FEAT_ARCH), u.machine);
	assert_string_equal(tally_data__feature_string(d, TALLY_FEAT_VERSION), "0.1.0");
	assert_int_equal(tally_data__feature(d, TALLY_FEAT_NRCPUS, &buf, &len), 0);
	assert_int_equal(len, 8);
	assert_true(u32_at(buf, 1) >= 1);
	assert_int_equal(tally_data__feature(d, TALLY_FEAT_SAMPLE_TIME, &buf, &len), 0);
	assert_int_equal(len, 16);
	assert_int_equal(u64_at(buf, 1), 1999);
	assert_int_equal(tally_data__feature(d, TALLY_FEAT_BUILD_ID, &buf, &len), 0);
	assert_int_equal(len, 8 + 4 + 24 + 64);
	assert_memory_equal((const char *)buf + 12, bid, 20);
	assert_string_equal((const char *)buf + 36, "/usr/bin/true");
	assert_int_equal(tally_data__feature(d, TALLY_FEAT_CMDLINE, &buf, &len), 0);
	assert_int_equal(u32_at(buf, 0), 4);
	assert_string_equal((const char *)buf + 8, "tally");
	assert_true(tally_data__has_feature(d, TALLY_FEAT_TOTAL_MEM));
	assert_true(tally_data__has_feature(d, TALLY_FEAT_EVENT_DESC));
	assert_true(tally_data__has_feature(d, TALLY_FEAT_GROUP_DESC));

	c.evidx_of_id2 = -1;
	assert_int_equal(tally_data__for_each(d, 0, count_cb, &c, &derr), 0);
	assert_int_equal(c.samples, 1000);
	assert_int_equal(c.comm, 1);
	assert_int_equal(c.bad_order, 0);
	assert_int_equal(c.evidx_of_id2, 1);
	assert_int_equal(tally_data__truncated(d), 0);
	tally_data__delete(d);
}

/* The attr size a file states is the one it writes, whatever size the caller's attr
 * has: an older 64-byte attr, a newer 136-byte one (kernel headers after 6.1), or ours.
 * Stating one size and writing another shifts every later id, and perf 6.1 then finds
 * no event for the samples. */
static void test_attr_sizes(void **state)
{
	struct perf_event_attr a[3];
	struct tally_writer *w;
	struct tally_data *d;
	struct tally_data_error derr;
	struct tally_file_header fh;
	struct sample_rec s;
	struct stat st;
	char path[256], cmd[600];
	const uint16_t sizes[3] = { PERF_ATTR_SIZE_VER0, 136, sizeof(struct perf_event_attr) };
	const char *names[3] = { "cpu-clock", "task-clock", "page-faults" };
	uint64_t ids[3] = { 11, 22, 33 };
	const void *buf;
	size_t len;
	int fd;

	(void)state;
	path_of(path, sizeof(path), "sizes.data");
	assert_int_equal(tally_writer__open(&w, path, NULL), 0);
	for (int i = 0; i < 3; i++) {
		sample_attr(&a[i], (uint64_t)i);
		a[i].size = sizes[i];
		assert_int_equal(tally_writer__add_event(w, &a[i], names[i], &ids[i], 1), i);
	}
	assert_int_equal(tally_writer__start(w), 0);
	for (int i = 0; i < 30; i++) {
		make_sample(&s, (uint64_t)i, ids[i % 3]);
		assert_int_equal(tally_writer__write(w, &s, sizeof(s)), 0);
	}
	assert_int_equal(tally_writer__finish(w), 0);
	tally_writer__delete(w);

	/* every attr in the attr section states the stride the header gives it */
	read_header(path, &fh, &st);
	assert_int_equal(fh.attr_size, 128 + 16);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	for (int i = 0; i < 3; i++) {
		struct perf_event_attr on_disk;
		struct tally_file_section ids_sec;

		assert_int_equal(pread(fd, &on_disk, 128, (off_t)(fh.attrs.offset + i * fh.attr_size)),
				 128);
		assert_int_equal(on_disk.size, 128);
		assert_int_equal(on_disk.config, (uint64_t)i);
		assert_int_equal(pread(fd, &ids_sec, sizeof(ids_sec),
				       (off_t)(fh.attrs.offset + i * fh.attr_size + 128)), sizeof(ids_sec));
		assert_int_equal(ids_sec.size, 8);
	}
	close(fd);
	assert_int_equal(tally_data__open(&d, path, NULL, &derr), 0);
	assert_int_equal(tally_data__feature(d, TALLY_FEAT_EVENT_DESC, &buf, &len), 0);
	assert_int_equal(u32_at(buf, 1), 128);	/* EVENT_DESC's attr size */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tally_data__event(d, (size_t)i)->ids[0], ids[i]);
		assert_string_equal(tally_data__event(d, (size_t)i)->name, names[i]);
	}
	tally_data__delete(d);

	/* perf 6.1 finds each sample's event */
	if (system("perf --version >/dev/null 2>&1") != 0) {
		print_message("perf absent: the file not read by perf\n");
		skip();
		return;
	}
	snprintf(cmd, sizeof(cmd), "perf report -i %s --stdio --sort pid 2>&1 | "
		 "grep -c \"^# Samples: 10  of event '\" | grep -qx 3", path);
	assert_int_equal(system(cmd), 0);
}

static void test_backup(void **state)
{
	struct perf_event_attr a;
	struct tally_writer *w;
	struct tally_writer_opts o = { .no_backup = false };
	char path[256], old[300];
	struct stat st;
	FILE *f;

	(void)state;
	path_of(path, sizeof(path), "backup.data");
	snprintf(old, sizeof(old), "%s.old", path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("previous", f);
	fclose(f);
	assert_int_equal(tally_writer__open(&w, path, &o), 0);
	sample_attr(&a, 0);
	assert_int_equal(tally_writer__add_event(w, &a, "cpu-clock", NULL, 0), 0);
	assert_int_equal(tally_writer__start(w), 0);
	/* Killed before finish: the header says no data, the old file is kept. */
	tally_writer__delete(w);
	assert_int_equal(stat(old, &st), 0);
	assert_int_equal(st.st_size, 8);
	{
		struct tally_file_header fh;

		read_header(path, &fh, &st);
		assert_int_equal(fh.data.size, 0);
		assert_int_equal(fh.adds_features[0], 0);
	}
}

static void test_pipe_mode(void **state)
{
	struct perf_event_attr a;
	struct tally_writer *w;
	struct tally_writer_opts o = { .pipe = true };
	struct tally_data *d;
	struct tally_data_error derr;
	struct sample_rec s;
	struct counts c = { 0 };
	char path[256];
	uint64_t id = 1;
	unsigned char *raw;
	size_t i, off;
	int fd, marker = 0, attrs = 0;
	struct stat st;

	(void)state;
	path_of(path, sizeof(path), "pipe.data");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(tally_writer__open_fd(&w, fd, &o), 0);
	assert_true(tally_writer__is_pipe(w));
	sample_attr(&a, PERF_COUNT_SW_CPU_CLOCK);
	assert_int_equal(tally_writer__add_event(w, &a, "cpu-clock", &id, 1), 0);
	assert_int_equal(tally_writer__set_host_features(w, "0.1.0"), 0);
	assert_int_equal(tally_writer__start(w), 0);
	write_comm(w);
	for (i = 0; i < 10; i++) {
		make_sample(&s, i, 1);
		assert_int_equal(tally_writer__write(w, &s, sizeof(s)), 0);
	}
	assert_int_equal(tally_writer__finish(w), 0);
	tally_writer__delete(w);
	close(fd);

	/* Stream: 16-byte header, HEADER_ATTR, features, the 6.1 end marker (32). */
	assert_int_equal(stat(path, &st), 0);
	raw = malloc((size_t)st.st_size);
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, raw, (size_t)st.st_size), st.st_size);
	close(fd);
	assert_int_equal(((uint64_t *)raw)[1], 16);
	for (off = 16; off + 8 <= (size_t)st.st_size;) {
		struct perf_event_header h;

		memcpy(&h, raw + off, sizeof(h));
		assert_true(h.size >= 8);
		if (h.type == 64)
			attrs++;
		if (h.type == 80) {
			uint64_t feat;

			memcpy(&feat, raw + off + 8, 8);
			assert_true(feat <= 32);
			if (feat == 32) {
				assert_int_equal(h.size, 16);
				marker++;
			}
		}
		off += h.size;
	}
	assert_int_equal(off, (size_t)st.st_size);
	assert_int_equal(attrs, 1);
	assert_int_equal(marker, 1);
	free(raw);

	assert_int_equal(tally_data__open(&d, path, NULL, &derr), 0);
	assert_true(tally_data__is_pipe(d));
	assert_int_equal(tally_data__for_each(d, 0, count_cb, &c, &derr), 0);
	assert_int_equal(tally_data__nr_events(d), 1);
	assert_string_equal(tally_data__event(d, 0)->name, "cpu-clock");
	assert_int_equal(c.samples, 10);
	assert_int_equal(c.comm, 1);
	tally_data__delete(d);
}

/* Write N samples to PATH with OPTS (with MANY, also one write of 4096 at once, past
 * the output buffer, half way). */
static void write_samples(const char *path, const struct tally_writer_opts *o, size_t n,
			  bool many_too)
{
	struct perf_event_attr a;
	struct tally_writer *w;
	struct sample_rec s, *many = calloc(4096, sizeof(*many));
	size_t i;

	assert_non_null(many);
	assert_int_equal(tally_writer__open(&w, path, o), 0);
	sample_attr(&a, PERF_COUNT_SW_CPU_CLOCK);
	assert_int_equal(tally_writer__add_event(w, &a, "cpu-clock", NULL, 0), 0);
	assert_int_equal(tally_writer__start(w), 0);
	for (i = 0; i < n; i++) {
		make_sample(&s, i, 1);
		assert_int_equal(tally_writer__write(w, &s, sizeof(s)), 0);
		if (many_too && i == n / 2) {	/* a ring's worth in one write (> 256 KiB) */
			for (size_t k = 0; k < 4096; k++)
				make_sample(&many[k], i, 1);
			assert_int_equal(tally_writer__write(w, many, 4096 * sizeof(*many)), 0);
		}
	}
	assert_int_equal(tally_writer__finish(w), 0);
	tally_writer__delete(w);
	free(many);
}

static void *read_all(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

static void test_compressed(void **state)
{
	struct tally_writer_opts o = { .compress_level = 3 };
	struct tally_data *d;
	struct tally_data_error derr;
	struct sample_rec s;
	struct counts c = { 0 };
	struct tally_file_header fh;
	struct stat st;
	char path[256];
	const void *buf;
	size_t len, n = 20000;

	(void)state;
	path_of(path, sizeof(path), "z.data");
	write_samples(path, &o, n, false);

	read_header(path, &fh, &st);
	assert_true(fh.data.size < n * sizeof(s) / 4);	/* it did compress */
	assert_int_equal(tally_data__open(&d, path, NULL, &derr), 0);
	assert_int_equal(tally_data__feature(d, TALLY_FEAT_COMPRESSED, &buf, &len), 0);
	assert_int_equal(len, 20);
	assert_int_equal(u32_at(buf, 1), 1);	/* zstd */
	assert_int_equal(u32_at(buf, 2), 3);	/* level */
	assert_true(u32_at(buf, 3) >= 4);	/* ratio */
	assert_int_equal(u32_at(buf, 4), 528384);
	assert_int_equal(tally_data__for_each(d, 0, count_cb, &c, &derr), 0);
	assert_int_equal(c.samples, n);
	assert_int_equal(c.bad_order, 0);
	assert_int_equal(c.last_time, 1000 + n - 1);
	tally_data__delete(d);
}

/* A write that fails half way (file size limit: EFBIG, as ENOSPC would): the header
 * must describe exactly the whole records on disk, and claim no features. */
static void test_write_error(void **state)
{
	struct perf_event_attr a;
	struct tally_writer *w;
	struct tally_data *d;
	struct tally_data_error derr;
	struct tally_file_header fh;
	struct sample_rec s;
	struct counts c = { 0 };
	struct rlimit old, lim;
	struct stat st;
	char path[256];
	size_t i;
	int err = 0;

	(void)state;
	path_of(path, sizeof(path), "full.data");
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(tally_writer__open(&w, path, NULL), 0);
	sample_attr(&a, PERF_COUNT_SW_CPU_CLOCK);
	assert_int_equal(tally_writer__add_event(w, &a, "cpu-clock", NULL, 0), 0);
	assert_int_equal(tally_writer__set_host_features(w, "0.1.0"), 0);
	assert_int_equal(tally_writer__start(w), 0);
	lim = old;
	lim.rlim_cur = 100000 + 13;	/* not on a record boundary */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (i = 0; i < 100000 && !err; i++) {
		make_sample(&s, i, 1);
		err = tally_writer__write(w, &s, sizeof(s));
	}
	assert_int_equal(err, -EFBIG);
	assert_int_equal(tally_writer__write(w, &s, sizeof(s)), -EFBIG);	/* sticky */
	assert_int_equal(tally_writer__finish(w), -EFBIG);
	tally_writer__delete(w);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);

	read_header(path, &fh, &st);
	assert_true(fh.data.size > 0);
	assert_int_equal(fh.data.size % sizeof(s), 0);
	assert_int_equal(fh.data.offset + fh.data.size, (uint64_t)st.st_size);
	assert_int_equal(fh.adds_features[0], 0);
	assert_int_equal(tally_data__open(&d, path, NULL, &derr), 0);
	assert_int_equal(tally_data__for_each(d, 0, count_cb, &c, &derr), 0);
	assert_int_equal(c.samples, fh.data.size / sizeof(s));
	assert_int_equal(tally_data__truncated(d), 0);
	tally_data__delete(d);
}

/* opts.aio: the same file, byte for byte, whatever the number of blocks in flight,
 * compressed or not (the data goes out in many 256 KiB blocks here). */
static void test_aio(void **state)
{
	static const unsigned blocks[] = { 1, 2, 4 };
	char ref[256], path[256];
	size_t n = 60000, rlen, len;
	void *want, *got;

	(void)state;
	for (int z = 0; z <= 3; z += 3) {
		struct tally_writer_opts o = { .compress_level = z };

		path_of(ref, sizeof(ref), "sync.data");
		write_samples(ref, &o, n, true);
		want = read_all(ref, &rlen);
		for (size_t b = 0; b < 3; b++) {
			o.aio = blocks[b];
			path_of(path, sizeof(path), "aio.data");
			write_samples(path, &o, n, true);
			got = read_all(path, &len);
			assert_int_equal(len, rlen);
			assert_memory_equal(got, want, len);
			free(got);
		}
		free(want);
	}
	{
		struct tally_writer *w;
		struct tally_writer_opts o = { .aio = 5 };

		path_of(path, sizeof(path), "aio5.data");
		assert_int_equal(tally_writer__open(&w, path, &o), -EINVAL);
	}
}

static void test_features_raw(void **state)
{
	struct tally_writer *w;
	struct tally_writer_opts o = { .no_backup = true };
	char path[256];
	const void *buf;
	size_t len;
	const char *list[] = { "a", "bc" };

	(void)state;
	path_of(path, sizeof(path), "feat.data");
	assert_int_equal(tally_writer__open(&w, path, &o), 0);
	/* Strings are u32 len (rounded up to 64) + zero-padded bytes. */
	assert_int_equal(tally_writer__set_feature_string(w, TALLY_FEAT_HOSTNAME, "vm"), 0);
	buf = tally_writer__feature(w, TALLY_FEAT_HOSTNAME, &len);
	assert_int_equal(len, 68);
	assert_int_equal(u32_at(buf, 0), 64);
	assert_string_equal((const char *)buf + 4, "vm");
	assert_int_equal(((const char *)buf)[67], 0);
	assert_int_equal(tally_writer__set_feature_strings(w, TALLY_FEAT_CMDLINE, list, 2), 0);
	buf = tally_writer__feature(w, TALLY_FEAT_CMDLINE, &len);
	assert_int_equal(len, 4 + 2 * 68);
	/* Flag-only features and clearing. */
	assert_int_equal(tally_writer__set_feature(w, TALLY_FEAT_STAT, NULL, 0), 0);
	assert_true(tally_writer__has_feature(w, TALLY_FEAT_STAT));
	tally_writer__clear_feature(w, TALLY_FEAT_STAT);
	assert_false(tally_writer__has_feature(w, TALLY_FEAT_STAT));
	assert_int_equal(tally_writer__set_feature(w, 0, NULL, 0), -EINVAL);
	assert_int_equal(tally_writer__set_feature(w, 256, NULL, 0), -EINVAL);
	/* No events: nothing to start. */
	assert_int_equal(tally_writer__start(w), -EINVAL);
	tally_writer__delete(w);
	tally_writer__delete(NULL);
}

static void test_tracing_data(void **state)
{
	struct perf_event_attr a;
	struct tally_writer *w;
	struct tally_writer_opts o = { .no_backup = true };
	char path[256];
	const unsigned char *buf;
	size_t len;
	uint64_t id;

	char tdir[PATH_MAX - 64], idpath[PATH_MAX];

	(void)state;
	/* tracefs is mounted on demand: only a kernel without it, or no root, skips */
	if (tally_tracefs__find(NULL, tdir, sizeof(tdir))) {
		print_message("tracefs unusable here: skipping TRACING_DATA\n");
		skip();
		return;
	}
	snprintf(idpath, sizeof(idpath), "%s/events/sched/sched_switch/id", tdir);
	assert_int_equal(tly_read_file_u64(idpath, &id), 0);
	path_of(path, sizeof(path), "tp.data");
	assert_int_equal(tally_writer__open(&w, path, &o), 0);
	sample_attr(&a, PERF_COUNT_SW_CPU_CLOCK);
	assert_int_equal(tally_writer__add_event(w, &a, "cpu-clock", NULL, 0), 0);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = id;
	assert_int_equal(tally_writer__add_event(w, &a, "sched:sched_switch", NULL, 0), 1);
	assert_int_equal(tally_writer__set_tracing_data(w), 0);
	buf = tally_writer__feature(w, TALLY_FEAT_TRACING_DATA, &len);
	assert_non_null(buf);
	assert_memory_equal(buf, "\027\bDtracing0.6", 14);
	assert_int_equal(buf[14], 0);		/* little endian */
	assert_int_equal(buf[15], sizeof(long));
	assert_memory_equal(buf + 20, "header_page", 12);
	assert_non_null(memmem(buf, len, "sched\0", 6));
	assert_non_null(memmem(buf, len, "name: sched_switch", 18));
	tally_writer__delete(w);
}

/* ---- synthesized side-band (the records the writer is given for running targets) ---- */

struct synth_seen {
	int comm, fork, mmap2, mmap, data_maps;
	char names[8][64];
	int nr_names;
	uint64_t anon_start;
	int bad;
	size_t trailer;
};

static int synth_cb(void *arg, const struct perf_event_header *h)
{
	struct synth_seen *s = arg;
	const char *p = (const char *)h;

	if (h->size % 8 || h->size < 8 + s->trailer) {
		s->bad++;
		return 0;
	}
	/* The sample_id trailer is zeroed. */
	for (size_t i = h->size - s->trailer; i < h->size; i++)
		if (p[i])
			s->bad++;
	switch (h->type) {
	case PERF_RECORD_COMM:
		s->comm++;
		if (s->nr_names < 8)
			snprintf(s->names[s->nr_names++], 64, "comm:%s", p + 16);
		break;
	case PERF_RECORD_FORK: {
		const uint32_t *u = (const uint32_t *)(p + 8);	/* pid, ppid, tid, ptid */

		s->fork++;
		if (s->nr_names < 8)
			snprintf(s->names[s->nr_names++], 64, "fork:%u/%u<%u/%u%s", u[0], u[2], u[1],
				 u[3], h->misc & PERF_RECORD_MISC_FORK_EXEC ? " exec" : "");
		break;
	}
	case PERF_RECORD_MMAP2: {
		uint64_t start;

		memcpy(&start, p + 16, 8);
		s->mmap2++;
		if (h->misc & PERF_RECORD_MISC_MMAP_DATA)
			s->data_maps++;
		if (!strcmp(p + 72, "//anon"))
			s->anon_start = start;
		if (s->nr_names < 8)
			snprintf(s->names[s->nr_names++], 64, "map:%s", p + 72);
		break;
	}
	case PERF_RECORD_MMAP:
		s->mmap++;
		if (s->nr_names < 8)
			snprintf(s->names[s->nr_names++], 64, "kmap:%s", p + 40);
		break;
	default:
		s->bad++;
	}
	return 0;
}

static void put_file(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_synth_fake_proc(void **state)
{
	char root[256], path[512];
	struct synth_seen seen;
	struct tally_synth_opts o;
	struct perf_event_attr a;
	int i;

	(void)state;
	path_of(root, sizeof(root), "proc");
	const char *dirs[] = { "", "/42", "/42/task", "/42/task/42", "/42/task/43" };
	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	put_file(root, "42/task/42/comm", "worker\n");
	put_file(root, "42/task/43/comm", "helper\n");
	put_file(root, "42/status", "Name:\tworker\nTgid:\t42\nPid:\t43\nPPid:\t7\n");
	put_file(root, "42/maps",
		 "55d0c0a4a000-55d0c0a4b000 r--p 00000000 fe:00 123 /usr/bin/worker\n"
		 "55d0c0a4b000-55d0c0a4c000 r-xp 00001000 fe:00 123 /usr/bin/worker\n"
		 "55d0c0a4d000-55d0c0a4e000 rw-p 00003000 fe:00 123 /usr/bin/worker\n"
		 "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n"
		 "7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                          [vdso]\n"
		 "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n");
	put_file(root, "kallsyms",
		 "0000000000000000 A fixed_percpu_data\n"
		 "ffffffff81000000 T _text\n"
		 "ffffffff81000100 T startup_64\n"
		 "ffffffff82000000 T _etext\n");
	put_file(root, "modules", "");

	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	assert_int_equal(tally_synth__id_hdr_size(&a), 0);	/* no sample_id_all */
	a.sample_id_all = 1;
	assert_int_equal(tally_synth__id_hdr_size(&a), 24);

	memset(&o, 0, sizeof(o));
	o.id_hdr_size = 24;
	o.proc = root;
	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__process(42, &o, synth_cb, &seen), 0);
	assert_int_equal(seen.bad, 0);
	assert_int_equal(seen.comm, 2);
	assert_int_equal(seen.fork, 0);		/* -p: the COMMs alone, as perf */
	assert_int_equal(seen.mmap2, 3);	/* exe text, anon rwx, vdso; no vsyscall */
	assert_int_equal(seen.anon_start, 0x7f0000000000ULL);
	assert_int_equal(seen.data_maps, 0);

	/* -d: file-backed data maps too, marked MMAP_DATA. */
	o.data_maps = true;
	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__process(42, &o, synth_cb, &seen), 0);
	assert_int_equal(seen.mmap2, 5);
	assert_int_equal(seen.data_maps, 2);

	/* -a: each thread's FORK, then its COMM (a FORK after it would rename the thread
	 * after its process); the main thread forked from the parent process */
	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__all(&o, synth_cb, &seen), 0);
	assert_int_equal(seen.bad, 0);
	assert_int_equal(seen.fork, 2);
	for (i = 0; i < 4; i += 2) {
		char want[64];
		bool main_thread = !strcmp(seen.names[i + 1], "comm:worker");

		assert_true(main_thread || !strcmp(seen.names[i + 1], "comm:helper"));
		snprintf(want, sizeof(want), "fork:42/%d<%d/%d exec", main_thread ? 42 : 43,
			 main_thread ? 7 : 42, main_thread ? 7 : 42);
		assert_string_equal(seen.names[i], want);
	}

	/* One thread (-t): its COMM only, and the process's maps. */
	o.data_maps = false;
	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__thread(43, &o, synth_cb, &seen), -ESRCH);	/* no /proc/43 */
	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__process(7, &o, synth_cb, &seen), -ESRCH);

	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__kernel_map(&o, synth_cb, &seen), 0);
	assert_int_equal(seen.mmap, 1);
	assert_string_equal(seen.names[0], "kmap:[kernel.kallsyms]_text");
	assert_int_equal(tally_synth__modules(&o, synth_cb, &seen), 0);
	assert_int_equal(seen.mmap, 1);

	/* Hidden kernel addresses (kptr_restrict): no kernel map rather than a wrong one. */
	put_file(root, "kallsyms", "0000000000000000 T _text\n0000000000000000 T _etext\n");
	assert_int_equal(tally_synth__kernel_map(&o, synth_cb, &seen), -ENOENT);
	put_file(root, "modules", "virtio_net 65536 0 - Live 0xffffffffc0010000\n");
	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__modules(&o, synth_cb, &seen), 0);
	assert_int_equal(seen.mmap, 1);
	assert_true(strstr(seen.names[0], "virtio_net") != NULL);

	memset(&seen, 0, sizeof(seen));
	seen.trailer = 24;
	assert_int_equal(tally_synth__comm(5, 5, "tally-exec", &o, synth_cb, &seen), 0);
	assert_string_equal(seen.names[0], "comm:tally-exec");
}

/* The real /proc: ourselves. */
static void test_synth_self(void **state)
{
	struct synth_seen seen;
	struct tally_synth_opts o = { 16, false, NULL };
	char comm[64] = "";
	FILE *f = fopen("/proc/self/comm", "r");
	int i, found = 0;

	(void)state;
	assert_non_null(f);
	assert_non_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	memset(&seen, 0, sizeof(seen));
	seen.trailer = 16;
	assert_int_equal(tally_synth__process(getpid(), &o, synth_cb, &seen), 0);
	assert_int_equal(seen.bad, 0);
	assert_true(seen.comm >= 1);
	assert_true(seen.mmap2 >= 2);	/* our text and libc's at least */
	for (i = 0; i < seen.nr_names; i++)
		if (!strncmp(seen.names[i], "comm:", 5) && !strcmp(seen.names[i] + 5, comm))
			found = 1;
	assert_true(found);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_mode),
		cmocka_unit_test(test_attr_sizes),
		cmocka_unit_test(test_backup),
		cmocka_unit_test(test_pipe_mode),
		cmocka_unit_test(test_compressed),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_aio),
		cmocka_unit_test(test_features_raw),
		cmocka_unit_test(test_tracing_data),
		cmocka_unit_test(test_synth_fake_proc),
		cmocka_unit_test(test_synth_self),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
