/*
 * Pieces of report and script that are easy to get subtly wrong: the printf-free number
 * formatting (must print what printf prints), and the sample memo (must never hand out
 * an answer made before a side-band record that may change it).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <tally/format.h>

#include "fmt.h"
#include "report-common.h"
#include "sample-memo.h"

/* what the CLI's main.c provides */
int verbose;
volatile sig_atomic_t exiting;

void cli_error(const char *fmt, ...)
{
	(void)fmt;
}

void cli_warn(const char *fmt, ...)
{
	(void)fmt;
}

static void same_as_printf(double v)
{
	char want[FMT_FIXED2_MAX], got[FMT_FIXED2_MAX];
	size_t n;

	snprintf(want, sizeof(want), "%.2f", v);
	n = fmt_fixed2(got, v);
	got[n] = 0;
	if (strcmp(want, got))
		fail_msg("%.17g: printf \"%s\", fmt_fixed2 \"%s\"", v, want, got);
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
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	(void)state;

	assert_non_null(fp);
	fmt_pct(fp, 12.3456, 6);
	fmt_pct(fp, 100.0, 0);
	fmt_u64_pad(fp, 42, 5);
	fmt_u64_pad(fp, 1234567, 3);
	fmt_str_left(fp, "perf-exec", 7, 7);
	fmt_str_left(fp, "ab", 4, 0);
	fmt_spaces(fp, 70);
	fputc('|', fp);
	fclose(fp);
	char want[256];
	snprintf(want, sizeof(want), "%6.2f%%%.2f%%%5d%3d%-7.7s%-4s%70s|", 12.3456, 100.0, 42,
		 1234567, "perf-exec", "ab", "");
	assert_string_equal(buf, want);
	free(buf);
}

/* ---- sample memo ---- */

static struct perf_event_header *side_band(uint32_t type, uint16_t misc, uint32_t pid)
{
	static uint64_t rec[8];

	memset(rec, 0, sizeof(rec));
	((struct perf_event_header *)rec)->type = type;
	((struct perf_event_header *)rec)->misc = misc;
	((struct perf_event_header *)rec)->size = sizeof(rec);
	memcpy(rec + 1, &pid, sizeof(pid));
	return (struct perf_event_header *)rec;
}

static struct sample_key key(int32_t pid, uint8_t cpumode, const uint64_t *chain, size_t n)
{
	return (struct sample_key){ .pid = pid, .tid = pid, .cpu = -1, .cpumode = cpumode,
				    .ip = chain ? chain[n - 1] : 0, .chain = chain,
				    .nr_chain = n };
}

static void memo_remembers(struct sample_memo *m, struct resolve_cache *c,
			   const struct sample_key *k, uint64_t tag)
{
	uint64_t hash;

	assert_null(sample_memo__get(m, c, k, &hash));
	struct sample_memo_ent *e = sample_memo__add(m, c, k, hash, 2);
	assert_non_null(e);
	((uint64_t *)sample_memo_ent_payload(e))[0] = tag;
	((uint64_t *)sample_memo_ent_payload(e))[1] = ~tag;
}

static uint64_t memo_tag(struct sample_memo *m, struct resolve_cache *c,
			 const struct sample_key *k)
{
	uint64_t hash;
	struct sample_memo_ent *e = sample_memo__get(m, c, k, &hash);

	if (!e)
		return 0;
	assert_int_equal(((uint64_t *)sample_memo_ent_payload(e))[1],
			 ~((uint64_t *)sample_memo_ent_payload(e))[0]);
	return ((uint64_t *)sample_memo_ent_payload(e))[0];
}

