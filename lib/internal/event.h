/*
 * Internals shared by lib/event*.c: the symbolic-name tables, the hw-cache parser and
 * the libpfm4 bridge.
 */
#ifndef TALLY_INTERNAL_EVENT_H
#define TALLY_INTERNAL_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include <tally/event.h>

/* The PMUs (opaque to callers: tally/pmu.h). */
struct tally_pmus {
	size_t nr;
	struct tally_pmu *pmu;		/* sorted by name */
};

/* The parsed events (opaque to callers: tally/event.h). */
struct tally_evlist {
	size_t nr;
	struct tally_event *ev;
	size_t nr_groups;		/* {…} groups with more than one member (perf's nr_groups) */
	char *sysfs_root;
	char *tracefs;			/* explicit tracefs path or NULL = look under the root */
	void *pmus;			/* struct tally_pmus *, loaded on first use */
	int flags;
};

struct tly_symbol {
	uint64_t config;
	const char *name;	/* perf list's first name: "cpu-cycles" */
	const char *alias;	/* "cycles" or NULL */
	const char *display;	/* what perf prints for the event: "cycles" */
};

extern const struct tly_symbol tly_hw_symbols[];
extern const size_t tly_nr_hw_symbols;
extern const struct tly_symbol tly_sw_symbols[];
extern const size_t tly_nr_sw_symbols;

/* Exact (case-sensitive) symbolic name lookup; sets *type. */
const struct tly_symbol *tly_symbol_lookup(const char *s, size_t len, uint32_t *type);
enum tally_tool_event tly_tool_lookup(const char *s, size_t len);

struct tly_cache_event {
	unsigned int type, op, result;
	uint64_t config;
	size_t bad_pos, bad_len;	/* the op the type does not support (-EINVAL) */
};
/* Parse "L1-dcache-load-misses". -ENOENT: not a cache event name; -EINVAL: an op the
 * cache does not have (bad_pos/bad_len point at it). */
int tly_cache_parse(const char *s, size_t len, struct tly_cache_event *out);
bool tly_cache_op_valid(unsigned int type, unsigned int op);
const char *tly_cache_type_name(unsigned int type);

/* libpfm4: encode @name into @attr (type, config, config1 …). Returns 0, -ENOENT when
 * libpfm4 does not know the name, -ENODEV when libpfm4 found no PMU on this machine
 * at all (a VM without a virtual PMU), -EINVAL for other libpfm errors; @msg gets the
 * reason. */
int tly_pfm_encode(const char *name, struct perf_event_attr *attr, char *msg, size_t msglen);
/* Number of PMUs libpfm4 detected as present (0 on a VM without one). */
int tly_pfm_nr_present(void);

#endif
