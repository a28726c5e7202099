/*
 * tally probe: dynamic tracepoints, as perf probe makes them. A definition
 * ("-x ./prog -a 'func:3 x p->next->y'") becomes uprobe (or kprobe) events in tracefs
 * that record, script and list then use like any tracepoint.
 *
 * Every definition of one invocation is resolved before anything is written, and a
 * write the kernel refuses removes what this invocation added before it: a failed
 * `tally probe` leaves no half-registered probes. Messages and listings follow perf
 * 6.1 (stderr for "Added new event", stdout for -l, -D, -V, -L and -F).
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/probe.h>
#include <tally/tracefs.h>

#include "cmd.h"
#include "options.h"

enum probe_action { A_NONE, A_ADD, A_DEL, A_LIST, A_LINE, A_VARS, A_FUNCS, A_DEF };

struct probe_opts {
	enum probe_action action;
	char **defs;		/* -a / -D / positional definitions, -d and -l patterns */
	size_t nr_defs;
	const char *target;	/* -x */
	const char *module;	/* -m */
	const char *line;	/* -L */
	const char *vars;	/* -V */
	const char *filter;	/* -F's or --filter's */
	const char *target_ns;	/* --target-ns PID */
	unsigned max_probes;
	bool force, dry_run, quiet, range, externs, no_inlines;
	bool demangle;		/* accepted: names are matched as the tables spell them */
};

static int set_action(struct probe_opts *o, enum probe_action a, const char *opt)
{
	if (o->action != A_NONE && o->action != a) {
		cli_usage_error(&cmd_probe, "%s cannot be combined with another action (-a, -d, -l, "
				"-L, -V, -F, -D)", opt);
		return -1;
	}
	o->action = a;
	return 0;
}

static int push_def(struct probe_opts *o, const char *d)
{
	char **v = realloc(o->defs, (o->nr_defs + 1) * sizeof(*v));

	if (!v) {
		cli_error("out of memory");
		return -1;
	}
	o->defs = v;
	v[o->nr_defs++] = (char *)d;
	return 0;
}

/* -a -D -d -l -F -L -V: what to do (one kind of action per invocation). */
static int opt_action(void *opts, const struct cli_opt *opt, const char *arg, bool unset)
{
	static const struct { char c; enum probe_action a; } acts[] = {
		{ 'a', A_ADD }, { 'D', A_DEF }, { 'd', A_DEL }, { 'l', A_LIST }, { 'F', A_FUNCS },
		{ 'L', A_LINE }, { 'V', A_VARS },
	};
	struct probe_opts *o = opts;
	char name[3] = { '-', (char)opt->short_name, 0 };

	(void)unset;
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		if (acts[i].c != opt->short_name)
			continue;
		if (set_action(o, acts[i].a, name))
			return -1;
		if (acts[i].a == A_LINE)
			o->line = arg;
		else if (acts[i].a == A_VARS)
			o->vars = arg;
		else if (acts[i].a == A_FUNCS)
			o->filter = arg ? arg : o->filter;
		else if (arg && push_def(o, arg))
			return -1;
	}
	return 0;
}

#define PROBEDEF "[EVENT=]FUNC[@SRC][+OFF|%return|:RL|;PT]|SRC:AL|SRC;PT [[NAME=]ARG ...]"

