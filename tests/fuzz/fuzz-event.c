/*
 * Fuzz target: the event-string parser (lib/event*.c), as `-e STRING` reaches it:
 * names, raw rNNN, pmu/term=value,.../, sysfs aliases, tracepoints, breakpoints, groups
 * {…}, modifiers. PMUs and tracepoints come from the fake tree of fakesys.h; libpfm4 is
 * not consulted (TALLY_EVLIST_NO_PFM) so runs are deterministic.
 *
 * Input: the string (at most 4095 bytes; a NUL ends it early). A second string after a
 * NUL is added to the same list, so group indices and names span two calls.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/event.h>

#include "fakesys.h"

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_list(const struct tally_evlist *l)
{
	char buf[128];

	for (size_t i = 0; i < tally_evlist__nr(l); i++) {
		const struct tally_event *e = tally_evlist__event(l, i);
		sink += e->attr.type + e->attr.config + e->attr.config1 + e->config3;
		if (e->name)
			sink += strlen(e->name);
		if (e->pmu_name)
			sink += strlen(e->pmu_name);
		if (e->group_name)
			sink += strlen(e->group_name);
		if (e->leader < 0 || (size_t)e->leader >= tally_evlist__nr(l))
			__builtin_trap();	/* a leader index outside the list */
		sink += tally_event__is_leader(l, i);
		sink += tally_event__modifier_str(e, buf, sizeof(buf));
		const char *s = tally_event__symbol_name(e->attr.type, e->attr.config);
		if (s)
			sink += strlen(s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *root = fakesys_init();
	struct tally_evlist *l = NULL;
	struct tally_parse_error err;
	char out[512];

	if (!root || size > 4095)
		return 0;
	char *str = malloc(size + 1);
	if (!str)
		return 0;
	memcpy(str, data, size);
	str[size] = 0;
	if (tally_evlist__new(&l) < 0) {
		free(str);
		return 0;
	}
	tally_evlist__set_flags(l, TALLY_EVLIST_NO_PFM);
	tally_evlist__set_sysfs_root(l, root);
	char tracefs[300];
	snprintf(tracefs, sizeof(tracefs), "%s/kernel/tracing", root);
	tally_evlist__set_tracefs(l, tracefs);

	size_t first = strlen(str);
	const char *inputs[2] = { str, first + 1 < size ? str + first + 1 : NULL };
	for (int i = 0; i < 2 && inputs[i]; i++) {
		memset(&err, 0, sizeof(err));
		if (tally_evlist__add(l, inputs[i], &err) < 0) {
			size_t n = strlen(inputs[i]);
			/* the error must point inside the string (or just past its end) */
			if (err.pos > n)
				__builtin_trap();
			tally_parse_error__format(&err, inputs[i], out, sizeof(out));
			sink += strnlen(out, sizeof(out));
		}
	}
	use_list(l);
	tally_evlist__delete(l);
	free(str);
	return 0;
}
