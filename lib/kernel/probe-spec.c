/*
 * perf probe's definition syntax (include/tally/probe.h): text in, a tally_probe_spec
 * out, nothing read from any file. The finder (lib/model/probe-finder.c) gives a spec
 * its addresses; this file only says what the user asked for, and names the bad part
 * when the text does not parse.
 *
 * The rules are perf's: the definition is split at blanks (quotes group, backslash
 * escapes); the first word is the probe point, the rest are arguments. A point is a
 * source file (SRC:LINE, SRC;PATTERN) only when it has a '.', one of ":;" and none of
 * "+@%"; otherwise it names a function.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/probe.h>

static int fail(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Split at unquoted blanks; quotes are removed, backslash keeps the next character
 * (and stays in front of it, as the point parser needs it to escape ":;+@%"). */
static int split_words(const char *s, char ***out, size_t *nr)
{
	size_t len = strlen(s), n = 0, cap = 4;
	char **v = calloc(cap, sizeof(*v)), *buf = NULL;
	size_t bl = 0;
	char quote = 0;
	bool in_word = false;

	if (!v)
		return -ENOMEM;
	buf = malloc(len + 1);
	if (!buf)
		goto nomem;
	for (size_t i = 0; i <= len; i++) {
		char c = s[i];

		if (c && quote) {
			if (c == quote)
				quote = 0;
			else
				buf[bl++] = c;
			continue;
		}
		if (c == '\'' || c == '"') {
			quote = c;
			in_word = true;
			continue;
		}
		if (c == '\\' && s[i + 1]) {
			buf[bl++] = c;
			buf[bl++] = s[++i];
			in_word = true;
			continue;
		}
		if (c && !isspace((unsigned char)c)) {
			buf[bl++] = c;
			in_word = true;
			continue;
		}
		if (!in_word)
			continue;
		if (n + 1 >= cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof(*v));

			if (!nv)
				goto nomem;
			v = nv;
		}
		v[n] = strndup(buf, bl);
		if (!v[n++])
			goto nomem;
		bl = 0;
		in_word = false;
	}
	free(buf);
	*out = v;
	*nr = n;
	return 0;
nomem:
	free(buf);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

/* First unescaped character of s in set. */
static char *find_unescaped(char *s, const char *set)
{
	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			continue;
		}
		if (strchr(set, *s))
			return s;
	}
	return NULL;
}

/* Drop the backslashes of escapes, in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (*s == '\\' && s[1])
			s++;
		*d++ = *s;
	}
	*d = 0;
}

static int parse_number(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

static bool is_name(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* [[GROUP:]EVENT=] in front of the point: the '=' comes before any of ";@+%". */
static int parse_event_name(struct tally_probe_spec *s, char **point, char *err, size_t len)
{
	char *p = *point, *eq = find_unescaped(p, ";=@+%"), *colon;

	if (!eq || *eq != '=')
		return 0;
	*eq = 0;
	colon = strchr(p, ':');
	if (colon) {
		*colon = 0;
		if (!is_name(p))
			return fail(err, len, "'%s' is not a valid group name: use letters, digits "
				    "and '_'", p);
		s->group = strdup(p);
		p = colon + 1;
		if (!s->group)
			return -ENOMEM;
	}
	if (!is_name(p))
		return fail(err, len, "'%s' is not a valid event name: use letters, digits and "
			    "'_', not starting with a digit", p);
	s->event = strdup(p);
	if (!s->event)
		return -ENOMEM;
	*point = eq + 1;
	return 0;
}

/* perf's rule: a file when there is a '.', a ':' or ';', and none of "+@%". */
static bool point_is_file(const char *p)
{
	char *q = strdup(p);
	bool file;

	if (!q)
		return false;
	file = find_unescaped(q, ":;") && !find_unescaped(q, "+@%") && strchr(q, '.');
	free(q);
	return file;
}

/* One modifier: c is its separator, arg the text up to the next one. */
static int parse_modifier(struct tally_probe_spec *s, char c, char *arg, char *err, size_t len)
{
	uint64_t v;

	switch (c) {
	case ':':
		if (s->has_line)
			return fail(err, len, "Semantic error: line number is given twice");
		if (parse_number(arg, &v) || v > 0x7fffffff)
			return fail(err, len, "Semantic error: '%s' is not a line number", arg);
		s->line = (unsigned)v;
		s->has_line = true;
		return 0;
	case '+':
		if (parse_number(arg, &v))
			return fail(err, len, "Semantic error: '%s' is not an offset", arg);
		s->offset = v;
		return 0;
	case '@':
		if (s->file || !*arg)
			return fail(err, len, "Semantic error: one source file after '@'");
		unescape(arg);
		s->file = strdup(arg);
		return s->file ? 0 : -ENOMEM;
	default: /* '%' */
		if (strcmp(arg, "return"))
			return fail(err, len, "Semantic error: '%%%s' is not supported (only "
				    "%%return is)", arg);
		s->retprobe = true;
		return 0;
	}
}

/* The modifiers after the name, p at the first separator: ;PT :LINE +OFF @SRC %return,
 * in any order. A lazy pattern takes the rest of the point as is. */
static int parse_modifiers(struct tally_probe_spec *s, char *p, char *err, size_t len)
{
	while (p && *p) {
		char c = *p, *arg = p + 1, *next;
		int ret;

		if (c == ';') {
			s->lazy = strdup(arg);
			return s->lazy ? 0 : -ENOMEM;
		}
		next = find_unescaped(arg, ";:+@%");
		if (next && *next != ';') {
			char nc = *next;

			*next = 0;
			ret = parse_modifier(s, c, arg, err, len);
			*next = nc;
		} else if (next) {	/* ;PT follows: cut there */
			*next = 0;
			ret = parse_modifier(s, c, arg, err, len);
			*next = ';';
		} else {
			ret = parse_modifier(s, c, arg, err, len);
		}
		if (ret)
			return ret;
		p = next;
	}
	return 0;
}

