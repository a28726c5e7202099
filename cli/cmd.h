/*
 * The tally command: the subcommands and the helpers every subcommand shares.
 *
 * Each subcommand lives in cli/cmd-NAME.c and exports one description,
 * `const struct cli_command cmd_NAME` (options.h): its options as a table, its usage
 * lines and the function that runs it with the options parsed into its own struct.
 * It returns the process exit status. Errors are printed once, as an actionable
 * message, via cli_error().
 */
#ifndef TALLY_CLI_CMD_H
#define TALLY_CLI_CMD_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

struct cli_command;

/* The only process-wide state: verbosity (-v) and the stop flag set by signal handlers. */
extern int verbose;
extern volatile sig_atomic_t exiting;

extern const struct cli_command cmd_list;
extern const struct cli_command cmd_parse_events;
extern const struct cli_command cmd_top;
extern const struct cli_command cmd_stat;
extern const struct cli_command cmd_report;
extern const struct cli_command cmd_script;
extern const struct cli_command cmd_evlist;
extern const struct cli_command cmd_record;
extern const struct cli_command cmd_probe;
extern const struct cli_command cmd_annotate;
extern const struct cli_command cmd_diff;
extern const struct cli_command cmd_buildid_list;
extern const struct cli_command cmd_buildid_cache;
extern const struct cli_command cmd_archive;
extern const struct cli_command cmd_inject;
extern const struct cli_command cmd_data;
extern const struct cli_command cmd_flamegraph;

/* "tally: <message>\n" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "tally: warning: <message>\n" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Flush and check a stream we wrote results to; reports ENOSPC/EIO etc. once.
 * Returns 0 if everything reached the file, 1 otherwise. EPIPE is silent (tally … | head). */
int cli_finish_output(FILE *f, const char *what);

#endif
