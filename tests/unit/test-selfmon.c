/*
 * Self-monitoring: the user-page fast path against a simulated page (fake page,
 * injected rdpmc/rdtsc through the sys seam), and the read()/ioctl/prctl/signal
 * paths against the real kernel with software events.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal/selfmon.h"
#include "internal/sys.h"
#include "simkernel.h"
#include "tally/selfmon.h"

#define CAPS_MODERN	(1ull << 1)	/* cap_bit0_is_deprecated */
#define CAP_RDPMC	(1ull << 2)
#define CAP_TIME	(1ull << 3)
#define CAP_TIME_ZERO	(1ull << 4)
#define CAP_TIME_SHORT	(1ull << 5)

static struct sim_kernel *k;

static int sim_setup(void **state)
{
	(void)state;
	k = sim_install();
	tly_selfmon__set_arch(TLY_ARCH_X86, NULL);
	return 0;
}

static int sim_teardown(void **state)
{
	(void)state;
	sim_uninstall();
	tly_selfmon__set_arch(tly_arch_native(), NULL);
	return 0;
}

static struct perf_event_attr hw_attr(uint64_t config)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_HARDWARE, .size = sizeof(a), .config = config,
		.exclude_kernel = 1, .exclude_hv = 1,
	};
	return a;
}

/* Open a self-monitoring hardware counter on the simulated kernel and return its
 * writable page. */
static struct perf_event_mmap_page *open_sim(struct tally_selfmon **c)
{
	struct perf_event_attr a = hw_attr(PERF_COUNT_HW_INSTRUCTIONS);
	struct sim_event *e;

	assert_int_equal(tally_selfmon__open(c, &a, 0, -1, NULL, 0), 0);
	e = sim_event_by_fd(tally_selfmon__fd(*c));
	assert_non_null(e);
	assert_non_null(e->page);
	assert_ptr_equal(tally_selfmon__page(*c), e->page);
	return e->page;
}

/* A page that allows the fast path: counter index 1, 48-bit, times 1:1 (mult 1, shift 0). */
static void page_fast(struct perf_event_mmap_page *pc)
{
	pc->lock = 2;
	pc->capabilities = CAPS_MODERN | CAP_RDPMC | CAP_TIME | CAP_TIME_ZERO;
	pc->index = 1;
	pc->pmc_width = 48;
	pc->time_mult = 1;
	pc->time_shift = 0;
	pc->time_offset = 0;
	pc->time_enabled = 1000;
	pc->time_running = 1000;
}

static void fast_path_value_and_times(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	pc->offset = 5000;
	k->pmc[0] = 123;
	/* time_offset + cyc*mult>>shift = -100 + 400 = 300 ns since the page update */
	pc->time_offset = (uint64_t)-100;
	k->timer = 400;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_FAST);
	assert_int_equal(n.val, 5123);
	assert_int_equal(n.ena, 1300);
	assert_int_equal(n.run, 1300);
	assert_int_equal(k->nr_read_pmc, 1);
	assert_int_equal(tally_selfmon__fast_path(c), TALLY_SELF_PATH_FAST);
	tally_selfmon__delete(c);
}

/* The kernel updates the page while we read the register: the loop must retry and
 * use only the second, consistent snapshot. */
static void bump_lock(struct sim_kernel *sk, unsigned int counter)
{
	struct sim_event *e = sim_event_nth(0);
	struct perf_event_mmap_page *pc = e->page;

	(void)counter;
	if (sk->nr_read_pmc == 1) {
		pc->lock += 2;
		pc->offset = 7000;
		sk->pmc[0] = 50;
	}
}

static void seqlock_retry(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	pc->offset = 5000;
	k->pmc[0] = 999;
	k->on_read_pmc = bump_lock;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_FAST);
	assert_int_equal(k->nr_read_pmc, 2);
	assert_int_equal(n.val, 7050);
	tally_selfmon__delete(c);
}

/* A lock that stays odd (an update that never finishes, from our point of view)
 * must not hang: after bounded retries the read falls back to read(). */
static void seqlock_never_settles(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	pc->lock = 3;
	sim_event_nth(0)->count = 42;
	sim_event_nth(0)->enabled = 10;
	sim_event_nth(0)->running = 10;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_BUSY);
	assert_int_equal(n.val, 42);
	assert_int_equal(k->nr_read_pmc, 0);
	tally_selfmon__delete(c);
}

/* x86: the kernel programs -left into a 48-bit counter and keeps prev_count = -left
 * in 64 bits, so raw values near 2^48 are small negative deltas. */
static void x86_48bit_sign_extension(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;
	const uint64_t left = 5, count_at_update = 1000;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	/* offset = count - prev_count = 1000 - (-5) */
	pc->offset = (int64_t)(count_at_update + left);
	/* three events since: the counter reads -5 + 3 in 48 bits */
	k->pmc[0] = ((1ull << 48) - left + 3) & ((1ull << 48) - 1);
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(n.val, count_at_update + 3);

	/* just before the wrap: -1 */
	k->pmc[0] = (1ull << 48) - 1;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(n.val, count_at_update + left - 1);

	/* the largest positive 48-bit value stays positive */
	pc->offset = 0;
	k->pmc[0] = (1ull << 47) - 1;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(n.val, (1ull << 47) - 1);

	/* bits above the width are ignored */
	k->pmc[0] = 0xffff000000000010ull;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(n.val, 0x10);
	tally_selfmon__delete(c);
}