#define CLI_OPTS struct probe_opts
static const struct cli_opt probe_options[] = {
	OPT_VERBOSE("be more verbose (show parsed arguments, etc)"),
	OPT_BOOL('q', "quiet", quiet, "be quiet (do not show any warnings or messages)"),
	OPT_CALLBACK_ARG('l', "list", "[GROUP:]EVENT", "list up probe events", opt_action,
			 CLI_ARG_LASTARG_DEFAULT, NULL),
	OPT_CALLBACK('d', "del", "[GROUP:]EVENT", "delete a probe event.", opt_action),
	OPT_CALLBACK('a', "add", PROBEDEF, "probe point definition, where\n"
		     "\t\tGROUP:\tGroup name (optional)\n"
		     "\t\tEVENT:\tEvent name\n"
		     "\t\tFUNC:\tFunction name\n"
		     "\t\tOFF:\tOffset from function entry (in byte)\n"
		     "\t\t%return:\tPut the probe at function return\n"
		     "\t\tSRC:\tSource code path\n"
		     "\t\tRL:\tRelative line number from function entry.\n"
		     "\t\tAL:\tAbsolute line number in file.\n"
		     "\t\tPT:\tLazy expression of line code.\n"
		     "\t\tARG:\tProbe argument (local variable name or\n"
		     "\t\t\tkprobe-tracer argument format.)\n", opt_action),
	OPT_CALLBACK('D', "definition", PROBEDEF,
		     "Show trace event definition of given traceevent for k/uprobe_events.",
		     opt_action),
	OPT_BOOL('f', "force", force, "forcibly add events with existing name"),
	OPT_CALLBACK('L', "line", "FUNC[:RLN[+NUM|-RLN2]]|SRC:ALN[+NUM|-ALN2]",
		     "Show source code lines.", opt_action),
	OPT_CALLBACK('V', "vars", "FUNC[@SRC][+OFF|%return|:RL|;PT]|SRC:AL|SRC;PT",
		     "Show accessible variables on PROBEDEF", opt_action),
	OPT_BOOL(0, "externs", externs, "Show external variables too (with --vars only)"),
	OPT_BOOL(0, "range", range, "Show variables location range in scope (with --vars only)"),
	OPT_STRING('m', "module", module, "modname|path", "target module name (for online) or path (for offline)"),
	OPT_CALLBACK_ARG('F', "funcs", "[FILTER]", "Show potential probe-able functions.",
			 opt_action, CLI_ARG_LASTARG_DEFAULT, NULL),
	OPT_STRING(0, "filter", filter, "[!]FILTER", "Set a filter (with --vars/funcs only)\n"
		   "\t\t\t(default: \"!__k???tab_* & !__crc_*\" for --vars,\n"
		   "\t\t\t \"!_* & !*@plt\" for --funcs)"),
	OPT_BOOL('n', "dry-run", dry_run, "dry run"),
	OPT_UINT(0, "max-probes", max_probes, "n", "Set how many probe points can be found for a probe.",
		 CLI_RANGED(1, 1000000)),
	OPT_STRING('x', "exec", target, "executable|path", "target executable name or path"),
	OPT_BOOL(0, "no-inlines", no_inlines, "Don't search inlined functions"),
	OPT_STRING(0, "target-ns", target_ns, "pid", "target pid for namespace contexts"),
	OPT_BOOL(0, "demangle", demangle, "Enable symbol demangling (names are matched as the DWARF "
		 "and symbol tables spell them)"),
	OPT_BOOL(0, "demangle-kernel", demangle, "Enable kernel symbol demangling"),
	OPT_REFUSED('k', "vmlinux", "file", CLI_ARG_REQUIRED, "vmlinux pathname",
		    "-k/--vmlinux: tally finds kernel functions in kallsyms and does not read the "
		    "kernel's DWARF (no source lines or variables of the kernel); see docs/probe.md"),
	OPT_REFUSED('s', "source", "directory", CLI_ARG_REQUIRED, "path to kernel source",
		    "-s/--source: kernel source listings need the kernel's DWARF, which tally does "
		    "not read; see docs/probe.md"),
	OPT_REFUSED(0, "cache", NULL, CLI_ARG_NONE, "Manipulate probe cache",
		    "--cache: tally keeps no probe cache (perf's SDT/probe cache in ~/.debug); add "
		    "probes with -a instead"),
	OPT_REFUSED(0, "bootconfig", NULL, CLI_ARG_NONE,
		    "Output probe definition with bootconfig format",
		    "--bootconfig: writing probes in bootconfig format is not supported; -D prints "
		    "the uprobe/kprobe_events lines"),
	OPT_REFUSED(0, "symfs", "directory", CLI_ARG_REQUIRED,
		    "Look for files with symbols relative to this directory",
		    "--symfs: give the binary's path with -x instead"),
	OPT_END(),
};

static const char *const probe_usage[] = {
	"probe [<options>] 'PROBEDEF' ['PROBEDEF' ...]",
	"probe [<options>] --add 'PROBEDEF' [--add 'PROBEDEF' ...]",
	"probe [<options>] --del '[GROUP:]EVENT' ...",
	"probe --list [GROUP:]EVENT ...",
	"probe [<options>] --line 'LINEDESC'",
	"probe [<options>] --vars 'PROBEPOINT'",
	"probe [<options>] --funcs",
	NULL,
};

