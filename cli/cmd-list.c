/*
 * tally list: the events this machine can count, in perf 6.1's `perf list` layout.
 *
 * Sections in perf's order: hardware events (only those that really open here, probed
 * with a user-only counter on this thread), software events, tool events, hardware
 * cache events (probed too), kernel PMU events (sysfs aliases), the raw and breakpoint
 * descriptors, tracepoints. Each line is "  %-50s [Kind]". Arguments filter by
 * category (hw, sw, cache, tracepoint, pmu) or by glob. `--raw-dump [category]` prints
 * the names on one line for shell completion; `--pmu` describes the PMUs: sysfs
 * (type, formats, events, caps, cpumask) and what the CPU itself reports (CPUID leaf
 * 0xA), saying plainly when the two disagree.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/pmu.h>

#include "cmd.h"
#include "options.h"

enum kind { K_HW, K_SW, K_TOOL, K_CACHE, K_PMU, K_RAW, K_BP, K_TP, K_MAX };

static const char *const kind_names[K_MAX] = {
	[K_HW] = "Hardware event", [K_SW] = "Software event", [K_TOOL] = "Tool event",
	[K_CACHE] = "Hardware cache event", [K_PMU] = "Kernel PMU event",
	[K_RAW] = "Raw hardware event descriptor", [K_BP] = "Hardware breakpoint",
	[K_TP] = "Tracepoint event",
};

struct entry {
	char *name;	/* "cpu-cycles", "sched:sched_switch" */
	char *alias;	/* "cycles" or NULL */
	enum kind kind;
};

struct entries {
	struct entry *e;
	size_t nr, cap;
};

struct list_opts {
	const char *sysfs;
	bool raw_dump, pmu_info;
	/* -d (perf's default), -v, --details, --deprecated: perf's JSON events and metrics
	 * are where these show; tally's sections (hw, sw, cache, sysfs PMU events,
	 * tracepoints) print the same with or without them, as perf's do */
	bool desc, long_desc, details, deprecated;
	const char *cputype;	/* hybrid machines only: elsewhere perf's warning */
	const char *raw_cat;
	char **filters;
	int nr_filters;
	const char *tp_glob;	/* the only filter, a "sys:event" glob: tracepoints only */
};

