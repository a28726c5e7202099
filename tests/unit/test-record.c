/*
 * The record decoder: every sample_type field in kernel order, the sample_id
 * trailer, peek_id, and records shorter than their fields say.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tally/record.h"

/* Build a record from u64 words after an 8-byte header. */
struct rec {
	union {
		struct perf_event_header hdr;
		uint64_t w[512];
	};
	size_t n;	/* words used including the header */
};

static void rec_init(struct rec *r, uint32_t type)
{
	memset(r, 0, sizeof(*r));
	r->hdr.type = type;
	r->n = 1;
}

static void put(struct rec *r, uint64_t v)
{
	r->w[r->n++] = v;
}

static void put2(struct rec *r, uint32_t a, uint32_t b)
{
	put(r, (uint64_t)b << 32 | a);
}

static void rec_done(struct rec *r)
{
	r->hdr.size = (uint16_t)(r->n * 8);
}

static void all_fields(void **state)
{
	(void)state;
	struct perf_event_attr attr = {
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
			       PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			       PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
			       PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER |
			       PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC |
			       PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR |
			       PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP |
			       PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE |
			       PERF_SAMPLE_AUX,
		.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST |
			       PERF_FORMAT_TOTAL_TIME_ENABLED,
		.sample_regs_user = 0x7, .sample_regs_intr = 0x3,
		.branch_sample_type = PERF_SAMPLE_BRANCH_HW_INDEX | PERF_SAMPLE_BRANCH_ANY,
		.sample_id_all = 1,
	};
	struct tally_sample_layout l;
	struct tally_sample s;
	struct tally_read_value v;
	struct rec r;

	tally_sample_layout__from_attr(&l, &attr);
	rec_init(&r, PERF_RECORD_SAMPLE);
	r.hdr.misc = PERF_RECORD_MISC_USER;
	put(&r, 77);			/* identifier */
	put(&r, 0x401000);		/* ip */
	put2(&r, 100, 101);		/* pid tid */
	put(&r, 123456789);		/* time */
	put(&r, 0xdead);		/* addr */
	put(&r, 77);			/* id */
	put(&r, 78);			/* stream id */
	put2(&r, 3, 0);			/* cpu */
	put(&r, 250000);		/* period */
	put(&r, 2); put(&r, 1000);	/* group nr, time_enabled */
	put(&r, 11); put(&r, 77); put(&r, 0);
	put(&r, 22); put(&r, 79); put(&r, 5);
	put(&r, 3);			/* callchain */
	put(&r, PERF_CONTEXT_USER); put(&r, 0x401000); put(&r, 0x402000);
	/* raw: u32 size 4 + 4 bytes = 8, no pad */
	put(&r, (uint64_t)0xaabbccdd << 32 | 4);
	put(&r, 1); put(&r, 9);		/* branch nr, hw_idx */
	put(&r, 0x10); put(&r, 0x20); put(&r, 0);
	put(&r, 2);			/* user regs abi */
	put(&r, 1); put(&r, 2); put(&r, 3);
	put(&r, 16);			/* stack size */
	put(&r, 0x1111); put(&r, 0x2222);
	put(&r, 8);			/* dyn size */
	put(&r, 42);			/* weight */
	put(&r, 43);			/* data_src */
	put(&r, 44);			/* transaction */
	put(&r, 1); put(&r, 5); put(&r, 6);	/* intr regs */
	put(&r, 0x5000);		/* phys */
	put(&r, 7);			/* cgroup */
	put(&r, 4096); put(&r, 8192);	/* page sizes */
	put(&r, 8); put(&r, 0x99);	/* aux */
	rec_done(&r);

	assert_int_equal(tally_sample__parse(&l, &r.hdr, &s), 0);
	assert_int_equal(s.identifier, 77);
	assert_int_equal(s.ip, 0x401000);
	assert_int_equal(s.pid, 100);
	assert_int_equal(s.tid, 101);
	assert_int_equal(s.time, 123456789);
	assert_int_equal(s.addr, 0xdead);
	assert_int_equal(s.id, 77);
	assert_int_equal(s.stream_id, 78);
	assert_int_equal(s.cpu, 3);
	assert_int_equal(s.period, 250000);
	assert_int_equal(s.read.nr, 2);
	assert_int_equal(s.read.time_enabled, 1000);
	assert_int_equal(tally_sample__read_value(&s, 1, &v), 0);
	assert_int_equal(v.value, 22);
	assert_int_equal(v.id, 79);
	assert_int_equal(v.lost, 5);
	assert_int_equal(tally_sample__read_value(&s, 2, &v), -ENOENT);
	assert_int_equal(s.callchain_nr, 3);
	assert_int_equal(s.callchain[2], 0x402000);
	assert_int_equal(s.raw_size, 4);
	assert_int_equal(*(const uint32_t *)s.raw, 0xaabbccdd);
	assert_int_equal(s.branch_nr, 1);
	assert_int_equal(s.branch_hw_idx, 9);
	assert_int_equal(s.branches[0].from, 0x10);
	assert_int_equal(s.branches[0].to, 0x20);
	assert_int_equal(s.user_regs_abi, 2);
	assert_int_equal(s.user_regs[2], 3);
	assert_int_equal(s.user_stack_size, 16);
	assert_int_equal(s.user_stack_dyn_size, 8);
	assert_int_equal(((const uint64_t *)s.user_stack)[1], 0x2222);
	assert_int_equal(s.weight, 42);
	assert_int_equal(s.data_src, 43);
	assert_int_equal(s.transaction, 44);
	assert_int_equal(s.intr_regs[1], 6);
	assert_int_equal(s.phys_addr, 0x5000);
	assert_int_equal(s.cgroup, 7);
	assert_int_equal(s.data_page_size, 4096);
	assert_int_equal(s.code_page_size, 8192);
	assert_int_equal(s.aux_size, 8);

	uint64_t id = 0;
	assert_int_equal(tally_record__peek_id(&l, &r.hdr, &id), 0);
	assert_int_equal(id, 77);

	/* Every shorter size is rejected, never read past. */
	for (size_t sz = 8; sz < r.hdr.size; sz += 8) {
		struct rec c = r;
		c.hdr.size = (uint16_t)sz;
		assert_int_equal(tally_sample__parse(&l, &c.hdr, &s), -EINVAL);
	}
}