/* Definitions (or -d/-l patterns) after the options; what cannot go together. */
static int probe_check(struct probe_opts *o, const struct cli_args *args)
{
	for (int i = 0; i < args->argc; i++) {
		enum probe_action a = o->action == A_NONE ? A_ADD : o->action;

		if (set_action(o, a, args->argv[i]))
			return 129;
		if (push_def(o, args->argv[i]))
			return 1;
	}
	if (o->action == A_NONE)
		return cli_usage_error(&cmd_probe, "no probe definition or action given");
	if (o->target && o->module)
		return cli_usage_error(&cmd_probe, "-x and -m cannot be used together");
	return 0;
}

/* ---- the target binary ---- */

static bool is_file(const char *p)
{
	return access(p, R_OK) == 0;
}

/* A bare name: an executable on $PATH, else a library in the usual directories. */
static int find_binary(const char *name, const char *ns, char *out, size_t len)
{
	static const char *const libdirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
		"/usr/local/lib",
	};
	const char *root = ns ? ns : "";

	if (strchr(name, '/') || !ns) {
		if ((size_t)snprintf(out, len, "%s%s", name[0] == '/' ? root : "", name) < len &&
		    is_file(out))
			return 0;
		if (strchr(name, '/'))
			return -ENOENT;
	}
	{
		const char *path = getenv("PATH");
		char *copy = strdup(path ? path : "/usr/bin:/bin"), *save = NULL, *d;

		for (d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
			if ((size_t)snprintf(out, len, "%s%s/%s", root, d, name) < len &&
			    access(out, X_OK) == 0) {
				free(copy);
				return 0;
			}
		}
		free(copy);
	}
	for (size_t i = 0; i < sizeof(libdirs) / sizeof(libdirs[0]); i++)
		if ((size_t)snprintf(out, len, "%s%s/%s", root, libdirs[i], name) < len &&
		    is_file(out))
			return 0;
	return -ENOENT;
}

static int open_finder(const struct probe_opts *o, struct tally_probe_finder **f)
{
	char path[PATH_MAX], ns[64] = "";
	int ret;

	if (!o->target) {
		ret = tally_probe_finder__new_kernel(f, NULL, o->module);
		if (ret)
			cli_error("cannot read the kernel's symbols (/proc/kallsyms): %s",
				  strerror(-ret));
		return ret;
	}
	if (o->target_ns)
		snprintf(ns, sizeof(ns), "/proc/%s/root", o->target_ns);
	if (find_binary(o->target, o->target_ns ? ns : NULL, path, sizeof(path))) {
		cli_error("cannot find %s%s%s: give its path (-x /path/to/%s)", o->target,
			  o->target_ns ? " in the namespaces of pid " : "",
			  o->target_ns ? o->target_ns : "", o->target);
		return -ENOENT;
	}
	ret = tally_probe_finder__new_binary(f, path);
	if (!ret && o->no_inlines)
		tally_probe_finder__no_inlines(*f);
	if (ret == -ENOEXEC)
		cli_error("%s is not an ELF binary", path);
	else if (ret)
		cli_error("cannot read %s: %s", path, strerror(-ret));
	return ret;
}

static int find_tracefs(char *dir, size_t len)
{
	int ret = tally_tracefs__find(NULL, dir, len);

	if (ret) {
		char why[PATH_MAX + 256];

		cli_error("%s", tally_tracefs__strerror(ret, dir, why, sizeof(why)));
	}
	return ret;
}

static int check_probes_supported(const char *tracefs, bool uprobe)
{
	int ret = tally_probe_events__supported(tracefs, uprobe);

	if (ret == -ENOENT)
		cli_error(uprobe ? "%s/uprobe_events does not exist: this kernel was built "
				   "without CONFIG_UPROBE_EVENTS, so user-space probes cannot be "
				   "added"
				 : "%s/kprobe_events does not exist: this kernel was built without "
				   "CONFIG_KPROBE_EVENTS, so kernel probes cannot be added (probe "
				   "user space with -x BINARY)", tracefs);
	else if (ret == -EACCES)
		cli_error("%s/%s is not writable: adding or removing probes needs root (or "
			  "write access to tracefs)", tracefs, uprobe ? "uprobe_events" :
			  "kprobe_events");
	return ret;
}