static int add(struct entries *es, enum kind kind, const char *name, const char *alias)
{
	if (es->nr == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 256;
		struct entry *n = realloc(es->e, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		es->e = n;
		es->cap = cap;
	}
	es->e[es->nr].name = strdup(name);
	es->e[es->nr].alias = alias ? strdup(alias) : NULL;
	es->e[es->nr].kind = kind;
	if (!es->e[es->nr].name || (alias && !es->e[es->nr].alias))
		return -ENOMEM;
	es->nr++;
	return 0;
}

static void entries_exit(struct entries *es)
{
	for (size_t i = 0; i < es->nr; i++) {
		free(es->e[i].name);
		free(es->e[i].alias);
	}
	free(es->e);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	if (x->kind == K_TOOL || x->kind == K_RAW)
		return 0;	/* kept in perf's fixed order (qsort is not stable: see below) */
	return strcmp(x->name, y->name);
}

/* Does the event open here? Parsing never opens; this does, once. */
static bool opens(const char *name, const char *sysfs)
{
	struct tally_evlist *l;
	bool ok = false;

	if (tally_evlist__new(&l))
		return false;
	if (sysfs)
		tally_evlist__set_sysfs_root(l, sysfs);
	tally_evlist__set_flags(l, TALLY_EVLIST_NO_PFM);
	if (!tally_evlist__add(l, name, NULL) && tally_evlist__nr(l) == 1)
		ok = tally_event__probe(tally_evlist__event(l, 0)) == 0;
	tally_evlist__delete(l);
	return ok;
}

static int tp_cb(const char *sys, const char *name, uint64_t id, void *arg)
{
	char buf[512];

	(void)id;
	snprintf(buf, sizeof(buf), "%s:%s", sys, name);
	return add(arg, K_TP, buf, NULL);
}

static int collect(struct entries *es, const struct list_opts *o, const bool want[K_MAX])
{
	struct tally_pmus *pmus = NULL;
	char buf[512];
	int err = 0;

	if (want[K_HW]) {
		const char *name, *alias;

		for (size_t i = 0; !err && (name = tally_event__symbol(PERF_TYPE_HARDWARE, i, &alias));
		     i++)
			if (opens(name, o->sysfs))
				err = add(es, K_HW, name, alias);
	}
	if (want[K_SW]) {
		const char *name, *alias;

		for (size_t i = 0; !err && (name = tally_event__symbol(PERF_TYPE_SOFTWARE, i, &alias));
		     i++)
			err = add(es, K_SW, name, alias);
	}
	if (want[K_TOOL])
		for (int t = TALLY_TOOL_DURATION_TIME; t <= TALLY_TOOL_SYSTEM_TIME && !err; t++)
			err = add(es, K_TOOL, tally_event__tool_name((enum tally_tool_event)t), NULL);
	if (want[K_CACHE] && !err) {
		/* probe one cache event first: with no PMU none of them opens */
		bool any = opens("L1-dcache-loads", o->sysfs) || opens("LLC-loads", o->sysfs) ||
			   opens("branch-loads", o->sysfs);

		for (uint64_t t = 0; any && t < PERF_COUNT_HW_CACHE_MAX && !err; t++)
			for (uint64_t op = 0; op < PERF_COUNT_HW_CACHE_OP_MAX && !err; op++)
				for (uint64_t r = 0; r < PERF_COUNT_HW_CACHE_RESULT_MAX && !err; r++) {
					if (tally_event__hw_cache_name(t | op << 8 | r << 16, buf,
								       sizeof(buf)))
						continue;
					if (opens(buf, o->sysfs))
						err = add(es, K_CACHE, buf, NULL);
				}
	}
	if (want[K_PMU] && !err && !tally_pmus__new(o->sysfs, &pmus)) {
		for (size_t i = 0; i < tally_pmus__nr(pmus) && !err; i++) {
			const struct tally_pmu *p = tally_pmus__get(pmus, i);

			/* the core PMU's aliases are usable bare: perf lists them as
			 * "cpu-cycles OR cpu/cpu-cycles/" */
			bool core = !strcmp(p->name, "cpu");

			for (size_t j = 0; j < p->nr_events && !err; j++) {
				snprintf(buf, sizeof(buf), "%s/%s/", p->name, p->events[j].name);
				err = core ? add(es, K_PMU, p->events[j].name, buf) :
					     add(es, K_PMU, buf, NULL);
			}
		}
		tally_pmus__delete(pmus);
	}
	if (want[K_RAW] && !err) {
		err = add(es, K_RAW, "rNNN", NULL);
		if (!err)
			err = add(es, K_RAW, "cpu/t1=v1[,t2=v2,t3 ...]/modifier", NULL);
	}
	if (want[K_BP] && !err)
		err = add(es, K_BP, "mem:<addr>[/len][:access]", NULL);
	if (want[K_TP] && !err) {
		char sys_glob[256] = "*", *ev_glob = NULL;
		int e;

		/* one "sys:event" glob: walk only the matching directories */
		if (o->tp_glob && strlen(o->tp_glob) < sizeof(sys_glob)) {
			snprintf(sys_glob, sizeof(sys_glob), "%s", o->tp_glob);
			ev_glob = strchr(sys_glob, ':');
			*ev_glob++ = 0;
		}
		e = tally_tracepoint__for_each(o->sysfs, sys_glob, ev_glob, tp_cb, es);

		if (e == -ENOMEM) {
			err = e;
		} else if (e < 0 && !o->raw_dump) {
			char dir[PATH_MAX], why[512];

			/* a test's sysfs copy without tracefs is not worth a warning */
			e = tally_tracefs__find(o->sysfs, dir, sizeof(dir));
			if (e && (e != -ENOENT || !o->sysfs))
				cli_warn("tracepoints not listed: %s",
					 tally_tracefs__strerror(e, dir, why, sizeof(why)));
		}
	}
	return err;
}

/*
 * perf 6.1's `list WORD`: the glob "*WORD*" against the names (and aliases) of the
 * symbolic, tool and cache events, of the PMU events (case ignored, "pmu/event/"), and
 * of the tracepoints' events (not their subsystems); a "SYS:EVENT" word is a glob pair
 * for tracepoints only. `list sched` finds sched:sched_switch and btrfs:btrfs_work_sched.
 */
static bool word_match(const struct entry *e, const char *word)
{
	const char *colon = strchr(word, ':'), *ecolon;
	char glob[512], sys[256];

	if (e->kind == K_RAW || e->kind == K_BP)
		return false;	/* descriptors, not events: only in the full list */
	ecolon = e->kind == K_TP ? strchr(e->name, ':') : NULL;
	if (colon) {
		size_t n = (size_t)(colon - word), m;

		if (!ecolon || n >= sizeof(glob) || (m = (size_t)(ecolon - e->name)) >= sizeof(sys))
			return false;
		memcpy(glob, word, n);
		glob[n] = 0;
		memcpy(sys, e->name, m);
		sys[m] = 0;
		return !fnmatch(glob, sys, 0) && !fnmatch(colon + 1, ecolon + 1, 0);
	}
	if ((size_t)snprintf(glob, sizeof(glob), "*%s*", word) >= sizeof(glob))
		return false;
	if (ecolon)
		return !fnmatch(glob, ecolon + 1, 0);
	if (e->kind == K_PMU)
		return !fnmatch(glob, e->name, FNM_CASEFOLD);
	return !fnmatch(glob, e->name, 0) || (e->alias && !fnmatch(glob, e->alias, 0));
}

static int category(const char *arg, bool want[K_MAX])
{
	if (!strcmp(arg, "hw") || !strcmp(arg, "hardware"))
		want[K_HW] = true;
	else if (!strcmp(arg, "sw") || !strcmp(arg, "software"))
		want[K_SW] = want[K_TOOL] = true;
	else if (!strcmp(arg, "cache") || !strcmp(arg, "hwcache"))
		want[K_CACHE] = true;
	else if (!strcmp(arg, "tracepoint"))
		want[K_TP] = true;
	else if (!strcmp(arg, "pmu"))
		want[K_PMU] = true;
	else if (!strcmp(arg, "sdt") || !strcmp(arg, "metric") || !strcmp(arg, "metricgroup"))
		return 1;	/* tally has none of these: an empty list */
	else
		return -1;
	return 0;
}

static void print_line(const struct entry *e)
{
	char buf[600];

	if (e->alias)
		snprintf(buf, sizeof(buf), "%s OR %s", e->name, e->alias);
	else
		snprintf(buf, sizeof(buf), "%s", e->name);
	printf("  %-50s [%s]\n", buf, kind_names[e->kind]);
}

static void print_pmu_info(const char *sysfs)
{
	struct tally_pmus *pmus = NULL;
	struct tally_cpuid_pmu c;
	bool kernel_cpu_pmu = false;
	int err = tally_pmus__new(sysfs, &pmus);

	if (err) {
		printf("No PMUs: cannot read %s/bus/event_source/devices (%s)\n",
		       sysfs ? sysfs : "/sys", strerror(-err));
	} else {
		printf("Kernel PMUs (%s/bus/event_source/devices):\n", sysfs ? sysfs : "/sys");
		printf("  %-20s %5s  %-8s %-7s %s\n", "name", "type", "cpumask", "events", "formats");
		for (size_t i = 0; i < tally_pmus__nr(pmus); i++) {
			const struct tally_pmu *p = tally_pmus__get(pmus, i);
			char cpus[64] = "-";
			size_t n = 0;
			char fm[512] = "";

			if (p->cpus)
				tally_cpumap__format(p->cpus, cpus, sizeof(cpus));
			for (size_t j = 0; j < p->nr_formats && n < sizeof(fm); j++) {
				const struct tally_pmu_format *f = &p->formats[j];
				int lo = __builtin_ctzll(f->mask), hi = 63 - __builtin_clzll(f->mask);
				bool contiguous = __builtin_popcountll(f->mask) == hi - lo + 1;

				n += (size_t)snprintf(fm + n, sizeof(fm) - n, "%s%s=config%s:%d%s",
						      j ? " " : "", f->name,
						      f->field ? (f->field == 1 ? "1" : f->field == 2 ?
								  "2" : "3") : "", lo,
						      contiguous ? "" : "…");
				if (contiguous && hi != lo && n < sizeof(fm))
					n += (size_t)snprintf(fm + n, sizeof(fm) - n, "-%d", hi);
			}
			printf("  %-20s %5u  %-8s %-7zu %s\n", p->name, p->type, cpus, p->nr_events, fm);
			for (size_t j = 0; j < p->nr_events; j++) {
				const struct tally_pmu_alias *a = &p->events[j];

				printf("      %s/%s/ = %s", p->name, a->name, a->terms);
				if (a->unit || a->scale != 1.0)
					printf("  (unit %s, scale %g)", a->unit ? a->unit : "-", a->scale);
				putchar('\n');
			}
			for (size_t j = 0; j < p->nr_caps; j++)
				printf("      caps/%s = %s\n", p->caps[j].name, p->caps[j].value);
			if (!strcmp(p->name, "cpu") || !strncmp(p->name, "cpu_", 4) ||
			    !strncmp(p->name, "armv8_", 6) || !strcmp(p->name, "cpum_cf"))
				kernel_cpu_pmu = true;
		}
	}
	tally_pmus__delete(pmus);

	putchar('\n');
	err = tally_cpuid_pmu(&c);
	if (err && !c.vendor[0]) {
		printf("CPU PMU (CPUID): not an x86 CPU, nothing to read.\n");
	} else {
		printf("CPU (CPUID): %s family %u model %#x stepping %u%s\n", c.vendor, c.family,
		       c.model, c.stepping, c.hypervisor ? ", running under a hypervisor" : "");
		if (err || c.version == 0) {
			printf("  CPUID leaf 0xA: no architectural PMU (version 0)%s.\n",
			       c.hypervisor ? ": the hypervisor does not give this VM a virtual PMU" : "");
		} else {
			bool amd = !strcmp(c.vendor, "AuthenticAMD") || !strcmp(c.vendor, "HygonGenuine");

			if (amd)
				printf("  CPUID 0x80000001/0x80000022: core PMU%s\n",
				       c.version > 1 ? " (PerfMonV2)" : "");
			else
				printf("  CPUID leaf 0xA: architectural PMU version %u\n", c.version);
			printf("    general-purpose counters: %u x %u bits\n", c.nr_gp, c.gp_width);
			printf("    fixed counters:           %u x %u bits\n", c.nr_fixed, c.fixed_width);
			for (unsigned b = 0; b < c.nr_arch_events && b < 8; b++)
				printf("    %-28s %s\n", tally_cpuid_pmu__event_name(b),
				       c.events_unavailable & (1u << b) ? "not available" : "available");
		}
		if (c.version && !kernel_cpu_pmu)
			printf("\nThe CPU reports a PMU but the kernel exposes none (no \"cpu\" PMU in "
			       "sysfs): hardware events cannot be counted; check dmesg for "
			       "\"Performance Events\" (no PMU driver for this CPU model?).\n");
		else if (!c.version && !kernel_cpu_pmu)
			printf("\nNeither the CPU nor the kernel offers a hardware PMU here: only software "
			       "events, tracepoints, breakpoints, probes and the listed kernel PMUs work.\n");
		else if (!c.version && kernel_cpu_pmu)
			printf("\nThe kernel exposes a CPU PMU although CPUID leaf 0xA reports none.\n");
	}
	printf("libpfm4: %d PMU model(s) detected from the CPU id%s\n", tally_event__pfm_nr_pmus(),
	       tally_event__pfm_nr_pmus() && !kernel_cpu_pmu ?
	       " (its event names encode, but the kernel cannot open them)" : "");
}

static void print_entry(const struct entry *e, bool raw_dump)
{
	if (raw_dump)
		printf("%s ", e->name);
	else
		print_line(e);
}

static bool has_words(const struct list_opts *o)
{
	for (int i = 0; i < o->nr_filters; i++)
		if (o->filters[i])
			return true;
	return false;
}

/* Which sections the arguments ask for: categories select sections, other words filter
 * (o->filters keeps the words, the categories become NULL there). */
static void select_sections(struct list_opts *o, bool want[K_MAX])
{
	bool any_cat = false, globs = false;

	for (int i = 0; i < o->nr_filters; i++) {
		if (category(o->filters[i], want) >= 0) {
			any_cat = true;
			o->filters[i] = NULL;
		}
	}
	for (int i = 0; i < o->nr_filters; i++)
		globs |= o->filters[i] != NULL;
	if (!any_cat || globs)
		for (int k = 0; k < K_MAX; k++)
			want[k] = true;
	if (!any_cat && o->nr_filters == 1 && strchr(o->filters[0], ':') &&
	    !strchr(strchr(o->filters[0], ':') + 1, ':')) {
		/* only tracepoints have a ':' in their name */
		for (int k = 0; k < K_MAX; k++)
			want[k] = k == K_TP;
		o->tp_glob = o->filters[0];
	}
	if (globs || (o->raw_dump && !any_cat)) {
		/* descriptors are not events: perf shows them only in the full list */
		want[K_RAW] = want[K_BP] = !globs && !o->raw_dump;
	}
}

/* stable order within tool/raw: sort only the sortable kinds, each run of one kind */
static void sort_entries(struct entries *es)
{
	for (size_t a = 0; a < es->nr;) {
		size_t b = a;

		while (b < es->nr && es->e[b].kind == es->e[a].kind)
			b++;
		if (es->e[a].kind != K_TOOL && es->e[a].kind != K_RAW)
			qsort(es->e + a, b - a, sizeof(*es->e), cmp_entry);
		a = b;
	}
}

static void print_entries(const struct entries *es, const struct list_opts *o, char **args)
{
	if (!o->nr_filters || !has_words(o)) {
		for (size_t i = 0; i < es->nr; i++)
			print_entry(&es->e[i], o->raw_dump);
		return;
	}
	/* like perf, each argument in turn: a category's events, or a word's matches */
	for (int f = 0; f < o->nr_filters; f++) {
		bool cat[K_MAX] = { false };

		if (!o->filters[f])
			category(args[f], cat);
		for (size_t i = 0; i < es->nr; i++)
			if (o->filters[f] ? word_match(&es->e[i], o->filters[f]) : cat[es->e[i].kind])
				print_entry(&es->e[i], o->raw_dump);
	}
}

/* --cputype: perf warns on a machine without hybrid PMUs and lists everything. */
static int cputype_check(const struct list_opts *o)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/bus/event_source/devices/cpu_core",
		 o->sysfs ? o->sysfs : "/sys");
	if (access(path, F_OK)) {
		fflush(stdout);
		fprintf(stderr, "WARNING: hybrid cputype is not supported!\n");
		return 0;
	}
	cli_error("list: --cputype on a hybrid machine: tally lists the events of every PMU "
		  "(cpu_core and cpu_atom); give the PMU as a glob instead, e.g. 'cpu_atom/*'");
	return 1;
}