static void pmc_extend_edges(void **state)
{
	(void)state;
	assert_int_equal(tly_pmc_extend(0xffffffffffffull, 48), UINT64_MAX);
	assert_int_equal(tly_pmc_extend(0x800000000000ull, 48), (uint64_t)-(int64_t)(1ull << 47));
	assert_int_equal(tly_pmc_extend(0x7fffffffffffull, 48), 0x7fffffffffffull);
	assert_int_equal(tly_pmc_extend(0x8000000000000000ull, 64), 0x8000000000000000ull);
	assert_int_equal(tly_pmc_extend(1, 1), UINT64_MAX);	/* width 1: bit 0 is the sign */
	assert_int_equal(tly_pmc_extend(0xdeadbeef00000005ull, 32), 5);
	assert_int_equal(tly_pmc_extend(0x12345678fffffffeull, 32), (uint64_t)-2);
	/* widths that are not a multiple of 8 */
	assert_int_equal(tly_pmc_extend(0x7fffffffffffffffull, 63), UINT64_MAX);
	assert_int_equal(tly_pmc_extend(0x7fffffffffffull, 47), (uint64_t)-1);
	assert_int_equal(tly_pmc_extend(0x3fffffffffffull, 47), 0x3fffffffffffull);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Every width 1..64 against a reference in 128-bit signed arithmetic. */
static void pmc_extend_all_widths(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (unsigned int w = 1; w <= 64; w++) {
		for (int i = 0; i < 2000; i++) {
			uint64_t raw = xorshift(&seed);
			unsigned __int128 mask = ((unsigned __int128)1 << w) - 1;
			__int128 v = (__int128)(raw & mask);

			if (v >= (__int128)1 << (w - 1))
				v -= (__int128)1 << w;
			assert_int_equal(tly_pmc_extend(raw, w), (uint64_t)v);
		}
	}
}

/* The 128-bit product equals the kernel's documented split form (quot/rem by
 * 2^shift) for the shifts kernels publish, and does not overflow where the split
 * form's rem * mult would for shift > 32. */
static void mul_shr_matches_split_form(void **state)
{
	uint64_t seed = 12345;

	(void)state;
	for (unsigned int shift = 0; shift <= 31; shift++) {
		for (int i = 0; i < 2000; i++) {
			uint64_t cyc = xorshift(&seed) >> (i % 40);
			uint32_t mult = (uint32_t)xorshift(&seed);
			uint64_t quot = cyc >> shift, rem = cyc & ((1ull << shift) - 1);
			uint64_t split = quot * mult + ((rem * mult) >> shift);

			assert_int_equal(tly_mul_u64_u32_shr(cyc, mult, shift), split);
		}
	}
	assert_int_equal(tly_mul_u64_u32_shr(UINT64_MAX, UINT32_MAX, 40),
			 (uint64_t)(((unsigned __int128)UINT64_MAX * UINT32_MAX) >> 40));
}

/* arm64 32-bit counters: the upper 32 bits of the register are UNKNOWN (here:
 * garbage) and must be masked off by pmc_width before extension. */
static void arm64_32bit_masking(void **state)
{
	struct perf_event_mmap_page *pc = NULL;
	struct tally_count n;
	void *mem;

	(void)state;
	mem = calloc(1, 4096);
	assert_non_null(mem);
	pc = mem;
	page_fast(pc);
	pc->pmc_width = 32;
	pc->index = 3;
	pc->offset = 100;
	k->pmc[2] = 0xa5a5a5a500000007ull;
	assert_int_equal(tly_userpage__read(pc, TLY_ARCH_ARM64, &n), TALLY_SELF_PATH_FAST);
	assert_int_equal(n.val, 107);
	/* a negative 32-bit delta with garbage above */
	k->pmc[2] = 0x5a5a5a5afffffff0ull;
	assert_int_equal(tly_userpage__read(pc, TLY_ARCH_ARM64, &n), TALLY_SELF_PATH_FAST);
	assert_int_equal(n.val, 100 - 16);
	/* 64-bit counter: used as is */
	pc->pmc_width = 64;
	k->pmc[2] = 0x0000000100000000ull;
	assert_int_equal(tly_userpage__read(pc, TLY_ARCH_ARM64, &n), TALLY_SELF_PATH_FAST);
	assert_int_equal(n.val, 100 + 0x100000000ull);
	/* the cycle counter is counter 31 (index 32); beyond that there is no register */
	pc->index = 32;
	k->pmc[31] = 9;
	assert_int_equal(tly_userpage__read(pc, TLY_ARCH_ARM64, &n), TALLY_SELF_PATH_FAST);
	assert_int_equal(n.val, 109);
	pc->index = 33;
	k->nr_read_pmc = 0;
	assert_int_equal(tly_userpage__read(pc, TLY_ARCH_ARM64, &n), TALLY_SELF_PATH_BAD_INDEX);
	assert_int_equal(k->nr_read_pmc, 0);
	free(mem);
}

/* cap_user_time_short: the timer is narrower than 64 bits; cyc is rebuilt from
 * time_cycles and time_mask before the ns conversion. */
static void time_short(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	pc->capabilities |= CAP_TIME_SHORT;
	pc->offset = 1;
	pc->time_cycles = 0x1fffffff0ull;	/* last update, 32-bit timer wrapped since */
	pc->time_mask = 0xffffffffull;
	pc->time_mult = 3;
	pc->time_shift = 1;
	pc->time_offset = (uint64_t)-(int64_t)((0x1fffffff0ull * 3) >> 1);
	k->timer = 0xdead000000000010ull;	/* garbage above 32 bits: 0x10 after the wrap */
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	/* cyc = 0x1fffffff0 + ((0x10 - 0xfffffff0) & mask) = 0x1fffffff0 + 0x20 */
	assert_int_equal(n.ena, 1000 + ((0x200000010ull * 3) >> 1) - ((0x1fffffff0ull * 3) >> 1));
	assert_int_equal(n.ena - 1000, 48);
	/* without the short capability the same page gives a huge, wrong delta */
	pc->capabilities &= ~CAP_TIME_SHORT;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_true(n.ena - 1000 > 1000000);
	tally_selfmon__delete(c);
}

/* Multiplexed: ena != run; the scaled value uses quot/rem-free exact arithmetic up
 * to values near 2^63. */
static void scaling_near_2_63(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;
	uint64_t v;
	const uint64_t big = (1ull << 63) - 12345;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	pc->time_enabled = (1ull << 62) + 6;
	pc->time_running = (1ull << 61) + 3;
	pc->offset = (int64_t)(big / 4);
	k->pmc[0] = 0;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__read_scaled(c, &v), 0);
	/* ena/run == 2 exactly */
	assert_int_equal(v, (big / 4) * 2);

	/* through read(): a count near 2^63 scaled by 3/2 saturates only above 2^64 */
	pc->index = 0;
	sim_event_nth(0)->count = big;
	sim_event_nth(0)->enabled = 3000000000ull;
	sim_event_nth(0)->running = 2000000000ull;
	assert_int_equal(tally_selfmon__read_scaled(c, &v), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NO_INDEX);
	assert_int_equal(v, (uint64_t)(((unsigned __int128)big * 3) / 2));
	sim_event_nth(0)->running = 3000000000ull - 1;
	assert_int_equal(tally_selfmon__read_scaled(c, &v), 0);
	assert_int_equal(v, (uint64_t)(((unsigned __int128)big * 3000000000ull) /
				       (3000000000ull - 1)));
	tally_selfmon__delete(c);
}

