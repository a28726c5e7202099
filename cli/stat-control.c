/*
 * tally stat --control (the descriptors and lines: control.c), as perf 6.1's stat:
 *   enable [NAME]   enable every event ("Events enabled" on stderr), or the events NAME
 *                   ("Event NAME enabled"; "failed: can't find 'NAME' event")
 *   disable [NAME]  the same, disabling
 *   evlist          the event names, one a line, on stderr
 *   ping, stop      nothing (stat does not stop on 'stop', as perf)
 *   snapshot        nothing, and no ack
 * Each command but snapshot and unknown ones is answered with perf's 5 bytes "ack\n\0"
 * on ACK. With -D -1 the events start disabled, for 'enable' to start them.
 */
#include <stdio.h>
#include <string.h>

#include <tally/counter.h>

#include "cmd.h"
#include "control.h"
#include "stat.h"

/* enable/disable [NAME] */
static void switch_events(struct stat_run *r, const char *name, bool on)
{
	bool found = false;

	if (!name) {
		if (on)
			tally_counters__enable(r->set);
		else
			tally_counters__disable(r->set);
		stat_events_note(r, on ? "enabled" : "disabled");
		return;
	}
	for (int i = 0; i < r->nr_ev; i++) {
		if (strcmp(r->ev[i].name, name) || r->ev[i].tool)
			continue;
		tally_counters__enable_event(r->set, (size_t)r->set_idx[i], on);
		found = true;
	}
	if (r->opts->quiet)
		return;
	cli_control__event_note(name, found, on);
}

static void run_command(struct stat_run *r, enum cli_control_cmd cmd, const char *arg)
{
	switch (cmd) {
	case CTL_ENABLE:
	case CTL_DISABLE:
		if (r->set)
			switch_events(r, arg, cmd == CTL_ENABLE);
		break;
	case CTL_EVLIST:
		for (int i = 0; i < r->nr_ev && !r->opts->quiet; i++)
			fprintf(stderr, "%s\n", r->ev[i].name);
		break;
	case CTL_STOP:
	case CTL_PING:
		break;
	default:
		return;	/* snapshot, or not a command: no ack */
	}
	cli_control__ack(&r->ctl);
}

bool stat_run__control(struct stat_run *r)
{
	enum cli_control_cmd cmd;
	const char *arg;
	int n;

	while ((n = cli_control__read(&r->ctl, &cmd, &arg)) > 0)
		run_command(r, cmd, arg);
	return n == 0;
}
