/*
 * Probes without a kernel: perf probe's definition syntax (what parses, into what, and
 * the messages for what does not), the kernel's definition lines both ways, perf's
 * event names, the filter syntax of -F, and kprobe generation against a simulated
 * kallsyms and tracefs directory (this machine's kernel has no kprobe_events).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <tally/probe.h>

static struct tally_probe_spec *parse_ok(const char *def)
{
	struct tally_probe_spec *s = NULL;
	char err[512];
	int ret = tally_probe_spec__parse(def, &s, err, sizeof(err));

	if (ret)
		fail_msg("'%s' did not parse: %s", def, err);
	return s;
}

static void parse_bad(const char *def, const char *msg_part)
{
	struct tally_probe_spec *s = NULL;
	char err[512] = "";
	int ret = tally_probe_spec__parse(def, &s, err, sizeof(err));

	assert_int_equal(ret, -EINVAL);
	assert_null(s);
	if (!strstr(err, msg_part))
		fail_msg("'%s': message '%s' lacks '%s'", def, err, msg_part);
}

static void test_parse_points(void **state)
{
	struct tally_probe_spec *s;

	(void)state;
	s = parse_ok("add");
	assert_string_equal(s->function, "add");
	assert_null(s->file);
	assert_false(s->has_line || s->retprobe || s->lazy || s->offset || s->nr_args);
	assert_false(tally_probe_spec__needs_dwarf(s));
	tally_probe_spec__delete(s);

	s = parse_ok("grp:ev=walk:3");
	assert_string_equal(s->group, "grp");
	assert_string_equal(s->event, "ev");
	assert_string_equal(s->function, "walk");
	assert_true(s->has_line);
	assert_int_equal(s->line, 3);
	assert_true(tally_probe_spec__needs_dwarf(s));
	tally_probe_spec__delete(s);

	s = parse_ok("myev=add@src/t.c+8");
	assert_null(s->group);
	assert_string_equal(s->event, "myev");
	assert_string_equal(s->function, "add");
	assert_string_equal(s->file, "src/t.c");
	assert_int_equal(s->offset, 8);
	tally_probe_spec__delete(s);

	s = parse_ok("add%return $retval");
	assert_true(s->retprobe);
	assert_int_equal(s->nr_args, 1);
	assert_true(!strcmp(s->args[0].expr, "$retval"));
	assert_false(tally_probe_spec__needs_dwarf(s));
	tally_probe_spec__delete(s);

	/* a file only with a '.', ':' or ';', and none of "+@%" (perf's rule) */
	s = parse_ok("t.c:10");
	assert_null(s->function);
	assert_string_equal(s->file, "t.c");
	assert_int_equal(s->line, 10);
	tally_probe_spec__delete(s);

	s = parse_ok("t.c;return*");
	assert_string_equal(s->file, "t.c");
	assert_string_equal(s->lazy, "return*");
	tally_probe_spec__delete(s);

	s = parse_ok("walk;t+=*");
	assert_string_equal(s->function, "walk");
	assert_string_equal(s->lazy, "t+=*");
	tally_probe_spec__delete(s);

	s = parse_ok("foo.constprop.0");	/* no ':' or ';': a function */
	assert_string_equal(s->function, "foo.constprop.0");
	tally_probe_spec__delete(s);

	s = parse_ok("0x1149");
	assert_true(s->has_address);
	assert_int_equal(s->address, 0x1149);
	tally_probe_spec__delete(s);

	s = parse_ok("ns\\:\\:get");	/* an escaped ':' is part of the name */
	assert_string_equal(s->function, "ns::get");
	tally_probe_spec__delete(s);
}

static void test_parse_args(void **state)
{
	struct tally_probe_spec *s;

	(void)state;
	s = parse_ok("walk p->next->y name=p->name:string 'arr[1]:x32' %di +8(%sp):u64 "
		     "dfd=%si:s32 $vars");
	assert_int_equal(s->nr_args, 7);
	assert_string_equal(s->args[0].expr, "p->next->y");
	assert_false(s->args[0].raw);
	assert_null(s->args[0].type);
	assert_string_equal(s->args[1].name, "name");
	assert_string_equal(s->args[1].expr, "p->name");
	assert_string_equal(s->args[1].type, "string");
	assert_string_equal(s->args[2].expr, "arr[1]");
	assert_string_equal(s->args[2].type, "x32");
	assert_true(s->args[3].raw);
	assert_string_equal(s->args[3].expr, "%di");
	assert_true(s->args[4].raw);
	assert_string_equal(s->args[4].expr, "+8(%sp)");
	assert_string_equal(s->args[4].type, "u64");
	assert_string_equal(s->args[5].name, "dfd");
	assert_true(s->args[5].raw);
	assert_false(s->args[6].raw);
	assert_true(tally_probe_spec__needs_dwarf(s));
	tally_probe_spec__delete(s);
}