static void index0_falls_back(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	pc->index = 0;
	pc->offset = 555;	/* stale: must not be used */
	sim_event_nth(0)->count = 77;
	sim_event_nth(0)->enabled = 5;
	sim_event_nth(0)->running = 4;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NO_INDEX);
	assert_int_equal(n.val, 77);
	assert_int_equal(n.ena, 5);
	assert_int_equal(n.run, 4);
	assert_int_equal(k->nr_read_pmc, 0);
	tally_selfmon__delete(c);
}

/* Old kernels (before cap_bit0_is_deprecated): bit 0 meant both cap_usr_time and
 * cap_usr_rdpmc; trust nothing and never execute rdpmc. */
static void deprecated_cap_bits(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	pc->capabilities = 1;	/* cap_bit0 only */
	sim_event_nth(0)->count = 8;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_OLD_CAPS);
	assert_int_equal(n.val, 8);
	assert_int_equal(k->nr_read_pmc, 0);
	/* even with the modern rdpmc bit also set, an unset is_deprecated bit wins */
	pc->capabilities = 1 | CAP_RDPMC | CAP_TIME;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_OLD_CAPS);
	assert_int_equal(k->nr_read_pmc, 0);
	tally_selfmon__delete(c);
}

static void missing_caps_fall_back(void **state)
{
	struct tally_selfmon *c;
	struct perf_event_mmap_page *pc;
	struct tally_count n;

	(void)state;
	pc = open_sim(&c);
	page_fast(pc);
	sim_event_nth(0)->count = 3;
	pc->capabilities = CAPS_MODERN | CAP_TIME;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NO_RDPMC);
	assert_int_equal(k->nr_read_pmc, 0);
	pc->capabilities = CAPS_MODERN | CAP_RDPMC;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NO_TIME);
	assert_int_equal(n.val, 3);
	/* Intel PERF_METRICS: rdpmc would return packed ratios */
	pc->capabilities = CAPS_MODERN | CAP_RDPMC | CAP_TIME;
	pc->index = (1u << 29) + 1;
	k->nr_read_pmc = 0;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_METRICS);
	assert_int_equal(k->nr_read_pmc, 0);
	/* width 0 is not a counter we can extend */
	pc->index = 1;
	pc->pmc_width = 0;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_BAD_INDEX);
	assert_int_equal(k->nr_read_pmc, 0);
	tally_selfmon__delete(c);
}

/* Attached or CPU-bound: the fast path is never tried, whatever the page says. */
static void not_self_never_rdpmc(void **state)
{
	struct perf_event_attr a = hw_attr(PERF_COUNT_HW_CPU_CYCLES);
	struct tally_selfmon *c;
	struct tally_count n;

	(void)state;
	assert_int_equal(tally_selfmon__open(&c, &a, 4321, -1, NULL, 0), 0);
	page_fast(sim_event_nth(0)->page);
	sim_event_nth(0)->count = 11;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(n.val, 11);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NOT_SELF);
	assert_int_equal(tally_selfmon__fast_path(c), TALLY_SELF_PATH_NOT_SELF);
	tally_selfmon__delete(c);
	assert_int_equal(tally_selfmon__open(&c, &a, 0, 1, NULL, 0), 0);
	page_fast(sim_event_nth(1)->page);
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NOT_SELF);
	assert_int_equal(k->nr_read_pmc, 0);
	tally_selfmon__delete(c);
	/* no page at all */
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, TALLY_SELF_NO_MMAP), 0);
	assert_null(tally_selfmon__page(c));
	assert_int_equal(tally_selfmon__fast_path(c), TALLY_SELF_PATH_NO_PAGE);
	tally_selfmon__delete(c);
	/* inherited: read() sums the children, the page only has this thread */
	a.inherit = 1;
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), 0);
	page_fast(sim_event_nth(3)->page);
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_INHERIT);
	assert_int_equal(k->nr_read_pmc, 0);
	tally_selfmon__delete(c);
}

static void software_event_never_indexed(void **state)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK,
	};
	struct tally_selfmon *c;
	struct tally_count n;

	(void)state;
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), 0);
	page_fast(sim_event_nth(0)->page);
	sim_event_nth(0)->count = 21;
	assert_int_equal(tally_selfmon__read(c, &n), 0);
	assert_int_equal(n.val, 21);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NO_INDEX);
	assert_int_equal(k->nr_read_pmc, 0);
	tally_selfmon__delete(c);
}

