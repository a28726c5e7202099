/*
 * tally report's views of the tasks rather than the samples: -T/--threads (the
 * per-thread counts that PERF_RECORD_READ records carry, from `perf record -s`), and
 * --tasks/--mmaps (every thread the records named, as a tree of parents and children,
 * with its process's maps). Texts as perf 6.1 prints them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tally/data.h>
#include <tally/session.h>

#include "cmd.h"
#include "report.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- -T: READ records' values per thread and event ---------------------------------- */

struct read_values {
	struct { uint32_t pid, tid; } *threads;	/* in order of their first READ */
	size_t nr_threads;
	int *events;		/* event indexes, in order of their first READ */
	size_t nr_events;
	uint64_t *value;	/* [thread * cap_events + event] */
	size_t cap_threads, cap_events;
};

void report__values_free(struct read_values *v)
{
	if (!v)
		return;
	free(v->threads);
	free(v->events);
	free(v->value);
	free(v);
}

/* The matrix grown to hold thread row nt-1 and event column ne-1. 0 or -ENOMEM. */
static int values_grow(struct read_values *v, size_t nt, size_t ne)
{
	size_t ct = v->cap_threads, ce = v->cap_events;
	uint64_t *nv;

	if (nt <= ct && ne <= ce)
		return 0;
	while (ct < nt)
		ct = ct ? ct * 2 : 16;
	while (ce < ne)
		ce = ce ? ce * 2 : 4;
	nv = calloc(ct * ce, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	for (size_t t = 0; t < v->nr_threads; t++)
		memcpy(nv + t * ce, v->value + t * v->cap_events, v->nr_events * sizeof(*nv));
	if (nt > v->cap_threads) {
		void *th = realloc(v->threads, ct * sizeof(*v->threads));

		if (!th) {
			free(nv);
			return -ENOMEM;
		}
		v->threads = th;
	}
	if (ne > v->cap_events) {
		int *ev = realloc(v->events, ce * sizeof(*v->events));

		if (!ev) {
			free(nv);
			return -ENOMEM;
		}
		v->events = ev;
	}
	free(v->value);
	v->value = nv;
	v->cap_threads = ct;
	v->cap_events = ce;
	return 0;
}

int report__read_value(struct report *r, const struct perf_event_header *hdr, int evidx)
{
	struct read_values *v = r->values;
	struct { uint32_t pid, tid; uint64_t value; } rd;
	size_t t, e;

	if (evidx < 0 && r->nr_ev == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= r->nr_ev || hdr->size < sizeof(*hdr) + sizeof(rd))
		return 0;	/* no event to name it by: perf skips it too */
	if (!v && !(v = r->values = calloc(1, sizeof(*v))))
		return -ENOMEM;
	memcpy(&rd, hdr + 1, sizeof(rd));
	for (t = 0; t < v->nr_threads; t++)
		if (v->threads[t].pid == rd.pid && v->threads[t].tid == rd.tid)
			break;
	for (e = 0; e < v->nr_events; e++)
		if (v->events[e] == evidx)
			break;
	if (values_grow(v, t + 1, e + 1))
		return -ENOMEM;
	if (t == v->nr_threads) {
		v->threads[t].pid = rd.pid;
		v->threads[t].tid = rd.tid;
		v->nr_threads++;
	}
	if (e == v->nr_events)
		v->events[v->nr_events++] = evidx;
	v->value[t * v->cap_events + e] += rd.value;
	return 0;
}

static int num_width(uint64_t v)
{
	return snprintf(NULL, 0, "%" PRIu64, v);
}

static int int_width(int v)
{
	return snprintf(NULL, 0, "%d", v);
}

static const char *event_name(const struct report *r, int evidx)
{
	const char *n = tally_data__event(r->data, (size_t)evidx)->name;

	return n ? n : "unknown";
}

/* --pretty raw: one "pid tid name index count" cell per thread and event, all on one
 * line without a newline (perf 6.1 prints them so). */
static void print_values_raw(const struct report *r, const struct read_values *v)
{
	int pw = 3, tw = 3, nw = 4, rw = 3, cw = 5;

	for (size_t t = 0; t < v->nr_threads; t++) {
		pw = MAX(pw, int_width((int)v->threads[t].pid));
		tw = MAX(tw, int_width((int)v->threads[t].tid));
		for (size_t e = 0; e < v->nr_events; e++)
			cw = MAX(cw, num_width(v->value[t * v->cap_events + e]));
	}
	for (size_t e = 0; e < v->nr_events; e++) {
		nw = MAX(nw, (int)strlen(event_name(r, v->events[e])));
		rw = MAX(rw, snprintf(NULL, 0, "%x", v->events[e]));
	}
	printf("# %*s  %*s  %*s  %*s  %*s\n", pw, "PID", tw, "TID", nw, "Name", rw, "Raw",
	       cw, "Count");
	for (size_t t = 0; t < v->nr_threads; t++)
		for (size_t e = 0; e < v->nr_events; e++)
			printf("  %*d  %*d  %*s  %*x  %*" PRIu64, pw, (int)v->threads[t].pid,
			       tw, (int)v->threads[t].tid, nw, event_name(r, v->events[e]),
			       rw, v->events[e], cw, v->value[t * v->cap_events + e]);
}

void report__print_values(const struct report *r)
{
	static const struct read_values none;
	const struct read_values *v = r->values ? r->values : &none;
	int pw = 3, tw = 3, cw[64];
	size_t ne = v->nr_events < 64 ? v->nr_events : 64;

	if (r->o->pretty && !strcmp(r->o->pretty, "raw")) {
		print_values_raw(r, v);
		return;
	}
	for (size_t e = 0; e < ne; e++)
		cw[e] = (int)strlen(event_name(r, v->events[e]));
	for (size_t t = 0; t < v->nr_threads; t++) {
		pw = MAX(pw, int_width((int)v->threads[t].pid));
		tw = MAX(tw, int_width((int)v->threads[t].tid));
		for (size_t e = 0; e < ne; e++)
			cw[e] = MAX(cw[e], num_width(v->value[t * v->cap_events + e]));
	}
	printf("# %*s  %*s", pw, "PID", tw, "TID");
	for (size_t e = 0; e < ne; e++)
		printf("  %*s", cw[e], event_name(r, v->events[e]));
	putchar('\n');
	for (size_t t = 0; t < v->nr_threads; t++) {
		printf("  %*d  %*d", pw, (int)v->threads[t].pid, tw, (int)v->threads[t].tid);
		for (size_t e = 0; e < ne; e++)
			printf("  %*" PRIu64, cw[e], v->value[t * v->cap_events + e]);
		putchar('\n');
	}
}

/* ---- --tasks, --mmaps ------------------------------------------------------------- */

struct task {
	struct tally_thread *thread;
	struct task *parent;
	size_t first_child, nr_children;	/* into the children array */
	size_t nr_linked;
	bool listed;		/* linked under its parent, or a root */
};

struct tasks {
	struct task *v;
	size_t nr, cap;
};

static int collect(void *arg, struct tally_thread *t)
{
	struct tasks *ts = arg;

	if (ts->nr == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 64;
		struct task *v = realloc(ts->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ts->v = v;
		ts->cap = cap;
	}
	ts->v[ts->nr++] = (struct task){ .thread = t };
	return 0;
}

/* perf's order of its threads: tables by tid modulo 256, each by tid */
static int by_table(const void *a, const void *b)
{
	uint32_t x = (uint32_t)tally_thread__tid(((const struct task *)a)->thread);
	uint32_t y = (uint32_t)tally_thread__tid(((const struct task *)b)->thread);

	if (x % 256 != y % 256)
		return x % 256 < y % 256 ? -1 : 1;
	return x < y ? -1 : x > y;
}

static struct task *find_task(struct tasks *ts, pid_t tid)
{
	for (size_t i = 0; i < ts->nr; i++)
		if (tally_thread__tid(ts->v[i].thread) == tid)
			return &ts->v[i];
	return NULL;
}

static int print_map(void *arg, const struct tally_map *m)
{
	int indent = *(int *)arg;
	struct tally_map_desc d;

	tally_map__describe(m, &d);
	if (!d.dso)
		return 0;
	printf("%*s  %" PRIx64 "-%" PRIx64 " %c%c%c%c %08" PRIx64 " %" PRIu64 " %s\n", indent, "",
	       d.start, d.end, d.prot & PROT_READ ? 'r' : '-', d.prot & PROT_WRITE ? 'w' : '-',
	       d.prot & PROT_EXEC ? 'x' : '-', d.flags & MAP_SHARED ? 's' : 'p', d.pgoff, d.ino,
	       d.name);
	return 0;
}

static void print_task(struct task **children, struct task *t, int level,
		       bool maps)
{
	struct tally_thread *th = t->thread;
	int indent = printf("  %8d %8d %8d |%*s", (int)tally_thread__pid(th),
			    (int)tally_thread__tid(th), (int)tally_thread__ppid(th), level, "");

	printf("%s\n", tally_thread__comm(th));
	if (maps)
		tally_thread__for_each_map(th, print_map, &indent);
	for (size_t i = 0; i < t->nr_linked; i++)
		print_task(children, children[t->first_child + i], level + 1, maps);
}

int report__print_tasks(struct report *r)
{
	struct tasks ts = { 0 };
	struct task **children = NULL, **roots = NULL;
	size_t nr_roots = 0, next = 0;
	int ret;

	/* perf's idle thread is always there */
	if (!tally_session__thread(r->session, 0, 0))
		return -ENOMEM;
	ret = tally_session__for_each_thread(r->session, collect, &ts);
	if (ret)
		goto out;
	qsort(ts.v, ts.nr, sizeof(*ts.v), by_table);
	children = calloc(ts.nr + 1, sizeof(*children));
	roots = calloc(ts.nr + 1, sizeof(*roots));
	ret = -ENOMEM;
	if (!children || !roots)
		goto out;
	/* each task's parent and the number of its children, for one array of them */
	for (size_t i = 0; i < ts.nr; i++) {
		pid_t pp = tally_thread__ppid(ts.v[i].thread);

		if (pp == -1)
			continue;
		ts.v[i].parent = find_task(&ts, pp);
		if (!ts.v[i].parent) {
			cli_error("--tasks: thread %d names parent %d, which the records never "
				  "showed", (int)tally_thread__tid(ts.v[i].thread), (int)pp);
			ret = 1;
			goto out;
		}
		ts.v[i].parent->nr_children++;
	}
	for (size_t i = 0; i < ts.nr; i++) {
		ts.v[i].first_child = next;
		next += ts.v[i].nr_children;
	}
	/* as perf: each task not yet listed climbs to its first listed ancestor, linking
	 * every task on the way under its parent; a task without a parent is a root */
	for (size_t i = 0; i < ts.nr; i++) {
		struct task *t = &ts.v[i];

		while (t && !t->listed) {
			t->listed = true;
			if (!t->parent) {
				roots[nr_roots++] = t;
				break;
			}
			children[t->parent->first_child + t->parent->nr_linked++] = t;
			t = t->parent;
		}
	}
	printf("# %8s %8s %8s  %s\n", "pid", "tid", "ppid", "comm");
	for (size_t i = 0; i < nr_roots; i++)
		print_task(children, roots[i], 0, r->o->mmaps);
	ret = 0;
out:
	free(children);
	free(roots);
	free(ts.v);
	return ret;
}