static void test_parse_errors(void **state)
{
	(void)state;
	parse_bad("", "empty probe definition");
	parse_bad("add:x", "'x' is not a line number");
	parse_bad("add+y", "'y' is not an offset");
	parse_bad("add%entry", "only %return");
	parse_bad("add%return:3", "%return cannot be used");
	parse_bad("add:3;x*", "a line and a lazy pattern");
	parse_bad("add%return s", "You can't specify local variable for kretprobe");
	parse_bad("1bad=add", "not a valid event name");
	parse_bad("g-r:ev=add", "not a valid group name");
	parse_bad("add x:", "no type after ':'");
	parse_bad("add 9x=a", "not a valid argument name");
	parse_bad("0xzz", "not an address");
	parse_bad("ev=", "no probe point");
}

static void test_event_lines(void **state)
{
	struct tally_probe_event e;
	char buf[512];

	(void)state;
	assert_int_equal(tally_probe_event__parse("p:probe_t0/add /tmp/pr/t0:0x0000000000001153 "
						  "a=-20(%bp):s32 b=-24(%bp):s32", true, &e), 0);
	assert_true(e.uprobe);
	assert_false(e.retprobe);
	assert_string_equal(e.group, "probe_t0");
	assert_string_equal(e.event, "add");
	assert_string_equal(e.path, "/tmp/pr/t0");
	assert_int_equal(e.offset, 0x1153);
	assert_int_equal(e.nr_args, 2);
	assert_string_equal(e.args[1], "b=-24(%bp):s32");
	assert_true(tally_probe_event__format(&e, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "p:probe_t0/add /tmp/pr/t0:0x1153 a=-20(%bp):s32 b=-24(%bp):s32");
	tally_probe_event__exit(&e);

	assert_int_equal(tally_probe_event__parse("r:probe/vfs_read__return vfs_read+0 arg1=$retval",
						  false, &e), 0);
	assert_true(e.retprobe);
	assert_string_equal(e.symbol, "vfs_read");
	assert_null(e.module);
	tally_probe_event__format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "r:probe/vfs_read__return vfs_read+0 arg1=$retval");
	tally_probe_event__exit(&e);

	assert_int_equal(tally_probe_event__parse("p:probe/x ext4:ext4_sync_file+8", false, &e), 0);
	assert_string_equal(e.module, "ext4");
	assert_int_equal(e.offset, 8);
	tally_probe_event__exit(&e);

	assert_int_equal(tally_probe_event__parse("-:probe/x", false, &e), -EINVAL);
	assert_int_equal(tally_probe_event__parse("p:noslash x+0", false, &e), -EINVAL);
	assert_int_equal(tally_probe_event__parse("p:g/e /bin/x:zz", true, &e), -EINVAL);
}

static void test_names(void **state)
{
	char buf[64];
	struct tally_probe_spec *s;
	struct tally_probe_event evs[3], existing = { 0 };
	char err[512];

	(void)state;
	tally_probe__default_group("/usr/lib/x86_64-linux-gnu/libc.so.6", buf, sizeof(buf));
	assert_string_equal(buf, "probe_libc");
	tally_probe__default_group("/tmp/my-prog", buf, sizeof(buf));
	assert_string_equal(buf, "probe_my_prog");
	tally_probe__default_group(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "probe");

	/* two addresses of one line share a name; a taken name needs -f, then _1 */
	s = parse_ok("walk:3");
	memset(evs, 0, sizeof(evs));
	evs[0].function = "walk";
	evs[1].function = "walk";
	evs[2].function = "main";
	strcpy(existing.group, "probe_t0");
	strcpy(existing.event, "walk_L3");
	assert_int_equal(tally_probe_events__name(evs, 3, s, "/x/t0", &existing, 1, NULL, 0, false,
						  err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "event \"walk_L3\" already exists"));
	assert_int_equal(tally_probe_events__name(evs, 3, s, "/x/t0", &existing, 1, NULL, 0, true,
						  err, sizeof(err)), 0);
	assert_string_equal(evs[0].group, "probe_t0");
	assert_string_equal(evs[0].event, "walk_L3_1");
	assert_string_equal(evs[1].event, "walk_L3_1");
	assert_string_equal(evs[2].event, "main_L3");
	tally_probe_spec__delete(s);

	s = parse_ok("grp:ev=add%return");
	memset(evs, 0, sizeof(evs));
	evs[0].function = "add";
	assert_int_equal(tally_probe_events__name(evs, 1, s, "/x/t0", NULL, 0, NULL, 0, false, err,
						  sizeof(err)), 0);
	assert_string_equal(evs[0].group, "grp");
	assert_string_equal(evs[0].event, "ev__return");	/* as perf 6.1 names it */
	tally_probe_spec__delete(s);

	s = parse_ok("0x1149");
	memset(evs, 0, sizeof(evs));
	assert_int_equal(tally_probe_events__name(evs, 1, s, "/x/t0", NULL, 0, NULL, 0, false, err,
						  sizeof(err)), 0);
	assert_string_equal(evs[0].event, "abs_1149");
	tally_probe_spec__delete(s);

	s = parse_ok("twice*");
	memset(evs, 0, sizeof(evs));
	evs[0].function = "twice<int>";
	evs[1].function = "foo.constprop.0";
	assert_int_equal(tally_probe_events__name(evs, 2, s, "/x/t0", NULL, 0, NULL, 0, false, err,
						  sizeof(err)), 0);
	assert_string_equal(evs[0].event, "twice_int_");
	assert_string_equal(evs[1].event, "foo");
	tally_probe_spec__delete(s);
}