static void read_single_and_raw_padding(void **state)
{
	(void)state;
	struct tally_sample_layout l = {
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_READ | PERF_SAMPLE_RAW |
			       PERF_SAMPLE_PERIOD,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
			       PERF_FORMAT_ID,
	};
	struct tally_sample s;
	struct tally_read_value v;
	struct rec r;

	rec_init(&r, PERF_RECORD_SAMPLE);
	put(&r, 0x1234);
	put(&r, 1);
	put(&r, 50); put(&r, 10); put(&r, 9); put(&r, 1234);
	put(&r, (uint64_t)0x01020304 << 32 | 12);	/* raw size 12: 4 + 12 = 16 */
	put(&r, 0x0807060504030201ULL);
	put(&r, 5);		/* after raw, next field would start here */
	rec_done(&r);
	assert_int_equal(tally_sample__parse(&l, &r.hdr, &s), 0);
	assert_int_equal(s.period, 1);
	assert_int_equal(s.read.nr, 1);
	assert_int_equal(s.read.time_enabled, 10);
	assert_int_equal(s.read.time_running, 9);
	assert_int_equal(tally_sample__read_value(&s, 0, &v), 0);
	assert_int_equal(v.value, 50);
	assert_int_equal(v.id, 1234);
	assert_int_equal(s.raw_size, 12);

	/* huge counts never overflow the cursor */
	struct tally_sample_layout cl = { .sample_type = PERF_SAMPLE_CALLCHAIN };
	rec_init(&r, PERF_RECORD_SAMPLE);
	put(&r, UINT64_MAX / 4);
	put(&r, 0);
	rec_done(&r);
	assert_int_equal(tally_sample__parse(&cl, &r.hdr, &s), -EINVAL);
	struct perf_event_header tiny = { .type = PERF_RECORD_SAMPLE, .size = 4 };
	assert_int_equal(tally_sample__parse(&cl, &tiny, &s), -EINVAL);
}

static void trailer_and_peek(void **state)
{
	(void)state;
	struct tally_sample_layout l = {
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD,
		.sample_id_all = true,
	};
	struct tally_sample_id sid;
	struct rec r;
	uint64_t id = 0;

	assert_int_equal(tally_sample_id__size(&l), 32);
	rec_init(&r, PERF_RECORD_COMM);
	put2(&r, 5, 6);
	put(&r, 0x6f6f66);		/* "foo" */
	put2(&r, 5, 6);			/* trailer: tid */
	put(&r, 999);			/* time */
	put(&r, 31);			/* id */
	put2(&r, 1, 0);			/* cpu */
	rec_done(&r);
	assert_int_equal(tally_sample_id__parse(&l, &r.hdr, &sid), 0);
	assert_true(sid.has_tid && sid.has_time && sid.has_id && sid.has_cpu);
	assert_false(sid.has_stream_id);
	assert_int_equal(sid.tid, 6);
	assert_int_equal(sid.time, 999);
	assert_int_equal(sid.id, 31);
	assert_int_equal(sid.cpu, 1);
	assert_int_equal(tally_record__peek_id(&l, &r.hdr, &id), 0);
	assert_int_equal(id, 31);

	rec_init(&r, PERF_RECORD_SAMPLE);
	put(&r, 0x10); put2(&r, 1, 1); put(&r, 5); put(&r, 32); put2(&r, 0, 0); put(&r, 1);
	rec_done(&r);
	assert_int_equal(tally_record__peek_id(&l, &r.hdr, &id), 0);
	assert_int_equal(id, 32);

	/* identifier: last u64 of the trailer */
	l.sample_type |= PERF_SAMPLE_IDENTIFIER;
	rec_init(&r, PERF_RECORD_EXIT);
	put2(&r, 1, 1); put2(&r, 1, 1); put(&r, 0);
	put2(&r, 1, 1); put(&r, 7); put(&r, 40); put2(&r, 0, 0); put(&r, 41);
	rec_done(&r);
	assert_int_equal(tally_record__peek_id(&l, &r.hdr, &id), 0);
	assert_int_equal(id, 41);
	assert_int_equal(tally_sample_id__parse(&l, &r.hdr, &sid), 0);
	assert_int_equal(sid.identifier, 41);

	struct perf_event_header small = { .type = PERF_RECORD_EXIT, .size = 16 };
	assert_int_equal(tally_sample_id__parse(&l, &small, &sid), -EINVAL);
	l.sample_id_all = false;
	assert_int_equal(tally_sample_id__parse(&l, &r.hdr, &sid), -ENOENT);
	assert_int_equal(tally_record__peek_id(&l, &r.hdr, &id), -ENOENT);
}

