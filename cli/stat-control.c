/*
 * tally stat --control: commands read from a file descriptor or a FIFO while counting,
 * perf 6.1's protocol (measured against perf on this project's machine):
 *
 *   --control fd:CTL[,ACK] | fifo:CTL[,ACK]   (a FIFO opens read-write: it never ends)
 *
 * One command a line ('\n' or NUL ends it); a command starts with its word:
 *   enable [NAME]   enable every event ("Events enabled" on stderr), or the events NAME
 *                   ("Event NAME enabled"; "failed: can't find 'NAME' event")
 *   disable [NAME]  the same, disabling
 *   evlist          the event names, one a line, on stderr
 *   ping, stop      nothing (stat does not stop on 'stop', as perf)
 *   snapshot        nothing, and no ack
 * Each command but snapshot and unknown ones is answered with perf's 5 bytes "ack\n\0"
 * on ACK. With -D -1 the events start disabled, for 'enable' to start them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/counter.h>

#include "cmd.h"
#include "stat.h"

/* "N" into *fd; false unless the whole text is a number of an open descriptor. */
static bool parse_fd(const char *s, size_t len, int *fd, const char *spec)
{
	char buf[16], *end;
	long v;

	if (!len || len >= sizeof(buf)) {
		cli_error("--control %s: expected fd:CTL[,ACK] with descriptor numbers", spec);
		return false;
	}
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (*end || errno || v < 0 || v > INT_MAX) {
		cli_error("--control %s: '%s' is not a descriptor number", spec, buf);
		return false;
	}
	if (fcntl((int)v, F_GETFD) < 0) {
		cli_error("--control %s: descriptor %ld is not open", spec, v);
		return false;
	}
	*fd = (int)v;
	return true;
}

static bool open_fifo(const char *s, size_t len, int flags, int *fd, const char *spec)
{
	char path[PATH_MAX];

	if (!len || len >= sizeof(path)) {
		cli_error("--control %s: expected fifo:CTL[,ACK] with FIFO paths", spec);
		return false;
	}
	memcpy(path, s, len);
	path[len] = 0;
	*fd = open(path, flags | O_CLOEXEC);
	if (*fd < 0) {
		cli_error("--control: failed to open '%s': %s", path, strerror(errno));
		return false;
	}
	return true;
}

int stat_control__open(struct stat_control *c, const char *spec)
{
	const char *arg, *comma;
	bool fifo;

	c->ctl_fd = c->ack_fd = -1;
	c->len = 0;
	if (!spec)
		return 0;
	fifo = !strncmp(spec, "fifo:", 5);
	if (!fifo && strncmp(spec, "fd:", 3)) {
		cli_error("--control %s: expected fd:CTL[,ACK] or fifo:CTL[,ACK]", spec);
		return -1;
	}
	arg = spec + (fifo ? 5 : 3);
	comma = strchr(arg, ',');
	c->owned = fifo;
	if (fifo) {
		/* read-write: the FIFO stays open when a writer closes it, as perf */
		if (!open_fifo(arg, comma ? (size_t)(comma - arg) : strlen(arg), O_RDWR,
			       &c->ctl_fd, spec) ||
		    (comma && !open_fifo(comma + 1, strlen(comma + 1), O_WRONLY, &c->ack_fd, spec)))
			goto fail;
	} else if (!parse_fd(arg, comma ? (size_t)(comma - arg) : strlen(arg), &c->ctl_fd, spec) ||
		   (comma && !parse_fd(comma + 1, strlen(comma + 1), &c->ack_fd, spec))) {
		goto fail;
	}
	return 0;
fail:
	stat_control__close(c);
	return -1;
}

void stat_control__close(struct stat_control *c)
{
	if (c->owned) {
		if (c->ctl_fd >= 0)
			close(c->ctl_fd);
		if (c->ack_fd >= 0)
			close(c->ack_fd);
	}
	c->ctl_fd = c->ack_fd = -1;
}

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
	if (found)
		fprintf(stderr, "Event %s %s\n", name, on ? "enabled" : "disabled");
	else
		fprintf(stderr, "failed: can't find '%s' event\n", name);
}

static void run_command(struct stat_run *r, const char *cmd)
{
	static const char ack[] = "ack\n";	/* sent with its NUL, as perf */
	struct stat_control *c = &r->ctl;
	bool on = !strncmp(cmd, "enable", 6);

	if (on || !strncmp(cmd, "disable", 7)) {
		const char *rest = cmd + (on ? 6 : 7);

		if (r->set)
			switch_events(r, *rest == ' ' && rest[1] ? rest + 1 : NULL, on);
	} else if (!strncmp(cmd, "evlist", 6)) {
		for (int i = 0; i < r->nr_ev && !r->opts->quiet; i++)
			fprintf(stderr, "%s\n", r->ev[i].name);
	} else if (strncmp(cmd, "stop", 4) && strncmp(cmd, "ping", 4)) {
		return;	/* snapshot, or not a command: no ack */
	}
	fflush(stderr);
	if (c->ack_fd >= 0 && write(c->ack_fd, ack, sizeof(ack)) < 0 && verbose)
		fprintf(stderr, "tally: --control: cannot write the ack: %s\n", strerror(errno));
}

bool stat_run__control(struct stat_run *r)
{
	struct stat_control *c = &r->ctl;

	for (;;) {
		struct pollfd p = { c->ctl_fd, POLLIN, 0 };
		char ch;
		ssize_t n;

		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			return !(p.revents & (POLLHUP | POLLERR | POLLNVAL));
		n = read(c->ctl_fd, &ch, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;	/* the writer is gone (fd: form) */
		if (ch != '\n' && ch) {
			if (c->len < sizeof(c->buf) - 1)
				c->buf[c->len++] = ch;
			continue;
		}
		c->buf[c->len] = 0;
		c->len = 0;
		run_command(r, c->buf);
	}
}