static void open_sets_read_format_and_id(void **state)
{
	struct perf_event_attr a = hw_attr(PERF_COUNT_HW_CPU_CYCLES);
	struct tally_selfmon *c;
	struct sim_event *e;
	uint64_t id = 0;

	(void)state;
	a.read_format = PERF_FORMAT_LOST;
	a.size = 0;
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), 0);
	e = sim_event_nth(0);
	assert_int_equal(e->attr.read_format, PERF_FORMAT_TOTAL_TIME_ENABLED |
			 PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID);
	assert_int_equal(e->attr.size, sizeof(struct perf_event_attr));
	assert_int_equal(e->pid, 0);
	assert_int_equal(e->cpu, -1);
	assert_true(e->flags & PERF_FLAG_FD_CLOEXEC);
	assert_int_equal(tally_selfmon__id(c, &id), 0);
	assert_int_equal(id, e->id);
	tally_selfmon__delete(c);
	tally_selfmon__delete(NULL);

	/* the open's errno comes back unchanged */
	sim_fail_open(PERF_TYPE_HARDWARE, 0, true, EACCES);
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), -EACCES);
	assert_null(c);
}

static void group_read_and_control(void **state)
{
	struct perf_event_attr a = hw_attr(PERF_COUNT_HW_CPU_CYCLES);
	struct tally_selfmon *lead, *m1, *m2;
	struct tally_count cnt[3];
	uint64_t ids[3];
	struct sim_event *e0, *e1, *e2;

	(void)state;
	a.disabled = 1;
	assert_int_equal(tally_selfmon__open(&lead, &a, 0, -1, NULL, TALLY_SELF_GROUP), 0);
	a.disabled = 0;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	assert_int_equal(tally_selfmon__open(&m1, &a, 0, -1, lead, 0), 0);
	a.config = PERF_COUNT_HW_BRANCH_MISSES;
	assert_int_equal(tally_selfmon__open(&m2, &a, 0, -1, lead, 0), 0);
	e0 = sim_event_nth(0);
	e1 = sim_event_nth(1);
	e2 = sim_event_nth(2);
	assert_true(e0->attr.read_format & PERF_FORMAT_GROUP);
	assert_false(e1->attr.read_format & PERF_FORMAT_GROUP);
	assert_int_equal(e1->group_fd, e0->fd);
	assert_int_equal(e2->group_fd, e0->fd);

	e0->count = 300;
	e1->count = 200;
	e2->count = 100;
	e0->enabled = 90;
	e0->running = 30;
	assert_int_equal(tally_selfmon__read_group(lead, cnt, ids, 3, false), 3);
	assert_int_equal(cnt[0].val, 300);
	assert_int_equal(cnt[1].val, 200);
	assert_int_equal(cnt[2].val, 100);
	assert_int_equal(cnt[2].ena, 90);
	assert_int_equal(cnt[2].run, 30);
	assert_int_equal(ids[0], e0->id);
	assert_int_equal(ids[2], e2->id);
	assert_int_equal(tally_selfmon__read_group(lead, cnt, NULL, 2, true), 3);
	assert_int_equal(cnt[0].val, 900);
	assert_int_equal(cnt[1].val, 600);
	/* a single read of the GROUP leader gives the leader's own value */
	assert_int_equal(tally_selfmon__read_syscall(lead, &cnt[0]), 0);
	assert_int_equal(cnt[0].val, 300);
	/* a member cannot lead a group of its own */
	{
		struct tally_selfmon *m3 = lead;

		assert_int_equal(tally_selfmon__open(&m3, &a, 0, -1, m1, 0), -EINVAL);
		assert_null(m3);
	}
	/* a member without GROUP cannot be read as a group */
	assert_int_equal(tally_selfmon__read_group(m1, cnt, NULL, 3, false), -EINVAL);

	assert_int_equal(tally_selfmon__enable(lead, true), 0);
	assert_int_equal(e0->nr_enable, 1);
	assert_int_equal(e0->last_ioctl_arg, PERF_IOC_FLAG_GROUP);
	assert_int_equal(tally_selfmon__disable(m1, false), 0);
	assert_int_equal(e1->nr_disable, 1);
	assert_int_equal(e1->last_ioctl_arg, 0);
	assert_int_equal(tally_selfmon__reset(lead, true), 0);
	assert_int_equal(e0->nr_reset, 1);
	assert_int_equal(e0->last_ioctl_arg, PERF_IOC_FLAG_GROUP);

	assert_int_equal(tally_selfmon__refresh(lead, 4), 0);
	assert_int_equal(e0->nr_refresh, 4);
	assert_int_equal(tally_selfmon__refresh(lead, 0), -EINVAL);
	assert_int_equal(tally_selfmon__set_period(lead, 123456), 0);
	assert_int_equal(e0->last_period, 123456);

	/* members may outlive their leader */
	tally_selfmon__delete(lead);
	tally_selfmon__delete(m2);
	tally_selfmon__delete(m1);
}

static int sim_open_count(void)
{
	int n = 0;

	for (int i = 0; i < 10000 && sim_event_nth(i); i++)
		if (sim_event_nth(i)->used)
			n++;
	return n;
}

