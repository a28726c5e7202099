/*
 * PMU discovery: format specs, value placement, the fake sysfs trees in
 * tests/data/sysfs (types, formats, aliases with scale/unit, caps, cpumask/cpus,
 * broken entries skipped), and CPUID leaf 0xA on x86.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tally/cpumap.h"
#include "tally/pmu.h"

static char root_x86[PATH_MAX + 16], root_arm[PATH_MAX + 16];

static bool find_data(void)
{
	const char *top = getenv("TALLY_TOP");
	const char *file = __FILE__, *slash = strrchr(file, '/');
	char cand[PATH_MAX];

	cand[0] = 0;
	if (top)
		snprintf(cand, sizeof(cand), "%s/tests/data/sysfs", top);
	if ((!cand[0] || access(cand, R_OK)) && slash)
		snprintf(cand, sizeof(cand), "%.*s/../data/sysfs", (int)(slash - file), file);
	if (access(cand, R_OK))
		snprintf(cand, sizeof(cand), "tests/data/sysfs");
	if (access(cand, R_OK))
		return false;
	snprintf(root_x86, sizeof(root_x86), "%s/x86", cand);
	snprintf(root_arm, sizeof(root_arm), "%s/arm64", cand);
	return true;
}

static void format_parse(void **state)
{
	struct tally_pmu_format f;
	(void)state;

	assert_int_equal(tally_pmu_format__parse("config:0-7", &f), 0);
	assert_int_equal(f.field, 0);
	assert_int_equal(f.mask, 0xff);
	assert_int_equal(tally_pmu_format__parse("config1:0-7,21", &f), 0);
	assert_int_equal(f.field, 1);
	assert_int_equal(f.mask, 0xff | (1u << 21));
	assert_int_equal(tally_pmu_format__parse("config2:63\n", &f), 0);
	assert_int_equal(f.field, 2);
	assert_int_equal(f.mask, 1ULL << 63);
	assert_int_equal(tally_pmu_format__parse("config3:0-63", &f), 0);
	assert_int_equal(f.field, 3);
	assert_int_equal(f.mask, UINT64_MAX);
	assert_int_equal(tally_pmu_format__parse("config:5", &f), 0);
	assert_int_equal(f.mask, 1u << 5);
	assert_int_equal(tally_pmu_format__parse("config4:1", &f), -EINVAL);
	assert_int_equal(tally_pmu_format__parse("config:64", &f), -EINVAL);
	assert_int_equal(tally_pmu_format__parse("config:7-3", &f), -EINVAL);
	assert_int_equal(tally_pmu_format__parse("config:", &f), -EINVAL);
	assert_int_equal(tally_pmu_format__parse("config:1,", &f), -EINVAL);
	assert_int_equal(tally_pmu_format__parse("config:1-", &f), -EINVAL);
	assert_int_equal(tally_pmu_format__parse("config:1x", &f), -EINVAL);
	assert_int_equal(tally_pmu_format__parse("bogus", &f), -EINVAL);
}

static void format_apply(void **state)
{
	struct tally_pmu_format f;
	uint64_t c = 0;
	(void)state;

	assert_int_equal(tally_pmu_format__parse("config:0-3,8-11,60", &f), 0);
	assert_int_equal(tally_pmu_format__max(&f), 0x1ff);
	assert_int_equal(tally_pmu_format__apply(&f, 0x1ff, &c), 0);
	assert_int_equal(c, 0x1000000000000f0fULL);
	assert_int_equal(tally_pmu_format__apply(&f, 0x200, &c), -ERANGE);
	c = UINT64_MAX;
	assert_int_equal(tally_pmu_format__apply(&f, 0, &c), 0);
	assert_int_equal(c, ~0x1000000000000f0fULL);
	assert_int_equal(tally_pmu_format__parse("config:0-63", &f), 0);
	assert_int_equal(tally_pmu_format__max(&f), UINT64_MAX);
	c = 0;
	assert_int_equal(tally_pmu_format__apply(&f, UINT64_MAX, &c), 0);
	assert_int_equal(c, UINT64_MAX);
}

static void fake_x86(void **state)
{
	struct tally_pmus *pmus;
	const struct tally_pmu *p;
	const struct tally_pmu_alias *a;
	(void)state;

	if (!root_x86[0])
		skip();
	assert_int_equal(tally_pmus__new(root_x86, &pmus), 0);
	/* "bad" has a non-numeric type and is skipped */
	assert_null(tally_pmus__find(pmus, "bad"));
	assert_int_equal(tally_pmus__nr(pmus), 9);
	for (size_t i = 1; i < 9; i++)	/* sorted by name */
		assert_true(strcmp(tally_pmus__get(pmus, i - 1)->name,
				   tally_pmus__get(pmus, i)->name) < 0);
	assert_null(tally_pmus__get(pmus, 9));
	p = tally_pmus__find(pmus, "cpu");
	assert_non_null(p);
	assert_int_equal(p->type, 4);
	assert_ptr_equal(tally_pmus__find_type(pmus, 4), p);
	assert_null(tally_pmus__find_type(pmus, 999));
	assert_non_null(tally_pmu__format(p, "ldlat"));
	assert_int_equal(tally_pmu__format(p, "ldlat")->field, 1);
	assert_int_equal(tally_pmu__format(p, "cmask")->mask, 0xffULL << 24);
	assert_null(tally_pmu__format(p, "nope"));
	a = tally_pmu__alias(p, "mem-loads");
	assert_non_null(a);
	assert_string_equal(a->terms, "event=0xcd,umask=0x1,ldlat=3");
	assert_ptr_equal(tally_pmu__alias(p, "MEM-LOADS"), a);
	assert_true(tally_pmu__alias(p, "topdown-retiring")->scale == 4.0);
	/* companions are not events */
	assert_null(tally_pmu__alias(p, "topdown-retiring.scale"));
	assert_int_equal(p->nr_events, 5);
	assert_string_equal(tally_pmu__cap(p, "max_precise"), "3");
	assert_string_equal(tally_pmu__cap(p, "pmu_name"), "skylake");
	assert_null(tally_pmu__cap(p, "nope"));
	assert_null(p->cpus);

	p = tally_pmus__find(pmus, "power");
	a = tally_pmu__alias(p, "energy-pkg");
	assert_string_equal(a->unit, "Joules");
	assert_true(a->scale > 2.3e-10 && a->scale < 2.4e-10);
	assert_non_null(p->cpus);
	assert_int_equal(p->cpus->nr, 1);
	assert_int_equal(p->cpus->cpu[0], 0);

	/* a malformed format file is skipped, the rest of the PMU kept */
	p = tally_pmus__find(pmus, "badformat");
	assert_non_null(p);
	assert_int_equal(p->nr_formats, 1);
	assert_int_equal(tally_pmu__format(p, "ok")->field, 2);
	tally_pmus__delete(pmus);
	tally_pmus__delete(NULL);
}