/* tally_sample__check answers as tally_sample__parse would, for any layout and any
 * record: random sample_types (fixed and variable fields), read formats and contents
 * (counts small enough to fit sometimes), at every size. */
static void check_agrees_with_parse(void **state)
{
	static const uint64_t bits[] = {
		PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_TIME,
		PERF_SAMPLE_ADDR, PERF_SAMPLE_ID, PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
		PERF_SAMPLE_PERIOD, PERF_SAMPLE_READ, PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_RAW,
		PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER,
		PERF_SAMPLE_WEIGHT, PERF_SAMPLE_DATA_SRC, PERF_SAMPLE_TRANSACTION,
		PERF_SAMPLE_REGS_INTR, PERF_SAMPLE_PHYS_ADDR, PERF_SAMPLE_CGROUP,
		PERF_SAMPLE_DATA_PAGE_SIZE, PERF_SAMPLE_CODE_PAGE_SIZE, PERF_SAMPLE_AUX,
		PERF_SAMPLE_WEIGHT_STRUCT,
	};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned agreed_ok = 0, agreed_bad = 0;
	(void)state;

	for (unsigned iter = 0; iter < 20000; iter++) {
		struct perf_event_attr attr = { 0 };
		struct tally_sample_layout l;
		struct tally_sample s;
		struct rec r;
		size_t words;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		/* mostly the fixed fields and the call chain (the fast path), sometimes more */
		for (size_t b = 0; b < sizeof(bits) / sizeof(bits[0]); b++) {
			uint64_t x = seed >> (b % 48);
			bool variable = bits[b] & (PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK |
						   PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
						   PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_AUX);
			if ((x & (variable ? 15 : 1)) == 1)
				attr.sample_type |= bits[b];
		}
		attr.read_format = (seed >> 50) & (PERF_FORMAT_TOTAL_TIME_ENABLED |
						   PERF_FORMAT_TOTAL_TIME_RUNNING |
						   PERF_FORMAT_ID | PERF_FORMAT_GROUP |
						   PERF_FORMAT_LOST);
		attr.sample_regs_user = 0x5;
		attr.sample_regs_intr = 0x3;
		tally_sample_layout__from_attr(&l, &attr);
		rec_init(&r, PERF_RECORD_SAMPLE);
		words = (seed >> 20) % 40;
		for (size_t i = 0; i < words; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* small values: counts that may fit what follows */
			put(&r, (seed >> 33) % 4 == 0 ? seed : (seed >> 40) % 12);
		}
		rec_done(&r);
		/* every size up to the whole record, some not multiples of 8 */
		for (uint16_t size = 0; size <= r.hdr.size; size += (uint16_t)(1 + (seed & 3))) {
			struct perf_event_header h = r.hdr;
			int want, got;

			r.hdr.size = size;
			want = tally_sample__parse(&l, &r.hdr, &s);
			got = tally_sample__check(&l, &r.hdr);
			r.hdr = h;
			if (want != got)
				fail_msg("sample_type %#llx read_format %#llx size %u: parse %d, check %d",
					 (unsigned long long)attr.sample_type,
					 (unsigned long long)attr.read_format, size, want, got);
			if (want)
				agreed_bad++;
			else
				agreed_ok++;
		}
	}
	/* both answers came up often */
	assert_true(agreed_ok > 10000);
	assert_true(agreed_bad > 10000);
}

static void type_names(void **state)
{
	(void)state;
	assert_string_equal(tally_record__type_name(PERF_RECORD_SAMPLE), "SAMPLE");
	assert_string_equal(tally_record__type_name(PERF_RECORD_MMAP2), "MMAP2");
	assert_string_equal(tally_record__type_name(68), "FINISHED_ROUND");
	assert_string_equal(tally_record__type_name(81), "COMPRESSED");
	assert_null(tally_record__type_name(0));
	assert_null(tally_record__type_name(40));
	assert_null(tally_record__type_name(200));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(all_fields),
		cmocka_unit_test(read_single_and_raw_padding),
		cmocka_unit_test(trailer_and_peek),
		cmocka_unit_test(type_names),
		cmocka_unit_test(check_agrees_with_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
