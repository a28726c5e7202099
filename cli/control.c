/*
 * --control's descriptors and lines, shared by tally stat and tally record
 * (control.h). Measured against perf 6.1 on this project's machine: a command is
 * recognized by its first letters ("stopped" is stop), an unknown word gets no ack,
 * a FIFO is opened read-write so that writers may come and go.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "control.h"

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

int cli_control__open(struct cli_control *c, const char *spec)
{
	const char *arg, *comma;
	bool fifo;

	c->ctl_fd = c->ack_fd = -1;
	c->len = 0;
	c->owned = false;
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
	cli_control__close(c);
	return -1;
}

void cli_control__close(struct cli_control *c)
{
	if (c->owned) {
		if (c->ctl_fd >= 0)
			close(c->ctl_fd);
		if (c->ack_fd >= 0)
			close(c->ack_fd);
	}
	c->ctl_fd = c->ack_fd = -1;
}

/* The command a line starts with, as perf matches them: by prefix */
static enum cli_control_cmd parse(char *line, const char **arg)
{
	static const struct { const char *word; enum cli_control_cmd cmd; } words[] = {
		{ "enable", CTL_ENABLE }, { "disable", CTL_DISABLE }, { "evlist", CTL_EVLIST },
		{ "snapshot", CTL_SNAPSHOT }, { "stop", CTL_STOP }, { "ping", CTL_PING },
	};

	*arg = NULL;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i].word);

		if (strncmp(line, words[i].word, n))
			continue;
		if (line[n] == ' ' && line[n + 1])
			*arg = line + n + 1;
		return words[i].cmd;
	}
	return CTL_UNKNOWN;
}

int cli_control__read(struct cli_control *c, enum cli_control_cmd *cmd, const char **arg)
{
	for (;;) {
		struct pollfd p = { c->ctl_fd, POLLIN, 0 };
		char ch;
		ssize_t n;

		if (c->ctl_fd < 0)
			return 0;
		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			return p.revents & (POLLHUP | POLLERR | POLLNVAL) ? -1 : 0;
		n = read(c->ctl_fd, &ch, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;	/* the writer is gone (fd: form) */
		if (ch != '\n' && ch) {
			if (c->len < sizeof(c->buf) - 1)
				c->buf[c->len++] = ch;
			continue;
		}
		c->buf[c->len] = 0;
		c->len = 0;
		*cmd = parse(c->buf, arg);
		return 1;
	}
}

void cli_control__ack(struct cli_control *c)
{
	static const char ack[] = "ack\n";	/* sent with its NUL, as perf */

	fflush(stderr);
	if (c->ack_fd >= 0 && write(c->ack_fd, ack, sizeof(ack)) < 0 && verbose)
		fprintf(stderr, "tally: --control: cannot write the ack: %s\n", strerror(errno));
}

void cli_control__event_note(const char *name, bool found, bool on)
{
	if (found)
		fprintf(stderr, "Event %s %s\n", name, on ? "enabled" : "disabled");
	else
		fprintf(stderr, "failed: can't find '%s' event\n", name);
}
