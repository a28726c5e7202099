/*
 * The sampler (tally/sampler.h) over the simulated kernel: the fallback policy, opens
 * on cpus x threads with groups, a caller's veto, skipped threads, rings per CPU and per
 * thread, ids, enable/disable of leaders and reads.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "simkernel.h"
#include "tally/cpumap.h"
#include "tally/ring.h"
#include "tally/sampler.h"

static struct perf_event_attr attr(uint32_t type, uint64_t config)
{
	struct perf_event_attr a = { .type = type, .size = sizeof(a), .config = config };

	return a;
}

static void fallback_policy(void **state)
{
	struct perf_event_attr a = attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	unsigned all = TALLY_FALLBACK_NO_LOST | TALLY_FALLBACK_NO_GUEST |
		       TALLY_FALLBACK_USER_ONLY | TALLY_FALLBACK_CPU_CLOCK;

	(void)state;
	/* no PMU: cycles becomes cpu-clock, precise_ip kept */
	a.precise_ip = 3;
	assert_int_equal(tally_fallback__find(&a, -ENOENT, all), TALLY_FALLBACK_CPU_CLOCK);
	assert_int_equal(tally_fallback__find(&a, -ENOENT, 0), TALLY_FALLBACK_NONE);
	assert_int_equal(tally_fallback__apply(&a, TALLY_FALLBACK_CPU_CLOCK), 0);
	assert_int_equal(a.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(a.config, PERF_COUNT_SW_CPU_CLOCK);
	assert_int_equal(a.precise_ip, 3);
	assert_int_equal(tally_fallback__find(&a, -ENOENT, all), TALLY_FALLBACK_NONE);

	/* EINVAL: LOST before the guest bits, each only when set */
	a = attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	a.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
	a.exclude_guest = 1;
	assert_int_equal(tally_fallback__find(&a, -EINVAL, all), TALLY_FALLBACK_NO_LOST);
	tally_fallback__apply(&a, TALLY_FALLBACK_NO_LOST);
	assert_int_equal(a.read_format, PERF_FORMAT_ID);
	assert_int_equal(tally_fallback__find(&a, -EINVAL, all), TALLY_FALLBACK_NO_GUEST);
	tally_fallback__apply(&a, TALLY_FALLBACK_NO_GUEST);
	assert_int_equal(a.exclude_guest, 0);
	assert_int_equal(tally_fallback__find(&a, -EINVAL, all), TALLY_FALLBACK_NONE);

	/* EACCES: user space only; exclude_hv too unless the caller asks for NO_KERNEL */
	a = attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	assert_int_equal(tally_fallback__find(&a, -EACCES, all), TALLY_FALLBACK_USER_ONLY);
	assert_int_equal(tally_fallback__find(&a, -EPERM, TALLY_FALLBACK_NO_KERNEL),
			 TALLY_FALLBACK_NO_KERNEL);
	tally_fallback__apply(&a, TALLY_FALLBACK_NO_KERNEL);
	assert_true(a.exclude_kernel && !a.exclude_hv);
	assert_int_equal(tally_fallback__find(&a, -EACCES, all), TALLY_FALLBACK_NONE);
	a.exclude_kernel = 0;
	tally_fallback__apply(&a, TALLY_FALLBACK_USER_ONLY);
	assert_true(a.exclude_kernel && a.exclude_hv);

	/* other errors have no fallback */
	assert_int_equal(tally_fallback__find(&a, -EBUSY, ~0u), TALLY_FALLBACK_NONE);
	assert_int_equal(tally_fallback__apply(&a, TALLY_FALLBACK_NONE), -EINVAL);
}

struct veto {
	int calls;
	bool allow;
	size_t ev;
	enum tally_fallback kind;
	size_t fds_then;
};

static bool veto_cb(void *arg, struct tally_sampler *s, size_t ev, enum tally_fallback kind,
		    int err)
{
	struct veto *v = arg;

	assert_int_equal(err, -ENOENT);
	/* asked before the change */
	assert_int_equal(tally_sampler__attr(s, ev)->type, PERF_TYPE_HARDWARE);
	v->calls++;
	v->ev = ev;
	v->kind = kind;
	v->fds_then = tally_sampler__nr_fds(s);
	return v->allow;
}

/* cycles (leader) + page-faults (member) + a task-clock of its own on 2 CPUs, without
 * a hardware PMU: cycles falls back to cpu-clock once, then opens everywhere. */
