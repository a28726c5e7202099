/*
 * --control of tally stat and tally record: commands read from a descriptor or a FIFO
 * while the events run, acks written back, perf 6.1's protocol:
 *
 *   --control fd:CTL[,ACK] | fifo:CTL[,ACK]   (a FIFO opens read-write: it never ends)
 *
 * One command a line ('\n' or NUL ends it), starting with its word: enable [NAME],
 * disable [NAME], evlist [-v|-g|-F], snapshot, stop, ping. What each does is the
 * command's (stat-control.c, record-control.c); the ack is perf's 5 bytes "ack\n\0".
 */
#ifndef TALLY_CLI_CONTROL_H
#define TALLY_CLI_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

struct cli_control {
	int ctl_fd, ack_fd;	/* -1: none */
	bool owned;		/* fifo: opened by tally, closed at the end */
	char buf[256];		/* the line so far */
	size_t len;
};

enum cli_control_cmd {
	CTL_UNKNOWN,	/* not a command: no ack */
	CTL_ENABLE,
	CTL_DISABLE,
	CTL_EVLIST,
	CTL_SNAPSHOT,
	CTL_STOP,
	CTL_PING,
};

/* Open the descriptors or FIFOs of SPEC (NULL: none, ctl_fd -1). 0, or -1 after a
 * message (a usage error: exit 129, as perf). */
int cli_control__open(struct cli_control *c, const char *spec);
void cli_control__close(struct cli_control *c);
/* The next whole command waiting on the control descriptor, without blocking: 1 with
 * its word in *cmd and what follows the word's space in *arg (NULL: nothing; both point
 * into c, valid until the next call), 0 when none is waiting, -1 when the writer is
 * gone (fd: form) or the descriptor failed. */
int cli_control__read(struct cli_control *c, enum cli_control_cmd *cmd, const char **arg);
/* perf's line on stderr after enable/disable NAME: "Event NAME enabled" when FOUND,
 * else "failed: can't find 'NAME' event". */
void cli_control__event_note(const char *name, bool found, bool on);
/* perf's ack on ACK, if there is one. */
void cli_control__ack(struct cli_control *c);

#endif
