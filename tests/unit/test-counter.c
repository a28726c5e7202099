/*
 * Counter sets over the simulated kernel: groups read with GROUP|ID, multiplexing
 * scaled, <not counted> (run == 0), unsupported events, fatal open errors, EMFILE.
 * Plus one real software-event run when the kernel allows it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal/sys.h"
#include "simkernel.h"
#include "tally/counter.h"
#include "tally/cpumap.h"
#include "tally/topology.h"

static struct perf_event_attr hw(uint64_t config)
{
	struct perf_event_attr a = { .type = PERF_TYPE_HARDWARE, .size = sizeof(a),
				     .config = config };
	return a;
}

static struct perf_event_attr sw(uint64_t config)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
				     .config = config };
	return a;
}

static void scale_overflow_safe(void **state)
{
	(void)state;
	assert_int_equal(tally_scale(100, 300, 200), 150);
	assert_int_equal(tally_scale(100, 300, 0), 0);
	assert_int_equal(tally_scale(100, 300, 300), 100);
	/* val * ena overflows 64 bits: must still be exact. */
	assert_true(tally_scale(UINT64_MAX / 2, 4, 3) ==
		    (uint64_t)((unsigned __int128)(UINT64_MAX / 2) * 4 / 3));
	assert_true(tally_scale(UINT64_MAX, 3, 1) == UINT64_MAX);
}