/* A kallsyms text and a tracefs directory of plain files. */
struct simk {
	char dir[64], kallsyms[128], tracefs[128];
};

static void simk_setup(struct simk *k, bool with_kprobes)
{
	FILE *f;
	char path[256];

	strcpy(k->dir, "/tmp/tally-probe-XXXXXX");
	assert_non_null(mkdtemp(k->dir));
	snprintf(k->kallsyms, sizeof(k->kallsyms), "%s/kallsyms", k->dir);
	snprintf(k->tracefs, sizeof(k->tracefs), "%s/tracing", k->dir);
	f = fopen(k->kallsyms, "w");
	assert_non_null(f);
	fputs("ffffffff81000000 T _text\n"
	      "ffffffff81000000 T startup_64\n"
	      "ffffffff816b4af0 t do_sys_openat2\n"
	      "ffffffff816b8230 T vfs_read\n"
	      "ffffffff816b8400 T vfs_readv\n"
	      "ffffffff81ff0000 D some_data\n"
	      "ffffffffc0010000 t ext4_sync_file\t[ext4]\n", f);
	fclose(f);
	assert_int_equal(mkdir(k->tracefs, 0755), 0);
	if (with_kprobes) {
		snprintf(path, sizeof(path), "%s/kprobe_events", k->tracefs);
		f = fopen(path, "w");
		assert_non_null(f);
		fclose(f);
	}
}

static void simk_teardown(struct simk *k)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", k->dir);
	assert_int_equal(system(cmd), 0);
}

static char *kprobe_line(struct tally_probe_finder *f, const char *def, char *buf, size_t len)
{
	struct tally_probe_spec *s = parse_ok(def);
	struct tally_probe_event *evs = NULL;
	size_t nr = 0;
	char err[512], note[256];

	if (tally_probe_finder__find(f, s, &evs, &nr, err, sizeof(err), note, sizeof(note)))
		fail_msg("'%s': %s", def, err);
	assert_int_equal(tally_probe_events__name(evs, nr, s, NULL, NULL, 0, NULL, 0, false, err,
						  sizeof(err)), 0);
	assert_true(tally_probe_event__format(&evs[0], buf, len) > 0);
	tally_probe_events__free(evs, nr);
	tally_probe_spec__delete(s);
	return buf;
}