static void open_events_string(void **state)
{
	struct tally_selfmon **cs;
	struct tally_parse_error perr;
	struct tally_count cnt[2];
	size_t nr, failed = 99;
	struct sim_event *e0, *e1, *e2;

	(void)state;
	assert_int_equal(tally_selfmon__open_events("{cycles,instructions}:u,page-faults", 0,
						   &cs, &nr, &perr, &failed), 0);
	assert_int_equal(nr, 3);
	e0 = sim_event_by_fd(tally_selfmon__fd(cs[0]));
	e1 = sim_event_by_fd(tally_selfmon__fd(cs[1]));
	e2 = sim_event_by_fd(tally_selfmon__fd(cs[2]));
	assert_int_equal(e0->attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(e0->attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(e1->attr.config, PERF_COUNT_HW_INSTRUCTIONS);
	assert_true(e0->attr.exclude_kernel && e1->attr.exclude_kernel);
	assert_int_equal(e1->group_fd, e0->fd);
	assert_int_equal(e2->group_fd, -1);
	assert_int_equal(e2->attr.type, PERF_TYPE_SOFTWARE);
	assert_true(e0->attr.read_format & PERF_FORMAT_GROUP);
	assert_false(e2->attr.read_format & PERF_FORMAT_GROUP);
	assert_int_equal(e0->pid, 0);
	assert_int_equal(e0->cpu, -1);
	assert_non_null(tally_selfmon__name(cs[0]));
	assert_non_null(strstr(tally_selfmon__name(cs[0]), "cycles"));
	/* opened disabled, enabled group-wise once complete */
	assert_int_equal(e0->attr.disabled, 1);
	assert_int_equal(e1->attr.disabled, 0);
	assert_int_equal(e0->nr_enable, 1);
	assert_int_equal(e0->last_ioctl_arg, PERF_IOC_FLAG_GROUP);
	assert_int_equal(e1->nr_enable, 0);
	assert_int_equal(e2->nr_enable, 1);
	assert_string_equal(tally_selfmon__name(cs[2]), "page-faults");
	e0->count = 10;
	e1->count = 20;
	assert_int_equal(tally_selfmon__read_group(cs[0], cnt, NULL, 2, false), 2);
	assert_int_equal(cnt[1].val, 20);
	tally_selfmon__close_events(cs, nr);
	assert_int_equal(sim_open_count(), 0);
	tally_selfmon__close_events(NULL, 0);

	assert_int_equal(tally_selfmon__open_events("page-faults", TALLY_SELF_START_DISABLED,
						   &cs, &nr, NULL, NULL), 0);
	assert_int_equal(sim_event_by_fd(tally_selfmon__fd(cs[0]))->nr_enable, 0);
	tally_selfmon__close_events(cs, nr);

	/* a syntax error comes back with its position */
	assert_int_equal(tally_selfmon__open_events("cycles:zz", 0, &cs, &nr, &perr, NULL),
			 -EINVAL);
	assert_null(cs);
	assert_true(perr.pos >= 6 && perr.pos < 9);

	/* an open error: its errno, which event, and nothing left open */
	sim_fail_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false, EACCES);
	assert_int_equal(tally_selfmon__open_events("cycles,instructions,page-faults", 0, &cs,
						   &nr, NULL, &failed), -EACCES);
	assert_int_equal(failed, 1);
	assert_null(cs);
	assert_int_equal(sim_open_count(), 0);

	/* tool events are not kernel counters */
	assert_int_equal(tally_selfmon__open_events("duration_time", 0, &cs, &nr, NULL, NULL),
			 -EOPNOTSUPP);
}

static void arm64_open_requests_user_access(void **state)
{
	struct perf_event_attr a = hw_attr(PERF_COUNT_HW_CPU_CYCLES);
	struct tally_selfmon *c;
	char path[] = "/tmp/tally-ua-XXXXXX";
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1\n", 2), 2);
	close(fd);
	tly_selfmon__set_arch(TLY_ARCH_ARM64, path);
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), 0);
	assert_int_equal(sim_event_by_fd(tally_selfmon__fd(c))->attr.config1, 3);	/* rdpmc + long */
	tally_selfmon__delete(c);

	/* no 64-bit counters: the long bit is refused, a 32-bit user counter is used */
	k->fail_config1_mask = 1;
	k->fail_config1_err = EOPNOTSUPP;
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), 0);
	assert_int_equal(sim_event_by_fd(tally_selfmon__fd(c))->attr.config1, 2);
	tally_selfmon__delete(c);
	/* user access refused altogether: open without it, and say so */
	k->fail_config1_mask = 2;
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), 0);
	assert_int_equal(sim_event_by_fd(tally_selfmon__fd(c))->attr.config1, 0);
	assert_int_equal(tally_selfmon__fast_path(c), TALLY_SELF_PATH_NO_RDPMC);
	tally_selfmon__delete(c);
	/* other errors are not retried */
	k->fail_config1_mask = 2;
	k->fail_config1_err = EACCES;
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), -EACCES);
	k->fail_config1_mask = 0;

	/* attached events never ask for user access */
	assert_int_equal(tally_selfmon__open(&c, &a, 99, -1, NULL, 0), 0);
	assert_int_equal(sim_event_by_fd(tally_selfmon__fd(c))->attr.config1, 0);
	tally_selfmon__delete(c);

	/* sysctl off: no config1 bits, and the reason says how to turn it on */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0\n", 2), 2);
	close(fd);
	assert_int_equal(tally_selfmon__open(&c, &a, 0, -1, NULL, 0), 0);
	assert_int_equal(sim_event_by_fd(tally_selfmon__fd(c))->attr.config1, 0);
	assert_int_equal(tally_selfmon__fast_path(c), TALLY_SELF_PATH_USER_ACCESS_OFF);
	assert_non_null(strstr(tally_self_path_str(TALLY_SELF_PATH_USER_ACCESS_OFF),
			       "perf_user_access"));
	tally_selfmon__delete(c);
	unlink(path);
	tly_selfmon__set_arch(TLY_ARCH_X86, NULL);
}

