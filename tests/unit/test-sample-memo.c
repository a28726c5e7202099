/*
 * The sample memo (tally/sample-memo.h): it must never hand out an answer made before a
 * side-band record that may change it, and its memory must stay within its budget.
 * Side-band records reach it the way they reach a report: through the session.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <tally/format.h>
#include <tally/sample-memo.h>
#include <tally/session.h>

#include "internal/analysis.h"
#include "internal/session.h"

static struct tally_session *new_session(void)
{
	struct tally_session_opts o = { .no_symbols = true };
	struct tally_session *s = NULL;

	assert_int_equal(tally_session__new(&s, &o), 0);
	return s;
}

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

/* A side-band record reaches the session (whether it makes sense of it or not). */
static void note(struct tally_session *s, uint32_t type, uint16_t misc, uint32_t pid)
{
	tally_session__process(s, side_band(type, misc, pid));
}

static struct tally_sample_key key(int32_t pid, uint8_t cpumode, const uint64_t *chain,
				   size_t n)
{
	return (struct tally_sample_key){ .pid = pid, .tid = pid, .cpu = -1, .cpumode = cpumode,
					  .ip = chain ? chain[n - 1] : 0, .chain = chain,
					  .nr_chain = n };
}

static void memo_remembers(struct tally_sample_memo *m, struct tally_session *s,
			   const struct tally_sample_key *k, uint64_t tag)
{
	uint64_t hash, *e;
	size_t nr;

	assert_null(tally_sample_memo__find(m, s, k, &hash, &nr));
	e = tally_sample_memo__add(m, s, k, hash, 2);
	assert_non_null(e);
	e[0] = tag;
	e[1] = ~tag;
}

static uint64_t memo_tag(struct tally_sample_memo *m, struct tally_session *s,
			 const struct tally_sample_key *k)
{
	uint64_t hash, *e;
	size_t nr = 0;

	e = tally_sample_memo__find(m, s, k, &hash, &nr);
	if (!e)
		return 0;
	assert_int_equal(nr, 2);
	assert_int_equal(e[1], ~e[0]);
	return e[0];
}

static void memo_dates_its_answers(void **state)
{
	static const uint64_t user[] = { PERF_CONTEXT_USER, 0x401000, 0x402000 };
	static const uint64_t user2[] = { PERF_CONTEXT_USER, 0x401000, 0x402008 };
	static const uint64_t kern[] = { PERF_CONTEXT_KERNEL, 0xffffffff81000000ull,
					 PERF_CONTEXT_USER, 0x401000 };
	struct tally_session *s = new_session();
	struct tally_sample_memo *m = tally_sample_memo__new(0, 0);
	struct tally_sample_key a = key(10, PERF_RECORD_MISC_USER, user, 3);
	struct tally_sample_key a2 = key(10, PERF_RECORD_MISC_USER, user2, 3);
	struct tally_sample_key b = key(11, PERF_RECORD_MISC_USER, user, 3);
	struct tally_sample_key k = key(12, PERF_RECORD_MISC_KERNEL, kern, 4);
	(void)state;

	assert_non_null(m);
	memo_remembers(m, s, &a, 1);
	memo_remembers(m, s, &b, 2);
	memo_remembers(m, s, &k, 3);
	assert_int_equal(memo_tag(m, s, &a), 1);
	assert_int_equal(memo_tag(m, s, &a2), 0);	/* another chain */
	assert_int_equal(memo_tag(m, s, &b), 2);
	assert_int_equal(memo_tag(m, s, &k), 3);

	/* records that change nothing */
	note(s, TALLY_RECORD_FINISHED_ROUND, 0, 0);
	note(s, PERF_RECORD_LOST, 0, 10);
	assert_int_equal(memo_tag(m, s, &a), 1);

	/* a map of process 10: its samples are made again, the others' stay */
	note(s, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 10);
	assert_int_equal(memo_tag(m, s, &a), 0);
	assert_int_equal(memo_tag(m, s, &b), 2);
	assert_int_equal(memo_tag(m, s, &k), 3);
	memo_remembers(m, s, &a, 4);		/* made again: replaces the old one */
	assert_int_equal(memo_tag(m, s, &a), 4);

	/* a kernel map: samples with kernel frames only */
	note(s, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, UINT32_MAX);
	assert_int_equal(memo_tag(m, s, &k), 0);
	assert_int_equal(memo_tag(m, s, &a), 4);
	memo_remembers(m, s, &k, 5);

	/* a comm of process 12 (the kernel sample's): made again too */
	note(s, PERF_RECORD_COMM, 0, 12);
	assert_int_equal(memo_tag(m, s, &k), 0);
	assert_int_equal(memo_tag(m, s, &b), 2);

	/* a record of unknown meaning: everything */
	note(s, PERF_RECORD_CGROUP, 0, 0);
	assert_int_equal(memo_tag(m, s, &a), 0);
	assert_int_equal(memo_tag(m, s, &b), 0);

	/* the session's clock starts over: nothing made before can be dated */
	memo_remembers(m, s, &a, 6);
	tly_session__cache(s)->tick = UINT32_MAX;
	note(s, PERF_RECORD_COMM, 0, 99);
	assert_int_equal(tly_session__cache(s)->wraps, 1);
	assert_int_equal(memo_tag(m, s, &a), 0);
	memo_remembers(m, s, &a, 7);
	assert_int_equal(memo_tag(m, s, &a), 7);

	tally_sample_memo__delete(m);
	tally_session__delete(s);
}