static void group_read_and_multiplexing(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = hw(PERF_COUNT_HW_CPU_CYCLES), b = hw(PERF_COUNT_HW_INSTRUCTIONS);
	struct sim_kernel *k;
	int lead, mem;

	(void)state;
	k = sim_install();
	assert_int_equal(tally_cpumap__parse("0-1", &cpus, NULL), 0);
	assert_int_equal(tally_threadmap__single(-1, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	a.disabled = 1;
	assert_int_equal(tally_counters__add(set, &a, -1, &lead), 0);
	assert_int_equal(tally_counters__add(set, &b, lead, &mem), 0);
	assert_int_equal(tally_counters__add(set, &b, mem, NULL), -EINVAL);	/* not a leader */
	assert_int_equal(tally_counters__event(set, lead)->nr_members, 2);
	assert_int_equal(tally_counters__open(set, 0), 0);
	assert_int_equal(k->nr_opened, 4);

	/* open order: the leader on cpu0 and cpu1, then the member on each (group_fd =
	 * the leader on the same CPU) */
	for (int n = 0; n < 2; n++) {
		struct sim_event *l = sim_event_nth(n), *m = sim_event_nth(n + 2);

		assert_int_equal(l->group_fd, -1);
		assert_int_equal(m->group_fd, l->fd);
		assert_int_equal(l->cpu, n);
		assert_int_equal(m->cpu, n);
		assert_int_equal(l->pid, -1);
		assert_true(l->flags & PERF_FLAG_FD_CLOEXEC);
		assert_int_equal(l->attr.read_format,
				 PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
				 PERF_FORMAT_ID | PERF_FORMAT_GROUP);
		assert_int_equal(m->attr.read_format, l->attr.read_format);
		/* multiplexed: ran 2/3 of the time */
		l->count = 1000 + 2 * n; l->enabled = 300; l->running = 200;
		m->count = 2000 + 2 * n;
	}
	assert_int_equal(tally_counters__enable(set), 0);
	assert_true(sim_event_nth(0)->is_enabled);
	assert_int_equal(tally_counters__read(set), 0);
	assert_int_equal(tally_counters__event(set, lead)->count[0].val, 1000);
	assert_int_equal(tally_counters__event(set, mem)->count[0].val, 2000);
	assert_int_equal(tally_counters__event(set, lead)->count[1].val, 1002);
	assert_int_equal(tally_counters__event(set, mem)->count[1].val, 2002);
	assert_int_equal(tally_counters__event(set, mem)->count[1].ena, 300);
	assert_int_equal(tally_counters__event(set, mem)->count[1].run, 200);

	struct tally_count s = tally_counters__sum(set, (size_t)mem);

	assert_int_equal(s.val, 4002);
	assert_int_equal(tally_scale(s.val, s.ena, s.run), 6003);
	assert_int_equal(tally_counters__disable(set), 0);
	assert_false(sim_event_nth(0)->is_enabled);

	tally_counters__delete(set);
	for (int n = 0; n < 4; n++)
		assert_null(sim_event_by_fd(1000 + n));
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

static void not_counted_and_unsupported(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = sw(PERF_COUNT_SW_TASK_CLOCK), c = hw(PERF_COUNT_HW_CPU_CYCLES);
	struct perf_event_attr d = hw(PERF_COUNT_HW_INSTRUCTIONS);
	struct sim_kernel *k;
	int ia, ic, id;

	(void)state;
	k = sim_install();
	k->has_hw_pmu = false;	/* like this VM */
	assert_int_equal(tally_cpumap__any(&cpus), 0);
	assert_int_equal(tally_threadmap__single(1234, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, &ia), 0);
	assert_int_equal(tally_counters__add(set, &c, -1, &ic), 0);
	assert_int_equal(tally_counters__add(set, &d, ic, &id), 0);
	assert_int_equal(tally_counters__open(set, 0), 0);
	assert_int_equal(tally_counters__event(set, ia)->open_err, 0);
	assert_int_equal(tally_counters__event(set, ic)->open_err, -ENOENT);
	assert_int_equal(tally_counters__event(set, id)->open_err, -ENOENT);	/* leader unsupported */
	assert_int_equal(tally_counters__event(set, ic)->fd[0], -1);
	assert_int_equal(k->nr_opened, 1);
	assert_int_equal(sim_event_nth(0)->pid, 1234);
	assert_int_equal(sim_event_nth(0)->attr.read_format,
			 PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING);
	/* never scheduled: run == 0 → the caller prints <not counted> */
	sim_event_nth(0)->count = 0;
	sim_event_nth(0)->enabled = 500;
	sim_event_nth(0)->running = 0;
	assert_int_equal(tally_counters__read(set), 0);
	assert_int_equal(tally_counters__event(set, ia)->count[0].run, 0);
	assert_int_equal(tally_counters__event(set, ia)->count[0].ena, 500);
	assert_int_equal(tally_counters__event(set, ic)->count[0].val, 0);
	assert_true(tally_counters__unsupported_err(-EOPNOTSUPP));
	assert_false(tally_counters__unsupported_err(-EACCES));
	tally_counters__delete(set);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

/* --filter: the string reaches every open fd of the event, and only that event's. */
static void tracepoint_filter_on_every_fd(void **state)
{
	static const char filter[] = "prev_pid == 0";
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = sw(PERF_COUNT_SW_TASK_CLOCK), b = sw(PERF_COUNT_SW_CPU_CLOCK);
	size_t bad;
	int ia, ib;

	(void)state;
	sim_install();
	assert_int_equal(tally_cpumap__parse("0-2", &cpus, &bad), 0);
	assert_int_equal(tally_threadmap__single(-1, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, &ia), 0);
	assert_int_equal(tally_counters__add(set, &b, -1, &ib), 0);
	assert_int_equal(tally_counters__open(set, 0), 0);
	assert_int_equal(tally_counters__set_filter(set, (size_t)ib, filter), 0);
	for (size_t k = 0; k < 3; k++) {
		assert_int_equal(sim_event_by_fd(tally_counters__event(set, ib)->fd[k])->last_ioctl_arg,
				 (unsigned long)filter);
		assert_int_not_equal(sim_event_by_fd(tally_counters__event(set, ia)->fd[k])->last_ioctl_arg,
				     (unsigned long)filter);
	}
	/* one event alone: --control's 'enable NAME' */
	assert_int_equal(tally_counters__disable(set), 0);
	assert_int_equal(tally_counters__enable_event(set, (size_t)ib, true), 0);
	for (size_t k = 0; k < 3; k++) {
		assert_true(sim_event_by_fd(tally_counters__event(set, ib)->fd[k])->is_enabled);
		assert_false(sim_event_by_fd(tally_counters__event(set, ia)->fd[k])->is_enabled);
	}
	assert_int_equal(tally_counters__enable_event(set, (size_t)ib, false), 0);
	assert_false(sim_event_by_fd(tally_counters__event(set, ib)->fd[2])->is_enabled);
	assert_int_equal(tally_counters__enable_event(set, 2, true), -EINVAL);
	assert_int_equal(tally_counters__set_filter(set, 5, filter), -EINVAL);
	assert_int_equal(tally_counters__set_filter(NULL, 0, filter), -EINVAL);
	tally_counters__delete(set);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

/* -G: the event opens with the cgroup's fd as pid and PERF_FLAG_PID_CGROUP on every CPU;
 * the others as before. Not on a set over threads. */
static void cgroup_event_opens_with_cgroup_fd(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr, *task;
	struct tally_counters *set, *tset;
	struct perf_event_attr a = sw(PERF_COUNT_SW_TASK_CLOCK), b = sw(PERF_COUNT_SW_CPU_CLOCK);
	int ia, ib;

	(void)state;
	sim_install();
	assert_int_equal(tally_cpumap__parse("0-1", &cpus, NULL), 0);
	assert_int_equal(tally_threadmap__single(-1, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, &ia), 0);
	assert_int_equal(tally_counters__add(set, &b, -1, &ib), 0);
	assert_int_equal(tally_counters__event(set, ib)->cgroup_fd, -1);
	assert_int_equal(tally_counters__set_cgroup(set, (size_t)ib, 77), 0);
	assert_int_equal(tally_counters__set_cgroup(set, 2, 77), -EINVAL);
	assert_int_equal(tally_counters__set_cgroup(NULL, 0, 77), -EINVAL);
	assert_int_equal(tally_counters__open(set, 0), 0);
	for (size_t k = 0; k < 2; k++) {
		struct sim_event *ea = sim_event_by_fd(tally_counters__event(set, ia)->fd[k]);
		struct sim_event *eb = sim_event_by_fd(tally_counters__event(set, ib)->fd[k]);

		assert_int_equal(ea->pid, -1);
		assert_false(ea->flags & PERF_FLAG_PID_CGROUP);
		assert_int_equal(eb->pid, 77);
		assert_int_equal(eb->cpu, (int)k);
		assert_true(eb->flags & PERF_FLAG_PID_CGROUP);
		assert_true(eb->flags & PERF_FLAG_FD_CLOEXEC);
	}
	assert_int_equal(tally_threadmap__single(getpid(), &task), 0);
	assert_int_equal(tally_counters__new(cpus, task, &tset), 0);
	assert_int_equal(tally_counters__add(tset, &a, -1, NULL), 0);
	assert_int_equal(tally_counters__set_cgroup(tset, 0, 77), -EINVAL);
	assert_int_equal(tally_counters__set_cgroup(tset, 0, -1), 0);
	tally_counters__delete(tset);
	tally_counters__delete(set);
	tally_threadmap__delete(task);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

static void fatal_error_closes_everything(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = sw(PERF_COUNT_SW_TASK_CLOCK), b = sw(PERF_COUNT_SW_PAGE_FAULTS);
	struct sim_kernel *k;

	(void)state;
	k = sim_install();
	sim_fail_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false, EACCES);
	assert_int_equal(tally_cpumap__parse("0-2", &cpus, NULL), 0);
	assert_int_equal(tally_threadmap__single(-1, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, NULL), 0);
	assert_int_equal(tally_counters__add(set, &b, -1, NULL), 0);
	assert_int_equal(tally_counters__open(set, 0), -EACCES);
	{
		int fcpu;

		assert_int_equal(tally_counters__failure(set, &fcpu, NULL), 1);
		assert_int_equal(fcpu, 0);
	}
	assert_int_equal(k->nr_opened, 3);	/* task-clock on 3 CPUs, then the failure */
	for (int n = 0; n < 3; n++)
		assert_false(sim_event_nth(n)->used);
	tally_counters__delete(set);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

static void emfile_raises_limit_once(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = sw(PERF_COUNT_SW_TASK_CLOCK);
	struct sim_kernel *k;
	struct rlimit rl, low;

	(void)state;
	/* Make sure there is room to raise the soft limit. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	if (low.rlim_cur >= low.rlim_max)
		low.rlim_cur = low.rlim_max > 64 ? 64 : low.rlim_max - 1;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	k = sim_install();
	sim_fail_open(PERF_TYPE_SOFTWARE, 0, true, EMFILE);
	assert_int_equal(tally_cpumap__any(&cpus), 0);
	assert_int_equal(tally_threadmap__single(0, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, NULL), 0);
	assert_int_equal(tally_counters__open(set, 0), -EMFILE);
	assert_true(tally_counters__raised_nofile(set));
	assert_int_equal(k->nr_open_calls, 2);	/* tried, raised the limit, retried */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &low), 0);
	assert_true(low.rlim_cur == low.rlim_max);
	setrlimit(RLIMIT_NOFILE, &rl);
	tally_counters__delete(set);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

static void exclude_guest_fallback(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = { .type = 9 /* msr */, .size = sizeof(a), .exclude_guest = 1 };
	struct sim_kernel *k;

	(void)state;
	k = sim_install();
	sim_fail_open(9, 0, true, EINVAL);	/* every msr open fails: EINVAL both times */
	assert_int_equal(tally_cpumap__any(&cpus), 0);
	assert_int_equal(tally_threadmap__single(0, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, NULL), 0);
	assert_int_equal(tally_counters__open(set, 0), 0);
	/* tried with exclude_guest, then without; EINVAL then means unsupported */
	assert_int_equal(k->nr_open_calls, 2);
	assert_int_equal(tally_counters__event(set, 0)->attr->exclude_guest, 0);
	assert_int_equal(tally_counters__event(set, 0)->open_err, -EINVAL);
	tally_counters__delete(set);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

static void user_only_fallback(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = sw(PERF_COUNT_SW_TASK_CLOCK);
	struct sim_kernel *k;

	(void)state;
	k = sim_install();
	sim_fail_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, false, EACCES);
	assert_int_equal(tally_cpumap__any(&cpus), 0);
	assert_int_equal(tally_threadmap__single(0, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, NULL), 0);
	/* off (the default): EACCES is fatal at once */
	assert_int_equal(tally_counters__open(set, 0), -EACCES);
	assert_int_equal(k->nr_open_calls, 1);
	assert_false(tally_counters__event(set, 0)->user_only);
	/* on: retried once with exclude_kernel|exclude_hv, then fatal */
	tally_counters__set_user_only_fallback(set, true);
	assert_int_equal(tally_counters__open(set, 0), -EACCES);
	assert_int_equal(k->nr_open_calls, 3);
	assert_true(tally_counters__event(set, 0)->user_only);
	assert_int_equal(tally_counters__event(set, 0)->attr->exclude_kernel, 1);
	assert_int_equal(tally_counters__event(set, 0)->attr->exclude_hv, 1);
	tally_counters__delete(set);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
	sim_uninstall();
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A fake sysfs: 2 sockets x 2 cores, cpu3 on NUMA node 1, cpu10 sorted after cpu2,
 * cpu2 without die_id (old kernels). */
static void topology_from_fake_sysfs(void **state)
{
	char root[] = "/tmp/tally-topo-XXXXXX", dir[512], cmd[600];
	static const struct { int cpu, core, die, socket, node; bool has_die; } cpus[] = {
		{ 0, 0, 0, 0, 0, true }, { 1, 1, 0, 0, 0, true },
		{ 2, 0, 0, 1, 0, false }, { 10, 1, 0, 1, 1, true },
	};
	struct tally_topology *t;
	const struct tally_cpu_topo *c;

	(void)state;
	assert_non_null(mkdtemp(root));
	for (size_t i = 0; i < sizeof(cpus) / sizeof(cpus[0]); i++) {
		char num[16];

		snprintf(dir, sizeof(dir), "%s/devices/system/cpu/cpu%d/topology", root, cpus[i].cpu);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
		assert_int_equal(system(cmd), 0);
		snprintf(num, sizeof(num), "%d\n", cpus[i].core);
		put_file(dir, "core_id", num);
		snprintf(num, sizeof(num), "%d\n", cpus[i].socket);
		put_file(dir, "physical_package_id", num);
		if (cpus[i].has_die) {
			snprintf(num, sizeof(num), "%d\n", cpus[i].die);
			put_file(dir, "die_id", num);
		}
		snprintf(dir, sizeof(dir), "%s/devices/system/cpu/cpu%d/node%d", root, cpus[i].cpu,
			 cpus[i].node);
		assert_int_equal(mkdir(dir, 0755), 0);
	}
	/* not CPUs: must be skipped */
	snprintf(dir, sizeof(dir), "%s/devices/system/cpu/cpufreq", root);
	assert_int_equal(mkdir(dir, 0755), 0);

	assert_int_equal(tally_topology__read(root, &t), 0);
	assert_int_equal(t->nr, 4);
	assert_int_equal(t->cpu[3].cpu, 10);	/* numeric order */
	c = tally_topology__cpu(t, 10);
	assert_non_null(c);
	assert_int_equal(c->socket, 1);
	assert_int_equal(c->core, 1);
	assert_int_equal(c->node, 1);
	c = tally_topology__cpu(t, 2);
	assert_non_null(c);
	assert_int_equal(c->die, 0);
	assert_int_equal(c->socket, 1);
	assert_null(tally_topology__cpu(t, 5));
	tally_topology__delete(t);
	tally_topology__delete(NULL);
	assert_int_equal(tally_topology__read("/nonexistent-root", &t), -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
	/* the real machine: every online CPU has an entry */
	assert_int_equal(tally_topology__read(NULL, &t), 0);
	assert_true(t->nr >= 1);
	assert_non_null(tally_topology__cpu(t, 0));
	tally_topology__delete(t);
}

static void real_kernel_software_count(void **state)
{
	struct tally_cpumap *cpus;
	struct tally_threadmap *thr;
	struct tally_counters *set;
	struct perf_event_attr a = sw(PERF_COUNT_SW_TASK_CLOCK), b = sw(PERF_COUNT_SW_PAGE_FAULTS);
	int r, lead;

	(void)state;
	a.disabled = 1;
	a.exclude_kernel = 1;
	b.exclude_kernel = 1;
	assert_int_equal(tally_cpumap__any(&cpus), 0);
	assert_int_equal(tally_threadmap__single(0, &thr), 0);
	assert_int_equal(tally_counters__new(cpus, thr, &set), 0);
	assert_int_equal(tally_counters__add(set, &a, -1, &lead), 0);
	assert_int_equal(tally_counters__add(set, &b, lead, NULL), 0);
	r = tally_counters__open(set, 0);
	if (r == -EACCES || r == -EPERM || r == -ENOSYS) {
		tally_counters__delete(set);
		tally_cpumap__delete(cpus);
		tally_threadmap__delete(thr);
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(tally_counters__enable(set), 0);
	for (volatile int i = 0; i < 2000000; i++)
		;
	assert_int_equal(tally_counters__disable(set), 0);
	assert_int_equal(tally_counters__read(set), 0);
	assert_true(tally_counters__event(set, 0)->count[0].val > 0);
	assert_true(tally_counters__event(set, 0)->count[0].ena >= tally_counters__event(set, 0)->count[0].run);
	assert_int_equal(tally_counters__event(set, 1)->count[0].ena, tally_counters__event(set, 0)->count[0].ena);
	tally_counters__delete(set);
	tally_cpumap__delete(cpus);
	tally_threadmap__delete(thr);
}

/* Every thread of the system (system-wide --per-thread): this process's threads, init,
 * each process's threads together and sorted. */
static void *idle_thread(void *arg)
{
	pause();
	return arg;
}

static void all_threads(void **state)
{
	struct tally_threadmap *m;
	pthread_t th;
	bool self = false, other = false, init = false;
	pid_t pid = getpid();

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, idle_thread, NULL), 0);
	assert_int_equal(tally_threadmap__all(&m), 0);
	for (size_t i = 0; i < m->nr; i++) {
		char path[64];
		int tgid = -1;
		FILE *f;

		init |= m->tid[i] == 1;
		self |= m->tid[i] == pid;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)m->tid[i]);
		if (m->tid[i] != pid && (f = fopen(path, "r"))) {
			char line[128];

			while (fgets(line, sizeof(line), f))
				if (sscanf(line, "Tgid: %d", &tgid) == 1)
					break;
			fclose(f);
			other |= tgid == pid;	/* the thread made above */
		}
	}
	assert_true(self && other && init);
	assert_true(m->nr >= 3);
	tally_threadmap__delete(m);
	pthread_cancel(th);
	pthread_join(th, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scale_overflow_safe),
		cmocka_unit_test(group_read_and_multiplexing),
		cmocka_unit_test(not_counted_and_unsupported),
		cmocka_unit_test(fatal_error_closes_everything),
		cmocka_unit_test(tracepoint_filter_on_every_fd),
		cmocka_unit_test(cgroup_event_opens_with_cgroup_fd),
		cmocka_unit_test(emfile_raises_limit_once),
		cmocka_unit_test(all_threads),
		cmocka_unit_test(exclude_guest_fallback),
		cmocka_unit_test(user_only_fallback),
		cmocka_unit_test(topology_from_fake_sysfs),
		cmocka_unit_test(real_kernel_software_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
