/*
 * tally record --control (the descriptors and lines: control.c), as perf 6.1's record
 * (measured on this project's machine):
 *   enable [NAME]   enable every event, -D's tracking dummy too ("Events enabled" on
 *                   stderr), or the event NAME ("Event NAME enabled"; "failed: can't
 *                   find 'NAME' event")
 *   disable [NAME]  the same, disabling (the dummy too: no side-band meanwhile)
 *   evlist [-v|-g|-F]  the event names on stderr, with attrs, groups or frequencies
 *                   as 'tally evlist' prints them
 *   snapshot        nothing to do without an AUX area snapshot, but acked
 *   stop            the recording ends (the command gets SIGTERM, as perf)
 *   ping            nothing
 * Every command is acked on ACK (perf's 5 bytes); an unknown word is not. With -D -1
 * the events start disabled, for 'enable' to start them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tally/sampler.h>

#include "attr-names.h"
#include "cmd.h"
#include "control.h"
#include "record.h"

/* enable/disable [NAME] */
static void switch_events(struct record *r, const char *name, bool on)
{
	bool found = false;

	if (!name) {
		if (on)
			tally_sampler__enable(r->sampler);
		else
			tally_sampler__disable(r->sampler);
		if (!r->o->quiet)
			fprintf(stderr, "Events %s\n", on ? "enabled" : "disabled");
		return;
	}
	for (size_t i = 0; i < r->nr_ev; i++) {
		if (strcmp(r->ev[i].name, name))
			continue;
		tally_sampler__enable_event(r->sampler, i, on);
		found = true;
	}
	if (r->o->quiet)
		return;
	cli_control__event_note(name, found, on);
}

/* evlist [-v|-g|-F] */
static void list_events(const struct record *r, const char *flag)
{
	bool attrs = flag && !strcmp(flag, "-v"), freq = flag && !strcmp(flag, "-F");
	bool group = flag && !strcmp(flag, "-g");

	for (size_t i = 0; i < r->nr_ev && !r->o->quiet; i++) {
		const struct record_event *e = &r->ev[i];
		bool first = true;

		if (group && e->leader != (int)i)
			continue;	/* printed with its leader */
		if (group && e->nr_members > 1) {
			fputc('{', stderr);
			for (int m = 0; m < e->nr_members; m++)
				fprintf(stderr, "%s%s", m ? "," : "", r->ev[i + (size_t)m].name);
			fputs("}\n", stderr);
			continue;
		}
		fputs(e->name, stderr);
		if (attrs)
			attr_fprintf(stderr, &e->attr, e->attr.size, 0, &first);
		else if (freq)
			fprintf(stderr, ": sample_%s=%" PRIu64, e->attr.freq ? "freq" : "period",
				(uint64_t)e->attr.sample_period);
		fputc('\n', stderr);
	}
}

int record__control(struct record *r)
{
	enum cli_control_cmd cmd;
	const char *arg;
	bool stop = false;
	int n = 0;

	while (!stop && (n = cli_control__read(&r->ctl, &cmd, &arg)) > 0) {
		switch (cmd) {
		case CTL_ENABLE:
		case CTL_DISABLE:
			switch_events(r, arg, cmd == CTL_ENABLE);
			break;
		case CTL_EVLIST:
			list_events(r, arg);
			break;
		case CTL_STOP:
			stop = true;
			break;
		case CTL_SNAPSHOT:
		case CTL_PING:
			break;
		default:
			continue;	/* not a command: no ack */
		}
		cli_control__ack(&r->ctl);
	}
	if (stop)
		return 1;
	return n < 0 ? -1 : 0;
}
