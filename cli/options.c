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
 * print one line and make the command exit 129, as perf's do.
 */
#include <ctype.h>
#include <errno.h>
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

struct parser {
	const struct cli_command *c;
	void *opts;
	int argc;
	char **argv;
	int i;			/* the word being read */
	struct cli_args *args;
};

static void verror(const struct cli_command *c, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	cli_error("%s: %s", c->name, msg);
}

int cli_usage_error(const struct cli_command *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(c, fmt, ap);
	va_end(ap);
	return 129;
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

static int bad_number(struct parser *p, const struct cli_opt *o, const char *arg)
{
	char name[96];

	cli_opt_name(o, name, sizeof(name));
	if (o->ranged && o->max >= 1e12)
		return cli_usage_error(p->c, "%s expects a number of at least %.15g, not '%s'",
				       name, o->min, arg);
	if (o->ranged)
		return cli_usage_error(p->c, "%s expects a number from %.15g to %.15g, not '%s'",
				       name, o->min, o->max, arg);
	return cli_usage_error(p->c, "%s expects a%s number, not '%s'", name,
			       o->type == CLI_OPT_UINT || o->type == CLI_OPT_U64 ?
			       "n unsigned" : "", arg);
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
				return bad_number(p, o, arg);
			u = strtoull(arg, &end, 0);
			d = (double)u;
		} else {
			v = strtoll(arg, &end, 0);
			d = (double)v;
		}
		if (errno || end == arg || *end || isnan(d))
			return bad_number(p, o, arg);
		if (o->ranged && (d < o->min || d > o->max))
			return bad_number(p, o, arg);
		if ((o->type == CLI_OPT_INT && (v < INT_MIN || v > INT_MAX)) ||
		    (o->type == CLI_OPT_UINT && u > UINT_MAX) ||
		    (o->type == CLI_OPT_LONG && (v < LONG_MIN || v > LONG_MAX)))
			return bad_number(p, o, arg);
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
		return o->cb(p->opts, o, arg, unset) ? 129 : 0;
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

/* Find the argument (attached: after '=' or the rest of a short bundle) and apply. */
static int apply(struct parser *p, const struct cli_opt *o, const char *spelled,
		 const char *attached, bool unset)
{
	const char *arg = NULL;
	char *next = p->i + 1 < p->argc ? p->argv[p->i + 1] : NULL;

	if (unset) {
		if (!negatable(o))
			return cli_usage_error(p->c, "option '%s' cannot be negated", spelled);
		if (attached)
			return cli_usage_error(p->c, "option '%s' takes no value", spelled);
		return set_value(p, o, NULL, true);
	}
	switch (o->arg) {
	case CLI_ARG_NONE:
		if (attached)
			return cli_usage_error(p->c, "option '%s' takes no value", spelled);
		break;
	case CLI_ARG_REQUIRED:
		if (attached)
			arg = attached;
		else if (next)
			arg = p->argv[++p->i];
		else
			return cli_usage_error(p->c, "option '%s' needs a value", spelled);
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
					const struct cli_opt **last)
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
		if (abbrev)
			*other = abbrev;
		abbrev = o;
		abbrev_unset = neg;
	}
	*last = abbrev;
	if (*other)
		return NULL;
	*unset = abbrev_unset;
	return abbrev;
}

static int parse_long(struct parser *p, const char *a)
{
	const char *word = a + 2, *eq = strchr(word, '=');
	size_t n = eq ? (size_t)(eq - word) : strlen(word);
	const struct cli_opt *o, *other, *last;
	char spelled[256];
	bool unset;

	o = match_long(p->c->opts, word, n, &unset, &other, &last);
	if (!o && other)
		return cli_usage_error(p->c, "option '--%.*s' is ambiguous: it could be --%s or --%s",
				       (int)n, word, other->long_name, last->long_name);
	if (!o)
		return cli_usage_error(p->c, "unknown option '--%.*s' (see 'tally %s -h')",
				       (int)n, word, p->c->name);
	if (unset && !strncmp(o->long_name, "no-", 3))
		snprintf(spelled, sizeof(spelled), "--%s", o->long_name + 3);
	else
		snprintf(spelled, sizeof(spelled), "--%s%s", unset ? "no-" : "", o->long_name);
	return apply(p, o, spelled, eq ? eq + 1 : NULL, unset);
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
		char spelled[3] = { '-', *s, 0 };

		if (!o && *s == 'h') {
			cli_help(p->c, stdout);
			return HELP_DONE;
		}
		if (!o)
			return cli_usage_error(p->c, "unknown option '-%c' (see 'tally %s -h')",
					       *s, p->c->name);
		if (o->arg != CLI_ARG_NONE)
			return apply(p, o, spelled, s[1] ? s + 1 : NULL, false);
		if (apply(p, o, spelled, NULL, false))
			return 1;
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
	for (size_t i = 0; c->usage && c->usage[i]; i++)
		fprintf(f, "%s%s tally %s\n", i ? "" : "\n", i ? "    or:" : " usage:", c->usage[i]);
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
	if (c->release)
		c->release(opts);
	free(opts);
	return ret;
}

int cli_run(const struct cli_command *c, int argc, char **argv)
{
	return run(c, argc, argv, argc, argv);
}