static void fake_arm64(void **state)
{
	struct tally_pmus *pmus;
	const struct tally_pmu *p;
	(void)state;

	if (!root_arm[0])
		skip();
	assert_int_equal(tally_pmus__new(root_arm, &pmus), 0);
	p = tally_pmus__find(pmus, "armv8_pmuv3_1");
	assert_non_null(p);
	assert_int_equal(p->type, 11);
	assert_string_equal(tally_pmu__cap(p, "threshold_max"), "0xff");
	assert_int_equal(tally_pmu__format(p, "threshold")->mask, 0xfffULL << 5);
	/* arm64 core PMUs name their cpumask "cpus" */
	assert_non_null(p->cpus);
	assert_int_equal(p->cpus->nr, 2);
	assert_int_equal(p->cpus->cpu[0], 4);
	tally_pmus__delete(pmus);
	assert_int_equal(tally_pmus__new("/nonexistent-tally-root", &pmus), -ENOENT);
	assert_null(pmus);
}

static void real_sysfs(void **state)
{
	struct tally_pmus *pmus;
	(void)state;

	if (tally_pmus__new(NULL, &pmus))
		skip();
	/* every kernel has the software and tracepoint PMUs with fixed types */
	if (tally_pmus__find(pmus, "software"))
		assert_int_equal(tally_pmus__find(pmus, "software")->type, 1);
	if (tally_pmus__find(pmus, "tracepoint"))
		assert_int_equal(tally_pmus__find(pmus, "tracepoint")->type, 2);
	tally_pmus__delete(pmus);
}

static void cpuid(void **state)
{
	struct tally_cpuid_pmu c;
	int r = tally_cpuid_pmu(&c);
	(void)state;

#if defined(__x86_64__) || defined(__i386__)
	assert_true(c.vendor[0] != 0);
	assert_true(c.family > 0);
	if (r == 0 && c.version > 0) {
		assert_true(c.nr_gp > 0);
		assert_true(c.gp_width >= 32 && c.gp_width <= 64);
	}
	assert_true(r == 0 || r == -EOPNOTSUPP);
#else
	assert_int_equal(r, -EOPNOTSUPP);
#endif
	assert_string_equal(tally_cpuid_pmu__event_name(0), "core cycles");
	assert_null(tally_cpuid_pmu__event_name(99));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(format_parse),
		cmocka_unit_test(format_apply),
		cmocka_unit_test(fake_x86),
		cmocka_unit_test(fake_arm64),
		cmocka_unit_test(real_sysfs),
		cmocka_unit_test(cpuid),
	};

	find_data();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