/* The existing events of both kinds, for names and listings. */
static int read_existing(const char *tracefs, struct tally_probe_event **ev, size_t *nr)
{
	struct tally_probe_event *k = NULL, *u = NULL, *all;
	size_t nk = 0, nu = 0;
	int ret = tally_probe_events__read(tracefs, false, &k, &nk);

	if (!ret)
		ret = tally_probe_events__read(tracefs, true, &u, &nu);
	if (ret) {
		tally_probe_events__free(k, nk);
		cli_error("cannot read the probe events in %s: %s", tracefs, strerror(-ret));
		return ret;
	}
	all = realloc(k, (nk + nu + 1) * sizeof(*all));
	if (!all) {
		tally_probe_events__free(k, nk);
		tally_probe_events__free(u, nu);
		return -ENOMEM;
	}
	if (nu)
		memcpy(all + nk, u, nu * sizeof(*u));
	free(u);
	*ev = all;
	*nr = nk + nu;
	return 0;
}

/* ---- -a / -D ---- */

struct added {
	struct tally_probe_event *v;
	size_t nr;
};

static int resolve_one(const struct probe_opts *o, struct tally_probe_finder *f,
		       const char *def, const char *target, struct tally_probe_event *existing,
		       size_t nr_existing, struct added *out)
{
	struct tally_probe_spec *spec;
	struct tally_probe_event *evs = NULL, *v;
	size_t nr = 0;
	char err[2048], note[512];
	int ret = tally_probe_spec__parse(def, &spec, err, sizeof(err));

	if (ret) {
		cli_error("bad probe definition '%s': %s", def, ret == -ENOMEM ?
			  "out of memory" : err);
		return ret;
	}
	ret = tally_probe_finder__find(f, spec, &evs, &nr, err, sizeof(err), note, sizeof(note));
	if (!ret && note[0] && !o->quiet)
		fprintf(stderr, "%s\n", note);
	if (!ret && nr > o->max_probes) {
		snprintf(err, sizeof(err), "'%s' has %zu probe points, more than --max-probes "
			 "(%u)", def, nr, o->max_probes);
		ret = -E2BIG;
	}
	if (!ret)
		ret = tally_probe_events__name(evs, nr, spec, target, existing, nr_existing,
					       out->v, out->nr, o->force, err, sizeof(err));
	tally_probe_spec__delete(spec);
	if (ret) {
		tally_probe_events__free(evs, nr);
		if (ret == -ENOMEM)
			cli_error("out of memory");
		else
			fprintf(stderr, "%s\n  Error: Failed to add events.\n", err);
		return ret;
	}
	v = realloc(out->v, (out->nr + nr) * sizeof(*v));
	if (!v) {
		tally_probe_events__free(evs, nr);
		return -ENOMEM;
	}
	memcpy(v + out->nr, evs, nr * sizeof(*evs));
	free(evs);
	out->v = v;
	out->nr += nr;
	return 0;
}

/* The kernel's detail about a refused definition: the last line of tracefs's error_log. */
static void kernel_error_detail(const char *tracefs, char *buf, size_t len)
{
	char path[PATH_MAX], line[1024];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "%s/error_log", tracefs);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "error:"))
			snprintf(buf, len, "%s", line + strspn(line, " "));
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

static int write_events(const char *tracefs, struct added *a)
{
	for (size_t i = 0; i < a->nr; i++) {
		char line[8192], detail[1024];
		int ret = tally_probe_event__format(&a->v[i], line, sizeof(line));

		if (ret >= 0 && (size_t)ret >= sizeof(line))
			ret = -E2BIG;
		if (ret >= 0) {
			if (verbose)
				fprintf(stderr, "Writing event: %s\n", line);
			ret = tally_probe_events__add(tracefs, a->v[i].uprobe, line);
		}
		if (!ret)
			continue;
		kernel_error_detail(tracefs, detail, sizeof(detail));
		cli_error("the kernel refused probe %s:%s (%s)%s%s\n  definition: %s", a->v[i].group,
			  a->v[i].event, strerror(-ret), detail[0] ? "\n  kernel says: " : "",
			  detail, line);
		/* nothing half-registered: remove this invocation's earlier ones */
		for (size_t j = i; j-- > 0;) {
			if (j + 1 < i && !strcmp(a->v[j].group, a->v[j + 1].group) &&
			    !strcmp(a->v[j].event, a->v[j + 1].event))
				continue;
			tally_probe_events__del(tracefs, a->v[j].uprobe, a->v[j].group,
						a->v[j].event);
		}
		return ret;
	}
	return 0;
}

