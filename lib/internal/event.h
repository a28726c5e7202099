/*
 * Internals shared by lib/kernel/event*.c: the symbolic-name tables, the hw-cache
 * parser, the libpfm4 bridge, and the pieces of the event-string parser: its grammar in
 * event.c, PMU terms in event-pmu.c, tracepoints and breakpoints in event-tp.c,
 * symbolic names in event-names.c.
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

/* ---- the event-string parser ---- */

/* Modifier letters perf 6.1 accepts after ':' (cycles:ukpp). */
#define MOD_CHARS "ukhGHIpPSDeWb"

/* One tally_evlist__add call: the list it appends to, the user's string, where errors go. */
struct tly_parser {
	struct tally_evlist *list;
	const char *in;
	struct tally_parse_error *err;
	struct tally_parse_error local;
};

/* Record an error at [pos, pos+len) of the input (len 0: one character); returns code. */
__attribute__((format(printf, 5, 6)))
int tly_evp_fail(struct tly_parser *p, size_t pos, size_t len, int code, const char *fmt, ...);
/* The list's PMUs, read from its sysfs root on first use; NULL when unreadable. */
const struct tally_pmus *tly_evp_get_pmus(struct tally_evlist *list);
/* Append a default-initialised event (perf's event_attr_init()). Its index or -ENOMEM. */
int tly_evp_new_event(struct tly_parser *p);
/* *dst = a copy of s[0, n) (the old value freed); 0 or -ENOMEM. */
int tly_evp_set_str(char **dst, const char *s, size_t n);
/* perf's lexer numbers: decimal or 0x hex, spanning exactly s[0, n). */
bool tly_evp_parse_u64(const char *s, size_t n, uint64_t *val);
/* s[0, n) is nonempty and all hex digits? */
bool tly_evp_is_hex_span(const char *s, size_t n);
/* Any glob character ('*', '?', '[') in s[0, n)? */
bool tly_evp_has_glob(const char *s, size_t n);

/* The event kinds. Each returns 0 when events were added, -errno on error, and where
 * it says so 1 (or *found, *is_pmu false) for a name that is not of its kind. */
/* Terms for events that are not PMU events: only the generic ones are valid. */
int tly_evp_apply_generic_only(struct tly_parser *p, size_t first, size_t last, size_t tpos,
			       size_t tlen);
/* "pmu/terms/" with head [hpos, hpos+hlen), terms [tpos, tpos+tlen). */
int tly_evp_parse_pmu(struct tly_parser *p, size_t hpos, size_t hlen, size_t tpos, size_t tlen,
		      bool *is_pmu);
/* A bare name that is an alias in some PMU's events/ ("tsc" -> msr/tsc/). */
int tly_evp_parse_alias_anywhere(struct tly_parser *p, size_t pos, size_t len, bool *found);
/* Does tracefs have a subsystem matching the glob? (decides "x:y" = tracepoint) */
bool tly_evp_tp_subsystem_exists(struct tly_parser *p, size_t pos, size_t len);
/* "sys:event" (globs allowed) with sys [spos, spos+slen), event [epos, epos+elen). */
int tly_evp_parse_tracepoint(struct tly_parser *p, size_t spos, size_t slen, size_t epos,
			     size_t elen);
/* "mem:ADDR[/LEN][:ACCESS][:MODS]", spanning [pos, end). Sets mpos, mlen to the modifiers. */
int tly_evp_parse_breakpoint(struct tly_parser *p, size_t pos, size_t end, size_t *mpos,
			     size_t *mlen);
/* One event of a fixed type and config, with pmu_name @pmu (NULL: none). */
int tly_evp_simple_event(struct tly_parser *p, uint32_t type, uint64_t config, const char *pmu);
/* Names that stand alone: hw/sw/tool symbols, raw rNNN, hw-cache. 1 when the name is none
 * of these. */
int tly_evp_parse_symbolic(struct tly_parser *p, size_t pos, size_t len);
/* The last resort for a name: libpfm4. 1 when libpfm4 does not know it (why: its reason). */
int tly_evp_parse_pfm(struct tly_parser *p, size_t pos, size_t len, char *why, size_t whylen);
/* perf's error for a name nothing knows (with a suggestion when one is close). */
int tly_evp_unknown_event(struct tly_parser *p, size_t pos, size_t len, const char *pfm_why,
			  int pfm_rc);

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
