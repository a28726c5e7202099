/*
 * The ring-buffer reader over a synthetic ring laid out like the kernel's (a metadata
 * page, then a power-of-two data area): plain records, a record that wraps the end,
 * a record announced but not fully published, LOST/LOST_SAMPLES/THROTTLE counting, a
 * damaged header, and one real software-event ring from the kernel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <tally/ring.h>

#define DATA_SIZE 4096
#define META_SIZE 4096

struct fake {
	unsigned char *mem;	/* META_SIZE + DATA_SIZE */
	struct perf_event_mmap_page *meta;
	uint64_t head;		/* where the "kernel" writes next */
};

static void fake_init(struct fake *f, uint64_t start)
{
	f->mem = aligned_alloc(4096, META_SIZE + DATA_SIZE);
	assert_non_null(f->mem);
	memset(f->mem, 0xAA, META_SIZE + DATA_SIZE);
	f->meta = (struct perf_event_mmap_page *)f->mem;
	memset(f->meta, 0, sizeof(*f->meta));
	f->meta->data_offset = META_SIZE;
	f->meta->data_size = DATA_SIZE;
	f->meta->data_head = start;
	f->meta->data_tail = start;
	f->head = start;
}

/* Write LEN bytes at the kernel's position, wrapping; do not publish. */
static void fake_put(struct fake *f, const void *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		f->mem[META_SIZE + ((f->head + i) & (DATA_SIZE - 1))] = ((const unsigned char *)p)[i];
	f->head += len;
}

static void fake_publish(struct fake *f)
{
	__atomic_store_n(&f->meta->data_head, f->head, __ATOMIC_RELEASE);
}

/* A record of TYPE and SIZE whose payload bytes are SEED, SEED+1, ... */
static void make_record(unsigned char *buf, uint32_t type, uint16_t size, unsigned char seed)
{
	struct perf_event_header h = { type, 0, size };
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i < size; i++)
		buf[i] = (unsigned char)(seed + i);
}

static void test_empty_and_plain(void **state)
{
	struct fake f;
	struct tally_ring *r;
	const struct perf_event_header *h;
	unsigned char rec[3][40];
	struct tally_ring_stats st;
	const void *p1, *p2;
	size_t l1, l2, i;

	(void)state;
	fake_init(&f, 0);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, DATA_SIZE), 0);
	assert_int_equal(tally_ring__read(r, &h), 0);
	assert_int_equal(tally_ring__avail(r), 0);

	for (i = 0; i < 3; i++) {
		make_record(rec[i], PERF_RECORD_SAMPLE, 40, (unsigned char)(i * 10));
		fake_put(&f, rec[i], 40);
	}
	fake_publish(&f);
	assert_int_equal(tally_ring__avail(r), 120);
	for (i = 0; i < 3; i++) {
		assert_int_equal(tally_ring__read(r, &h), 1);
		assert_memory_equal(h, rec[i], 40);
	}
	assert_int_equal(tally_ring__read(r, &h), 0);
	assert_int_equal(tally_ring__span(r, &p1, &l1, &p2, &l2), 120);
	assert_int_equal(l1, 120);
	assert_int_equal(l2, 0);
	assert_memory_equal(p1, rec, 120);
	/* Nothing handed back until consume. */
	assert_int_equal(f.meta->data_tail, 0);
	tally_ring__consume(r);
	assert_int_equal(f.meta->data_tail, 120);
	tally_ring__stats(r, &st);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.samples, 3);
	assert_int_equal(st.bytes, 120);
	assert_int_equal(st.wraps, 0);
	tally_ring__delete(r);
	free(f.mem);
}

