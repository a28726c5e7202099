/*
 * Dynamic probes: perf probe's definitions turned into the kernel's uprobe and kprobe
 * trace events, and those events listed and removed again.
 *
 * Three steps, each usable alone:
 *  - a definition as perf probe spells it ("grp:ev=func:3 x p->next->y:s64 buf:string")
 *    is parsed into a tally_probe_spec (no file is read);
 *  - a tally_probe_finder resolves a spec against a binary (ELF symbols, and DWARF
 *    through libdw for source lines, lazy patterns and variables) or against the
 *    running kernel's symbols, into tally_probe_events: one per address, each a line
 *    the kernel's uprobe_events/kprobe_events file takes;
 *  - tally_probe_events__* read, add and delete such lines in a tracefs directory (a
 *    test's plain directory stands in for tracefs).
 *
 * Addresses of uprobes are file offsets, as the kernel wants them; fetch arguments use
 * the kernel's syntax (%reg, OFF(%reg), +OFF(ARG), @SYM+OFF, $retval, ":s32",
 * ":string", ...). Where perf 6.1 has a rule (names, prologue skipping, the location a
 * variable is read from), tally follows it; docs/probe.md lists the differences.
 */
#ifndef TALLY_PROBE_H
#define TALLY_PROBE_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- definitions ------------------------------------------------------------------ */

/* One argument: [NAME=]EXPR[:TYPE]. EXPR is a C variable expression (var, var->f.g,
 * arr[2]), $retval / $params / $vars, or a raw fetch argument passed through as is
 * (%reg, @sym, +8(%sp), $comm, $stackN, ...). */
struct tally_probe_arg {
	char *name;		/* NAME= as given, or NULL */
	char *expr;
	char *type;		/* TYPE after the last ':', or NULL */
	bool raw;		/* not a C variable expression: passed to the kernel as is */
};

struct tally_probe_spec {
	char *text;		/* the definition as given */
	char *group, *event;	/* [[GROUP:]EVENT=], or NULL */
	char *function;		/* FUNC (may be a glob), or NULL for SRC:LINE / SRC;PT / ADDR */
	char *file;		/* @SRC, or the SRC of SRC:LINE and SRC;PT */
	unsigned line;		/* :RL (relative to FUNC's line) or SRC's :AL */
	bool has_line;
	uint64_t offset;	/* +OFF from FUNC's entry */
	char *lazy;		/* ;PT, a lazy pattern matched against source lines */
	bool retprobe;		/* %return */
	uint64_t address;	/* 0xADDR probe point */
	bool has_address;
	struct tally_probe_arg *args;
	size_t nr_args;
};

/* Parse perf probe's definition syntax:
 *   [[GROUP:]EVENT=]FUNC[@SRC][:RL|+OFF|%return|;PT] [[NAME=]ARG ...]
 *   [[GROUP:]EVENT=]SRC:AL [[NAME=]ARG ...]
 *   [[GROUP:]EVENT=]SRC;PT [[NAME=]ARG ...]
 *   [[GROUP:]EVENT=]0xADDR [[NAME=]ARG ...]
 * 0 or -EINVAL with a sentence naming the bad part in @err; -ENOMEM. */
TALLY_API int tally_probe_spec__parse(const char *def, struct tally_probe_spec **out, char *err,
				      size_t errlen);
TALLY_API void tally_probe_spec__delete(struct tally_probe_spec *s);
/* Does the spec need DWARF (source lines, lazy patterns, variables)? */
TALLY_API bool tally_probe_spec__needs_dwarf(const struct tally_probe_spec *s);

/* ---- trace events ------------------------------------------------------------------ */

#define TALLY_PROBE_NAME_MAX 64

/* One uprobe or kprobe event: a line of uprobe_events or kprobe_events. */
struct tally_probe_event {
	bool uprobe;		/* else kprobe */
	bool retprobe;
	char group[TALLY_PROBE_NAME_MAX], event[TALLY_PROBE_NAME_MAX];
	char *path;		/* uprobe: the binary */
	uint64_t offset;	/* uprobe: file offset; kprobe: offset from symbol */
	char *module;		/* kprobe: MOD of MOD:SYM, or NULL */
	char *symbol;		/* kprobe: the symbol (perf's "_text" for most) */
	char **args;		/* "NAME=FETCH:TYPE" as written (NAME= may be missing) */
	size_t nr_args;
	/* What perf's messages say the event is on (from the spec or from DWARF): */
	char *point;		/* "add:3", "@t.c:10", "add%return", "add@/src/t.c" */
	char *arg_desc;		/* "a b=p->x", the arguments as perf names them */
	char *function;		/* the function the address is in (names the event) */
};

TALLY_API void tally_probe_event__exit(struct tally_probe_event *e);
TALLY_API void tally_probe_events__free(struct tally_probe_event *v, size_t nr);

/* The definition line the kernel takes ("p:grp/ev /bin:0x1149 a=%di:s32"). The length
 * (as snprintf), or -errno. */
TALLY_API int tally_probe_event__format(const struct tally_probe_event *e, char *buf, size_t len);
/* Parse a line of uprobe_events / kprobe_events as the kernel lists them. 0 or -EINVAL. */
TALLY_API int tally_probe_event__parse(const char *line, bool uprobe, struct tally_probe_event *e);

/* perf's default group for a probe: "probe" for the kernel, "probe_" + the binary's
 * name up to its first '.' (non-alphanumerics as '_') for a binary. */
TALLY_API void tally_probe__default_group(const char *binary, char *buf, size_t len);
/* Make @name a valid event name as perf does (characters other than [A-Za-z0-9_] become
 * '_', a leading digit gets a '_' in front). */
TALLY_API void tally_probe__sanitize_name(char *name);

