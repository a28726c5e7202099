/*
 * The event parser: every syntax item of perf's -e strings, the attr bits perf 6.1
 * gives them, errors with their caret position, and a mutation fuzz run.
 *
 * PMU terms, aliases, caps and tracepoints use the fake sysfs trees in
 * tests/data/sysfs (found through $TALLY_TOP, set by tests/run.sh, or relative to this
 * source file). Parsing never opens events, so hardware events parse on any machine.
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
#include <linux/hw_breakpoint.h>
#include <cmocka.h>

#include "tally/cpumap.h"
#include "tally/event.h"
#include "internal/event.h"
#include "internal/sys.h"
#include "simkernel.h"

static char data_dir[PATH_MAX];

static bool find_data(void)
{
	const char *top = getenv("TALLY_TOP");
	char cand[PATH_MAX];
	const char *file = __FILE__;
	const char *slash = strrchr(file, '/');

	if (top) {
		snprintf(cand, sizeof(cand), "%s/tests/data/sysfs", top);
		if (!access(cand, R_OK))
			goto found;
	}
	if (slash) {
		snprintf(cand, sizeof(cand), "%.*s/../data/sysfs", (int)(slash - file), file);
		if (!access(cand, R_OK))
			goto found;
	}
	snprintf(cand, sizeof(cand), "tests/data/sysfs");
	if (!access(cand, R_OK))
		goto found;
	return false;
found:
	snprintf(data_dir, sizeof(data_dir), "%s", cand);
	return true;
}

/* A list on a fake sysfs tree ("x86", "arm64", NULL = the real /sys), no libpfm4. */
static struct tally_evlist *mklist(const char *tree)
{
	struct tally_evlist *l;
	char root[PATH_MAX + 16];

	assert_int_equal(tally_evlist__new(&l), 0);
	if (tree) {
		if (!data_dir[0] && !find_data()) {
			tally_evlist__delete(l);
			skip();
		}
		snprintf(root, sizeof(root), "%s/%s", data_dir, tree);
		assert_int_equal(tally_evlist__set_sysfs_root(l, root), 0);
	}
	tally_evlist__set_flags(l, TALLY_EVLIST_NO_PFM);
	return l;
}

/* Event I of the list, which must exist. */
static const struct tally_event *ev(const struct tally_evlist *l, size_t i)
{
	const struct tally_event *e = tally_evlist__event(l, i);

	assert_non_null(e);
	return e;
}

/* Parse one string that must succeed; returns the list. */
static struct tally_evlist *ok(const char *tree, const char *str)
{
	struct tally_evlist *l = mklist(tree);
	struct tally_parse_error err;
	int r = tally_evlist__add(l, str, &err);

	if (r)
		fail_msg("'%s' failed: %d %s (pos %zu)", str, r, err.msg, err.pos);
	return l;
}

/* Parse a string that must fail; checks the caret position and a message part. */
static void bad(const char *tree, const char *str, size_t pos, const char *msg_part)
{
	struct tally_evlist *l = mklist(tree);
	struct tally_parse_error err;
	int r = tally_evlist__add(l, str, &err);

	if (!r)
		fail_msg("'%s' should fail", str);
	assert_true(r < 0);
	assert_int_equal(tally_evlist__nr(l), 0);
	if (pos != (size_t)-1 && err.pos != pos)
		fail_msg("'%s': error at %zu, expected %zu (%s)", str, err.pos, pos, err.msg);
	if (msg_part && !strstr(err.msg, msg_part))
		fail_msg("'%s': message '%s' lacks '%s'", str, err.msg, msg_part);
	assert_true(err.len >= 1);
	tally_evlist__delete(l);
}

static void one(const char *tree, const char *str, uint32_t type, uint64_t config)
{
	struct tally_evlist *l = ok(tree, str);

	assert_int_equal(tally_evlist__nr(l), 1);
	const struct perf_event_attr *a = &ev(l, 0)->attr;

	if (a->type != type || a->config != config)
		fail_msg("'%s': type %u config %#llx, expected %u %#llx", str, a->type,
			 (unsigned long long)a->config, type, (unsigned long long)config);
	assert_int_equal(a->size, sizeof(struct perf_event_attr));
	tally_evlist__delete(l);
}