static void test_kprobes(void **state)
{
	struct simk k;
	struct tally_probe_finder *f = NULL;
	struct tally_probe_event *ev = NULL;
	char line[512], err[512], note[256];
	struct tally_probe_spec *s;
	size_t nr = 0;

	(void)state;
	simk_setup(&k, true);
	assert_int_equal(tally_probe_finder__new_kernel(&f, k.kallsyms, NULL), 0);
	/* perf 6.1's lines: _text+OFFSET, SYM+0 for a return probe, raw args as given */
	assert_string_equal(kprobe_line(f, "do_sys_openat2", line, sizeof(line)),
			    "p:probe/do_sys_openat2 _text+7031536");
	assert_string_equal(kprobe_line(f, "vfs_read+4 %di dfd=%si:s32 +0(%dx):string", line,
					sizeof(line)),
			    "p:probe/vfs_read _text+7045684 %di dfd=%si:s32 +0(%dx):string");
	assert_string_equal(kprobe_line(f, "myg:myev=vfs_read%return $retval:s32", line,
					sizeof(line)),
			    "r:myg/myev__return vfs_read+0 $retval:s32");

	s = parse_ok("nosuch_fn");
	assert_int_equal(tally_probe_finder__find(f, s, &ev, &nr, err, sizeof(err), note,
						  sizeof(note)), -ENOENT);
	assert_string_equal(err, "Failed to find symbol nosuch_fn in kernel");
	tally_probe_spec__delete(s);
	s = parse_ok("vfs_read:3");
	assert_int_equal(tally_probe_finder__find(f, s, &ev, &nr, err, sizeof(err), note,
						  sizeof(note)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "need its debuginfo"));
	tally_probe_spec__delete(s);
	tally_probe_finder__delete(f);

	/* a module's function: MOD:SYM+OFF */
	assert_int_equal(tally_probe_finder__new_kernel(&f, k.kallsyms, "ext4"), 0);
	assert_string_equal(kprobe_line(f, "ext4_sync_file", line, sizeof(line)),
			    "p:probe/ext4_sync_file ext4:ext4_sync_file+0");
	tally_probe_finder__delete(f);

	/* written, listed and removed through the simulated tracefs */
	assert_int_equal(tally_probe_events__supported(k.tracefs, false), 0);
	assert_int_equal(tally_probe_events__supported(k.tracefs, true), -ENOENT);
	assert_int_equal(tally_probe_events__add(k.tracefs, false,
						 "p:probe/do_sys_openat2 _text+7031536"), 0);
	assert_int_equal(tally_probe_events__read(k.tracefs, false, &ev, &nr), 0);
	assert_int_equal(nr, 1);
	assert_string_equal(ev[0].event, "do_sys_openat2");
	assert_string_equal(ev[0].symbol, "_text");
	tally_probe_events__free(ev, nr);
	assert_int_equal(tally_probe_events__del(k.tracefs, false, "probe", "do_sys_openat2"), 0);
	{
		char path[256], text[256] = "";
		FILE *in;

		snprintf(path, sizeof(path), "%s/kprobe_events", k.tracefs);
		in = fopen(path, "r");
		assert_non_null(in);
		assert_true(fread(text, 1, sizeof(text) - 1, in) > 0);
		fclose(in);
		assert_string_equal(text, "p:probe/do_sys_openat2 _text+7031536\n"
				    "-:probe/do_sys_openat2\n");
	}
	simk_teardown(&k);

	/* a kernel without kprobe_events */
	simk_setup(&k, false);
	assert_int_equal(tally_probe_events__supported(k.tracefs, false), -ENOENT);
	assert_int_equal(tally_probe_events__read(k.tracefs, false, &ev, &nr), 0);
	assert_int_equal(nr, 0);
	simk_teardown(&k);
}

static int collect(void *arg, const char *name)
{
	char *out = arg;

	strcat(out, name);
	strcat(out, " ");
	return 0;
}

static void test_funcs_filter(void **state)
{
	struct simk k;
	struct tally_probe_finder *f = NULL;
	char out[512];

	(void)state;
	simk_setup(&k, true);
	assert_int_equal(tally_probe_finder__new_kernel(&f, k.kallsyms, NULL), 0);
	out[0] = 0;
	assert_int_equal(tally_probe_finder__funcs(f, "vfs_*", collect, out), 0);
	assert_string_equal(out, "vfs_read vfs_readv ");
	out[0] = 0;
	assert_int_equal(tally_probe_finder__funcs(f, "vfs_* & !*v", collect, out), 0);
	assert_string_equal(out, "vfs_read ");
	out[0] = 0;
	assert_int_equal(tally_probe_finder__funcs(f, "(do_* | startup*) & !x", collect, out), 0);
	assert_string_equal(out, "do_sys_openat2 startup_64 ");
	out[0] = 0;
	assert_int_equal(tally_probe_finder__funcs(f, NULL, collect, out), 0);
	assert_string_equal(out, "do_sys_openat2 startup_64 vfs_read vfs_readv ");
	assert_int_equal(tally_probe_finder__funcs(f, "(a | b", collect, out), -EINVAL);
	assert_int_equal(tally_probe_finder__funcs(f, "a &", collect, out), -EINVAL);
	tally_probe_finder__delete(f);
	simk_teardown(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_points),
		cmocka_unit_test(test_parse_args),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_event_lines),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_kprobes),
		cmocka_unit_test(test_funcs_filter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