static void time_conversion(void **state)
{
	struct tally_time_conv conv = {
		.time_zero = 1000000, .time_mult = 2796202667u, .time_shift = 31,
	};
	struct perf_event_mmap_page *pc;
	void *mem;
	uint64_t cyc = 123456789012345ull, ts, back;

	(void)state;
	/* 2796202667 / 2^31 ~ 1.3021 ns per cycle (a 0.768 GHz counter) */
	ts = tally_time_conv__to_perf(&conv, cyc);
	assert_int_equal(ts, 1000000 + (uint64_t)(((unsigned __int128)cyc * 2796202667u) >> 31));
	back = tally_time_conv__to_cycles(&conv, ts);
	/* the inverse rounds down: within one cycle, and back to within 2 ns
	 * (one cycle is 1.3 ns here) */
	assert_true(back <= cyc && cyc - back <= 1);
	assert_true(tally_time_conv__to_perf(&conv, back) <= ts);
	assert_true(ts - tally_time_conv__to_perf(&conv, back) <= 2);
	/* a shift no kernel publishes is refused rather than shifted out of range */
	conv.time_shift = 200;
	assert_int_equal(tally_time_conv__to_cycles(&conv, ts), 0);
	assert_int_equal(tally_time_conv__to_perf(&conv, cyc), conv.time_zero);
	conv.time_shift = 31;
	/* a 1 GHz counter (mult 2^31, shift 31) round-trips exactly */
	conv.time_mult = 1u << 31;
	assert_int_equal(tally_time_conv__to_cycles(&conv,
			 tally_time_conv__to_perf(&conv, cyc)), cyc);

	mem = calloc(1, 4096);
	assert_non_null(mem);
	pc = mem;
	pc->lock = 4;
	pc->capabilities = CAPS_MODERN | CAP_TIME;
	pc->time_mult = 5;
	assert_int_equal(tally_userpage_time_conv(pc, &conv), -EOPNOTSUPP);
	pc->capabilities |= CAP_TIME_ZERO;
	pc->time_zero = 77;
	pc->time_shift = 2;
	assert_int_equal(tally_userpage_time_conv(pc, &conv), 0);
	assert_int_equal(conv.time_zero, 77);
	assert_int_equal(tally_time_conv__to_perf(&conv, 8), 77 + 10);
	assert_int_equal(tally_time_conv__to_cycles(&conv, 77 + 10), 8);
	pc->capabilities = 1 | CAP_TIME_ZERO;	/* pre-deprecation kernel */
	assert_int_equal(tally_userpage_time_conv(pc, &conv), -EOPNOTSUPP);
	free(mem);
}

/* ---- the real kernel, software events ------------------------------------ */

static int real_open(struct tally_selfmon **c, uint64_t config, unsigned int flags)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a), .config = config,
		.exclude_kernel = config == PERF_COUNT_SW_TASK_CLOCK,
		.exclude_hv = 1,
	};
	int err = tally_selfmon__open(c, &a, 0, -1, NULL, flags);

	if (err == -EACCES || err == -EPERM || err == -ENOSYS || err == -ENOENT)
		return err;
	assert_int_equal(err, 0);
	return 0;
}

static void touch_pages(int n)
{
	size_t len = (size_t)n * 4096;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	munmap(p, len);
}

static void spin(long iters)
{
	for (volatile long i = 0; i < iters; i++)
		;
}

/* Library reads agree with bare read() on the same fd: exactly once the counter is
 * stopped, and in order while it runs. */
static void real_agrees_with_read(void **state)
{
	static const uint64_t configs[] = { PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct tally_selfmon *c;
		struct tally_count lib, lib2;
		uint64_t raw[4], raw2[4];

		if (real_open(&c, configs[i], 0))
			skip();
		spin(200000);
		touch_pages(64);
		assert_int_equal(read(tally_selfmon__fd(c), raw, sizeof(raw)), sizeof(raw));
		assert_int_equal(tally_selfmon__read(c, &lib), 0);
		spin(200000);
		touch_pages(64);
		assert_int_equal(read(tally_selfmon__fd(c), raw2, sizeof(raw2)), sizeof(raw2));
		assert_true(raw[0] <= lib.val && lib.val <= raw2[0]);
		assert_true(raw[1] <= lib.ena && lib.ena <= raw2[1]);
		assert_true(lib.val > 0);
		/* software events never take the fast path, and say why */
		assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NO_INDEX);

		assert_int_equal(tally_selfmon__disable(c, false), 0);
		assert_int_equal(tally_selfmon__read(c, &lib), 0);
		assert_int_equal(read(tally_selfmon__fd(c), raw, sizeof(raw)), sizeof(raw));
		assert_int_equal(tally_selfmon__read(c, &lib2), 0);
		assert_int_equal(lib.val, raw[0]);
		assert_int_equal(lib.ena, raw[1]);
		assert_int_equal(lib.run, raw[2]);
		assert_int_equal(lib2.val, raw[0]);
		assert_int_equal(raw[3], ({ uint64_t id; assert_int_equal(tally_selfmon__id(c, &id), 0); id; }));

		assert_int_equal(tally_selfmon__reset(c, false), 0);
		assert_int_equal(tally_selfmon__read(c, &lib), 0);
		assert_int_equal(lib.val, 0);
		tally_selfmon__delete(c);
	}
}

/* On this kernel, with whatever the user page publishes: if cap_user_time is set,
 * the page's time fields extrapolate time_enabled to now (checked against read()
 * before and after); if not, the conversions report -EOPNOTSUPP instead of
 * inventing numbers. */