static void open_groups_with_fallback(void **state)
{
	struct perf_event_attr cyc = attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	struct perf_event_attr pf = attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	struct perf_event_attr tc = attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	struct tally_cpumap *cpus = NULL;
	struct tally_threadmap *threads = NULL;
	struct veto v = { .allow = true };
	struct tally_sampler_opts o = { .fallbacks = TALLY_FALLBACK_CPU_CLOCK,
					.fallback = veto_cb, .arg = &v };
	struct tally_sampler *s = NULL;
	struct sim_kernel *k = sim_install();
	size_t pages = 4;
	int idx = -1;

	(void)state;
	k->has_hw_pmu = false;
	assert_int_equal(tally_cpumap__parse("0-1", &cpus, NULL), 0);
	assert_int_equal(tally_threadmap__single(-1, &threads), 0);
	assert_int_equal(tally_sampler__new(&s, cpus, threads, &o), 0);
	assert_int_equal(tally_sampler__add(s, &cyc, -1, NULL, &idx), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(tally_sampler__add(s, &pf, 0, NULL, &idx), 0);
	assert_int_equal(tally_sampler__add(s, &tc, -1, "common_pid != 0", &idx), 0);
	assert_int_equal(idx, 2);
	assert_int_equal(tally_sampler__add(s, &tc, 1, NULL, NULL), -EINVAL);	/* not a leader */
	assert_int_equal(tally_sampler__nr_events(s), 3);

	assert_int_equal(tally_sampler__open(s, NULL), 0);
	assert_int_equal(v.calls, 1);
	assert_int_equal(v.ev, 0);
	assert_int_equal(v.kind, TALLY_FALLBACK_CPU_CLOCK);
	assert_int_equal(v.fds_then, 0);
	assert_int_equal(tally_sampler__attr(s, 0)->type, PERF_TYPE_SOFTWARE);
	assert_int_equal(tally_sampler__fell_back(s, 0), TALLY_FALLBACK_CPU_CLOCK);
	assert_int_equal(tally_sampler__fell_back(s, 1), 0);
	assert_int_equal(tally_sampler__nr_fds(s), 6);
	for (size_t i = 0; i < 6; i++) {
		const struct tally_sampler_fd *f = tally_sampler__fd(s, i);
		struct sim_event *e = sim_event_by_fd(f->fd);

		assert_int_equal(f->ev, (int)(i % 3));
		assert_int_equal(f->cpu, (int)(i / 3));
		assert_int_equal(f->tid, -1);
		assert_int_equal(f->ring, -1);
		/* the member joins its leader's fd of the same CPU */
		assert_int_equal(e->group_fd, f->ev == 1 ? tally_sampler__fd(s, i - 1)->fd : -1);
		assert_ptr_equal(tally_sampler__fd_of_id(s, e->id), f);
	}
	assert_null(tally_sampler__fd(s, 6));
	assert_null(tally_sampler__fd_of_id(s, 1));

	/* one ring per CPU */
	assert_int_equal(tally_sampler__mmap(s, &pages), 0);
	assert_int_equal(pages, 4);
	assert_int_equal(tally_sampler__nr_rings(s), 2);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(tally_sampler__fd(s, i)->ring, (int)(i / 3));
	assert_int_equal(tally_ring__fd(tally_sampler__ring(s, 1)), tally_sampler__fd(s, 3)->fd);
	assert_null(tally_sampler__ring(s, 2));

	/* enable and disable reach the leaders only */
	assert_int_equal(tally_sampler__enable(s), 0);
	assert_int_equal(tally_sampler__disable(s), 0);
	for (size_t i = 0; i < 6; i++) {
		struct sim_event *e = sim_event_by_fd(tally_sampler__fd(s, i)->fd);

		assert_int_equal(e->nr_enable, i % 3 == 1 ? 0 : 1);
		assert_int_equal(e->nr_disable, i % 3 == 1 ? 0 : 1);
	}
	/* one event alone: the member's fds only */
	assert_int_equal(tally_sampler__enable_event(s, 1, true), 0);
	assert_int_equal(tally_sampler__enable_event(s, 3, true), -EINVAL);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(sim_event_by_fd(tally_sampler__fd(s, i)->fd)->nr_enable, 1);
	{
		uint64_t buf[4];

		sim_event_by_fd(tally_sampler__fd(s, 2)->fd)->count = 42;
		assert_int_equal(tally_sampler__read(s, 2, buf, sizeof(buf)), 8);
		assert_int_equal(buf[0], 42);
		assert_int_equal(tally_sampler__read(s, 6, buf, sizeof(buf)), -EINVAL);
	}
	tally_sampler__delete(s);
	for (int i = 0; i < SIM_MAX_FDS; i++)
		assert_false(k->ev[i].used);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(threads);
	sim_uninstall();
}

/* The caller keeps the failure: nothing stays open and the error says where. */
static void veto_keeps_the_failure(void **state)
{
	struct perf_event_attr tc = attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	struct perf_event_attr cyc = attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	struct tally_cpumap *cpus = NULL;
	struct tally_threadmap *threads = NULL;
	struct veto v = { .allow = false };
	struct tally_sampler_opts o = { .fallbacks = TALLY_FALLBACK_CPU_CLOCK,
					.fallback = veto_cb, .arg = &v };
	struct tally_sampler_error w;
	struct tally_sampler *s = NULL;
	struct sim_kernel *k = sim_install();

	(void)state;
	k->has_hw_pmu = false;
	assert_int_equal(tally_cpumap__parse("0-1", &cpus, NULL), 0);
	assert_int_equal(tally_threadmap__single(-1, &threads), 0);
	assert_int_equal(tally_sampler__new(&s, cpus, threads, &o), 0);
	assert_int_equal(tally_sampler__add(s, &tc, -1, NULL, NULL), 0);
	assert_int_equal(tally_sampler__add(s, &cyc, -1, NULL, NULL), 0);
	assert_int_equal(tally_sampler__open(s, &w), -ENOENT);
	assert_int_equal(v.calls, 1);
	assert_int_equal(v.fds_then, 1);	/* task-clock on CPU 0 was open */
	assert_int_equal(w.err, -ENOENT);
	assert_int_equal(w.ev, 1);
	assert_int_equal(w.cpu, 0);
	assert_int_equal(w.tid, -1);
	assert_false(w.filter);
	assert_int_equal(tally_sampler__nr_fds(s), 0);
	assert_int_equal(tally_sampler__attr(s, 1)->type, PERF_TYPE_HARDWARE);
	for (int i = 0; i < SIM_MAX_FDS; i++)
		assert_false(k->ev[i].used);
	tally_sampler__delete(s);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(threads);
	sim_uninstall();
}

/* Per-task events on any CPU: a ring per thread; threads that exited are skipped. */
static void per_thread_rings_and_exited_threads(void **state)
{
	struct perf_event_attr tc = attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	struct perf_event_attr cs = attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES);
	struct tally_cpumap *cpus = NULL;
	struct tally_threadmap *threads = NULL;
	struct tally_sampler_opts o = { .skip_exited = true };
	struct tally_sampler *s = NULL;
	size_t pages = 1;

	(void)state;
	sim_install();
	assert_int_equal(tally_cpumap__any(&cpus), 0);
	assert_int_equal(tally_threadmap__parse_tids("10,11", &threads), 0);
	assert_int_equal(tally_sampler__new(&s, cpus, threads, &o), 0);
	assert_int_equal(tally_sampler__add(s, &tc, -1, NULL, NULL), 0);
	assert_int_equal(tally_sampler__add(s, &cs, -1, NULL, NULL), 0);
	assert_int_equal(tally_sampler__open(s, NULL), 0);
	assert_int_equal(tally_sampler__nr_fds(s), 4);
	assert_int_equal(tally_sampler__mmap(s, &pages), 0);
	assert_int_equal(tally_sampler__nr_rings(s), 2);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(tally_sampler__fd(s, i)->tid, i < 2 ? 10 : 11);
		assert_int_equal(tally_sampler__fd(s, i)->ring, (int)(i / 2));
	}
	tally_sampler__close(s);
	assert_int_equal(tally_sampler__nr_fds(s), 0);
	assert_int_equal(tally_sampler__nr_rings(s), 0);

	/* every thread gone: nothing open, and no error (the caller says so) */
	sim_fail_open(PERF_TYPE_SOFTWARE, 0, true, ESRCH);
	assert_int_equal(tally_sampler__open(s, NULL), 0);
	assert_int_equal(tally_sampler__nr_fds(s), 0);
	tally_sampler__delete(s);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(threads);
	sim_uninstall();
}