static void test_wrap(void **state)
{
	struct fake f;
	struct tally_ring *r;
	const struct perf_event_header *h;
	unsigned char a[24], b[64], c[16], joined[104];
	struct tally_ring_stats st;
	const void *p1, *p2;
	size_t l1, l2;

	(void)state;
	/* Positions are free-running u64s: start near the end of the second lap. */
	fake_init(&f, 2 * DATA_SIZE - 40);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, DATA_SIZE), 0);
	make_record(a, PERF_RECORD_MMAP2, sizeof(a), 1);
	make_record(b, PERF_RECORD_SAMPLE, sizeof(b), 50);	/* 16 bytes before the end, 48 after */
	make_record(c, PERF_RECORD_COMM, sizeof(c), 200);
	fake_put(&f, a, sizeof(a));
	fake_put(&f, b, sizeof(b));
	fake_put(&f, c, sizeof(c));
	fake_publish(&f);

	assert_int_equal(tally_ring__read(r, &h), 1);
	assert_memory_equal(h, a, sizeof(a));
	assert_int_equal(tally_ring__read(r, &h), 1);
	assert_int_equal(h->size, sizeof(b));
	assert_memory_equal(h, b, sizeof(b));		/* contiguous copy of a wrapped record */
	assert_int_equal(tally_ring__read(r, &h), 1);
	assert_memory_equal(h, c, sizeof(c));
	assert_int_equal(tally_ring__read(r, &h), 0);

	memcpy(joined, a, sizeof(a));
	memcpy(joined + 24, b, sizeof(b));
	memcpy(joined + 88, c, sizeof(c));
	assert_int_equal(tally_ring__span(r, &p1, &l1, &p2, &l2), 104);
	assert_int_equal(l1, 40);
	assert_int_equal(l2, 64);
	assert_memory_equal(p1, joined, 40);
	assert_memory_equal(p2, joined + 40, 64);
	tally_ring__consume(r);
	assert_int_equal(f.meta->data_tail, 2 * DATA_SIZE + 64);
	tally_ring__stats(r, &st);
	assert_int_equal(st.wraps, 1);
	assert_int_equal(st.records, 3);

	/* A record whose header itself straddles the end. */
	tally_ring__delete(r);
	free(f.mem);
	fake_init(&f, DATA_SIZE - 4);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, DATA_SIZE), 0);
	fake_put(&f, b, sizeof(b));
	fake_publish(&f);
	assert_int_equal(tally_ring__read(r, &h), 1);
	assert_memory_equal(h, b, sizeof(b));
	tally_ring__delete(r);
	free(f.mem);
}

static void test_partial(void **state)
{
	struct fake f;
	struct tally_ring *r;
	const struct perf_event_header *h;
	unsigned char a[64];
	const void *p1, *p2;
	size_t l1, l2;

	(void)state;
	fake_init(&f, 0);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, DATA_SIZE), 0);
	make_record(a, PERF_RECORD_SAMPLE, sizeof(a), 7);
	fake_put(&f, a, 32);
	fake_publish(&f);		/* only half of it is visible */
	assert_int_equal(tally_ring__read(r, &h), 0);
	assert_int_equal(tally_ring__span(r, &p1, &l1, &p2, &l2), 0);
	tally_ring__consume(r);
	assert_int_equal(f.meta->data_tail, 0);	/* the partial record is not given back */
	fake_put(&f, a + 32, 32);
	fake_publish(&f);
	assert_int_equal(tally_ring__read(r, &h), 1);
	assert_memory_equal(h, a, sizeof(a));
	/* Fewer than 8 bytes published: not even a header. */
	fake_put(&f, a, 4);
	fake_publish(&f);
	assert_int_equal(tally_ring__read(r, &h), 0);
	tally_ring__delete(r);
	free(f.mem);
}

static void test_lost_and_throttle(void **state)
{
	struct fake f;
	struct tally_ring *r;
	const struct perf_event_header *h;
	struct tally_ring_stats st;
	struct { struct perf_event_header h; uint64_t id, lost; } lost = {
		{ PERF_RECORD_LOST, 0, sizeof(lost) }, 42, 7 };
	struct { struct perf_event_header h; uint64_t lost; } ls = {
		{ PERF_RECORD_LOST_SAMPLES, 0, sizeof(ls) }, 3 };
	struct { struct perf_event_header h; uint64_t time, id, stream; } th = {
		{ PERF_RECORD_THROTTLE, 0, sizeof(th) }, 1, 2, 3 };
	int n = 0;

	(void)state;
	fake_init(&f, 0);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, DATA_SIZE), 0);
	fake_put(&f, &lost, sizeof(lost));
	fake_put(&f, &lost, sizeof(lost));
	fake_put(&f, &ls, sizeof(ls));
	fake_put(&f, &th, sizeof(th));
	th.h.type = PERF_RECORD_UNTHROTTLE;
	fake_put(&f, &th, sizeof(th));
	fake_publish(&f);
	while (tally_ring__read(r, &h) == 1)
		n++;
	assert_int_equal(n, 5);
	tally_ring__stats(r, &st);
	assert_int_equal(st.lost_records, 2);
	assert_int_equal(st.lost, 14);
	assert_int_equal(st.lost_samples, 3);
	assert_int_equal(st.throttle, 1);
	assert_int_equal(st.unthrottle, 1);
	assert_int_equal(st.samples, 0);
	tally_ring__delete(r);
	free(f.mem);
}