static void real_user_page_time(void **state)
{
	struct tally_selfmon *c;
	const struct perf_event_mmap_page *pc;
	struct tally_time_conv conv;
	uint64_t before[4], after[4], ena, run;
	int err;

	(void)state;
	if (real_open(&c, PERF_COUNT_SW_TASK_CLOCK, 0))
		skip();
	pc = tally_selfmon__page(c);
	assert_non_null(pc);
	assert_true(pc->cap_bit0_is_deprecated);
	spin(2000000);	/* let the page's time_enabled go stale */
	assert_int_equal(read(tally_selfmon__fd(c), before, sizeof(before)), sizeof(before));
	err = tly_userpage__times(pc, &ena, &run);
	assert_int_equal(read(tally_selfmon__fd(c), after, sizeof(after)), sizeof(after));
	if (!pc->cap_user_time) {
		assert_int_equal(err, -EOPNOTSUPP);
		assert_int_equal(tally_selfmon__time_conv(c, &conv), -EOPNOTSUPP);
		tally_selfmon__delete(c);
		skip();	/* this kernel (e.g. a VM without stable native sched_clock) */
	}
	assert_int_equal(err, 0);
	/* the stale page value alone would be far below before[1] */
	assert_true(pc->time_enabled < before[1]);
	assert_true(before[1] <= ena && ena <= after[1]);
	if (pc->cap_user_time_zero)
		assert_int_equal(tally_selfmon__time_conv(c, &conv), 0);
	tally_selfmon__delete(c);
}

static void real_prctl_enable_disable_all(void **state)
{
	struct tally_selfmon *c;
	struct tally_count a, b;

	(void)state;
	if (real_open(&c, PERF_COUNT_SW_PAGE_FAULTS, 0))
		skip();
	assert_int_equal(tally_selfmon__disable_all(), 0);
	assert_int_equal(tally_selfmon__read(c, &a), 0);
	touch_pages(32);
	assert_int_equal(tally_selfmon__read(c, &b), 0);
	assert_int_equal(a.val, b.val);
	assert_int_equal(tally_selfmon__enable_all(), 0);
	touch_pages(32);
	assert_int_equal(tally_selfmon__read(c, &b), 0);
	assert_true(b.val >= a.val + 32);
	tally_selfmon__delete(c);
}

static void real_group(void **state)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK, .disabled = 1, .exclude_kernel = 1,
	};
	struct tally_selfmon *lead, *pf;
	struct tally_count cnt[2];
	uint64_t ids[2], id;
	int err;

	(void)state;
	err = tally_selfmon__open(&lead, &a, 0, -1, NULL, TALLY_SELF_GROUP);
	if (err == -EACCES || err == -EPERM)
		skip();
	assert_int_equal(err, 0);
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.disabled = 0;
	a.exclude_kernel = 0;
	assert_int_equal(tally_selfmon__open(&pf, &a, 0, -1, lead, 0), 0);
	assert_int_equal(tally_selfmon__read_group(lead, cnt, ids, 2, false), 2);
	assert_int_equal(cnt[0].val, 0);	/* the group is disabled */
	assert_int_equal(cnt[1].val, 0);
	assert_int_equal(tally_selfmon__enable(lead, true), 0);
	touch_pages(40);
	spin(100000);
	assert_int_equal(tally_selfmon__disable(lead, true), 0);
	assert_int_equal(tally_selfmon__read_group(lead, cnt, ids, 2, true), 2);
	assert_true(cnt[0].val > 0);
	assert_true(cnt[1].val >= 40);
	assert_int_equal(tally_selfmon__id(pf, &id), 0);
	assert_int_equal(ids[1], id);
	tally_selfmon__delete(pf);
	tally_selfmon__delete(lead);
}

static void real_open_events(void **state)
{
	struct tally_selfmon **cs;
	struct tally_count cnt[2];
	size_t nr;
	int err;

	(void)state;
	err = tally_selfmon__open_events("{task-clock:u,page-faults}", 0, &cs, &nr, NULL, NULL);
	if (err == -EACCES || err == -EPERM)
		skip();
	assert_int_equal(err, 0);
	assert_int_equal(nr, 2);
	touch_pages(16);
	assert_int_equal(tally_selfmon__read_group(cs[0], cnt, NULL, 2, true), 2);
	assert_true(cnt[0].val > 0);
	assert_true(cnt[1].val >= 16);
	assert_int_equal(tally_selfmon__read(cs[1], &cnt[0]), 0);
	assert_true(cnt[0].val >= 16);
	tally_selfmon__close_events(cs, nr);
}

/* Attached to another process and bound to a CPU: read() only, and agreeing with it. */
static void real_attached_and_cpu(void **state)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK,
	};
	struct tally_selfmon *c;
	struct tally_count v;
	uint64_t raw[4];
	pid_t child;
	int err, status;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* never outlive the test, even if an assertion ends it early */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30);
		for (;;)
			spin(1000000);
	}
	err = tally_selfmon__open(&c, &a, child, -1, NULL, 0);
	if (err == -EACCES || err == -EPERM) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		skip();
	}
	assert_int_equal(err, 0);
	spin(2000000);
	assert_int_equal(tally_selfmon__disable(c, false), 0);
	assert_int_equal(tally_selfmon__read(c, &v), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NOT_SELF);
	assert_int_equal(read(tally_selfmon__fd(c), raw, sizeof(raw)), sizeof(raw));
	assert_int_equal(v.val, raw[0]);
	assert_int_equal(v.ena, raw[1]);
	tally_selfmon__delete(c);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);

	/* this thread, but only on CPU 0 */
	err = tally_selfmon__open(&c, &a, 0, 0, NULL, 0);
	if (err == -EACCES || err == -EPERM)
		return;
	assert_int_equal(err, 0);
	assert_int_equal(tally_selfmon__read(c, &v), 0);
	assert_int_equal(tally_selfmon__last_path(c), TALLY_SELF_PATH_NOT_SELF);
	tally_selfmon__delete(c);
}

static volatile sig_atomic_t nr_signals;
static volatile sig_atomic_t last_fd = -1;

static void on_overflow(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	nr_signals++;
	last_fd = si->si_fd;
}

/* A sampling task-clock that signals this thread on overflow, armed for exactly 3
 * overflows with PERF_EVENT_IOC_REFRESH. */
