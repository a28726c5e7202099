/*
 * tally: entry point. Reads global options, finds the subcommand in the table and
 * runs it. The table is the only list of commands; help and usage come from it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "options.h"
#include "tally-config.h"

int verbose;
volatile sig_atomic_t exiting;

static const struct cli_command *const commands[] = {
	&cmd_list, &cmd_parse_events, &cmd_top, &cmd_stat, &cmd_report, &cmd_script,
	&cmd_evlist, &cmd_record, &cmd_annotate, &cmd_diff, &cmd_buildid_list,
	&cmd_buildid_cache, &cmd_inject, &cmd_probe, &cmd_data, &cmd_flamegraph,
	&cmd_archive,
};

static const char usage_text[] =
	"\n Usage: tally [--version] [--help] [-v] [--buildid-dir DIR] COMMAND [ARGS]\n\n"
	" The most commonly used tally commands are:\n";

static void print_usage(FILE *f)
{
	fputs(usage_text, f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "   %-11s %s\n", commands[i]->name, commands[i]->summary);
	fputs("\n See 'tally help COMMAND' for more information on a specific command.\n\n", f);
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tally: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("tally: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_finish_output(FILE *f, const char *what)
{
	int err = 0;

	if (fflush(f) != 0 || ferror(f))
		err = errno ? errno : EIO;
	if (f != stdout && f != stderr) {
		if (fclose(f) != 0 && !err)
			err = errno ? errno : EIO;
	}
	if (!err)
		return 0;
	if (err != EPIPE)
		cli_error("writing %s failed: %s", what, strerror(err));
	return 1;
}

static int run_command(const struct cli_command *c, int argc, char **argv)
{
	int ret = cli_run(c, argc, argv);

	if (ret == 0 && cli_finish_output(stdout, "standard output"))
		ret = 1;
	return ret;
}

int main(int argc, char **argv)
{
	const struct cli_command *c;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_usage(stdout);
			return cli_finish_output(stdout, "standard output");
		} else if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
			printf("tally version %s\n", TALLY_VERSION);
			return cli_finish_output(stdout, "standard output");
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose++;
		} else if (!strcmp(a, "--buildid-dir") || !strncmp(a, "--buildid-dir=", 14)) {
			/* as perf: the cache directory travels in $PERF_BUILDID_DIR, which the
			 * library reads (and a workload or helper inherits) */
			const char *dir = a[13] == '=' ? a + 14 : (i + 1 < argc ? argv[++i] : NULL);

			if (!dir || !*dir) {
				cli_error("--buildid-dir needs a directory");
				return 129;
			}
			setenv("PERF_BUILDID_DIR", dir, 1);
		} else {
			fprintf(stderr, "Unknown option: %s\n", a);	/* perf's words */
			print_usage(stderr);
			return 129;
		}
	}
	if (i >= argc) {
		print_usage(stdout);
		return 1;
	}
	if (!strcmp(argv[i], "version")) {
		printf("tally version %s\n", TALLY_VERSION);
		return cli_finish_output(stdout, "standard output");
	}
	if (!strcmp(argv[i], "help")) {
		if (i + 1 >= argc) {
			print_usage(stdout);
			return cli_finish_output(stdout, "standard output");
		}
		c = find_command(argv[i + 1]);
		if (!c) {
			cli_error("'%s' is not a tally command. See 'tally --help'.", argv[i + 1]);
			return 1;
		}
		cli_help(c, stdout);
		return cli_finish_output(stdout, "standard output");
	}
	c = find_command(argv[i]);
	if (!c) {
		cli_error("'%s' is not a tally command. See 'tally --help'.", argv[i]);
		return 1;
	}
	return run_command(c, argc - i, argv + i);
}