/* ---- tracefs ------------------------------------------------------------------------ */

/* Read the uprobe (or kprobe) events of tracefs directory @tracefs. 0 (none when the
 * file does not exist: check __supported), or -errno. */
TALLY_API int tally_probe_events__read(const char *tracefs, bool uprobe,
				       struct tally_probe_event **out, size_t *nr);
/* 0 when @tracefs has uprobe_events (kprobe_events), -ENOENT when this kernel has no
 * such probes, -EACCES when they cannot be written. */
TALLY_API int tally_probe_events__supported(const char *tracefs, bool uprobe);
/* Write one definition (tally_probe_event__format's line). 0 or -errno (the kernel's
 * answer: -EEXIST, -EINVAL for a fetch argument it refuses, ...). */
TALLY_API int tally_probe_events__add(const char *tracefs, bool uprobe, const char *line);
/* Remove GROUP/EVENT. 0 or -errno (-EBUSY while perf or tally records it). */
TALLY_API int tally_probe_events__del(const char *tracefs, bool uprobe, const char *group,
				      const char *event);

/* ---- resolution --------------------------------------------------------------------- */

struct tally_probe_finder;

/* The probe target: a binary (uprobes) or the running kernel (kprobes: symbols from
 * @kallsyms, NULL for /proc/kallsyms; @module for -m). 0, -ENOENT (no such file),
 * -ENOEXEC (not ELF), -ENOMEM. */
TALLY_API int tally_probe_finder__new_binary(struct tally_probe_finder **out, const char *path);
TALLY_API int tally_probe_finder__new_kernel(struct tally_probe_finder **out, const char *kallsyms,
					     const char *module);
TALLY_API void tally_probe_finder__delete(struct tally_probe_finder *f);
/* Probe functions only where they are out of line, not their inlined copies (perf's
 * --no-inlines). */
TALLY_API void tally_probe_finder__no_inlines(struct tally_probe_finder *f);
/* The binary's real path (NULL for the kernel). */
TALLY_API const char *tally_probe_finder__path(const struct tally_probe_finder *f);
/* Does the binary have DWARF (in itself or in separate debuginfo)? */
TALLY_API bool tally_probe_finder__has_dwarf(struct tally_probe_finder *f);

/* Resolve @spec into events, one per address, with group and event still to be named
 * (tally_probe_events__name). Messages: perf's when it has one for the case ("Probe
 * point 'x' not found.", "Failed to find the location of the 'v' variable at this
 * address.\n Perhaps it has been optimized out.", ...), in @err. @note gets an
 * informational sentence perf prints too ("Target program is compiled without
 * optimization. Skipping prologue.\n...") or stays empty. 0, or -errno. */
TALLY_API int tally_probe_finder__find(struct tally_probe_finder *f,
				       const struct tally_probe_spec *spec,
				       struct tally_probe_event **out, size_t *nr, char *err,
				       size_t errlen, char *note, size_t notelen);

/* Give events their group and event names as perf does: the spec's, else the default
 * group and the function's name (FUNC_L<RL> for :RL, FUNC__return for %return,
 * abs_<hex> for an address). A name taken by @existing or by an earlier event of @evs
 * (other than the same spec's other addresses) is -EEXIST with perf's message in @err,
 * unless @force: then _1, _2, ... is appended. */
TALLY_API int tally_probe_events__name(struct tally_probe_event *evs, size_t nr,
				       const struct tally_probe_spec *spec, const char *target,
				       const struct tally_probe_event *existing, size_t nr_existing,
				       struct tally_probe_event *earlier, size_t nr_earlier,
				       bool force, char *err, size_t errlen);

/* For listings: where an address of the binary is, as perf -l says it ("add:2@/src/t.c",
 * "add@/src/t.c", or "0x1149" without DWARF and symbols). @retprobe adds "%return".
 * The length or -errno. */
TALLY_API int tally_probe_finder__describe(struct tally_probe_finder *f, uint64_t offset,
					   bool retprobe, char *buf, size_t len);

/* -V: the variables available at each address of @spec, as perf prints them: called
 * once per address with "@<func+off>" and then once per variable ("type\tname", or
 * with @range "[VAL]\ttype\tname\t@<func+[a-b,c-d]>"), sorted as perf sorts them. */
typedef int (*tally_probe_vars_fn)(void *arg, const char *where, const char *var);
TALLY_API int tally_probe_finder__vars(struct tally_probe_finder *f,
				       const struct tally_probe_spec *spec, bool range,
				       bool externs, tally_probe_vars_fn fn, void *arg, char *err,
				       size_t errlen);

/* -L: the source lines of FUNC[@SRC][:START[-END|+N]] or SRC[:START[-END|+N]], as perf
 * prints them: the header ("<add@/src/t.c:0>" or "</src/t.c:5>"), then each line with
 * its number (relative to FUNC's line) when it has code, else none. */
typedef int (*tally_probe_line_fn)(void *arg, const char *header, long lineno, bool probeable,
				   const char *text, size_t len);
TALLY_API int tally_probe_finder__lines(struct tally_probe_finder *f, const char *range,
					tally_probe_line_fn fn, void *arg, char *err,
					size_t errlen);

/* -F: the symbol names of the binary (or kernel) that match @filter (perf's filter
 * syntax: globs joined by '&' and '|', '!' negates, parentheses group; NULL: perf's
 * default "!_* & !*@plt"), sorted (a name twice when two symbols have it, as perf); plt entries as NAME@plt. -EINVAL for a
 * filter that does not parse. */
typedef int (*tally_probe_func_fn)(void *arg, const char *name);
TALLY_API int tally_probe_finder__funcs(struct tally_probe_finder *f, const char *filter,
					tally_probe_func_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
