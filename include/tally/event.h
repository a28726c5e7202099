/*
 * Event lists: perf's event syntax turned into perf_event_attr structures.
 *
 * tally_evlist__add() parses what users pass to -e: symbolic hardware, software and
 * tool events, the generic hardware-cache table, raw rNNNN, PMU terms
 * pmu/term=value,.../ (formats and aliases read from sysfs), tracepoints and their
 * globs, breakpoints mem:ADDR[/LEN][:rwx], modifiers, {groups}, name= and the other
 * generic terms, and names only libpfm4 knows. The attr of each event is exactly what
 * perf 6.1's parser builds for the same string: nothing a command decides (sample_type,
 * read_format, disabled, inherit, frequency defaults …) is set here. Terms that are
 * command policy rather than attr bits (call-graph=, stack-size=, time= …) are kept in
 * their own fields for stat/record/top to honour.
 *
 * Parsing never opens an event. Only the parts that need sysfs (PMU terms, aliases,
 * tracepoints) read it, from the root set with tally_evlist__set_sysfs_root().
 */
#ifndef TALLY_EVENT_H
#define TALLY_EVENT_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include <tally/tracefs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_cpumap;

/* Events perf handles in user space (no kernel counter of their own). */
enum tally_tool_event {
	TALLY_TOOL_NONE = 0,
	TALLY_TOOL_DURATION_TIME,
	TALLY_TOOL_USER_TIME,
	TALLY_TOOL_SYSTEM_TIME,
};

struct tally_event {
	struct perf_event_attr attr;	/* what perf's parser produces for this string (no stat/record policy) */
	uint64_t config3;		/* needs a 136-byte attr; <linux/perf_event.h> 6.1 lacks it */
	char *name;			/* as perf displays it: "cycles:u", "msr/tsc/", "sched:sched_switch", name= term */
	char *pmu_name;			/* "cpu", "software", "tracepoint", "breakpoint", "msr", … */
	bool sysfs_pmu;			/* parsed through a sysfs PMU ("pmu/terms/" or a PMU's alias
					 * such as tsc); the events perf keeps a PMU name for */
	bool merge;			/* one of the events a name that is no single PMU's expanded
					 * to ("uncore_imc/…/" → uncore_imc_0, _1 …; a bare alias):
					 * stat shows them as one line unless --no-merge */
	bool name_set;			/* the name came from a name= term */
	int leader;			/* index in the list of this event's group leader (own index if leader/ungrouped) */
	int nr_members;			/* on a leader: group size (1 when ungrouped) */
	char *group_name;		/* on a leader: NAME of a named group NAME{a,b} (for GROUP_DESC);
					 * NULL for an anonymous {a,b} group ("{anon_group}") */
	struct tally_cpumap *cpus;	/* PMU cpumask (uncore etc.) or NULL = any CPU */
	/* term settings that are policy, not attr bits: */
	char *call_graph;		/* call-graph= term: "fp", "dwarf", "lbr", "no", or NULL */
	uint32_t stack_size;		/* stack-size= term or dwarf,SIZE; 0 = default */
	int max_stack;			/* max-stack= term; 0 = default */
	bool period_set, freq_set;	/* the user chose period/freq for this event (record must not override) */
	bool inherit_set, exclude_set;	/* user set inherit= / gave privilege modifiers (u k h …) */

	/* Modifier effects that are not attr bits (perf keeps them in the evsel). */
	bool sample_read;		/* S: record should read the group with PERF_SAMPLE_READ */
	bool precise_max;		/* P: use the highest precise_ip the kernel accepts */
	bool weak_group;		/* W: if the group does not fit, open members ungrouped */
	bool exclude_GH;		/* G or H given */
	bool bpf_counter;		/* b: perf's BPF counters (accepted, tally counts normally) */
	/* More term settings. -1 = not given. */
	int time;			/* time=0/1: PERF_SAMPLE_TIME off/on for this event */
	int overwrite;			/* overwrite / no-overwrite */
	bool percore;			/* percore term: sum per core in stat */
	char *driver_config;		/* drv-cfg= term, NULL when absent */
	char *metric_id;		/* metric-id= term, NULL when absent */
	/* A sysfs alias may carry a unit and scale (msr/…/, power/energy-pkg/). */
	char *unit;			/* NULL when none */
	double scale;			/* 1.0 when none */
	bool per_pkg, snapshot;		/* .per-pkg / .snapshot alias files */
	enum tally_tool_event tool;	/* duration_time etc.: attr is a software dummy */
	/* For tracepoints: "sched", "sched_switch"; NULL otherwise. */
	char *tp_sys, *tp_name;
};

/* An ordered list of parsed events (opaque: tally_evlist__nr, tally_evlist__event and
 * tally_evlist__nr_groups read it). */
struct tally_evlist;

struct tally_parse_error {
	size_t pos;		/* byte offset in the string given to tally_evlist__add */
	size_t len;		/* length of the bad part (at least 1) */
	char msg[256];		/* what was wrong and what was expected */
};