static void test_damaged(void **state)
{
	struct fake f;
	struct tally_ring *r;
	const struct perf_event_header *h;
	struct perf_event_header bad = { PERF_RECORD_SAMPLE, 0, 4 };	/* size < 8 */
	uint32_t pad = 0;

	(void)state;
	fake_init(&f, 0);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, DATA_SIZE), 0);
	fake_put(&f, &bad, sizeof(bad));
	fake_put(&f, &pad, sizeof(pad));
	fake_publish(&f);
	assert_int_equal(tally_ring__read(r, &h), -EBADMSG);
	tally_ring__skip_all(r);
	assert_int_equal(f.meta->data_tail, 12);
	assert_int_equal(tally_ring__read(r, &h), 0);
	tally_ring__delete(r);

	/* Bad geometry is refused. */
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, 3000), -EINVAL);
	assert_null(r);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, 2 * DATA_SIZE), -EINVAL);
	tally_ring__delete(NULL);
	free(f.mem);
}

/* A reader lapped by the kernel (possible only for read-only rings) starts over at head. */
static void test_lapped(void **state)
{
	struct fake f;
	struct tally_ring *r;
	const struct perf_event_header *h;
	struct tally_ring_stats st;
	unsigned char a[64];
	int i;

	(void)state;
	fake_init(&f, 0);
	assert_int_equal(tally_ring__wrap(&r, f.mem, META_SIZE, DATA_SIZE), 0);
	make_record(a, PERF_RECORD_SAMPLE, sizeof(a), 3);
	for (i = 0; i < DATA_SIZE / 64 + 2; i++)
		fake_put(&f, a, sizeof(a));
	fake_publish(&f);
	assert_int_equal(tally_ring__read(r, &h), 0);
	tally_ring__stats(r, &st);
	assert_int_equal(st.overwritten, DATA_SIZE + 128);
	fake_put(&f, a, sizeof(a));
	fake_publish(&f);
	assert_int_equal(tally_ring__read(r, &h), 1);
	assert_memory_equal(h, a, sizeof(a));
	tally_ring__delete(r);
	free(f.mem);
}

/* A real ring: task-clock sampling on ourselves, read back as SAMPLE records. */
static void test_real_kernel(void **state)
{
	struct perf_event_attr a;
	struct tally_ring *r;
	const struct perf_event_header *h;
	volatile uint64_t x = 0;
	int fd, got = 0, tries;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 100000;	/* every 0.1 ms of CPU */
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		skip();
		return;
	}
	assert_int_equal(tally_ring__mmap(&r, fd, 3, true), -EINVAL);	/* not a power of two */
	assert_int_equal(tally_ring__mmap(&r, fd, 4, true), 0);
	assert_int_equal(tally_ring__data_size(r), 4 * (size_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(tally_ring__fd(r), fd);
	for (tries = 0; tries < 200 && got < 5; tries++) {
		uint64_t i;

		for (i = 0; i < 200000; i++)
			x += i;
		while (tally_ring__read(r, &h) == 1) {
			if (h->type == PERF_RECORD_SAMPLE) {
				const uint32_t *pid = (const uint32_t *)((const char *)(h + 1) + 8);

				assert_int_equal(pid[0], getpid());
				got++;
			}
		}
		tally_ring__consume(r);
	}
	assert_true(got >= 5);
	/* stop the counter, then drain: the kernel writes no more, so all is consumed */
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	while (tally_ring__read(r, &h) == 1)
		;
	tally_ring__consume(r);
	assert_int_equal(tally_ring__meta(r)->data_tail, tally_ring__meta(r)->data_head);
	tally_ring__delete(r);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_plain),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_lost_and_throttle),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_lapped),
		cmocka_unit_test(test_real_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
