/*
 * Fuzz target: perf probe's definition syntax (lib/kernel/probe-spec.c) and the
 * kernel's uprobe/kprobe definition lines (lib/kernel/probe-events.c), as `tally probe
 * -a DEF` and `tally probe -l` meet them: any text parses or is refused with a message,
 * and a parsed line formats back into one that parses again.
 *
 * Input: the definition (a NUL ends it early); the same bytes are also read as a
 * uprobe_events line and as a kprobe_events line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/probe.h>

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void line_roundtrip(const char *text, bool uprobe)
{
	struct tally_probe_event e, again;
	char buf[8192];
	int n;

	if (tally_probe_event__parse(text, uprobe, &e))
		return;
	n = tally_probe_event__format(&e, buf, sizeof(buf));
	if (n > 0 && (size_t)n < sizeof(buf)) {
		if (tally_probe_event__parse(buf, uprobe, &again))
			__builtin_trap();	/* a line we wrote that we cannot read */
		if (strcmp(again.group, e.group) || strcmp(again.event, e.event) ||
		    again.nr_args != e.nr_args || again.offset != e.offset)
			__builtin_trap();
		tally_probe_event__exit(&again);
	}
	tally_probe_event__exit(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct tally_probe_spec *s = NULL;
	char err[512];

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	if (tally_probe_spec__parse(text, &s, err, sizeof(err)) == 0) {
		sink += s->nr_args + s->line + s->offset + tally_probe_spec__needs_dwarf(s);
		for (size_t i = 0; i < s->nr_args; i++)
			sink += strlen(s->args[i].expr) + (s->args[i].type != NULL);
		tally_probe_spec__delete(s);
	} else if (!err[0] && s) {
		__builtin_trap();
	}
	line_roundtrip(text, true);
	line_roundtrip(text, false);
	free(text);
	return 0;
}