/* Flags for tally_evlist__set_flags. */
#define TALLY_EVLIST_NO_PFM	0x1	/* do not consult libpfm4 for unknown names */

TALLY_API int tally_evlist__new(struct tally_evlist **out);
/* Parse perf's event syntax and append the events (repeated -e options append).
 * On a syntax or lookup error, returns -EINVAL (or -ENOENT for a tracepoint / PMU that
 * does not exist, -EACCES when tracefs is not readable …), fills *err when non-NULL and
 * leaves the list as it was before the call. */
TALLY_API int tally_evlist__add(struct tally_evlist *list, const char *str,
				struct tally_parse_error *err);
TALLY_API void tally_evlist__delete(struct tally_evlist *list);
/* Read sysfs (PMUs) under @root instead of "/sys" and tracepoints under
 * @root/kernel/tracing (or @root/kernel/debug/tracing). For tests. */
TALLY_API int tally_evlist__set_sysfs_root(struct tally_evlist *list, const char *root);
/* Read tracepoint ids under @dir (a tracefs mount) instead. */
TALLY_API int tally_evlist__set_tracefs(struct tally_evlist *list, const char *dir);
TALLY_API void tally_evlist__set_flags(struct tally_evlist *list, int flags);
/* Append a copy of an event built elsewhere (a command's default events). The group
 * fields of the copy are reset to "ungrouped". */
TALLY_API int tally_evlist__add_event(struct tally_evlist *list, const struct tally_event *ev);
/* How many events the list holds (0 for a NULL list). */
TALLY_API size_t tally_evlist__nr(const struct tally_evlist *list);
/* Event @idx of the list, in the order they were added; NULL past the end. A caller
 * may adjust the event's attr and policy fields (a command's sample_type, a fallback's
 * exclude bits); the pointer is valid until the next tally_evlist__add* or delete. */
TALLY_API struct tally_event *tally_evlist__event(const struct tally_evlist *list, size_t idx);
/* How many {…} groups of more than one member the list holds (perf's nr_groups). */
TALLY_API size_t tally_evlist__nr_groups(const struct tally_evlist *list);

/* "event syntax error: 'cycles:zz'\n                            \\___ <msg>" style, like perf (caret under the bad part).
 * Returns the length of the whole message, as snprintf does (more than len - 1: cut). */
TALLY_API int tally_parse_error__format(const struct tally_parse_error *err, const char *input,
					char *buf, size_t len);

/* True for an event that leads its group, and for an event outside any group (its own
 * leader); false for the other members of a group. */
TALLY_API bool tally_event__is_leader(const struct tally_evlist *list, size_t idx);

/* perf's names for the symbolic events, for `list` and for printing:
 * type PERF_TYPE_HARDWARE/SOFTWARE and config → "cycles" / "task-clock", or NULL. */
TALLY_API const char *tally_event__symbol_name(uint32_t type, uint64_t config);
/* Alias of a symbolic event ("cpu-cycles" → "cycles", "cs" for context-switches), or NULL. */
TALLY_API const char *tally_event__symbol_alias(uint32_t type, uint64_t config);
/* Name of a PERF_TYPE_HW_CACHE config ("L1-dcache-load-misses") into buf; -EINVAL
 * for a combination perf rejects. */
TALLY_API int tally_event__hw_cache_name(uint64_t config, char *buf, size_t len);
/* The name of a tool event ("duration_time"), or NULL. */
TALLY_API const char *tally_event__tool_name(enum tally_tool_event tool);
/* The symbolic events of @type (PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE) in the order
 * perf list shows them: the @i-th one's first name ("cpu-cycles"), its alias ("cycles",
 * or NULL) into *alias when alias is non-NULL. NULL past the end or for another type. */
TALLY_API const char *tally_event__symbol(uint32_t type, size_t i, const char **alias);
/* How many PMU models libpfm4 recognises on this CPU (0 on a VM without one, or when
 * libpfm4 cannot be loaded): its event names encode only then. */
TALLY_API int tally_event__pfm_nr_pmus(void);

/* perf's default sampling event, "cycles:P", into *attr (other fields zero): hardware
 * CPU cycles, precise_ip 3 (lowered by whoever opens it when the PMU refuses), and
 * exclude_guest set, except on AMD CPUs ("AuthenticAMD"), where precise cycles are
 * sampled through IBS, which cannot filter guests, so perf 6.1 leaves it clear. */
TALLY_API void tally_event__default_cycles(struct perf_event_attr *attr);

/* Whether the event opens here: a disabled, user-only counter on the calling thread
 * is opened and closed (what perf list does to hide unsupported hardware events).
 * 0 or -errno from perf_event_open. */
TALLY_API int tally_event__probe(const struct tally_event *ev);

/* Names of the modifier letters set on an event, perf's evsel__add_modifiers style
 * (":u", ":ppp", ":uG" …: the letters u, k, h, p, G, I, S, D, e) into buf; "" when none. */
TALLY_API size_t tally_event__modifier_str(const struct tally_event *ev, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