static void symbolic(void **state)
{
	static const struct { const char *s; uint32_t type; uint64_t config; } t[] = {
		{ "cycles", 0, 0 }, { "cpu-cycles", 0, 0 }, { "instructions", 0, 1 },
		{ "cache-references", 0, 2 }, { "cache-misses", 0, 3 },
		{ "branches", 0, 4 }, { "branch-instructions", 0, 4 }, { "branch-misses", 0, 5 },
		{ "bus-cycles", 0, 6 }, { "stalled-cycles-frontend", 0, 7 },
		{ "idle-cycles-frontend", 0, 7 }, { "stalled-cycles-backend", 0, 8 },
		{ "idle-cycles-backend", 0, 8 }, { "ref-cycles", 0, 9 },
		{ "cpu-clock", 1, 0 }, { "task-clock", 1, 1 }, { "page-faults", 1, 2 },
		{ "faults", 1, 2 }, { "context-switches", 1, 3 }, { "cs", 1, 3 },
		{ "cpu-migrations", 1, 4 }, { "migrations", 1, 4 }, { "minor-faults", 1, 5 },
		{ "major-faults", 1, 6 }, { "alignment-faults", 1, 7 },
		{ "emulation-faults", 1, 8 }, { "dummy", 1, 9 }, { "bpf-output", 1, 10 },
		{ "cgroup-switches", 1, 11 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct tally_evlist *l = ok(NULL, t[i].s);

		assert_int_equal(tally_evlist__nr(l), 1);
		assert_int_equal(ev(l, 0)->attr.type, t[i].type);
		assert_int_equal(ev(l, 0)->attr.config, t[i].config);
		assert_string_equal(ev(l, 0)->name, t[i].s);
		/* perf's event_attr_init(): exclude_guest by default, nothing else */
		assert_int_equal(ev(l, 0)->attr.exclude_guest, 1);
		assert_int_equal(ev(l, 0)->attr.exclude_user | ev(l, 0)->attr.exclude_kernel |
				 ev(l, 0)->attr.exclude_hv | ev(l, 0)->attr.precise_ip, 0);
		assert_int_equal(ev(l, 0)->leader, 0);
		assert_int_equal(ev(l, 0)->nr_members, 1);
		tally_evlist__delete(l);
	}
	assert_string_equal(tally_event__symbol_name(0, 0), "cycles");
	assert_string_equal(tally_event__symbol_alias(1, 3), "cs");
	assert_null(tally_event__symbol_name(0, 99));
	{
		/* the tables perf list walks: first names, with their aliases */
		const char *alias = "x";
		size_t n = 0;

		assert_string_equal(tally_event__symbol(PERF_TYPE_HARDWARE, 0, &alias),
				    "cpu-cycles");
		assert_string_equal(alias, "cycles");
		while (tally_event__symbol(PERF_TYPE_SOFTWARE, n, NULL))
			n++;
		assert_true(n >= 10);
		assert_null(tally_event__symbol(PERF_TYPE_SOFTWARE, n, &alias));
		assert_null(alias);
		assert_null(tally_event__symbol(PERF_TYPE_TRACEPOINT, 0, NULL));
	}
	/* names are case-sensitive, like perf's lexer */
	bad(NULL, "Cycles", 0, "did you mean 'cycles'");
	bad(NULL, "cylces", 0, "did you mean 'cycles'");
}

static void tool_events(void **state)
{
	static const char *const names[] = { "duration_time", "user_time", "system_time" };
	(void)state;
	for (int i = 0; i < 3; i++) {
		struct tally_evlist *l = ok(NULL, names[i]);

		assert_int_equal(ev(l, 0)->tool, TALLY_TOOL_DURATION_TIME + i);
		assert_int_equal(ev(l, 0)->attr.type, PERF_TYPE_SOFTWARE);
		assert_int_equal(ev(l, 0)->attr.config, PERF_COUNT_SW_DUMMY);
		assert_string_equal(ev(l, 0)->unit, "ns");
		assert_string_equal(tally_event__tool_name(ev(l, 0)->tool), names[i]);
		tally_evlist__delete(l);
	}
}

static void hw_cache(void **state)
{
	static const struct { const char *s; uint64_t config; } t[] = {
		{ "L1-dcache-loads", 0x00000 }, { "L1-dcache-load-misses", 0x10000 },
		{ "L1-dcache-stores", 0x00100 }, { "L1-dcache-store-misses", 0x10100 },
		{ "L1-dcache-prefetches", 0x00200 }, { "L1-dcache-prefetch-misses", 0x10200 },
		{ "L1-icache-loads", 0x00001 }, { "L1-icache-load-misses", 0x10001 },
		{ "L1-icache-prefetches", 0x00201 }, { "LLC-loads", 0x00002 },
		{ "LLC-load-misses", 0x10002 }, { "LLC-stores", 0x00102 },
		{ "LLC-store-misses", 0x10102 }, { "LLC-prefetch-misses", 0x10202 },
		{ "dTLB-loads", 0x00003 }, { "dTLB-load-misses", 0x10003 },
		{ "dTLB-stores", 0x00103 }, { "dTLB-prefetches", 0x00203 },
		{ "iTLB-loads", 0x00004 }, { "iTLB-load-misses", 0x10004 },
		{ "branch-loads", 0x00005 }, { "branch-load-misses", 0x10005 },
		{ "node-loads", 0x00006 }, { "node-stores", 0x00106 },
		{ "node-prefetch-misses", 0x10206 },
		/* aliases and defaults (op read, result access) */
		{ "l1d-loads", 0x00000 }, { "l1-d-read", 0x00000 }, { "L1-data-load-miss", 0x10000 },
		{ "l1i-loads", 0x00001 }, { "L1-instruction-loads", 0x00001 }, { "L2-loads", 0x00002 },
		{ "d-tlb-write", 0x00103 }, { "Data-TLB-store-misses", 0x10103 },
		{ "i-tlb-loads", 0x00004 }, { "Instruction-TLB-load-misses", 0x10004 },
		{ "bpu-loads", 0x00005 }, { "btb-read-access", 0x00005 }, { "bpc-loads", 0x00005 },
		{ "LLC", 0x00002 }, { "LLC-misses", 0x10002 }, { "dTLB-refs", 0x00003 },
		{ "L1-dcache-speculative-read", 0x00200 }, { "LLC-speculative-load-ops", 0x00202 },
		{ "node-Reference", 0x00006 },
		/* two ops: perf keeps the first and ignores the second */
		{ "L1-dcache-load-store", 0x00000 },
	};
	char buf[64];
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		one(NULL, t[i].s, PERF_TYPE_HW_CACHE, t[i].config);
	/* perf's validity table */
	bad(NULL, "L1-icache-stores", 10, "L1-icache does not support 'stores'");
	bad(NULL, "iTLB-stores", 5, "only loads");
	bad(NULL, "iTLB-prefetches", 5, "only loads");
	bad(NULL, "branch-store-misses", 7, NULL);
	bad(NULL, "branches-prefetch", (size_t)-1, NULL);
	bad(NULL, "LLC-fetches", 0, "unknown event");
	/* the cache name keeps what the user wrote, without the modifiers (perf) */
	{
		struct tally_evlist *l = ok(NULL, "l1d-loads:u");

		assert_string_equal(ev(l, 0)->name, "l1d-loads");
		assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
		tally_evlist__delete(l);
	}
	assert_int_equal(tally_event__hw_cache_name(0x10002, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "LLC-load-misses");
	assert_int_equal(tally_event__hw_cache_name(0x00001, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "L1-icache-loads");
	assert_int_equal(tally_event__hw_cache_name(0x00101, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(tally_event__hw_cache_name(0x00007, buf, sizeof(buf)), -EINVAL);
}

static void raw_and_numeric(void **state)
{
	(void)state;
	one(NULL, "r1a2", PERF_TYPE_RAW, 0x1a2);
	one(NULL, "r0", PERF_TYPE_RAW, 0);
	one(NULL, "rFFFFFFFFFFFFFFFF", PERF_TYPE_RAW, UINT64_MAX);
	one(NULL, "rdeadbeef", PERF_TYPE_RAW, 0xdeadbeef);
	one(NULL, "4:0x10", 4, 0x10);
	one(NULL, "1:3", 1, 3);
	bad(NULL, "r1FFFFFFFFFFFFFFFF", 0, "64 bits");
	bad(NULL, "rxyz", 0, "unknown event");
	bad(NULL, "1:zz", 2, NULL);
	{
		struct tally_evlist *l = ok(NULL, "r1a2/name=raw,period=100/u");

		assert_string_equal(ev(l, 0)->name, "raw");
		assert_int_equal(ev(l, 0)->attr.sample_period, 100);
		assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
		tally_evlist__delete(l);
	}
}

struct modcase {
	const char *s;
	int eu, ek, eh, eH, eG, eI, precise, pinned, exclusive;
	bool sample_read, precise_max, weak, exclude_set;
};

static void modifiers(void **state)
{
	/* perf 6.1 get_event_modifier() from a NULL evsel for event modifiers */
	static const struct modcase t[] = {
		{ "cycles:u", 0, 1, 1, 0, 1, 0, 0, 0, 0, false, false, false, true },
		{ "cycles:k", 1, 0, 1, 0, 0, 0, 0, 0, 0, false, false, false, true },
		{ "cycles:h", 1, 1, 0, 0, 0, 0, 0, 0, 0, false, false, false, true },
		{ "cycles:uk", 0, 0, 1, 0, 1, 0, 0, 0, 0, false, false, false, true },
		{ "cycles:ku", 0, 0, 1, 0, 1, 0, 0, 0, 0, false, false, false, true },
		{ "cycles:ukh", 0, 0, 0, 0, 1, 0, 0, 0, 0, false, false, false, true },
		{ "cycles:G", 0, 0, 0, 1, 0, 0, 0, 0, 0, false, false, false, false },
		{ "cycles:H", 0, 0, 0, 0, 1, 0, 0, 0, 0, false, false, false, false },
		{ "cycles:GH", 0, 0, 0, 0, 0, 0, 0, 0, 0, false, false, false, false },
		{ "cycles:I", 0, 0, 0, 0, 0, 1, 0, 0, 0, false, false, false, false },
		{ "cycles:p", 0, 0, 0, 0, 1, 0, 1, 0, 0, false, false, false, false },
		{ "cycles:pp", 0, 0, 0, 0, 1, 0, 2, 0, 0, false, false, false, false },
		{ "cycles:ppp", 0, 0, 0, 0, 1, 0, 3, 0, 0, false, false, false, false },
		{ "cycles:Gp", 0, 0, 0, 1, 0, 0, 1, 0, 0, false, false, false, false },
		{ "cycles:upp", 0, 1, 1, 0, 1, 0, 2, 0, 0, false, false, false, true },
		{ "cycles:P", 0, 0, 0, 0, 0, 0, 0, 0, 0, false, true, false, false },
		{ "cycles:S", 0, 0, 0, 0, 0, 0, 0, 0, 0, true, false, false, false },
		{ "cycles:D", 0, 0, 0, 0, 0, 0, 0, 1, 0, false, false, false, false },
		{ "cycles:e", 0, 0, 0, 0, 0, 0, 0, 0, 1, false, false, false, false },
		{ "cycles:W", 0, 0, 0, 0, 0, 0, 0, 0, 0, false, false, true, false },
		{ "cycles:b", 0, 0, 0, 0, 0, 0, 0, 0, 0, false, false, false, false },
		{ "cycles:uD", 0, 1, 1, 0, 1, 0, 0, 1, 0, false, false, false, true },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct tally_evlist *l = ok(NULL, t[i].s);
		const struct tally_event *e = ev(l, 0);
		const struct perf_event_attr *a = &e->attr;

		if (a->exclude_user != t[i].eu || a->exclude_kernel != t[i].ek ||
		    a->exclude_hv != t[i].eh || a->exclude_host != t[i].eH ||
		    a->exclude_guest != t[i].eG || a->exclude_idle != t[i].eI ||
		    a->precise_ip != t[i].precise || a->pinned != t[i].pinned ||
		    a->exclusive != t[i].exclusive || e->sample_read != t[i].sample_read ||
		    e->precise_max != t[i].precise_max || e->weak_group != t[i].weak ||
		    e->exclude_set != t[i].exclude_set)
			fail_msg("'%s': u%d k%d h%d H%d G%d I%d p%d D%d e%d S%d P%d W%d x%d", t[i].s,
				 a->exclude_user, a->exclude_kernel, a->exclude_hv, a->exclude_host,
				 a->exclude_guest, a->exclude_idle, a->precise_ip, a->pinned,
				 a->exclusive, e->sample_read, e->precise_max, e->weak_group,
				 e->exclude_set);
		assert_string_equal(e->name, t[i].s);
		tally_evlist__delete(l);
	}
	{
		struct tally_evlist *l = ok(NULL, "cycles:b");

		assert_true(ev(l, 0)->bpf_counter);
		tally_evlist__delete(l);
	}
	bad(NULL, "cycles:pppp", 10, "precise_ip goes up to 3");
	bad(NULL, "cycles:zz", 7, "unknown modifier 'z'");
	bad(NULL, "cycles:uu", 7, "given twice");
	bad(NULL, "cycles:", 7, "missing modifier");
	bad(NULL, "cycles:u:k", 8, "unexpected ':'");
	bad(NULL, "task-clock:x", 11, "unknown modifier");
}

static void groups(void **state)
{
	struct tally_evlist *l;
	(void)state;

	l = ok(NULL, "{cycles,instructions}:u,task-clock,{cs,faults,migrations}");
	assert_int_equal(tally_evlist__nr(l), 6);
	assert_int_equal(tally_evlist__nr_groups(l), 2);
	assert_int_equal(ev(l, 0)->leader, 0);
	assert_int_equal(ev(l, 0)->nr_members, 2);
	assert_int_equal(ev(l, 1)->leader, 0);
	assert_int_equal(ev(l, 2)->leader, 2);
	assert_int_equal(ev(l, 2)->nr_members, 1);
	assert_int_equal(ev(l, 3)->leader, 3);
	assert_int_equal(ev(l, 3)->nr_members, 3);
	assert_int_equal(ev(l, 5)->leader, 3);
	assert_true(tally_event__is_leader(l, 3));
	assert_false(tally_event__is_leader(l, 4));
	/* group modifier applies to every member, names stay as written (perf) */
	assert_int_equal(ev(l, 1)->attr.exclude_kernel, 1);
	assert_string_equal(ev(l, 1)->name, "instructions");
	assert_int_equal(ev(l, 2)->attr.exclude_kernel, 0);
	tally_evlist__delete(l);

	/* pinned/exclusive only on the leader */
	l = ok(NULL, "{cycles,instructions}:De");
	assert_int_equal(ev(l, 0)->attr.pinned, 1);
	assert_int_equal(ev(l, 0)->attr.exclusive, 1);
	assert_int_equal(ev(l, 1)->attr.pinned, 0);
	assert_int_equal(ev(l, 1)->attr.exclusive, 0);
	tally_evlist__delete(l);

	/* a group modifier starts from the event's own bits (perf's add=true) */
	l = ok(NULL, "{task-clock:u,page-faults:k}:H");
	assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
	assert_int_equal(ev(l, 0)->attr.exclude_host, 0);
	assert_int_equal(ev(l, 0)->attr.exclude_guest, 1);
	assert_int_equal(ev(l, 1)->attr.exclude_user, 1);
	tally_evlist__delete(l);
	l = ok(NULL, "{cycles:u,instructions}:S");
	assert_true(ev(l, 0)->sample_read);
	assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
	tally_evlist__delete(l);
	l = ok(NULL, "{cycles,cs}:W");
	assert_true(ev(l, 0)->weak_group);
	assert_true(ev(l, 1)->weak_group);
	tally_evlist__delete(l);

	/* named group, single-member group, spaces */
	l = ok(NULL, "mygrp{cycles,instructions}");
	assert_string_equal(ev(l, 0)->group_name, "mygrp");
	assert_int_equal(ev(l, 0)->nr_members, 2);
	tally_evlist__delete(l);
	l = ok(NULL, "{cycles}:u");
	assert_int_equal(tally_evlist__nr_groups(l), 0);
	assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
	tally_evlist__delete(l);
	l = ok(NULL, " cycles , { instructions , cs } ");
	assert_int_equal(tally_evlist__nr(l), 3);
	assert_int_equal(ev(l, 2)->leader, 1);
	tally_evlist__delete(l);

	bad(NULL, "{cycles,{instructions}}", 8, "nested");
	bad(NULL, "{}", 1, "empty group");
	bad(NULL, "{cycles", 7, "'}'");
	bad(NULL, "cycles}", 6, NULL);
	bad(NULL, "{cycles,}", 8, NULL);
	bad(NULL, "{cycles}:q", 9, "unknown modifier");
	bad(NULL, "cycles,,cs", 7, "expected an event");
	bad(NULL, "cycles,", 7, "expected an event");
	bad(NULL, ",cycles", 0, "expected an event");
	bad(NULL, "", 0, "empty");
}

static void append_and_rollback(void **state)
{
	struct tally_evlist *l = mklist(NULL);
	struct tally_parse_error err;
	(void)state;

	assert_int_equal(tally_evlist__add(l, "cycles,{cs,faults}", &err), 0);
	assert_int_equal(tally_evlist__add(l, "task-clock", &err), 0);
	assert_int_equal(tally_evlist__nr(l), 4);
	assert_int_equal(ev(l, 3)->leader, 3);
	/* a failing add leaves the list as it was */
	assert_int_equal(tally_evlist__add(l, "{instructions,branches},bogus", &err), -EINVAL);
	assert_int_equal(tally_evlist__nr(l), 4);
	assert_int_equal(tally_evlist__nr_groups(l), 1);
	assert_int_equal(tally_evlist__add(l, "{a", NULL), -EINVAL);
	/* indices in later strings continue the list */
	assert_int_equal(tally_evlist__add(l, "{cycles,cs}", &err), 0);
	assert_int_equal(ev(l, 5)->leader, 4);
	assert_int_equal(tally_evlist__nr_groups(l), 2);
	/* add_event copies (a command's default events) */
	assert_int_equal(tally_evlist__add_event(l, ev(l, 1)), 0);
	assert_int_equal(tally_evlist__nr(l), 7);
	assert_int_equal(ev(l, 6)->leader, 6);
	assert_string_equal(ev(l, 6)->name, "cs");
	assert_ptr_not_equal(ev(l, 6)->name, ev(l, 1)->name);
	tally_evlist__delete(l);
	tally_evlist__delete(NULL);
	assert_int_equal(tally_evlist__add(NULL, "cycles", NULL), -EINVAL);
}

static void generic_terms(void **state)
{
	struct tally_evlist *l;
	(void)state;

	l = ok(NULL, "cpu-clock/period=1000,name=fast,call-graph=dwarf,stack-size=8192,"
		     "max-stack=10,no-inherit,time=0,overwrite,percore,metric-id=m,"
		     "driver-config=cfg,aux-sample-size=64,aux-output/");
	{
		const struct tally_event *e = ev(l, 0);

		assert_string_equal(e->name, "fast");
		assert_int_equal(e->attr.sample_period, 1000);
		assert_int_equal(e->attr.freq, 0);
		assert_true(e->period_set);
		assert_false(e->freq_set);
		assert_string_equal(e->call_graph, "dwarf");
		assert_int_equal(e->stack_size, 8192);
		assert_int_equal(e->max_stack, 10);
		assert_true(e->inherit_set);
		assert_int_equal(e->attr.inherit, 0);
		assert_int_equal(e->time, 0);
		assert_int_equal(e->overwrite, 1);
		assert_true(e->percore);
		assert_string_equal(e->metric_id, "m");
		assert_string_equal(e->driver_config, "cfg");
		assert_int_equal(e->attr.aux_sample_size, 64);
		assert_int_equal(e->attr.aux_output, 1);
	}
	tally_evlist__delete(l);

	l = ok(NULL, "task-clock/freq=99,inherit=1,call-graph=fp,time=1,no-overwrite/k");
	assert_int_equal(ev(l, 0)->attr.sample_freq, 99);
	assert_int_equal(ev(l, 0)->attr.freq, 1);
	assert_true(ev(l, 0)->freq_set);
	assert_int_equal(ev(l, 0)->attr.inherit, 1);
	assert_string_equal(ev(l, 0)->call_graph, "fp");
	assert_int_equal(ev(l, 0)->time, 1);
	assert_int_equal(ev(l, 0)->overwrite, 0);
	assert_int_equal(ev(l, 0)->attr.exclude_user, 1);
	assert_string_equal(ev(l, 0)->name, "task-clock/freq=99,inherit=1,call-graph=fp,time=1,no-overwrite/k");
	tally_evlist__delete(l);

	l = ok(NULL, "cycles/branch_type=any_call|u,config=5,config1=0x10,config2=7,config3=9/");
	assert_int_equal(ev(l, 0)->attr.branch_sample_type,
			 PERF_SAMPLE_BRANCH_ANY_CALL | PERF_SAMPLE_BRANCH_USER);
	assert_true(ev(l, 0)->attr.sample_type & PERF_SAMPLE_BRANCH_STACK);
	assert_int_equal(ev(l, 0)->attr.config, 5);
	assert_int_equal(ev(l, 0)->attr.config1, 0x10);
	assert_int_equal(ev(l, 0)->attr.config2, 7);
	assert_int_equal(ev(l, 0)->config3, 9);
	tally_evlist__delete(l);

	l = ok(NULL, "cs/name='a,b'/");
	assert_string_equal(ev(l, 0)->name, "a,b");
	tally_evlist__delete(l);

	bad(NULL, "cycles/call-graph=fast/", 18, "unknown call-graph mode");
	bad(NULL, "cycles/period=abc/", 14, "needs a number");
	bad(NULL, "cycles/period=99999999999999999999/", 14, "bad number");
	bad(NULL, "cycles/name/", 7, "needs a value");
	bad(NULL, "cycles/bogus=1/", 7, "unknown term 'bogus'");
	bad(NULL, "cycles/branch_type=sideways/", 19, "unknown branch type");
	bad(NULL, "cycles/period=1", 6, "missing closing '/'");
	bad(NULL, "cycles/period=1,/", 16, NULL);
	bad(NULL, "cycles/=1/", 7, "expected a term name");
	bad(NULL, "cycles/period=/", 14, "missing value");
	bad(NULL, "cycles/period=1/x", 16, NULL);
}

static void pmu_terms(void **state)
{
	struct tally_evlist *l;
	(void)state;

	/* formats: single bits, ranges, config1, a bare term means 1 */
	l = ok("x86", "cpu/event=0x3c,umask=0x1,edge,inv,cmask=2,ldlat=7/");
	assert_int_equal(ev(l, 0)->attr.type, 4);
	assert_int_equal(ev(l, 0)->attr.config, 0x3c | 0x100 | (1 << 18) | (1 << 23) | (2u << 24));
	assert_int_equal(ev(l, 0)->attr.config1, 7);
	assert_string_equal(ev(l, 0)->pmu_name, "cpu");
	assert_string_equal(ev(l, 0)->name, "cpu/event=0x3c,umask=0x1,edge,inv,cmask=2,ldlat=7/");
	tally_evlist__delete(l);

	/* non-contiguous format "config:0-3,8-11,60" and config3 */
	l = ok("x86", "cpu/split=0x1ff,ext3=0xab/");
	assert_int_equal(ev(l, 0)->attr.config, 0x1000000000000f0fULL);
	assert_int_equal(ev(l, 0)->config3, 0xab);
	tally_evlist__delete(l);

	/* config= sets the field, format bits are ORed in after it (perf) */
	l = ok("x86", "cpu/umask=0x2,config=0x10000/");
	assert_int_equal(ev(l, 0)->attr.config, 0x10200);
	tally_evlist__delete(l);

	/* aliases, user terms after them, modifiers, name= */
	l = ok("x86", "cpu/mem-loads,ldlat=5/pp");
	assert_int_equal(ev(l, 0)->attr.config, 0x1cd);
	assert_int_equal(ev(l, 0)->attr.config1, 3 | 5);
	assert_int_equal(ev(l, 0)->attr.precise_ip, 2);
	tally_evlist__delete(l);
	l = ok("x86", "cpu/cpu-cycles,name=cyc/:u");
	assert_int_equal(ev(l, 0)->attr.config, 0x3c);
	assert_string_equal(ev(l, 0)->name, "cyc");
	assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
	tally_evlist__delete(l);
	l = ok("x86", "cpu/cycles/");
	assert_int_equal(ev(l, 0)->attr.config, 0x3c);
	tally_evlist__delete(l);
	l = ok("x86", "cpu/event=instructions/");
	assert_int_equal(ev(l, 0)->attr.config, 0xc0);
	tally_evlist__delete(l);
	l = ok("x86", "cpu/TOPDOWN-RETIRING/");
	assert_int_equal(ev(l, 0)->attr.config, 0x8000);
	assert_true(ev(l, 0)->scale == 4.0);
	tally_evlist__delete(l);

	/* scale and unit from .scale/.unit; cpumask; uncore instances */
	l = ok("x86", "power/energy-pkg/");
	assert_string_equal(ev(l, 0)->unit, "Joules");
	assert_true(ev(l, 0)->scale > 2.3e-10 && ev(l, 0)->scale < 2.4e-10);
	assert_non_null(ev(l, 0)->cpus);
	assert_int_equal(ev(l, 0)->cpus->nr, 1);
	tally_evlist__delete(l);
	l = ok("x86", "uncore_imc/cas_count_read/");
	assert_int_equal(tally_evlist__nr(l), 2);
	assert_int_equal(ev(l, 0)->attr.type, 14);
	assert_int_equal(ev(l, 1)->attr.type, 15);
	assert_int_equal(ev(l, 1)->attr.config, 0x304);
	assert_int_equal(ev(l, 1)->cpus->cpu[0], 1);
	assert_string_equal(ev(l, 0)->unit, "MiB");
	tally_evlist__delete(l);
	/* perf's shortcuts: "uncore_" may be left out; PMU-name globs */
	l = ok("x86", "imc/cas_count_read/");
	assert_int_equal(tally_evlist__nr(l), 2);
	assert_string_equal(ev(l, 1)->pmu_name, "uncore_imc_1");
	tally_evlist__delete(l);
	l = ok("x86", "uncore_imc_?/event=2/");
	assert_int_equal(tally_evlist__nr(l), 2);
	tally_evlist__delete(l);
	l = ok("x86", "uncore_imc_1/event=1/");
	assert_int_equal(tally_evlist__nr(l), 1);
	assert_false(ev(l, 0)->merge);	/* one PMU named in full: nothing to merge */
	assert_true(ev(l, 0)->sysfs_pmu);
	tally_evlist__delete(l);
	/* what stat merges (perf's auto_merge_stats) and what --no-merge renames */
	l = ok("x86", "uncore_imc/cas_count_read/,msr/tsc/,cycles,msr/tsc,name=x/");
	assert_int_equal(tally_evlist__nr(l), 5);
	assert_true(ev(l, 0)->merge && ev(l, 1)->merge && ev(l, 0)->sysfs_pmu);
	assert_false(ev(l, 2)->merge);
	assert_true(ev(l, 2)->sysfs_pmu);
	assert_false(ev(l, 3)->sysfs_pmu);	/* legacy cycles: no PMU name in perf */
	assert_false(ev(l, 2)->name_set);
	assert_true(ev(l, 4)->name_set);
	tally_evlist__delete(l);
	l = ok("x86", "tsc");	/* a bare alias: merged over the PMUs that have it */
	assert_true(ev(l, 0)->merge && ev(l, 0)->sysfs_pmu);
	tally_evlist__delete(l);

	/* a bare alias name finds its PMU (perf: "tsc" → msr/tsc/) */
	l = ok("x86", "aperf:u");
	assert_int_equal(tally_evlist__nr(l), 1);
	assert_int_equal(ev(l, 0)->attr.type, 9);
	assert_int_equal(ev(l, 0)->attr.config, 1);
	assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
	tally_evlist__delete(l);
	l = ok("x86", "cas_count_read");
	assert_int_equal(tally_evlist__nr(l), 2);
	tally_evlist__delete(l);

	/* an empty term list is the PMU's config 0 */
	l = ok("x86", "msr//");
	assert_int_equal(ev(l, 0)->attr.type, 9);
	tally_evlist__delete(l);

	/* errors point at the term */
	bad("x86", "cpu/event=0x100/", 10, "value too big for format 'event', maximum is 255");
	bad("x86", "cpu/umask=1,frob=2/", 12, "unknown term 'frob' for pmu 'cpu'");
	bad("x86", "cpu/nosuch/", 4, "neither an event of PMU 'cpu'");
	bad("x86", "cpu/event=abc/", 10, "needs a number");
	bad("x86", "nopmu/event=1/", 0, "unknown PMU 'nopmu'");
	bad("x86", "uncore_imc_7/event=1/", 0, "unknown PMU");
	bad("x86", "cpu/event=1/zz", 12, "expected ':' and modifiers");
}

static void arm64_caps(void **state)
{
	struct tally_evlist *l;
	(void)state;

	l = ok("arm64", "armv8_pmuv3_0/cpu_cycles,threshold=4000,threshold_compare=2,threshold_count/");
	assert_int_equal(ev(l, 0)->attr.type, 10);
	assert_int_equal(ev(l, 0)->attr.config, 0x11);
	assert_int_equal(ev(l, 0)->attr.config1, (4000ULL << 5) | (2 << 2) | (1 << 4));
	assert_int_equal(ev(l, 0)->cpus->nr, 4);
	tally_evlist__delete(l);
	l = ok("arm64", "armv8_pmuv3_1/inst_retired,threshold=255/");
	assert_int_equal(ev(l, 0)->attr.config1, 255ULL << 5);
	tally_evlist__delete(l);
	/* all three instances */
	l = ok("arm64", "armv8_pmuv3/l1d_cache/");
	assert_int_equal(tally_evlist__nr(l), 3);
	tally_evlist__delete(l);

	bad("arm64", "armv8_pmuv3_0/threshold=4096/", 24, "above 4095");
	bad("arm64", "armv8_pmuv3_0/threshold=100000/", 24, "above 4095");
	bad("arm64", "armv8_pmuv3_1/threshold=256/", 24, "maximum of 255 (caps/threshold_max)");
	bad("arm64", "armv8_pmuv3_2/threshold=1/", 14, "does not support counting thresholds");
	bad("arm64", "armv8_pmuv3_0/threshold_compare=4/", 32, "value too big");
}

static void tracepoints(void **state)
{
	struct tally_evlist *l;
	char root[PATH_MAX + 32];
	(void)state;

	l = ok("x86", "sched:sched_switch");
	assert_int_equal(tally_evlist__nr(l), 1);
	assert_int_equal(ev(l, 0)->attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(ev(l, 0)->attr.config, 316);
	/* perf's tracepoint defaults */
	assert_int_equal(ev(l, 0)->attr.sample_period, 1);
	assert_int_equal(ev(l, 0)->attr.sample_type, PERF_SAMPLE_RAW | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD);
	assert_string_equal(ev(l, 0)->name, "sched:sched_switch");
	assert_string_equal(ev(l, 0)->tp_sys, "sched");
	assert_string_equal(ev(l, 0)->tp_name, "sched_switch");
	tally_evlist__delete(l);

	l = ok("x86", "sched:sched_w*");
	assert_int_equal(tally_evlist__nr(l), 2);
	assert_string_equal(ev(l, 0)->name, "sched:sched_wakeup");
	assert_string_equal(ev(l, 1)->name, "sched:sched_waking");
	tally_evlist__delete(l);
	l = ok("x86", "*:*");
	assert_int_equal(tally_evlist__nr(l), 5);
	assert_string_equal(ev(l, 0)->name, "irq:irq_handler_entry");
	tally_evlist__delete(l);
	l = ok("x86", "irq:*:u,sched:sched_switch/call-graph=no/");
	assert_int_equal(tally_evlist__nr(l), 3);
	assert_int_equal(ev(l, 1)->attr.exclude_kernel, 1);
	assert_string_equal(ev(l, 2)->call_graph, "no");
	tally_evlist__delete(l);
	l = ok("x86", "{sched:sched_switch,sched:sched_wakeup}");
	assert_int_equal(ev(l, 1)->leader, 0);
	tally_evlist__delete(l);

	bad("x86", "sched:nope", 0, "unknown tracepoint 'sched:nope'");
	bad("x86", "sched:nope*", 0, "no tracepoint matches");
	bad("x86", "sched:", 6, "tracepoint name after");
	bad("x86", "sched:sched_switch:zz", 19, "unknown modifier");

	/* the debugfs fallback, and an explicit tracefs directory */
	l = ok("debugfs-only", "foo:bar");
	assert_int_equal(ev(l, 0)->attr.config, 5);
	tally_evlist__delete(l);
	l = mklist(NULL);
	snprintf(root, sizeof(root), "%s/x86/kernel/tracing", data_dir);
	assert_int_equal(tally_evlist__set_tracefs(l, root), 0);
	assert_int_equal(tally_evlist__add(l, "irq:softirq_entry", NULL), 0);
	assert_int_equal(ev(l, 0)->attr.config, 101);
	tally_evlist__delete(l);
	bad("arm64", "sched:sched_switch", 0, "tracefs is not mounted");
}

static int count_cb(const char *sys, const char *name, uint64_t id, void *arg)
{
	(void)sys;
	(void)name;
	(void)id;
	++*(int *)arg;
	return 0;
}

static void tracepoint_walk(void **state)
{
	char root[PATH_MAX + 16], dir[PATH_MAX];
	int n = 0;
	(void)state;

	if (!data_dir[0] && !find_data())
		skip();
	snprintf(root, sizeof(root), "%s/x86", data_dir);
	assert_int_equal(tally_tracefs__find(root, dir, sizeof(dir)), 0);
	assert_non_null(strstr(dir, "/kernel/tracing"));
	assert_int_equal(tally_tracepoint__for_each(root, NULL, NULL, count_cb, &n), 0);
	assert_int_equal(n, 5);
	n = 0;
	assert_int_equal(tally_tracepoint__for_each(root, "sched", "*wak*", count_cb, &n), 0);
	assert_int_equal(n, 2);
	snprintf(root, sizeof(root), "%s/arm64", data_dir);
	assert_int_equal(tally_tracefs__find(root, dir, sizeof(dir)), -ENOENT);
}

/* tracefs mounted on demand: a simulated kernel's mount(2) answers for a temporary
 * sysfs root whose kernel/tracing is empty, as on a fresh boot. */
static int mount_answer;	/* 0: "mount" (create events/), else the errno to fail with */
static char mounted_on[PATH_MAX], mounted_type[32];

static int fake_mount(const char *src, const char *target, const char *type, unsigned long flags,
		      const void *data)
{
	char path[PATH_MAX + 64];
	FILE *f;

	(void)src;
	(void)flags;
	(void)data;
	snprintf(mounted_on, sizeof(mounted_on), "%s", target);
	snprintf(mounted_type, sizeof(mounted_type), "%s", type);
	if (mount_answer) {
		errno = mount_answer;
		return -1;
	}
	snprintf(path, sizeof(path), "mkdir -p %s/events/sched/sched_switch", target);
	if (system(path))
		return -1;
	snprintf(path, sizeof(path), "%s/events/sched/sched_switch/id", target);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("316\n", f);
	fclose(f);
	return 0;
}

static void tracefs_on_demand(void **state)
{
	struct tly_sys_ops ops = tly_sys_real;
	char root[] = "/tmp/tally-tracefs.XXXXXX", dir[PATH_MAX], why[512], cmd[PATH_MAX + 64];
	struct tally_parse_error err;
	struct tally_evlist *l;
	(void)state;

	assert_non_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/kernel/tracing", root);
	assert_int_equal(system(cmd), 0);
	/* the real kernel never mounts on a test's sysfs copy */
	assert_int_equal(tally_tracefs__find(root, dir, sizeof(dir)), -ENOENT);
	assert_non_null(strstr(tally_tracefs__strerror(-ENOENT, dir, why, sizeof(why)),
			       "not mounted"));

	ops.mount = fake_mount;
	tly_sys__set(&ops);
	mount_answer = EPERM;	/* an unprivileged user */
	assert_int_equal(tally_tracefs__find(root, dir, sizeof(dir)), -EPERM);
	assert_string_equal(mounted_type, "tracefs");
	assert_string_equal(mounted_on, dir);
	assert_non_null(strstr(dir, "/kernel/tracing"));
	assert_non_null(strstr(tally_tracefs__strerror(-EPERM, dir, why, sizeof(why)),
			       "needs root (CAP_SYS_ADMIN)"));
	assert_int_equal(tally_evlist__new(&l), 0);
	assert_int_equal(tally_evlist__set_sysfs_root(l, root), 0);
	assert_int_equal(tally_evlist__add(l, "sched:sched_switch", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "mounting it on"));
	mount_answer = ENODEV;	/* a kernel without tracefs */
	assert_int_equal(tally_evlist__add(l, "sched:sched_switch", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no tracefs"));

	mount_answer = 0;	/* root: mounted, then found */
	assert_int_equal(tally_evlist__add(l, "sched:sched_switch", &err), 0);
	assert_int_equal(ev(l, 0)->attr.config, 316);
	mounted_on[0] = 0;	/* mounted now: no second mount */
	assert_int_equal(tally_tracefs__find(root, dir, sizeof(dir)), 0);
	assert_string_equal(mounted_on, "");
	tally_evlist__delete(l);
	tly_sys__set(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

static void breakpoints(void **state)
{
	struct tally_evlist *l;
	(void)state;

	l = ok(NULL, "mem:0x1000");
	assert_int_equal(ev(l, 0)->attr.type, PERF_TYPE_BREAKPOINT);
	assert_int_equal(ev(l, 0)->attr.bp_addr, 0x1000);
	assert_int_equal(ev(l, 0)->attr.bp_type, HW_BREAKPOINT_R | HW_BREAKPOINT_W);
	assert_int_equal(ev(l, 0)->attr.bp_len, HW_BREAKPOINT_LEN_4);
	assert_int_equal(ev(l, 0)->attr.sample_period, 1);
	assert_string_equal(ev(l, 0)->name, "mem:0x1000");
	tally_evlist__delete(l);
	l = ok(NULL, "mem:0x2000:x");
	assert_int_equal(ev(l, 0)->attr.bp_type, HW_BREAKPOINT_X);
	assert_int_equal(ev(l, 0)->attr.bp_len, sizeof(long));
	tally_evlist__delete(l);
	l = ok(NULL, "mem:4096/2:w:u");
	assert_int_equal(ev(l, 0)->attr.bp_addr, 4096);
	assert_int_equal(ev(l, 0)->attr.bp_type, HW_BREAKPOINT_W);
	assert_int_equal(ev(l, 0)->attr.bp_len, 2);
	assert_int_equal(ev(l, 0)->attr.exclude_kernel, 1);
	assert_string_equal(ev(l, 0)->name, "mem:4096");	/* perf's lexer stops at '/' */
	tally_evlist__delete(l);
	l = ok(NULL, "mem:0x10:rwx,mem:0x20:wr");
	assert_int_equal(ev(l, 0)->attr.bp_type, HW_BREAKPOINT_RW | HW_BREAKPOINT_X);
	assert_int_equal(ev(l, 1)->attr.bp_type, HW_BREAKPOINT_RW);
	tally_evlist__delete(l);
	l = ok(NULL, "mem:0x10:k");
	assert_int_equal(ev(l, 0)->attr.exclude_user, 1);
	tally_evlist__delete(l);

	bad(NULL, "mem:xyz", 4, "breakpoint address");
	bad(NULL, "mem:0x10:rr", 10, "given twice");
	bad(NULL, "mem:0x10:rq", 9, "bad breakpoint access");
	bad(NULL, "mem:0x10/abc", 9, "breakpoint length");
	bad(NULL, "mem:0x10:rw:", 11, "missing modifier");
}

static void pfm_names(void **state)
{
	struct tally_evlist *l;
	struct tally_parse_error err;
	(void)state;

	assert_int_equal(tally_evlist__new(&l), 0);
	/* libpfm4 consulted: unknown either way; and on a machine where libpfm4 sees no
	 * PMU the message must say so */
	assert_int_equal(tally_evlist__add(l, "surely_not_an_event_xyz", &err), -EINVAL);
	if (tly_pfm_nr_present() == 0)
		assert_non_null(strstr(err.msg, "libpfm4 detects no hardware PMU"));
	else
		assert_non_null(strstr(err.msg, "unknown event"));
	/* a name libpfm4 knows on this CPU: only when it detects a PMU */
	if (tly_pfm_nr_present() > 0 &&
	    tally_evlist__add(l, "inst_retired.any", &err) == 0) {
		assert_int_equal(tally_evlist__nr(l), 1);
		assert_string_equal(ev(l, 0)->name, "inst_retired.any");
		assert_true(ev(l, 0)->attr.type == PERF_TYPE_RAW ||
			    ev(l, 0)->attr.type == PERF_TYPE_HARDWARE || ev(l, 0)->attr.type > 5);
		/* perf's modifiers after a libpfm4 name */
		assert_int_equal(tally_evlist__add(l, "inst_retired.any:uP", &err), 0);
		assert_int_equal(ev(l, 1)->attr.exclude_kernel, 1);
		assert_int_equal(ev(l, 1)->attr.exclude_user, 0);
		assert_true(ev(l, 1)->precise_max);
		assert_int_equal(ev(l, 1)->attr.config, ev(l, 0)->attr.config);
	}
	tally_evlist__delete(l);
	/* with libpfm4 off the same name is just unknown */
	bad(NULL, "inst_retired.any", 0, "unknown event");
	{
		char msg[256];
		struct perf_event_attr a;
		int r = tly_pfm_encode("surely_not_an_event_xyz", &a, msg, sizeof(msg));

		assert_true(r == -ENOENT || r == -ENODEV);
		assert_true(msg[0]);
		if (r == -ENODEV)
			assert_non_null(strstr(msg, "no hardware PMU"));
	}
}

static void error_format(void **state)
{
	struct tally_parse_error err;
	struct tally_evlist *l = mklist(NULL);
	char buf[512];
	(void)state;

	assert_int_equal(tally_evlist__add(l, "cycles:zz", &err), -EINVAL);
	tally_parse_error__format(&err, "cycles:zz", buf, sizeof(buf));
	/* perf's layout: the caret line starts under the bad character */
	assert_string_equal(buf, "event syntax error: 'cycles:zz'\n"
				 "                            \\___ unknown modifier 'z' "
				 "(valid: u k h G H I p P S D e W b)");
	assert_int_equal(tally_evlist__add(l, "task-clock,bogus", &err), -EINVAL);
	assert_int_equal(err.pos, 11);
	assert_int_equal(err.len, 5);
	tally_parse_error__format(&err, "task-clock,bogus", buf, sizeof(buf));
	assert_non_null(strstr(buf, "\n" "                                \\___ unknown event 'bogus'"));
	tally_evlist__delete(l);
}

static void modifier_str(void **state)
{
	struct tally_evlist *l = ok(NULL, "cycles:upp,cs:k,faults,cycles:SD");
	char buf[32];
	(void)state;

	tally_event__modifier_str(ev(l, 0), buf, sizeof(buf));
	assert_string_equal(buf, ":upp");
	tally_event__modifier_str(ev(l, 1), buf, sizeof(buf));
	assert_string_equal(buf, ":k");
	tally_event__modifier_str(ev(l, 2), buf, sizeof(buf));
	assert_string_equal(buf, "");
	tally_event__modifier_str(ev(l, 3), buf, sizeof(buf));
	assert_string_equal(buf, ":SD");
	tally_evlist__delete(l);
}

/* Deterministic mutation fuzzing: nothing crashes (ASan run), errors are in range, a
 * failed add leaves the list untouched. */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fuzz(void **state)
{
	static const char *const seeds[] = {
		"cycles:u", "{cycles,instructions}:S", "cpu/event=0x3c,umask=1,edge/pp",
		"sched:sched_*", "mem:0x1000/8:rw:u", "L1-dcache-load-misses", "r1a2:k",
		"task-clock/period=100,name=x,call-graph=dwarf/", "uncore_imc/cas_count_read/",
		"grp{cs,faults}:W", "power/energy-pkg/", "cpu/mem-loads,ldlat=3/", "4:0x10",
		"duration_time,user_time", "msr/tsc/u", "irq:*:k", "cpu/name='a,b'/",
	};
	static const char alphabet[] = "{}/,:=*?'[]-_.0x9aukhGHpPSDIWebrmemcpusched ";
	char root[PATH_MAX + 16];
	struct tally_evlist *l;
	int parsed = 0, failed = 0;
	(void)state;

	if (!data_dir[0] && !find_data())
		skip();
	snprintf(root, sizeof(root), "%s/x86", data_dir);
	assert_int_equal(tally_evlist__new(&l), 0);
	assert_int_equal(tally_evlist__set_sysfs_root(l, root), 0);
	/* TALLY_FUZZ_ITERS=N for a longer local run; the suite does 4000 */
	long iters = getenv("TALLY_FUZZ_ITERS") ? atol(getenv("TALLY_FUZZ_ITERS")) : 4000;

	for (long iter = 0; iter < iters; iter++) {
		char s[256], t[256];
		struct tally_parse_error err;
		size_t n, nr0 = tally_evlist__nr(l);
		int muts = 1 + (int)(next_rand() % 4);

		snprintf(s, sizeof(s), "%s", seeds[next_rand() % (sizeof(seeds) / sizeof(seeds[0]))]);
		if (next_rand() % 4 == 0) {
			n = strlen(s);
			snprintf(s + n, sizeof(s) - n, ",%s",
				 seeds[next_rand() % (sizeof(seeds) / sizeof(seeds[0]))]);
		}
		for (int m = 0; m < muts; m++) {
			n = strlen(s);
			size_t at = n ? next_rand() % (n + 1) : 0;

			switch (next_rand() % 5) {
			case 0:	/* insert */
				if (n + 2 < sizeof(s)) {
					memmove(s + at + 1, s + at, n - at + 1);
					s[at] = alphabet[next_rand() % (sizeof(alphabet) - 1)];
				}
				break;
			case 1:	/* delete */
				if (at < n)
					memmove(s + at, s + at + 1, n - at);
				break;
			case 2:	/* replace, sometimes with a byte outside ASCII */
				if (at < n)
					s[at] = next_rand() % 8 ? alphabet[next_rand() % (sizeof(alphabet) - 1)] :
						(char)(0x80 | (next_rand() & 0x7f));
				break;
			case 3:	/* truncate */
				s[at] = 0;
				break;
			case 4:	/* duplicate a span */
				if (at < n) {
					size_t len = 1 + next_rand() % (n - at);

					if (n + len + 1 < sizeof(s)) {
						memcpy(t, s + at, len);
						memmove(s + at + len, s + at, n - at + 1);
						memcpy(s + at, t, len);
					}
				}
				break;
			}
		}
		memset(&err, 0, sizeof(err));
		int r = tally_evlist__add(l, s, &err);

		if (r == 0) {
			parsed++;
			assert_true(tally_evlist__nr(l) > nr0);
			for (size_t i = nr0; i < tally_evlist__nr(l); i++) {
				int lead = ev(l, i)->leader;

				assert_non_null(ev(l, i)->name);
				assert_true(lead >= (int)nr0 && lead < (int)tally_evlist__nr(l));
			}
		} else {
			failed++;
			assert_true(r < 0);
			assert_int_equal(tally_evlist__nr(l), nr0);
			assert_true(err.pos <= strlen(s));
			assert_true(err.msg[0] != 0);
			assert_true(memchr(err.msg, 0, sizeof(err.msg)) != NULL);
			char buf[1024];

			tally_parse_error__format(&err, s, buf, sizeof(buf));
		}
		if (tally_evlist__nr(l) > 2000) {
			tally_evlist__delete(l);
			assert_int_equal(tally_evlist__new(&l), 0);
			assert_int_equal(tally_evlist__set_sysfs_root(l, root), 0);
		}
	}
	tally_evlist__delete(l);
	/* both paths were exercised */
	assert_true(parsed > 100);
	assert_true(failed > 100);
}

/* tally_event__probe (what list uses to hide hardware events that do not open): a
 * disabled, user-only counter on this thread, closed again. */
static void probe(void **state)
{
	struct tally_evlist *l = ok(NULL, "cycles:k,L1-dcache-loads,task-clock");
	struct sim_kernel *k = sim_install();
	(void)state;

	k->has_hw_pmu = true;
	assert_int_equal(tally_event__probe(ev(l, 0)), 0);
	{
		struct sim_event *e = sim_event_nth(0);

		assert_non_null(e);
		assert_int_equal(e->attr.type, PERF_TYPE_HARDWARE);
		assert_int_equal(e->attr.disabled, 1);
		assert_int_equal(e->attr.exclude_kernel, 1);
		assert_int_equal(e->pid, 0);
		assert_int_equal(e->cpu, -1);
		assert_false(e->used);	/* closed again */
	}
	assert_int_equal(tally_event__probe(ev(l, 1)), 0);
	k->has_hw_pmu = false;
	assert_true(tally_event__probe(ev(l, 0)) < 0);
	assert_true(tally_event__probe(ev(l, 1)) < 0);
	sim_uninstall();
	/* the real kernel: a software event always opens */
	assert_int_equal(tally_event__probe(ev(l, 2)), 0);
	tally_evlist__delete(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(symbolic),
		cmocka_unit_test(tool_events),
		cmocka_unit_test(hw_cache),
		cmocka_unit_test(raw_and_numeric),
		cmocka_unit_test(modifiers),
		cmocka_unit_test(groups),
		cmocka_unit_test(append_and_rollback),
		cmocka_unit_test(generic_terms),
		cmocka_unit_test(pmu_terms),
		cmocka_unit_test(arm64_caps),
		cmocka_unit_test(tracepoints),
		cmocka_unit_test(tracepoint_walk),
		cmocka_unit_test(tracefs_on_demand),
		cmocka_unit_test(breakpoints),
		cmocka_unit_test(pfm_names),
		cmocka_unit_test(error_format),
		cmocka_unit_test(modifier_str),
		cmocka_unit_test(probe),
		cmocka_unit_test(fuzz),
	};

	find_data();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
