/*
 * The one option parser of the tally command (see options.h for the model).
 *
 * It follows perf 6.1's parse-options where users rely on it: long options by any
 * unique prefix (an exact name always wins; two candidates is an error naming them),
 * --no-NAME negation, and for an option named "no-X" the form --X to undo it; short
 * flags bundled (-vvv, -Fg) with an argument attached (-ecycles) or in the next word;
 * an optional argument only when attached (--opt=val, -xval); "--" ends the options;
 * -h lists the options sorted within each group as perf sorts them (by short letter
 * ignoring case, the long name breaking ties, long-only options last). Usage errors
 * print perf's message and usage and make the command exit 129, as perf's do:
 * "  Error: unknown option `foo'" with the whole usage after it, " Error: option `input'
 * requires a value" with the usage lines and that option's help line after it.
 */
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "options.h"

/* Inside the parser: 0 goes on, a positive number is the exit status, and this one says
 * -h or --list-opts printed what was asked (exit 0). */
#define HELP_DONE (-2)

static void help_line(const struct cli_opt *o, FILE *f);

struct parser {
	const struct cli_command *c;
	void *opts;
	int argc;
	char **argv;
	int i;			/* the word being read */
	struct cli_args *args;
	const struct spelled *sp;	/* the option being applied */
	const struct cli_opt *excl;	/* the CLI_EXCLUSIVE option given, if any */
};

static void usage_lines(const struct cli_command *c, FILE *f)
{
	for (size_t i = 0; c->usage && c->usage[i]; i++)
		fprintf(f, "%s tally %s\n", i ? "    or:" : "\n Usage:", c->usage[i]);
}