static int list_exec(void *opts, const struct cli_args *a)
{
	struct list_opts *o = opts;
	struct entries es = { 0 };
	bool want[K_MAX] = { false };
	char **args;
	int err;

	if (o->pmu_info) {
		print_pmu_info(o->sysfs);
		return 0;
	}
	if (o->cputype && cputype_check(o))
		return 1;
	o->filters = a->argv;
	o->nr_filters = a->argc;
	if (o->raw_dump && o->nr_filters > 1)
		return cli_usage_error(&cmd_list, "--raw-dump takes at most one category");
	/* the argument list keeps the words select_sections() forgets */
	args = malloc(((size_t)o->nr_filters + 1) * sizeof(*args));
	if (!args) {
		cli_error("out of memory");
		return 1;
	}
	memcpy(args, o->filters, (size_t)o->nr_filters * sizeof(*args));
	select_sections(o, want);
	err = collect(&es, o, want);
	if (err) {
		free(args);
		entries_exit(&es);
		cli_error("list: %s", strerror(-err));
		return 1;
	}
	sort_entries(&es);
	print_entries(&es, o, args);
	free(args);
	entries_exit(&es);
	return 0;
}

#define CLI_OPTS struct list_opts
static const struct cli_opt list_options[] = {
	OPT_BOOL('d', "desc", desc, "Print extra event descriptions. --no-desc to not print."),
	OPT_BOOL('v', "long-desc", long_desc, "Print longer event descriptions."),
	OPT_BOOL(0, "details", details,
		 "Print information on the perf event names and expressions used internally by events."),
	OPT_BOOL(0, "deprecated", deprecated, "Print deprecated events."),
	OPT_STRING(0, "cputype", cputype, "hybrid cpu type",
		   "Print events applying cpu with this type for hybrid platform (e.g. core or atom)"),
	OPT_VERBOSE_AS(0, "debug", "Enable debugging output"),
	OPT_BOOL(0, "raw-dump", raw_dump, "Dump raw events (the names on one line, for completion)"),
	OPT_BOOL(0, "pmu", pmu_info, "describe the PMUs: sysfs and what the CPU reports (CPUID)"),
	OPT_STRING(0, "sysfs", sysfs, "dir", "read PMUs and tracepoints under <dir> instead of /sys"),
	OPT_END(),
};

static const char *const list_usage[] = {
	"list [<options>] [hw|sw|cache|tracepoint|pmu|event_glob]", NULL
};

const struct cli_command cmd_list = {
	.name = "list",
	.summary = "List all symbolic event types",
	.usage = list_usage,
	.opts = list_options,
	.size = sizeof(struct list_opts),
	.exec = list_exec,
	.max_args = CLI_ANY_ARGS,
};
