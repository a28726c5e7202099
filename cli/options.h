/*
 * Commands as data: each subcommand describes its options (names as perf spells them,
 * argument kind, help, the field of its option struct they fill or a callback), its
 * usage lines and its entry point in one `struct cli_command`. cli_run() does the rest
 * the same way for every command: perf's parse-options syntax (--opt=val and --opt val,
 * bundled short flags -vvv/-Fg, -ecycles, unique prefixes of long options, --no-NAME
 * for anything not marked CLI_NONEG, "--" ends the options), `-h`/`--help`, perf's
 * hidden --list-opts (bash completion), stray arguments, and one message and exit
 * status 129 for every usage error, whichever command it is.
 *
 * Declaring a command (see docs/options.md and any cmd-*.c):
 *
 *   #define CLI_OPTS struct evlist_opts          (the struct the macros' fields are in)
 *   static const struct cli_opt evlist_options[] = {
 *           OPT_STRING('i', "input", input, "file", "Input file name"),
 *           OPT_BOOL('f', "force", force, "don't complain, do it"),
 *           OPT_END(),
 *   };
 *   const struct cli_command cmd_evlist = {
 *           .name = "evlist", .summary = "...", .usage = evlist_usage,
 *           .opts = evlist_options, .size = sizeof(struct evlist_opts),
 *           .exec = evlist_exec, .max_args = 0,
 *   };
 */
#ifndef TALLY_CLI_OPTIONS_H
#define TALLY_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cli_opt_type {
	CLI_OPT_END,
	CLI_OPT_GROUP,		/* a heading in -h; help is the heading ("" = blank line) */
	CLI_OPT_BOOL,		/* bool = true; --no-NAME: false */
	CLI_OPT_INCR,		/* int += 1; --no-NAME: 0 */
	CLI_OPT_SET,		/* int = value; --no-NAME: 0 */
	CLI_OPT_STRING,		/* const char * = the argument; --no-NAME: NULL */
	CLI_OPT_INT,		/* int, from a number (base 0, as perf); --no-NAME: 0 */
	CLI_OPT_UINT,		/* unsigned */
	CLI_OPT_LONG,		/* long */
	CLI_OPT_U64,		/* uint64_t */
	CLI_OPT_DOUBLE,		/* double */
	CLI_OPT_CALLBACK,	/* cb(opts, opt, arg, unset) */
	CLI_OPT_VERBOSE,	/* the global verbosity += 1; --no-NAME: 0 */
	CLI_OPT_REFUSED,	/* recognized, and refused: prints .refused, exits 1 */
};

enum cli_arg {
	CLI_ARG_NONE,
	CLI_ARG_REQUIRED,	/* --opt=val, --opt val, -xval, -x val */
	CLI_ARG_OPTIONAL,	/* only --opt=val or -xval; else .defarg */
	CLI_ARG_LASTARG_DEFAULT,/* as required, but when the next word is missing or starts
				 * with '-', .defarg (perf's -l/-g of probe and report) */
};

/* flags */
#define CLI_NONEG	0x1	/* no --no-NAME form */
#define CLI_HIDDEN	0x2	/* not listed by -h */
#define CLI_NEG		0x4	/* callbacks: --no-NAME allowed (cb sees unset) */
#define CLI_EXCLUSIVE	0x8	/* at most one option of the table with this flag */

struct cli_opt;
/* Returns 0, or -1 after printing why the argument is wrong (the run exits 129). */
typedef int (*cli_opt_cb)(void *opts, const struct cli_opt *opt, const char *arg, bool unset);

struct cli_opt {
	enum cli_opt_type type;
	int short_name;
	const char *long_name;
	const char *argh;	/* the argument's name shown in -h as <argh> */
	const char *help;	/* one line (more after '\n', indented under the first) */
	size_t off;		/* the field in the command's option struct */
	enum cli_arg arg;
	unsigned flags;
	long long value;	/* CLI_OPT_SET: the value */
	bool ranged;		/* numbers: .min <= v <= .max */
	double min, max;
	const char *defarg;	/* optional argument's default (NULL: callback gets NULL) */
	cli_opt_cb cb;
	const char *refused;	/* CLI_OPT_REFUSED: the one line that says what is missing */
};

