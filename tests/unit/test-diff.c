/*
 * Profiles and diffs (tally/diff.h) on the checked-in perf.data fixtures: a file against
 * itself changes nothing, events pair by type and config, totals and filters, orders,
 * and the arguments a diff refuses.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tally/diff.h"

static char fix[4096];

static const char *fixture(const char *name)
{
	const char *top = getenv("TALLY_TOP");

	snprintf(fix, sizeof(fix), "%s/tests/data/perf/%s", top ? top : "..", name);
	return fix;
}

static struct tally_profile *load(const char *name, const struct tally_profile_opts *o)
{
	struct tally_profile *p;
	struct tally_data_error err = { 0 };

	assert_int_equal(tally_profile__load(&p, fixture(name), o, &err), 0);
	return p;
}

static void self_diff(void **state)
{
	struct tally_profile *f[2];
	struct tally_diff *d;
	uint64_t sum = 0;

	(void)state;
	f[0] = load("multi.data", NULL);
	f[1] = load("multi.data", NULL);
	assert_int_equal(tally_profile__nr_events(f[0]), 3);
	for (size_t ev = 0; ev < 3; ev++) {
		struct tally_profile_total t = tally_profile__total(f[0], ev);

		assert_int_equal(tally_diff__new(&d, f, 2, ev, NULL), 0);
		assert_true(tally_diff__matched(d, 1));
		assert_true(tally_diff__nr_rows(d) > 0);
		sum = 0;
		for (size_t i = 0; i < tally_diff__nr_rows(d); i++) {
			const struct tally_diff_row *r = tally_diff__row(d, i);

			assert_false(r->dummy);
			assert_true(r->cells[1].paired);
			assert_true(fabs(r->cells[1].delta) < 1e-9);
			assert_int_equal(r->cells[0].period, r->cells[1].period);
			sum += r->cells[0].period;
			/* equal deltas: heaviest baseline first */
			if (i)
				assert_true(tally_diff__row(d, i - 1)->cells[0].period >= r->cells[0].period);
		}
		assert_int_equal(sum, t.period);
		assert_int_equal(tally_diff__total(d, 0), t.period);
		assert_null(tally_diff__row(d, tally_diff__nr_rows(d)));
		tally_diff__delete(d);
	}
	tally_diff__delete(NULL);
	tally_profile__delete(f[0]);
	tally_profile__delete(f[1]);
}

/* plain.data has cpu-clock only: multi.data's task-clock and tracepoint find nothing */
static void events_pair_by_type_and_config(void **state)
{
	struct tally_profile *f[2];
	struct tally_diff *d;

	(void)state;
	f[0] = load("multi.data", NULL);
	f[1] = load("plain.data", NULL);
	assert_int_equal(tally_diff__new(&d, f, 2, 0, NULL), 0);
	assert_true(tally_diff__matched(d, 1));
	tally_diff__delete(d);
	assert_int_equal(tally_diff__new(&d, f, 2, 2, NULL), 0);
	assert_false(tally_diff__matched(d, 1));
	for (size_t i = 0; i < tally_diff__nr_rows(d); i++)
		assert_false(tally_diff__row(d, i)->cells[1].paired);
	tally_diff__delete(d);
	tally_profile__delete(f[0]);
	tally_profile__delete(f[1]);
}

static void refusals(void **state)
{
	static const enum tally_diff_key comm[] = { TALLY_DIFF_KEY_COMM };
	struct tally_profile_opts by_comm = { .keys = comm, .nr_keys = 1 };
	struct tally_diff_opts late = { .compute = TALLY_DIFF_DELTA, .sort_idx = 2 };
	struct tally_profile *f[2], *p;
	struct tally_diff *d;
	struct tally_data_error err = { 0 };

	(void)state;
	f[0] = load("plain.data", NULL);
	f[1] = load("plain.data", &by_comm);
	assert_int_equal(tally_diff__new(&d, f, 1, 0, NULL), -EINVAL);
	assert_int_equal(tally_diff__new(&d, f, 2, 0, NULL), -EINVAL);	/* keys differ */
	tally_profile__delete(f[1]);
	f[1] = load("plain.data", NULL);
	assert_int_equal(tally_diff__new(&d, f, 2, 5, NULL), -EINVAL);	/* no event 5 */
	assert_int_equal(tally_diff__new(&d, f, 2, 0, &late), -EINVAL);
	assert_null(d);
	tally_profile__delete(f[0]);
	tally_profile__delete(f[1]);
	assert_true(tally_profile__load(&p, "/nonexistent/perf.data", NULL, &err) < 0);
	assert_null(p);
	tally_profile__delete(NULL);
}

/* A filter's rows go, its samples stay in the total; relative shares use what remains. */
static void filters(void **state)
{
	char *dsos[] = { "no-such-dso", NULL };
	struct tally_profile_opts o = { .dsos = dsos };
	struct tally_diff_opts rel = { .compute = TALLY_DIFF_DELTA, .relative = true, .sort_idx = 1 };
	struct tally_profile *f[2];
	struct tally_diff *d;
	struct tally_profile_total t;

	(void)state;
	f[0] = load("plain.data", &o);
	f[1] = load("plain.data", &o);
	t = tally_profile__total(f[0], 0);
	assert_true(t.period > 0);
	assert_int_equal(t.filtered_period, 0);
	assert_int_equal(tally_diff__new(&d, f, 2, 0, &rel), 0);
	assert_int_equal(tally_diff__nr_rows(d), 0);
	assert_int_equal(tally_diff__total(d, 0), 0);
	tally_diff__delete(d);
	tally_profile__delete(f[0]);
	tally_profile__delete(f[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(self_diff),
		cmocka_unit_test(events_pair_by_type_and_config),
		cmocka_unit_test(refusals),
		cmocka_unit_test(filters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