static void real_overflow_signals_refresh(void **state)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK, .disabled = 1, .exclude_kernel = 1,
		.sample_period = 1000000, .wakeup_events = 1,
	};
	struct sigaction sa = { .sa_sigaction = on_overflow, .sa_flags = SA_SIGINFO }, old;
	struct tally_selfmon *c;
	struct timespec t0, t;
	int err, sig = SIGRTMIN + 1;

	(void)state;
	err = tally_selfmon__open(&c, &a, 0, -1, NULL, TALLY_SELF_NO_MMAP);
	if (err == -EACCES || err == -EPERM)
		skip();
	assert_int_equal(err, 0);
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(sig, &sa, &old), 0);
	nr_signals = 0;
	assert_int_equal(tally_selfmon__set_signal(c, sig), 0);
	assert_int_equal(tally_selfmon__refresh(c, 3), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		spin(100000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (nr_signals < 3 && t.tv_sec - t0.tv_sec < 10);
	spin(5000000);	/* several more periods: the event must have stopped */
	assert_int_equal(nr_signals, 3);
	assert_int_equal(last_fd, tally_selfmon__fd(c));
	/* PERIOD on a live sampling event, then arm again for one more */
	assert_int_equal(tally_selfmon__set_period(c, 2000000), 0);
	assert_int_equal(tally_selfmon__refresh(c, 1), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		spin(100000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (nr_signals < 4 && t.tv_sec - t0.tv_sec < 10);
	spin(5000000);
	assert_int_equal(nr_signals, 4);
	tally_selfmon__delete(c);
	sigaction(sig, &old, NULL);
}

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Self-sampling on the real kernel: a task-clock sampler every 100 us of CPU into a
 * one-page ring, drained while it runs so that records wrap the end of the ring. */
static void real_selfsample(void **state)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_TASK_CLOCK, .disabled = 1, .exclude_kernel = 1,
		.sample_period = 100000,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ,
		.sample_id_all = 1,
	};
	struct tally_selfsample *s;
	struct tally_sample smp;
	struct tally_ring_stats st;
	struct tally_count cnt;
	struct tally_time_conv conv;
	uint64_t nr = 0, last_time = 0, t_lo = 0, t_hi;
	bool conv_ok;
	double t0;
	int ret;

	(void)state;
	ret = tally_selfsample__open(&s, &a, 1);
	if (ret == -EACCES || ret == -EPERM)
		skip();
	assert_int_equal(ret, 0);
	assert_non_null(tally_selfmon__page(tally_selfsample__counter(s)));
	conv_ok = tally_selfmon__time_conv(tally_selfsample__counter(s), &conv) == 0;
	if (conv_ok)
		t_lo = tally_time_conv__to_perf(&conv, tally_read_timestamp_counter());
	assert_int_equal(tally_selfmon__enable(tally_selfsample__counter(s), false), 0);
	t0 = thread_cpu_ms();
	while (thread_cpu_ms() - t0 < 60) {
		spin(20000);
		while ((ret = tally_selfsample__next(s, &smp)) == 1) {
			assert_int_equal(smp.pid, (uint32_t)getpid());
			assert_int_equal(smp.tid, (uint32_t)gettid());
			assert_true(smp.ip != 0);
			assert_true(smp.time >= last_time);
			assert_true((smp.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
				    PERF_RECORD_MISC_USER);
			assert_int_equal(smp.period, 100000);
			last_time = smp.time;
			nr++;
		}
		assert_int_equal(ret, 0);
	}
	assert_int_equal(tally_selfmon__disable(tally_selfsample__counter(s), false), 0);
	while ((ret = tally_selfsample__next(s, &smp)) == 1)
		nr++;
	assert_int_equal(ret, 0);
	tally_ring__stats(tally_selfsample__ring(s), &st);
	/* 60 ms of CPU at one sample per 0.1 ms: hundreds, through a one-page ring */
	assert_true(nr >= 100);
	assert_int_equal(st.samples, nr);
	assert_true(st.wraps > 0);
	/* the counter of a sampling event reads like any other */
	assert_int_equal(tally_selfmon__read(tally_selfsample__counter(s), &cnt), 0);
	assert_true(cnt.val >= 60000000ull * 9 / 10);
	if (conv_ok) {	/* sample times lie between two TSC readings, converted */
		t_hi = tally_time_conv__to_perf(&conv, tally_read_timestamp_counter());
		assert_true(t_lo <= last_time && last_time <= t_hi);
	}
	tally_selfsample__delete(s);
	tally_selfsample__delete(NULL);
	a.sample_period = 0;
	assert_int_equal(tally_selfsample__open(&s, &a, 1), -EINVAL);
	a.sample_period = 1000;
	assert_int_equal(tally_selfsample__open(&s, &a, 3), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fast_path_value_and_times, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(seqlock_retry, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(seqlock_never_settles, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(x86_48bit_sign_extension, sim_setup, sim_teardown),
		cmocka_unit_test(pmc_extend_edges),
		cmocka_unit_test(pmc_extend_all_widths),
		cmocka_unit_test(mul_shr_matches_split_form),
		cmocka_unit_test_setup_teardown(arm64_32bit_masking, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(time_short, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(scaling_near_2_63, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(index0_falls_back, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(deprecated_cap_bits, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(missing_caps_fall_back, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(not_self_never_rdpmc, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(software_event_never_indexed, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(open_sets_read_format_and_id, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(group_read_and_control, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(arm64_open_requests_user_access, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(open_events_string, sim_setup, sim_teardown),
		cmocka_unit_test(time_conversion),
		cmocka_unit_test(real_agrees_with_read),
		cmocka_unit_test(real_user_page_time),
		cmocka_unit_test(real_prctl_enable_disable_all),
		cmocka_unit_test(real_group),
		cmocka_unit_test(real_open_events),
		cmocka_unit_test(real_attached_and_cpu),
		cmocka_unit_test(real_overflow_signals_refresh),
		cmocka_unit_test(real_selfsample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