/* Type-checked field offset: the macros below refuse a field of another type. */
#define CLI_FIELD(T, f)							\
	(offsetof(CLI_OPTS, f) + 0 * sizeof(struct {			\
		_Static_assert(__builtin_types_compatible_p(		\
			__typeof__(((CLI_OPTS *)0)->f), T),		\
			"option field " #f " is not " #T);		\
		char c; }))

#define OPT_END()	{ .type = CLI_OPT_END }
#define OPT_GROUP(h)	{ .type = CLI_OPT_GROUP, .help = (h) }
/* Every macro takes more designated initializers after its own, e.g. .flags = CLI_HIDDEN */
#define OPT_BOOL(s, l, f, h, ...) \
	{ .type = CLI_OPT_BOOL, .short_name = (s), .long_name = (l), .help = (h), \
	  .off = CLI_FIELD(bool, f), __VA_ARGS__ }
#define OPT_INCR(s, l, f, h, ...) \
	{ .type = CLI_OPT_INCR, .short_name = (s), .long_name = (l), .help = (h), \
	  .off = CLI_FIELD(int, f), __VA_ARGS__ }
#define OPT_SET(s, l, f, v, h, ...) \
	{ .type = CLI_OPT_SET, .short_name = (s), .long_name = (l), .help = (h), \
	  .off = CLI_FIELD(int, f), .value = (v), __VA_ARGS__ }
/* an enum field (the size of an int) set to v */
#define OPT_SET_ENUM(s, l, f, T, v, h, ...) \
	{ .type = CLI_OPT_SET, .short_name = (s), .long_name = (l), .help = (h), \
	  .off = CLI_FIELD(T, f) + 0 * sizeof(char[sizeof(T) == sizeof(int) ? 1 : -1]), \
	  .value = (v), __VA_ARGS__ }
#define OPT_STRING(s, l, f, a, h, ...) \
	{ .type = CLI_OPT_STRING, .short_name = (s), .long_name = (l), .argh = (a), \
	  .help = (h), .off = CLI_FIELD(const char *, f), .arg = CLI_ARG_REQUIRED, __VA_ARGS__ }
#define OPT_STRING_OPTARG(s, l, f, a, h, d, ...) \
	{ .type = CLI_OPT_STRING, .short_name = (s), .long_name = (l), .argh = (a), \
	  .help = (h), .off = CLI_FIELD(const char *, f), .arg = CLI_ARG_OPTIONAL, \
	  .defarg = (d), __VA_ARGS__ }
#define CLI_NUM(t, T, s, l, f, a, h, ...) \
	{ .type = (t), .short_name = (s), .long_name = (l), .argh = (a), .help = (h), \
	  .off = CLI_FIELD(T, f), .arg = CLI_ARG_REQUIRED, __VA_ARGS__ }
#define OPT_INT(s, l, f, a, h, ...)	CLI_NUM(CLI_OPT_INT, int, s, l, f, a, h, __VA_ARGS__)
#define OPT_UINT(s, l, f, a, h, ...)	CLI_NUM(CLI_OPT_UINT, unsigned, s, l, f, a, h, __VA_ARGS__)
#define OPT_LONG(s, l, f, a, h, ...)	CLI_NUM(CLI_OPT_LONG, long, s, l, f, a, h, __VA_ARGS__)
#define OPT_U64(s, l, f, a, h, ...)	CLI_NUM(CLI_OPT_U64, uint64_t, s, l, f, a, h, __VA_ARGS__)
#define OPT_DOUBLE(s, l, f, a, h, ...)	CLI_NUM(CLI_OPT_DOUBLE, double, s, l, f, a, h, __VA_ARGS__)
/* numbers limited to lo..hi: add CLI_RANGED(lo, hi) */
#define CLI_RANGED(lo, hi)	.ranged = true, .min = (lo), .max = (hi)
/* A callback taking an argument of kind k (CLI_ARG_*); d: the default of an optional one. */
#define OPT_CALLBACK_ARG(s, l, a, h, fn, k, d, ...) \
	{ .type = CLI_OPT_CALLBACK, .short_name = (s), .long_name = (l), .argh = (a), \
	  .help = (h), .cb = (fn), .arg = (k), .defarg = (d), __VA_ARGS__ }
#define OPT_CALLBACK(s, l, a, h, fn, ...) \
	OPT_CALLBACK_ARG(s, l, a, h, fn, CLI_ARG_REQUIRED, NULL, __VA_ARGS__)
#define OPT_CALLBACK_NOARG(s, l, h, fn, ...) \
	OPT_CALLBACK_ARG(s, l, NULL, h, fn, CLI_ARG_NONE, NULL, __VA_ARGS__)
#define OPT_VERBOSE_AS(s, l, h) \
	{ .type = CLI_OPT_VERBOSE, .short_name = (s), .long_name = (l), .help = (h) }
#define OPT_VERBOSE(h)	OPT_VERBOSE_AS('v', "verbose", h)
/* Recognized, never silently ignored: using it prints `why` and exits 1. */
#define OPT_REFUSED(s, l, a, k, h, why, ...) \
	{ .type = CLI_OPT_REFUSED, .short_name = (s), .long_name = (l), .argh = (a), \
	  .help = (h), .arg = (k), .refused = (why), __VA_ARGS__ }

/* Why an option is refused, for what several commands lack alike. */
#define CLI_NO_AUX(opt) opt " decodes AUX area traces (intel_pt, cs_etm, arm_spe): tally " \
	"does not decode them"
#define CLI_NO_LBR(opt) opt " needs branch stacks (LBR), which tally does not read"
#define CLI_NO_GUEST(opt) opt ": tally does not resolve guest (KVM) samples"
#define CLI_NO_SCRIPTS(opt) opt ": tally has no script languages (perl, python); read " \
	"'tally script' text, or write a C program on libtally"
#define CLI_NO_ANNOTATE_TUI(cmd, opt) opt " changes only perf " cmd "'s TUI annotate view, " \
	"which tally " cmd " does not have: use 'tally annotate " opt "'"
#define CLI_NO_DLFILTER(opt) opt ": tally does not load perf's dlfilter plugins (.so)"

/* record's and top's synthesis options, accepted with nothing for tally to change (no
 * BPF side-band is asked for; one thread reads every map from /proc). The option
 * struct needs no_bpf_event, nr_thread_synth and proc_map_timeout. */
#define OPT_ACCEPTED_SYNTH(cmd)							\
	OPT_BOOL(0, "no-bpf-event", no_bpf_event,				\
		 "do not record bpf events (tally " cmd " never asks for them)",	\
		 .flags = CLI_NONEG),						\
	OPT_INT(0, "num-thread-synthesize", nr_thread_synth, "n",		\
		"number of threads to run for event synthesis (tally synthesizes on one)", \
		CLI_RANGED(1, 4096)),						\
	OPT_UINT(0, "proc-map-timeout", proc_map_timeout, "n",			\
		 "per thread proc mmap processing timeout in ms (tally reads every map)")

/* Shared values (option-values.c): "a,b,c" into a char ** strlist (strlist_free), a CPU
 * list into a struct tally_cpumap * (tally_cpumap__delete). --no-NAME empties them. */
struct tally_cpumap;
int cli_opt_strlist(void *opts, const struct cli_opt *opt, const char *arg, bool unset);
int cli_opt_cpumap(void *opts, const struct cli_opt *opt, const char *arg, bool unset);
#define OPT_STRLIST(s, l, f, a, h, ...) \
	{ .type = CLI_OPT_CALLBACK, .short_name = (s), .long_name = (l), .argh = (a), \
	  .help = (h), .off = CLI_FIELD(char **, f), .cb = cli_opt_strlist, \
	  .arg = CLI_ARG_REQUIRED, .flags = CLI_NEG, __VA_ARGS__ }
#define OPT_CPUMAP(s, l, f, a, h, ...) \
	{ .type = CLI_OPT_CALLBACK, .short_name = (s), .long_name = (l), .argh = (a), \
	  .help = (h), .off = CLI_FIELD(struct tally_cpumap *, f), .cb = cli_opt_cpumap, \
	  .arg = CLI_ARG_REQUIRED, .flags = CLI_NEG, __VA_ARGS__ }

/* --column-widths w[,w...] (report, top): perf's fixed widths of the columns, in order
 * (0: the column's own). --no-NAME empties the list. */
struct cli_widths {
	unsigned w[64];
	size_t nr;
};
int cli_opt_widths(void *opts, const struct cli_opt *opt, const char *arg, bool unset);
#define OPT_WIDTHS(s, l, f, h, ...) \
	{ .type = CLI_OPT_CALLBACK, .short_name = (s), .long_name = (l), \
	  .argh = "width[,width...]", .help = (h), .off = CLI_FIELD(struct cli_widths, f), \
	  .cb = cli_opt_widths, .arg = CLI_ARG_REQUIRED, .flags = CLI_NEG, __VA_ARGS__ }

/* The non-option arguments, and the whole command line (for headers that record it). */
struct cli_args {
	int argc;
	char **argv;
	int full_argc;
	char **full_argv;
};

#define CLI_STOP_AT_ARG	0x1	/* the first non-option word ends the options (a workload) */
#define CLI_LOCALE	0x2	/* numbers follow the user's locale (stat's thousands grouping,
			 * top's terminal): setlocale before parsing, as perf stat does */
#define CLI_ANY_ARGS	-1

struct cli_command {
	const char *name;		/* as typed after "tally": "stat", "stat record" */
	const char *summary;		/* one line for 'tally --help' */
	const char *const *usage;	/* usage lines after "tally ", NULL-terminated */
	const char *footer;		/* -h: printed after the options */
	const struct cli_opt *opts;
	unsigned flags;
	int min_args, max_args;		/* non-option arguments (CLI_ANY_ARGS: no limit) */
	const char *args_hint;		/* what to do instead of a stray argument */
	size_t size;			/* of the option struct (zeroed, then .init) */
	int (*init)(void *opts);	/* defaults (perf config too); 0 or exit status */
	int (*exec)(void *opts, const struct cli_args *args);	/* the exit status */
	void (*exit)(void *opts);	/* frees what options allocated */
	const struct cli_command *const *subcommands;	/* "stat record": argv[1] */
};

/* Parse, run and exit (free) one command: argv[0] is its name. Returns the exit status. */
int cli_run(const struct cli_command *c, int argc, char **argv);
/* Parse argv into opts. Returns -1 to go on (args filled), else the exit status:
 * 0 after -h/--list-opts, 129 after a usage error (one message printed). */
int cli_parse(const struct cli_command *c, int argc, char **argv, void *opts,
	      struct cli_args *args);
/* -h's text. */
void cli_help(const struct cli_command *c, FILE *f);
/* "-r/--repeat", "--summary" or "-g": how to name an option in a message. */
const char *cli_opt_name(const struct cli_opt *opt, char *buf, size_t len);
/* "tally: CMD: <message> (see 'tally CMD -h')" and 129: for usage errors found after
 * parsing (options that cannot go together, a missing argument). */
int cli_usage_error(const struct cli_command *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The field an option fills, for callbacks that share code. */
#define CLI_FIELD_PTR(opts, opt, T) ((T *)((char *)(opts) + (opt)->off))

#endif