static void memo_stays_bounded(void **state)
{
	struct tally_session *s = new_session();
	struct tally_sample_memo *m = tally_sample_memo__new(0, 0);
	uint64_t chain[2] = { PERF_CONTEXT_USER, 0 }, hash;
	struct tally_sample_key k;
	size_t nr;
	(void)state;

	/* samples that never repeat: the memo turns itself off and gives its memory back */
	for (uint64_t i = 0; i < 30000; i++) {
		chain[1] = 0x400000 + i;
		k = key(1, PERF_RECORD_MISC_USER, chain, 2);
		if (!tally_sample_memo__find(m, s, &k, &hash, &nr))
			tally_sample_memo__add(m, s, &k, hash, 1);
	}
	assert_true(m->off);
	assert_null(m->w);
	assert_null(tally_sample_memo__add(m, s, &k, hash, 1));
	tally_sample_memo__delete(m);

	/* entries that repeat but are many and big: it starts over when full */
	m = tally_sample_memo__new(0, 0);
	for (uint64_t round = 0; round < 3; round++) {
		for (uint64_t i = 0; i < 64; i++) {
			void *e;

			chain[1] = 0x400000 + i;
			k = key(1, PERF_RECORD_MISC_USER, chain, 2);
			if (tally_sample_memo__find(m, s, &k, &hash, &nr))
				continue;
			e = tally_sample_memo__add(m, s, &k, hash, TALLY_SAMPLE_MEMO_MAX_WORDS / 16);
			assert_non_null(e);
			memset(e, (int)i, TALLY_SAMPLE_MEMO_MAX_WORDS / 16 * 8);
			assert_true(m->nr <= TALLY_SAMPLE_MEMO_MAX_WORDS);
		}
	}
	assert_false(m->off);
	/* the last one added is there, whole */
	assert_non_null(tally_sample_memo__find(m, s, &k, &hash, &nr));
	assert_int_equal(nr, TALLY_SAMPLE_MEMO_MAX_WORDS / 16);
	/* a smaller budget of the caller's holds too */
	tally_sample_memo__delete(m);
	m = tally_sample_memo__new(1000, 0);
	for (uint64_t i = 0; i < 100; i++) {
		chain[1] = 0x500000 + i % 20;
		k = key(1, PERF_RECORD_MISC_USER, chain, 2);
		if (!tally_sample_memo__find(m, s, &k, &hash, &nr))
			assert_non_null(tally_sample_memo__add(m, s, &k, hash, 90));
		assert_true(m->nr <= 1000);
	}
	assert_false(m->off);
	/* one bigger than the whole memo is refused */
	chain[1] = 1;
	k = key(1, PERF_RECORD_MISC_USER, chain, 2);
	assert_null(tally_sample_memo__add(m, s, &k, tally_sample_key__hash(&k),
					   TALLY_SAMPLE_MEMO_MAX_WORDS));
	tally_sample_memo__delete(m);
	tally_session__delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memo_dates_its_answers),
		cmocka_unit_test(memo_stays_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