/* The probe point: [[GROUP:]EVENT=](FUNC|SRC|0xADDR)[modifiers]. */
static int parse_point(struct tally_probe_spec *s, char *p, char *err, size_t len)
{
	char *mods;
	bool file;
	int ret = parse_event_name(s, &p, err, len);

	if (ret)
		return ret;
	if (!*p)
		return fail(err, len, "no probe point in '%s'", s->text);
	if (isdigit((unsigned char)*p)) {
		if (parse_number(p, &s->address))
			return fail(err, len, "'%s' is not an address (a number such as 0x1149)", p);
		s->has_address = true;
		return 0;
	}
	file = point_is_file(p);
	mods = find_unescaped(p, ";:+@%");
	if (mods) {
		char sep = *mods;

		*mods = 0;
		unescape(p);
		if (file)
			s->file = strdup(p);
		else
			s->function = strdup(p);
		*mods = sep;
	} else {
		unescape(p);
		s->function = strdup(p);
	}
	if (!s->file && !s->function)
		return -ENOMEM;
	if ((s->file && !*s->file) || (s->function && !*s->function))
		return fail(err, len, "no function or source file in '%s'", s->text);
	if (mods) {
		ret = parse_modifiers(s, mods, err, len);
		if (ret)
			return ret;
	}
	if (s->retprobe && (s->has_line || s->lazy || s->offset))
		return fail(err, len, "Semantic error: %%return cannot be used with a line, a "
			    "lazy pattern or an offset");
	if (s->offset && (s->has_line || s->lazy))
		return fail(err, len, "Semantic error: an offset cannot be used with a line or a "
			    "lazy pattern");
	if (s->has_line && s->lazy)
		return fail(err, len, "Semantic error: a line and a lazy pattern together");
	return 0;
}

static bool is_special_var(const char *e)
{
	return !strcmp(e, "$retval") || !strcmp(e, "$vars") || !strcmp(e, "$params");
}

/* [NAME=]EXPR[:TYPE]; the name ends at the first '=', the type starts after the first
 * ':' (as perf). */
static int parse_arg(struct tally_probe_arg *a, const char *word, char *err, size_t len)
{
	char *w = strdup(word), *eq, *colon, *e;
	int ret = -ENOMEM;

	if (!w)
		return -ENOMEM;
	e = w;
	eq = strchr(w, '=');
	if (eq) {
		*eq = 0;
		if (!is_name(w)) {
			ret = fail(err, len, "'%s' is not a valid argument name in '%s'", w, word);
			goto out;
		}
		if (!(a->name = strdup(w)))
			goto out;
		e = eq + 1;
	}
	colon = strchr(e, ':');
	if (colon) {
		*colon = 0;
		if (!colon[1]) {
			ret = fail(err, len, "no type after ':' in argument '%s'", word);
			goto out;
		}
		if (!(a->type = strdup(colon + 1)))
			goto out;
	}
	if (!*e) {
		ret = fail(err, len, "empty argument in '%s'", word);
		goto out;
	}
	if (!(a->expr = strdup(e)))
		goto out;
	a->raw = !(isalpha((unsigned char)*e) || *e == '_') && !is_special_var(e);
	ret = 0;
out:
	free(w);
	return ret;
}

int tally_probe_spec__parse(const char *def, struct tally_probe_spec **out, char *err,
			    size_t errlen)
{
	struct tally_probe_spec *s;
	char **words = NULL;
	size_t nr = 0;
	int ret;

	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->text = strdup(def))) {
		free(s);
		return -ENOMEM;
	}
	ret = split_words(def, &words, &nr);
	if (ret)
		goto out;
	if (!nr) {
		ret = fail(err, errlen, "empty probe definition");
		goto out;
	}
	free(s->text);
	s->text = strdup(words[0]);
	if (!s->text) {
		ret = -ENOMEM;
		goto out;
	}
	ret = parse_point(s, words[0], err, errlen);
	if (ret)
		goto out;
	if (nr > 1) {
		s->args = calloc(nr - 1, sizeof(*s->args));
		if (!s->args) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 1; i < nr && !ret; i++) {
		ret = parse_arg(&s->args[i - 1], words[i], err, errlen);
		s->nr_args = i;
		if (!ret && s->retprobe && !s->args[i - 1].raw &&
		    strcmp(s->args[i - 1].expr, "$retval"))
			ret = fail(err, errlen, "Semantic error :You can't specify local variable "
				   "for kretprobe.");
	}
out:
	for (size_t i = 0; i < nr; i++)
		free(words[i]);
	free(words);
	if (ret) {
		tally_probe_spec__delete(s);
		return ret;
	}
	*out = s;
	return 0;
}

void tally_probe_spec__delete(struct tally_probe_spec *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_args; i++) {
		free(s->args[i].name);
		free(s->args[i].expr);
		free(s->args[i].type);
	}
	free(s->args);
	free(s->text);
	free(s->group);
	free(s->event);
	free(s->function);
	free(s->file);
	free(s->lazy);
	free(s);
}

bool tally_probe_spec__needs_dwarf(const struct tally_probe_spec *s)
{
	if (s->file || s->has_line || s->lazy)
		return true;
	for (size_t i = 0; i < s->nr_args; i++)
		if (!s->args[i].raw && strcmp(s->args[i].expr, "$retval"))
			return true;
	return false;
}
