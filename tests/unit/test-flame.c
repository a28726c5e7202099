/*
 * Flame-graph folding (tally/flame.h): stacks fold into one node per distinct path,
 * weights and sample counts sum up the path, the walk is a preorder with siblings by
 * name then kind, folded text follows stackcollapse's rules, and two series make a
 * differential tree.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tally/flame.h"

#define U TALLY_FRAME_USER
#define K TALLY_FRAME_KERNEL
#define P TALLY_FLAME_PROCESS

/* add a stack written outermost first (as people read folded lines) */
static uint32_t add(struct tally_flame *f, unsigned series, uint64_t w, size_t n,
		    const struct tally_flame_frame *outer_first)
{
	struct tally_flame_frame v[16];
	uint32_t leaf = 0;

	for (size_t i = 0; i < n; i++)
		v[i] = outer_first[n - 1 - i];
	assert_int_equal(tally_flame__add(f, series, v, n, w, &leaf), 0);
	return leaf;
}

struct seen {
	char text[2048];
	size_t len;
	unsigned nodes;
};

static int record_node(void *arg, const struct tally_flame_node *n)
{
	struct seen *s = arg;

	s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len, "%u:%s/%u=%llu,%llu ",
				   n->depth, n->name, n->kind, (unsigned long long)n->value[0],
				   (unsigned long long)n->samples[0]);
	s->nodes++;
	return 0;
}

static void folds_and_walks(void **state)
{
	struct tally_flame *f;
	struct seen s = { .len = 0 };
	const struct tally_flame_frame a[] = { { "prog", P }, { "main", U }, { "work", U } };
	const struct tally_flame_frame b[] = { { "prog", P }, { "main", U }, { "alpha", U } };
	const struct tally_flame_frame c[] = { { "prog", P }, { "main", U }, { "work", U },
					       { "read", K } };
	const struct tally_flame_frame d[] = { { "prog", P }, { "main", U }, { "work", K } };
	uint32_t leaf;

	(void)state;
	assert_int_equal(tally_flame__new(&f), 0);
	leaf = add(f, 0, 10, 3, a);
	add(f, 0, 5, 3, b);
	add(f, 0, 7, 4, c);
	add(f, 0, 1, 3, d);
	/* the same stack again through its leaf */
	assert_int_equal(tally_flame__add_to(f, 0, leaf, 3), 0);
	assert_int_equal(tally_flame__total(f, 0), 26);
	assert_int_equal(tally_flame__total_samples(f, 0), 5);
	/* all, prog, main, alpha, work(user), read, work(kernel) */
	assert_int_equal(tally_flame__nr_nodes(f), 7);
	assert_int_equal(tally_flame__walk(f, record_node, &s), 0);
	assert_int_equal(s.nodes, 7);
	/* preorder; siblings by name (alpha < work), the same name by kind (user first) */
	assert_string_equal(s.text, "0:all/5=26,5 1:prog/4=26,5 2:main/0=26,5 3:alpha/0=5,1 "
				    "3:work/0=20,3 4:read/1=7,1 3:work/1=1,1 ");
	tally_flame__delete(f);
}

static int stop_at_third(void *arg, const struct tally_flame_node *n)
{
	unsigned *count = arg;

	(void)n;
	return ++*count == 3 ? 42 : 0;
}

static char *folded(struct tally_flame *f, unsigned series, unsigned flags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	assert_int_equal(tally_flame__write_folded(f, series, flags, fp), 0);
	fclose(fp);
	return buf;
}