/* perf's usage_with_options_msg: "  Error: MSG", then the whole usage. */
static int usage_full(const struct cli_command *c, const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs("  Error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	cli_help(c, stderr);
	return 129;
}

int cli_usage_error(const struct cli_command *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_full(c, fmt, ap);
	va_end(ap);
	return 129;
}

static int unknown(const struct cli_command *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int unknown(const struct cli_command *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_full(c, fmt, ap);
	va_end(ap);
	return 129;
}

/* How the user named an option: a short letter, or a long name (with "no-" when unset). */
struct spelled {
	int ch;
	const char *word;	/* long: what followed "--" (perf lists the options it starts) */
	const struct cli_opt *o;
	bool unset;
};

/* perf's parse_options_usage after an option's error: " Error: ..." (the caller's
 * text), the usage lines, then the help line of each option the word names. */
static int opt_usage(const struct cli_command *c, const struct spelled *sp)
{
	usage_lines(c, stderr);
	fputc('\n', stderr);
	for (const struct cli_opt *o = c->opts; o->type != CLI_OPT_END; o++) {
		if (o->type == CLI_OPT_GROUP || (o->flags & CLI_HIDDEN))
			continue;
		if (sp->ch) {
			if (o->short_name == sp->ch) {
				help_line(o, stderr);
				break;
			}
		} else if (o->long_name && (!strncmp(o->long_name, sp->word, strlen(sp->word)) ||
					    (!strncmp(sp->word, "no-", 3) &&
					     !strncmp(o->long_name, sp->word + 3,
						      strlen(sp->word + 3))))) {
			help_line(o, stderr);
		}
	}
	return 129;
}

/* " Error: switch `x' REASON" / " Error: option `[no-]name' REASON", then the usage. */
static int opt_error(const struct cli_command *c, const struct spelled *sp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void opt_error_vhead(const struct spelled *sp, const char *fmt, va_list ap)
{
	fflush(stdout);
	if (sp->ch)
		fprintf(stderr, " Error: switch `%c' ", sp->ch);
	else if (sp->unset && !strncmp(sp->o->long_name, "no-", 3))
		fprintf(stderr, " Error: option `%s' ", sp->o->long_name + 3);	/* --X of no-X */
	else
		fprintf(stderr, " Error: option `%s%s' ", sp->unset ? "no-" : "", sp->o->long_name);
	vfprintf(stderr, fmt, ap);
}

static void opt_error_head(const struct spelled *sp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void opt_error_head(const struct spelled *sp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	opt_error_vhead(sp, fmt, ap);
	va_end(ap);
}

static int opt_error(const struct cli_command *c, const struct spelled *sp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	opt_error_vhead(sp, fmt, ap);
	va_end(ap);
	return opt_usage(c, sp);
}

const char *cli_opt_name(const struct cli_opt *opt, char *buf, size_t len)
{
	if (opt->short_name && opt->long_name)
		snprintf(buf, len, "-%c/--%s", opt->short_name, opt->long_name);
	else if (opt->long_name)
		snprintf(buf, len, "--%s", opt->long_name);
	else
		snprintf(buf, len, "-%c", opt->short_name);
	return buf;
}

/* ---- values ----------------------------------------------------------------------- */

/* perf's message for a word that is not a number; tally's range for one out of it */
static int bad_number(struct parser *p, const struct cli_opt *o, const char *arg, bool number)
{
	const struct spelled *sp = p->sp;

	if (!number)
		return opt_error(p->c, sp, "expects a%s numerical value",
				 o->type == CLI_OPT_UINT || o->type == CLI_OPT_U64 ? "n unsigned" : "");
	if (o->ranged && o->max >= 1e12)
		return opt_error(p->c, sp, "expects a number of at least %.15g, not '%s'",
				 o->min, arg);
	if (o->ranged)
		return opt_error(p->c, sp, "expects a number from %.15g to %.15g, not '%s'",
				 o->min, o->max, arg);
	return opt_error(p->c, sp, "expects a number that fits, not '%s'", arg);
}

/* A number as perf reads one (strtol base 0: 0x.. hex, 0.. octal), whole word only. */
static int set_number(struct parser *p, const struct cli_opt *o, const char *arg, bool unset)
{
	char *field = (char *)p->opts + o->off, *end;
	long long v = 0;
	unsigned long long u = 0;
	double d = 0;

	if (!unset) {
		errno = 0;
		if (o->type == CLI_OPT_DOUBLE) {
			d = strtod(arg, &end);
		} else if (o->type == CLI_OPT_UINT || o->type == CLI_OPT_U64) {
			while (isspace((unsigned char)*arg))
				arg++;
			if (*arg == '-')
				return bad_number(p, o, arg, false);
			u = strtoull(arg, &end, 0);
			d = (double)u;
		} else {
			v = strtoll(arg, &end, 0);
			d = (double)v;
		}
		if (end == arg || *end || isnan(d))
			return bad_number(p, o, arg, false);
		if (errno || (o->ranged && (d < o->min || d > o->max)))
			return bad_number(p, o, arg, true);
		if ((o->type == CLI_OPT_INT && (v < INT_MIN || v > INT_MAX)) ||
		    (o->type == CLI_OPT_UINT && u > UINT_MAX) ||
		    (o->type == CLI_OPT_LONG && (v < LONG_MIN || v > LONG_MAX)))
			return bad_number(p, o, arg, true);
	}
	switch (o->type) {
	case CLI_OPT_INT: *(int *)field = (int)v; break;
	case CLI_OPT_UINT: *(unsigned *)field = (unsigned)u; break;
	case CLI_OPT_LONG: *(long *)field = (long)v; break;
	case CLI_OPT_U64: *(uint64_t *)field = u; break;
	default: *(double *)field = d; break;
	}
	return 0;
}

/* Store the option's value (arg: its argument, NULL for none). 0 or an exit status. */
static int set_value(struct parser *p, const struct cli_opt *o, const char *arg, bool unset)
{
	char *field = (char *)p->opts + o->off;

	switch (o->type) {
	case CLI_OPT_BOOL:
		*(bool *)field = !unset;
		return 0;
	case CLI_OPT_INCR:
		*(int *)field = unset ? 0 : *(int *)field + 1;
		return 0;
	case CLI_OPT_SET:
		*(int *)field = unset ? 0 : (int)o->value;
		return 0;
	case CLI_OPT_STRING:
		*(const char **)field = unset ? NULL : arg;
		return 0;
	case CLI_OPT_VERBOSE:
		verbose = unset ? 0 : verbose + 1;
		return 0;
	case CLI_OPT_CALLBACK:
		if (!o->cb(p->opts, o, arg, unset))
			return 0;
		return p->sp ? opt_usage(p->c, p->sp) : 129;
	case CLI_OPT_REFUSED:
		if (unset)
			return 0;	/* --no-X of what tally never does: what it does anyway */
		cli_error("%s", o->refused);
		return 1;
	default:
		return set_number(p, o, arg, unset);
	}
}

static bool negatable(const struct cli_opt *o)
{
	if (o->flags & CLI_NONEG)
		return false;
	if (o->type == CLI_OPT_CALLBACK)
		return o->flags & CLI_NEG;
	return true;
}

/* perf's message for two options of which one may be given, with both help lines. */
static int exclusive_error(struct parser *p, const struct spelled *sp)
{
	const struct cli_opt *first = p->excl;

	if ((sp->ch && first->short_name) || !first->long_name)
		opt_error_head(sp, "cannot be used with switch `%c'", first->short_name);
	else
		opt_error_head(sp, "cannot be used with %s", first->long_name);
	usage_lines(p->c, stderr);
	fputc('\n', stderr);
	for (const struct cli_opt *o = p->c->opts; o->type != CLI_OPT_END; o++)
		if (o == first || o == sp->o)
			help_line(o, stderr);
	return 129;
}

/* Find the argument (attached: after '=' or the rest of a short bundle) and apply. */
static int apply(struct parser *p, const struct spelled *sp, const char *attached)
{
	const struct cli_opt *o = sp->o;
	const char *arg = NULL;
	char *next = p->i + 1 < p->argc ? p->argv[p->i + 1] : NULL;

	p->sp = sp;
	if ((o->flags & CLI_EXCLUSIVE) && p->excl && p->excl != o)
		return exclusive_error(p, sp);
	if (o->flags & CLI_EXCLUSIVE)
		p->excl = o;
	if (sp->unset) {
		if (!negatable(o))
			return opt_error(p->c, sp, "isn't available");
		if (attached)
			return opt_error(p->c, sp, "takes no value");
		return set_value(p, o, NULL, true);
	}
	switch (o->arg) {
	case CLI_ARG_NONE:
		if (attached)
			return opt_error(p->c, sp, "takes no value");
		break;
	case CLI_ARG_REQUIRED:
		if (attached)
			arg = attached;
		else if (next)
			arg = p->argv[++p->i];
		else
			return opt_error(p->c, sp, "requires a value");
		break;
	case CLI_ARG_OPTIONAL:
		arg = attached ? attached : o->defarg;
		break;
	case CLI_ARG_LASTARG_DEFAULT:
		if (attached)
			arg = attached;
		else if (next && next[0] != '-')
			arg = p->argv[++p->i];
		else
			arg = o->defarg;
		break;
	}
	return set_value(p, o, arg, false);
}

/* ---- long options -------------------------------------------------------------------- */

/* Does `word` (n chars) start `name`? Exact when the lengths agree. */
static bool starts(const char *name, const char *word, size_t n)
{
	return !strncmp(name, word, n);
}

static bool exact(const char *name, const char *word, size_t n)
{
	return strlen(name) == n && starts(name, word, n);
}

/* Match --word against the table: exact names first, then perf's forms of negation, then
 * unique prefixes. Returns the option, or NULL with *ambiguous set when two matched. */
static const struct cli_opt *match_long(const struct cli_opt *opts, const char *word, size_t n,
					bool *unset, const struct cli_opt **other,
					const struct cli_opt **last, bool *other_unset)
{
	const struct cli_opt *abbrev = NULL;
	bool abbrev_unset = false;
	bool no = n >= 3 && !strncmp(word, "no-", 3);

	*other = *last = NULL;
	for (const struct cli_opt *o = opts; o->type != CLI_OPT_END; o++) {
		const char *l = o->long_name;
		bool neg = false, hit = false;

		if (!l)
			continue;
		if (exact(l, word, n)) {
			*unset = false;
			return o;
		}
		if (no && exact(l, word + 3, n - 3)) {
			*unset = true;
			return o;
		}
		if (!strncmp(l, "no-", 3) && exact(l + 3, word, n)) {
			*unset = true;	/* --inherit undoes --no-inherit */
			return o;
		}
		if (starts(l, word, n))
			hit = true;
		else if (!strncmp(l, "no-", 3) && starts(l + 3, word, n))
			hit = neg = true;
		else if (no && starts(l, word + 3, n - 3))
			hit = neg = true;
		else if (n < 3 && !strncmp("no-", word, n))
			hit = neg = true;	/* --n, --no: perf reads them as negations */
		if (!hit)
			continue;
		if (abbrev) {
			*other = abbrev;
			*other_unset = abbrev_unset;
		}
		abbrev = o;
		abbrev_unset = neg;
	}
	*last = abbrev;
	if (*other) {
		*unset = abbrev_unset;
		return NULL;
	}
	*unset = abbrev_unset;
	return abbrev;
}

static int parse_long(struct parser *p, const char *a)
{
	const char *word = a + 2, *eq = strchr(word, '=');
	size_t n = eq ? (size_t)(eq - word) : strlen(word);
	const struct cli_opt *o, *other, *last;
	bool unset = false, other_unset = false;
	struct spelled sp = { .word = word };

	o = match_long(p->c->opts, word, n, &unset, &other, &last, &other_unset);
	if (!o && other) {
		fflush(stdout);
		fprintf(stderr, " Error: Ambiguous option: %s (could be --%s%s or --%s%s)\n", word,
			other_unset ? "no-" : "", other->long_name, unset ? "no-" : "",
			last->long_name);
		return opt_usage(p->c, &sp);
	}
	if (!o)
		return unknown(p->c, "unknown option `%s'", word);
	sp.o = o;
	sp.unset = unset;
	return apply(p, &sp, eq ? eq + 1 : NULL);
}

/* ---- short options ------------------------------------------------------------------- */

static const struct cli_opt *find_short(const struct cli_opt *opts, int ch)
{
	for (const struct cli_opt *o = opts; o->type != CLI_OPT_END; o++)
		if (o->short_name == ch && o->type != CLI_OPT_GROUP)
			return o;
	return NULL;
}

/* -abc: each letter an option; one that takes an argument takes the rest of the word. */
static int parse_shorts(struct parser *p, const char *a)
{
	for (const char *s = a + 1; *s; s++) {
		const struct cli_opt *o = find_short(p->c->opts, *s);
		struct spelled sp = { .ch = (unsigned char)*s, .o = o };
		int ret;

		if (!o && *s == 'h') {
			cli_help(p->c, stdout);
			return HELP_DONE;
		}
		if (!o)
			return unknown(p->c, "unknown switch `%c'", *s);
		if (o->arg != CLI_ARG_NONE)
			return apply(p, &sp, s[1] ? s + 1 : NULL);
		ret = apply(p, &sp, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- the loop ------------------------------------------------------------------------ */

static void list_opts(const struct cli_command *c)
{
	for (const struct cli_opt *o = c->opts; o->type != CLI_OPT_END; o++)
		if (o->long_name)
			printf("--%s ", o->long_name);
	putchar('\n');
}

/* One word starting with '-': 0 to go on, else the exit status (or HELP_DONE). */
static int parse_word(struct parser *p, const char *a)
{
	if (a[1] == '-') {
		if (!strcmp(a, "--help")) {
			cli_help(p->c, stdout);
			return HELP_DONE;
		}
		if (!strcmp(a, "--list-opts")) {
			list_opts(p->c);
			return HELP_DONE;
		}
		return parse_long(p, a);
	}
	return parse_shorts(p, a);
}

int cli_parse(const struct cli_command *c, int argc, char **argv, void *opts,
	      struct cli_args *args)
{
	struct parser p = { c, opts, argc, argv, 1, args };
	int ret;

	memset(args, 0, sizeof(*args));
	args->full_argc = argc;
	args->full_argv = argv;
	args->argv = calloc((size_t)argc + 1, sizeof(*args->argv));
	if (!args->argv) {
		cli_error("out of memory");
		return 1;
	}
	for (; p.i < argc; p.i++) {
		char *a = argv[p.i];

		if (!strcmp(a, "--")) {
			p.i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (c->flags & CLI_STOP_AT_ARG)
				break;
			args->argv[args->argc++] = a;
			continue;
		}
		ret = parse_word(&p, a);
		if (ret == HELP_DONE) {
			ret = 0;
			goto fail;	/* done: exit 0 */
		}
		if (ret)
			goto fail;
	}
	while (p.i < argc)
		args->argv[args->argc++] = argv[p.i++];
	if (c->max_args != CLI_ANY_ARGS && args->argc > c->max_args) {
		ret = cli_usage_error(c, "unexpected argument '%s'%s%s", args->argv[c->max_args],
				      c->args_hint ? " " : "", c->args_hint ? c->args_hint : "");
		goto fail;
	}
	if (args->argc < c->min_args) {
		ret = cli_usage_error(c, "%s", c->args_hint ? c->args_hint : "missing argument");
		goto fail;
	}
	return -1;
fail:
	free(args->argv);
	args->argv = NULL;
	return ret;
}

/* ---- -h ------------------------------------------------------------------------------ */

/* perf's order: by short letter ignoring case (none sorts last), then the long name. */
static int opt_cmp(const void *pa, const void *pb)
{
	const struct cli_opt *a = *(const struct cli_opt *const *)pa;
	const struct cli_opt *b = *(const struct cli_opt *const *)pb;
	int sa = a->short_name ? tolower(a->short_name) : 'z' + 1;
	int sb = b->short_name ? tolower(b->short_name) : 'z' + 1;

	if (sa != sb)
		return sa - sb;
	return strcmp(a->long_name ? a->long_name : "", b->long_name ? b->long_name : "");
}

static void help_line(const struct cli_opt *o, FILE *f)
{
	const char *h = o->help ? o->help : "";
	int pos = fprintf(f, "    ");

	pos += o->short_name ? fprintf(f, "-%c", o->short_name) : fprintf(f, "    ");
	if (o->short_name && o->long_name)
		pos += fprintf(f, ", ");
	if (o->long_name)
		pos += fprintf(f, "--%s", o->long_name);
	if (o->arg == CLI_ARG_OPTIONAL)
		pos += fprintf(f, o->long_name ? "[=<%s>]" : "[<%s>]", o->argh ? o->argh : "...");
	else if (o->arg != CLI_ARG_NONE)
		pos += fprintf(f, " <%s>", o->argh ? o->argh : "...");
	if (pos <= 24) {
		fprintf(f, "%*s", 26 - pos, "");
	} else {
		fputc('\n', f);
		fprintf(f, "%26s", "");
	}
	/* a help of several lines: the next ones under the first */
	for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
		fprintf(f, "%.*s\n%26s", (int)(nl - h), h, "");
	fprintf(f, "%s\n", h);
}

static void help_group(const struct cli_opt **v, size_t n, FILE *f)
{
	qsort(v, n, sizeof(*v), opt_cmp);
	for (size_t i = 0; i < n; i++)
		help_line(v[i], f);
}

void cli_help(const struct cli_command *c, FILE *f)
{
	const struct cli_opt **group;
	size_t n = 0, nr = 1;

	for (const struct cli_opt *o = c->opts; o->type != CLI_OPT_END; o++)
		nr++;
	group = calloc(nr, sizeof(*group));
	if (!group) {
		cli_error("out of memory");
		return;
	}
	usage_lines(c, f);
	fputc('\n', f);
	for (const struct cli_opt *o = c->opts; o->type != CLI_OPT_END; o++) {
		if (o->type == CLI_OPT_GROUP) {
			help_group(group, n, f);
			n = 0;
			if (o != c->opts)
				fputc('\n', f);
			if (o->help && *o->help)
				fprintf(f, "%s\n", o->help);
		} else if (!(o->flags & CLI_HIDDEN)) {
			group[n++] = o;
		}
	}
	help_group(group, n, f);
	fputc('\n', f);
	if (c->footer)
		fprintf(f, "%s\n", c->footer);
	free(group);
}

/* ---- running a command --------------------------------------------------------------- */

/* argv: the command's words; full: the whole command line from the top command's name
 * (headers record it: "stat record -o x ls"). */
static int run(const struct cli_command *c, int argc, char **argv, int full_argc, char **full)
{
	struct cli_args args;
	void *opts;
	int ret;

	for (size_t i = 0; argc > 1 && c->subcommands && c->subcommands[i]; i++) {
		const char *sub = strrchr(c->subcommands[i]->name, ' ');

		if (sub && !strcmp(sub + 1, argv[1]))
			return run(c->subcommands[i], argc - 1, argv + 1, full_argc, full);
	}
	/* other commands keep the C locale, as perf's do: its numbers, dates and messages
	 * (and no locale files to load) */
	if (c->flags & CLI_LOCALE)
		setlocale(LC_ALL, "");
	opts = calloc(1, c->size ? c->size : 1);
	if (!opts) {
		cli_error("out of memory");
		return 1;
	}
	ret = c->init ? c->init(opts) : 0;
	if (!ret) {
		ret = cli_parse(c, argc, argv, opts, &args);
		if (ret < 0) {
			args.full_argc = full_argc;
			args.full_argv = full;
			ret = c->exec(opts, &args);
			free(args.argv);
		}
	}
	if (c->exit)
		c->exit(opts);
	free(opts);
	return ret;
}

int cli_run(const struct cli_command *c, int argc, char **argv)
{
	return run(c, argc, argv, argc, argv);
}