static void print_added(const struct probe_opts *o, const struct added *a)
{
	if (o->quiet || !a->nr)
		return;
	fprintf(stderr, "Added new event%s:\n", a->nr > 1 ? "s" : "");
	for (size_t i = 0; i < a->nr; i++) {
		const struct tally_probe_event *e = &a->v[i];
		char name[2 * TALLY_PROBE_NAME_MAX + 2];

		snprintf(name, sizeof(name), "%s:%s", e->group, e->event);
		fprintf(stderr, "  %-20s (on %s%s%s%s%s)\n", name, e->point ? e->point : "",
			e->uprobe || e->module ? " in " : "",
			e->uprobe ? e->path : e->module ? e->module : "",
			e->arg_desc && e->arg_desc[0] ? " with " : "",
			e->arg_desc ? e->arg_desc : "");
	}
	fprintf(stderr, "\nYou can now use it in all perf tools, such as:\n\n"
		"\ttally record -e %s:%s -aR sleep 1\n\n", a->v[a->nr - 1].group,
		a->v[a->nr - 1].event);
}

static int do_add(const struct probe_opts *o)
{
	struct tally_probe_finder *f = NULL;
	struct tally_probe_event *existing = NULL;
	size_t nr_existing = 0;
	struct added a = { 0 };
	char tracefs[PATH_MAX] = "";
	bool uprobe = o->target != NULL;
	int ret = open_finder(o, &f);

	if (!ret && o->action == A_ADD && !o->dry_run) {
		ret = find_tracefs(tracefs, sizeof(tracefs));
		if (!ret)
			ret = check_probes_supported(tracefs, uprobe);
	} else if (!ret) {
		/* -n and -D still name events as the kernel would: read what is there */
		if (tally_tracefs__find(NULL, tracefs, sizeof(tracefs)))
			tracefs[0] = 0;
		else if (o->action == A_ADD)
			ret = check_probes_supported(tracefs, uprobe) == -ENOENT ? -ENOENT : 0;
	}
	if (!ret && tracefs[0])
		ret = read_existing(tracefs, &existing, &nr_existing);
	for (size_t i = 0; !ret && i < o->nr_defs; i++)
		ret = resolve_one(o, f, o->defs[i], uprobe ? tally_probe_finder__path(f) : NULL,
				  existing, nr_existing, &a);
	if (!ret && o->action == A_DEF) {
		for (size_t i = 0; i < a.nr; i++) {
			char line[8192];

			if (tally_probe_event__format(&a.v[i], line, sizeof(line)) >= 0)
				printf("%s\n", line);
		}
	} else if (!ret) {
		if (!o->dry_run)
			ret = write_events(tracefs, &a);
		else if (verbose)
			for (size_t i = 0; i < a.nr; i++) {
				char line[8192];

				if (tally_probe_event__format(&a.v[i], line, sizeof(line)) >= 0)
					fprintf(stderr, "Writing event: %s\n", line);
			}
		if (!ret)
			print_added(o, &a);
	}
	tally_probe_events__free(a.v, a.nr);
	tally_probe_events__free(existing, nr_existing);
	tally_probe_finder__delete(f);
	return ret ? 1 : 0;
}

/* ---- -d / -l ---- */

/* perf's [GROUP:]EVENT pattern: a glob on "GROUP:EVENT", or on EVENT alone. */
static bool event_matches(const char *pat, const struct tally_probe_event *e)
{
	char full[2 * TALLY_PROBE_NAME_MAX + 2];

	snprintf(full, sizeof(full), "%s:%s", e->group, e->event);
	if (strchr(pat, ':'))
		return !fnmatch(pat, full, 0);
	return !fnmatch(pat, e->event, 0);
}