static void bad_arguments(void **state)
{
	struct tally_cpumap *cpus = NULL;
	struct tally_threadmap *threads = NULL;
	struct tally_sampler *s = (struct tally_sampler *)1;
	int64_t v;

	(void)state;
	assert_int_equal(tally_cpumap__any(&cpus), 0);
	assert_int_equal(tally_threadmap__single(-1, &threads), 0);
	assert_int_equal(tally_sampler__new(&s, NULL, threads, NULL), -EINVAL);
	assert_null(s);
	assert_int_equal(tally_sampler__new(&s, cpus, threads, NULL), 0);
	assert_int_equal(tally_sampler__open(s, NULL), -EINVAL);	/* no event */
	assert_null(tally_sampler__attr(s, 0));
	tally_sampler__delete(s);
	tally_sampler__delete(NULL);
	tally_sampler__close(NULL);
	assert_int_equal(tally_sysctl__read("../x", &v), -EINVAL);
	assert_int_equal(tally_sysctl__read("no_such_tally_setting", &v), -ENOENT);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(threads);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fallback_policy),
		cmocka_unit_test(open_groups_with_fallback),
		cmocka_unit_test(veto_keeps_the_failure),
		cmocka_unit_test(per_thread_rings_and_exited_threads),
		cmocka_unit_test(bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