static void memo_dates_its_answers(void **state)
{
	static const uint64_t user[] = { PERF_CONTEXT_USER, 0x401000, 0x402000 };
	static const uint64_t user2[] = { PERF_CONTEXT_USER, 0x401000, 0x402008 };
	static const uint64_t kern[] = { PERF_CONTEXT_KERNEL, 0xffffffff81000000ull,
					 PERF_CONTEXT_USER, 0x401000 };
	struct resolve_cache c = { 0 };
	struct sample_memo m = { 0 };
	struct sample_key a = key(10, PERF_RECORD_MISC_USER, user, 3);
	struct sample_key a2 = key(10, PERF_RECORD_MISC_USER, user2, 3);
	struct sample_key b = key(11, PERF_RECORD_MISC_USER, user, 3);
	struct sample_key k = key(12, PERF_RECORD_MISC_KERNEL, kern, 4);
	(void)state;

	memo_remembers(&m, &c, &a, 1);
	memo_remembers(&m, &c, &b, 2);
	memo_remembers(&m, &c, &k, 3);
	assert_int_equal(memo_tag(&m, &c, &a), 1);
	assert_int_equal(memo_tag(&m, &c, &a2), 0);	/* another chain */
	assert_int_equal(memo_tag(&m, &c, &b), 2);
	assert_int_equal(memo_tag(&m, &c, &k), 3);

	/* records that change nothing */
	resolve_cache__note(&c, side_band(TALLY_RECORD_FINISHED_ROUND, 0, 0));
	resolve_cache__note(&c, side_band(PERF_RECORD_LOST, 0, 10));
	assert_int_equal(memo_tag(&m, &c, &a), 1);

	/* a map of process 10: its samples are made again, the others' stay */
	resolve_cache__note(&c, side_band(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 10));
	assert_int_equal(memo_tag(&m, &c, &a), 0);
	assert_int_equal(memo_tag(&m, &c, &b), 2);
	assert_int_equal(memo_tag(&m, &c, &k), 3);
	memo_remembers(&m, &c, &a, 4);		/* made again: replaces the old one */
	assert_int_equal(memo_tag(&m, &c, &a), 4);

	/* a kernel map: samples with kernel frames only */
	resolve_cache__note(&c, side_band(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, UINT32_MAX));
	assert_int_equal(memo_tag(&m, &c, &k), 0);
	assert_int_equal(memo_tag(&m, &c, &a), 4);
	memo_remembers(&m, &c, &k, 5);

	/* a comm of process 12 (the kernel sample's): made again too */
	resolve_cache__note(&c, side_band(PERF_RECORD_COMM, 0, 12));
	assert_int_equal(memo_tag(&m, &c, &k), 0);
	assert_int_equal(memo_tag(&m, &c, &b), 2);

	/* a record of unknown meaning: everything */
	resolve_cache__note(&c, side_band(PERF_RECORD_CGROUP, 0, 0));
	assert_int_equal(memo_tag(&m, &c, &a), 0);
	assert_int_equal(memo_tag(&m, &c, &b), 0);

	/* the resolve cache's ticks start over: nothing made before can be dated */
	memo_remembers(&m, &c, &a, 6);
	c.wraps++;
	assert_int_equal(memo_tag(&m, &c, &a), 0);

	sample_memo__exit(&m);
	frames__exit(&(struct frames){ .cache = c });
}

static void memo_stays_bounded(void **state)
{
	struct resolve_cache c = { 0 };
	struct sample_memo m = { 0 };
	uint64_t chain[2] = { PERF_CONTEXT_USER, 0 }, hash;
	struct sample_key k;
	(void)state;

	/* samples that never repeat: the memo turns itself off and gives its memory back */
	for (uint64_t i = 0; i < 30000; i++) {
		chain[1] = 0x400000 + i;
		k = key(1, PERF_RECORD_MISC_USER, chain, 2);
		if (!sample_memo__get(&m, &c, &k, &hash))
			sample_memo__add(&m, &c, &k, hash, 1);
	}
	assert_true(m.off);
	assert_null(m.w);
	assert_null(sample_memo__add(&m, &c, &k, hash, 1));
	sample_memo__exit(&m);

	/* entries that repeat but are many and big: it starts over when full */
	memset(&m, 0, sizeof(m));
	for (uint64_t round = 0; round < 3; round++) {
		for (uint64_t i = 0; i < 64; i++) {
			struct sample_memo_ent *e;

			chain[1] = 0x400000 + i;
			k = key(1, PERF_RECORD_MISC_USER, chain, 2);
			if (sample_memo__get(&m, &c, &k, &hash))
				continue;
			e = sample_memo__add(&m, &c, &k, hash, SAMPLE_MEMO_MAX_WORDS / 16);
			assert_non_null(e);
			memset(sample_memo_ent_payload(e), (int)i, SAMPLE_MEMO_MAX_WORDS / 16 * 8);
			assert_true(m.nr <= SAMPLE_MEMO_MAX_WORDS);
		}
	}
	assert_false(m.off);
	/* the last one added is there, whole */
	assert_non_null(sample_memo__get(&m, &c, &k, &hash));
	/* a smaller budget of the caller's holds too */
	sample_memo__exit(&m);
	memset(&m, 0, sizeof(m));
	m.max_words = 1000;
	for (uint64_t i = 0; i < 100; i++) {
		chain[1] = 0x500000 + i % 20;
		k = key(1, PERF_RECORD_MISC_USER, chain, 2);
		if (!sample_memo__get(&m, &c, &k, &hash))
			assert_non_null(sample_memo__add(&m, &c, &k, hash, 90));
		assert_true(m.nr <= 1000);
	}
	assert_false(m.off);
	/* one bigger than the whole memo is refused */
	chain[1] = 1;
	k = key(1, PERF_RECORD_MISC_USER, chain, 2);
	assert_null(sample_memo__add(&m, &c, &k, sample_key_hash(&k), SAMPLE_MEMO_MAX_WORDS));
	sample_memo__exit(&m);
	frames__exit(&(struct frames){ .cache = c });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fixed2_matches_printf),
		cmocka_unit_test(padded_cells),
		cmocka_unit_test(memo_dates_its_answers),
		cmocka_unit_test(memo_stays_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