static int do_del(const struct probe_opts *o)
{
	struct tally_probe_event *ev = NULL;
	size_t nr = 0;
	char tracefs[PATH_MAX];
	int ret = find_tracefs(tracefs, sizeof(tracefs)), failed = 0;

	if (!ret)
		ret = read_existing(tracefs, &ev, &nr);
	for (size_t d = 0; !ret && d < o->nr_defs; d++) {
		bool hit = false;

		for (size_t i = 0; i < nr; i++) {
			if (!event_matches(o->defs[d], &ev[i]) || !ev[i].group[0])
				continue;
			hit = true;
			/* several addresses of one event are one line each: removed once */
			if (i && !strcmp(ev[i].group, ev[i - 1].group) &&
			    !strcmp(ev[i].event, ev[i - 1].event))
				continue;
			if (check_probes_supported(tracefs, ev[i].uprobe)) {
				failed = 1;
				continue;
			}
			ret = tally_probe_events__del(tracefs, ev[i].uprobe, ev[i].group,
						      ev[i].event);
			if (ret == -EBUSY) {
				cli_error("probe %s:%s is in use (perf or tally is recording it): "
					  "stop that first", ev[i].group, ev[i].event);
				failed = 1;
				ret = 0;
				continue;
			}
			if (ret) {
				cli_error("cannot remove %s:%s: %s", ev[i].group, ev[i].event,
					  strerror(-ret));
				break;
			}
			if (!o->quiet)
				fprintf(stderr, "Removed event: %s:%s\n", ev[i].group, ev[i].event);
		}
		if (!hit) {
			fprintf(stderr, "\"%s\" does not hit any event.\n  Error: Failed to delete "
				"events.\n", o->defs[d]);
			failed = 1;
		}
	}
	tally_probe_events__free(ev, nr);
	return ret || failed ? 1 : 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One "-l" line: "  GROUP:EVENT (on WHERE[ in BINARY][ with ARGS])". */
static int list_line(const struct tally_probe_event *e, char *buf, size_t len)
{
	struct tally_probe_finder *f = NULL;
	char where[PATH_MAX + 256], name[2 * TALLY_PROBE_NAME_MAX + 2], args[4096] = "";
	size_t n = 0;

	if (e->uprobe ? tally_probe_finder__new_binary(&f, e->path) == 0
		      : tally_probe_finder__new_kernel(&f, NULL, e->module) == 0) {
		if (e->uprobe || !strcmp(e->symbol, "_text"))
			tally_probe_finder__describe(f, e->offset, e->retprobe, where,
						     sizeof(where));
		else
			snprintf(where, sizeof(where), "%s%s%s", e->symbol, e->retprobe ?
				 "%return" : "", "");
	} else if (e->uprobe) {
		snprintf(where, sizeof(where), "0x%llx", (unsigned long long)e->offset);
	} else {
		snprintf(where, sizeof(where), "%s+%llu", e->symbol, (unsigned long long)e->offset);
	}
	tally_probe_finder__delete(f);
	for (size_t i = 0; i < e->nr_args; i++)
		n += (size_t)snprintf(args + n, n < sizeof(args) ? sizeof(args) - n : 0, "%s%.*s",
				      i ? " " : "", (int)strcspn(e->args[i], "="), e->args[i]);
	snprintf(name, sizeof(name), "%s:%s", e->group, e->event);
	return snprintf(buf, len, "  %-20s (on %s%s%s%s%s)", name, where,
			e->uprobe || e->module ? " in " : "", e->uprobe ? e->path :
			e->module ? e->module : "", e->nr_args ? " with " : "", args);
}

static int do_list(const struct probe_opts *o)
{
	char tracefs[PATH_MAX];
	int ret = find_tracefs(tracefs, sizeof(tracefs));

	for (int k = 0; !ret && k < 2; k++) {	/* kprobes, then uprobes, as perf */
		struct tally_probe_event *ev = NULL;
		size_t nr = 0;
		char **lines;
		size_t nl = 0;

		ret = tally_probe_events__read(tracefs, k == 1, &ev, &nr);
		if (ret) {
			cli_error("cannot read the probe events in %s: %s", tracefs, strerror(-ret));
			break;
		}
		lines = calloc(nr ? nr : 1, sizeof(*lines));
		for (size_t i = 0; lines && i < nr; i++) {
			char raw[8192];
			bool hit = !o->nr_defs;

			for (size_t d = 0; d < o->nr_defs && !hit; d++)
				hit = event_matches(o->defs[d], &ev[i]);
			if (!hit || tally_probe_event__format(&ev[i], raw, sizeof(raw)) < 0)
				continue;
			/* sorted as perf sorts them: by the kernel's definition line */
			lines[nl] = malloc(strlen(raw) + 1 + 2 * PATH_MAX + 8192);
			if (!lines[nl])
				break;
			strcpy(lines[nl], raw);
			lines[nl][strlen(raw)] = '\t';
			list_line(&ev[i], lines[nl] + strlen(raw) + 1, 2 * PATH_MAX + 8192);
			nl++;
		}
		if (lines)
			qsort(lines, nl, sizeof(*lines), line_cmp);
		for (size_t i = 0; lines && i < nl; i++) {
			puts(strchr(lines[i], '\t') + 1);
			free(lines[i]);
		}
		free(lines);
		tally_probe_events__free(ev, nr);
	}
	return ret ? 1 : 0;
}

/* ---- -V / -L / -F ---- */

static int print_var(void *arg, const char *where, const char *var)
{
	const char **header = arg;

	if (*header) {	/* once something is found: nothing on stdout for a failure */
		printf("Available variables at %s\n", *header);
		*header = NULL;
	}
	if (!var)
		printf("\t%s\n", where);
	else
		printf("\t\t%s\n", var);
	return 0;
}

static int do_vars(const struct probe_opts *o)
{
	struct tally_probe_finder *f = NULL;
	struct tally_probe_spec *spec = NULL;
	char err[2048];
	int ret = tally_probe_spec__parse(o->vars, &spec, err, sizeof(err));

	if (ret) {
		cli_error("bad probe point '%s': %s", o->vars, err);
		return 1;
	}
	ret = open_finder(o, &f);
	if (!ret) {
		const char *header = o->vars;

		ret = tally_probe_finder__vars(f, spec, o->range, o->externs, print_var, &header,
					       err, sizeof(err));
		if (ret)
			fprintf(stderr, "%s\n  Error: Failed to show vars.\n", err);
	}
	tally_probe_spec__delete(spec);
	tally_probe_finder__delete(f);
	return ret ? 1 : 0;
}

static int print_line(void *arg, const char *header, long lineno, bool probeable,
		      const char *text, size_t len)
{
	(void)arg;
	if (lineno == -1 && !text) {
		printf("%s\n", header);
		return 0;
	}
	if (probeable)
		printf("%7ld  %.*s\n", lineno, (int)len, text);
	else
		printf("         %.*s\n", (int)len, text);
	return 0;
}

static int do_lines(const struct probe_opts *o)
{
	struct tally_probe_finder *f = NULL;
	char err[2048];
	int ret = open_finder(o, &f);

	if (!ret) {
		ret = tally_probe_finder__lines(f, o->line, print_line, NULL, err, sizeof(err));
		if (ret)
			fprintf(stderr, "%s\n  Error: Failed to show lines.\n", err);
	}
	tally_probe_finder__delete(f);
	return ret ? 1 : 0;
}

static int print_func(void *arg, const char *name)
{
	(void)arg;
	puts(name);
	return 0;
}

static int do_funcs(const struct probe_opts *o)
{
	struct tally_probe_finder *f = NULL;
	int ret = open_finder(o, &f);

	if (!ret) {
		ret = tally_probe_finder__funcs(f, o->filter, print_func, NULL);
		if (ret == -EINVAL)
			cli_error("bad filter '%s': globs joined by '&' and '|', '!' negates, "
				  "parentheses group", o->filter);
	}
	tally_probe_finder__delete(f);
	return ret ? 1 : 0;
}

static int probe_init(void *opts)
{
	((struct probe_opts *)opts)->max_probes = 128;
	return 0;
}

static void probe_exit(void *opts)
{
	free(((struct probe_opts *)opts)->defs);
}

static int probe_exec(void *opts, const struct cli_args *args)
{
	struct probe_opts *o = opts;
	int ret = probe_check(o, args);

	if (ret)
		return ret;
	switch (o->action) {
	case A_ADD:
	case A_DEF:
		return do_add(o);
	case A_DEL:
		return do_del(o);
	case A_LIST:
		return do_list(o);
	case A_VARS:
		return do_vars(o);
	case A_LINE:
		return do_lines(o);
	case A_FUNCS:
		return do_funcs(o);
	case A_NONE:
		break;
	}
	return 0;
}

const struct cli_command cmd_probe = {
	.name = "probe",
	.summary = "Define new dynamic tracepoints",
	.usage = probe_usage,
	.opts = probe_options,
	.max_args = CLI_ANY_ARGS,
	.size = sizeof(struct probe_opts),
	.init = probe_init,
	.exec = probe_exec,
	.exit = probe_exit,
};
