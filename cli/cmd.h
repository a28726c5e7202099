/*
 * The tally command: the table of subcommands and helpers every subcommand shares.
 *
 * Each subcommand lives in cli/cmd-NAME.c and exports one entry point,
 * `int cmd_NAME(int argc, char **argv)`, where argv[0] is the subcommand's name.
 * It parses its options into its own struct, does its work and returns the process
 * exit status. Errors are printed once, as an actionable message, via cli_error().
 */
#ifndef TALLY_CLI_CMD_H
#define TALLY_CLI_CMD_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* The only process-wide state: verbosity (-v) and the stop flag set by signal handlers. */
extern int verbose;
extern volatile sig_atomic_t exiting;

int cmd_list(int argc, char **argv);
int cmd_parse_events(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_evlist(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_buildid_list(int argc, char **argv);
int cmd_buildid_cache(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_inject(int argc, char **argv);

/* "tally: <message>\n" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "tally: warning: <message>\n" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Flush and check a stream we wrote results to; reports ENOSPC/EIO etc. once.
 * Returns 0 if everything reached the file, 1 otherwise. EPIPE is silent (tally … | head). */
int cli_finish_output(FILE *f, const char *what);
/* Print the usage text to stdout (for -h) or stderr (after a bad option). */
void cli_usage(FILE *f, const char *usage);

#endif
