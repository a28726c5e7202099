/*
 * The sys seam: the real kernel path and the simulated kernel behind it.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal/sys.h"
#include "simkernel.h"
#include "tally/cpumap.h"

static void real_software_event_counts(void **state)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(attr),
		.config = PERF_COUNT_SW_TASK_CLOCK, .disabled = 1,
		.exclude_kernel = 1, .exclude_hv = 1,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
	};
	uint64_t v[3] = {0};
	int fd;

	(void)state;
	fd = tly_sys__perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd == -EACCES || fd == -EPERM || fd == -ENOSYS)
		skip();
	assert_true(fd >= 0);
	assert_int_equal(tly_sys__ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	for (volatile int i = 0; i < 1000000; i++)
		;
	assert_int_equal(tly_sys__read(fd, v, sizeof(v)), (ssize_t)sizeof(v));
	assert_true(v[0] > 0);
	assert_true(v[1] >= v[2]);
	assert_int_equal(tly_sys__close(fd), 0);
}

static void errors_are_negative_errno(void **state)
{
	struct perf_event_attr attr = { .type = 0xdead, .size = sizeof(attr) };

	(void)state;
	assert_true(tly_sys__perf_event_open(&attr, 0, -1, -1, 0) < 0);
	assert_int_equal(tly_sys__read(-1, &attr, 8), -EBADF);
	assert_int_equal(tly_sys__close(-1), 0);
}

static void sim_group_read(void **state)
{
	struct sim_kernel *k = sim_install();
	struct perf_event_attr a = {
		.type = PERF_TYPE_HARDWARE, .size = sizeof(a), .config = PERF_COUNT_HW_CPU_CYCLES,
		.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID |
			       PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
	};
	uint64_t buf[16];
	int l, m;

	(void)state;
	l = tly_sys__perf_event_open(&a, 0, -1, -1, 0);
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	m = tly_sys__perf_event_open(&a, 0, -1, l, 0);
	assert_true(l >= 0 && m >= 0);
	sim_event_by_fd(l)->count = 1000;
	sim_event_by_fd(l)->enabled = 300;
	sim_event_by_fd(l)->running = 200;
	sim_event_by_fd(m)->count = 2000;
	assert_int_equal(tly_sys__read(l, buf, sizeof(buf)), 7 * 8);
	assert_int_equal(buf[0], 2);
	assert_int_equal(buf[1], 300);
	assert_int_equal(buf[2], 200);
	assert_int_equal(buf[3], 1000);
	assert_int_equal(buf[5], 2000);
	k->has_hw_pmu = false;
	assert_int_equal(tly_sys__perf_event_open(&a, 0, -1, -1, 0), -ENOENT);
	sim_uninstall();
}

static void cpumap_parse_format(void **state)
{
	struct tally_cpumap *m;
	char buf[64];
	size_t bad = 0;

	(void)state;
	assert_int_equal(tally_cpumap__parse("5,0-3,2", &m, NULL), 0);
	assert_int_equal(m->nr, 5);
	assert_int_equal(m->cpu[0], 0);
	assert_int_equal(m->cpu[4], 5);
	tally_cpumap__format(m, buf, sizeof(buf));
	assert_string_equal(buf, "0-3,5");
	tally_cpumap__delete(m);
	assert_int_equal(tally_cpumap__parse("1,x", &m, &bad), -EINVAL);
	assert_int_equal(bad, 2);
	assert_int_equal(tally_cpumap__parse("3-1", &m, NULL), -EINVAL);
	assert_int_equal(tally_cpumap__parse("", &m, NULL), -EINVAL);
	tally_cpumap__delete(NULL);
}

/* The CPUs a helper thread may use follow the affinity mask (taskset), not the
 * machine's online count. */
static void cpumap_nr_usable(void **state)
{
	cpu_set_t saved, one;
	int first = -1;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	assert_int_equal(tally_cpumap__nr_usable(), CPU_COUNT(&saved));
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &saved))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(tally_cpumap__nr_usable(), 1);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
	assert_int_equal(tally_cpumap__nr_usable(), CPU_COUNT(&saved));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(real_software_event_counts),
		cmocka_unit_test(errors_are_negative_errno),
		cmocka_unit_test(sim_group_read),
		cmocka_unit_test(cpumap_parse_format),
		cmocka_unit_test(cpumap_nr_usable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