static void folded_text(void **state)
{
	struct tally_flame *f;
	const struct tally_flame_frame a[] = { { "my prog", P }, { "main", U }, { "a;b", U } };
	const struct tally_flame_frame b[] = { { "my prog", P }, { "main", U } };
	const struct tally_flame_frame c[] = { { "my prog", P }, { "main", U }, { "irq", K } };
	const struct tally_flame_frame d[] = { { "my prog", P }, { "main+", U } };
	unsigned count = 0;
	char *t;

	(void)state;
	assert_int_equal(tally_flame__new(&f), 0);
	add(f, 0, 100, 3, a);
	add(f, 0, 100, 3, a);
	add(f, 0, 50, 2, b);
	add(f, 0, 7, 3, c);
	add(f, 0, 1, 2, d);
	/* sample counts, byte order of the whole lines ("main+" sorts before "main;"),
	 * ';' in names as ':', spaces in process names as '_' */
	t = folded(f, 0, 0);
	assert_string_equal(t, "my_prog;main 1\n"
			       "my_prog;main+ 1\n"
			       "my_prog;main;a:b 2\n"
			       "my_prog;main;irq 1\n");
	free(t);
	t = folded(f, 0, TALLY_FLAME_FOLDED_PERIOD | TALLY_FLAME_FOLDED_KINDS);
	assert_string_equal(t, "my_prog;main 50\n"
			       "my_prog;main+ 1\n"
			       "my_prog;main;a:b 200\n"
			       "my_prog;main;irq_[k] 7\n");
	free(t);
	/* a walk stops when its callback says so */
	assert_int_equal(tally_flame__walk(f, stop_at_third, &count), 42);
	assert_int_equal(count, 3);
	tally_flame__delete(f);
}

static void differential(void **state)
{
	struct tally_flame *f;
	const struct tally_flame_frame a[] = { { "p", P }, { "main", U }, { "old_only", U } };
	const struct tally_flame_frame b[] = { { "p", P }, { "main", U }, { "both", U } };
	const struct tally_flame_frame c[] = { { "p", P }, { "main", U }, { "new_only", U } };
	char *t;

	(void)state;
	assert_int_equal(tally_flame__new(&f), 0);
	add(f, 0, 4, 3, a);
	add(f, 0, 6, 3, b);
	add(f, 1, 9, 3, b);
	add(f, 1, 9, 3, b);
	add(f, 1, 2, 3, c);
	assert_int_equal(tally_flame__total(f, 0), 10);
	assert_int_equal(tally_flame__total(f, 1), 20);
	t = folded(f, 1, TALLY_FLAME_FOLDED_DIFF);
	assert_string_equal(t, "p;main;both 1 2\n"
			       "p;main;new_only 0 1\n"
			       "p;main;old_only 1 0\n");
	free(t);
	t = folded(f, 0, 0);
	assert_string_equal(t, "p;main;both 1\np;main;old_only 1\n");
	free(t);
	tally_flame__delete(f);
}

static void refusals(void **state)
{
	struct tally_flame *f;
	struct tally_flame_frame bad = { "x", TALLY_FLAME_ROOT };
	struct tally_flame_frame unknown = { NULL, U };
	struct seen s = { .len = 0 };

	(void)state;
	assert_int_equal(tally_flame__new(&f), 0);
	assert_int_equal(tally_flame__add(f, 2, &unknown, 1, 1, NULL), -EINVAL);
	assert_int_equal(tally_flame__add(f, 0, &bad, 1, 1, NULL), -EINVAL);
	assert_int_equal(tally_flame__add_to(f, 0, 12345, 1), -EINVAL);
	assert_int_equal(tally_flame__add_to(f, 3, 0, 1), -EINVAL);
	assert_int_equal(tally_flame__write_folded(f, 2, 0, stdout), -EINVAL);
	/* a NULL name is "[unknown]"; an empty stack counts at the root only */
	assert_int_equal(tally_flame__add(f, 0, &unknown, 1, 1, NULL), 0);
	assert_int_equal(tally_flame__add(f, 0, NULL, 0, 2, NULL), 0);
	assert_int_equal(tally_flame__walk(f, record_node, &s), 0);
	assert_string_equal(s.text, "0:all/5=3,2 1:[unknown]/0=1,1 ");
	tally_flame__delete(f);
	tally_flame__delete(NULL);
}

/* many distinct frames: the hash tables grow and still find every node */
static void grows(void **state)
{
	struct tally_flame *f;
	char name[32];

	(void)state;
	assert_int_equal(tally_flame__new(&f), 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 5000; i++) {
			struct tally_flame_frame v[2] = { { name, U }, { "p", P } };

			snprintf(name, sizeof(name), "fn%d", i);
			assert_int_equal(tally_flame__add(f, 0, v, 2, 1, NULL), 0);
		}
	}
	assert_int_equal(tally_flame__nr_nodes(f), 5002);
	assert_int_equal(tally_flame__total_samples(f, 0), 10000);
	tally_flame__delete(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(folds_and_walks),
		cmocka_unit_test(folded_text),
		cmocka_unit_test(differential),
		cmocka_unit_test(refusals),
		cmocka_unit_test(grows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
