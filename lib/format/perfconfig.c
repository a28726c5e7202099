/*
 * perf's config files (git syntax): a small reader that looks up one key. Settings are
 * few and read once per command, so each lookup reads the files again rather than
 * keeping a parsed copy around.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/perfconfig.h>

#define MAXNAME 256

struct cfg_reader {
	FILE *f;
	bool eof;
	const char *key;	/* wanted, lower case */
	char *out;
	size_t len;
	int found;		/* 0 found, -ENOENT, -ENAMETOOLONG */
};

static int next_char(struct cfg_reader *r)
{
	int c = fgetc(r->f);

	if (c == '\r') {
		c = fgetc(r->f);
		if (c != '\n') {
			ungetc(c, r->f);
			c = '\r';
		}
	}
	if (c == EOF) {
		r->eof = true;
		c = '\n';
	}
	return c;
}

/* A value up to the end of its line: quotes, escapes, comments, runs of blanks
 * squeezed to one space, blanks at both ends dropped. NULL when it does not parse. */
static char *parse_value(struct cfg_reader *r, char *value, size_t cap)
{
	bool quote = false, comment = false, space = false;
	size_t len = 0;

	for (;;) {
		int c = next_char(r);

		if (len >= cap - 1)
			return NULL;
		if (c == '\n') {
			if (quote)
				return NULL;
			value[len] = 0;
			return value;
		}
		if (comment)
			continue;
		if (isspace(c) && !quote) {
			space = true;
			continue;
		}
		if (!quote && (c == ';' || c == '#')) {
			comment = true;
			continue;
		}
		if (space) {
			if (len)
				value[len++] = ' ';
			space = false;
		}
		if (c == '\\') {
			c = next_char(r);
			switch (c) {
			case '\n': continue;
			case 't': c = '\t'; break;
			case 'b': c = '\b'; break;
			case 'n': c = '\n'; break;
			case '\\': case '"': break;
			default: return NULL;
			}
			value[len++] = (char)c;
			continue;
		}
		if (c == '"') {
			quote = !quote;
			continue;
		}
		value[len++] = (char)c;
	}
}

static bool is_keychar(int c)
{
	return isalnum(c) || c == '-' || c == '_';
}

static void setting(struct cfg_reader *r, const char *name, const char *value)
{
	size_t n;

	if (strcasecmp(name, r->key))
		return;
	if (!value)
		value = "true";
	n = strlen(value);
	if (n >= r->len) {
		r->found = -ENAMETOOLONG;
		return;
	}
	memcpy(r->out, value, n + 1);
	r->found = 0;
}

/* "name [= value]" after the section prefix already in name[0..len). */
static int get_value(struct cfg_reader *r, char *name, size_t len)
{
	char value[1024];
	const char *v = NULL;
	int c;

	for (;;) {
		c = next_char(r);
		if (r->eof || !is_keychar(c))
			break;
		name[len++] = (char)tolower(c);
		if (len >= MAXNAME)
			return -1;
	}
	name[len] = 0;
	while (c == ' ' || c == '\t')
		c = next_char(r);
	if (c != '\n') {
		if (c != '=')
			return -1;
		v = parse_value(r, value, sizeof(value));
		if (!v)
			return -1;
	}
	setting(r, name, v);
	return 0;
}

/* '[base "extension"]' after the base and a blank. */
static int extended_base(struct cfg_reader *r, char *name, int baselen, int c)
{
	do {
		if (c == '\n')
			return -1;
		c = next_char(r);
	} while (isspace(c));
	if (c != '"')
		return -1;
	name[baselen++] = '.';
	for (;;) {
		int ch = next_char(r);

		if (ch == '\n')
			return -1;
		if (ch == '"')
			break;
		if (ch == '\\') {
			ch = next_char(r);
			if (ch == '\n')
				return -1;
		}
		name[baselen++] = (char)ch;
		if (baselen > MAXNAME / 2)
			return -1;
	}
	return next_char(r) == ']' ? baselen : -1;
}

static int base_var(struct cfg_reader *r, char *name)
{
	int baselen = 0;

	for (;;) {
		int c = next_char(r);

		if (r->eof)
			return -1;
		if (c == ']')
			return baselen;
		if (isspace(c))
			return extended_base(r, name, baselen, c);
		if (!is_keychar(c) && c != '.')
			return -1;
		if (baselen > MAXNAME / 2)
			return -1;
		name[baselen++] = (char)tolower(c);
	}
}

/* One file; stops at its first bad line, keeping what came before. */
static void read_file(struct cfg_reader *r, const char *path)
{
	static const unsigned char bom[] = { 0xef, 0xbb, 0xbf };
	char var[MAXNAME + 1];
	size_t bomlen = 0;
	bool comment = false, at_start = true;
	int baselen = 0;

	r->f = fopen(path, "re");
	if (!r->f)
		return;
	r->eof = false;
	for (;;) {
		int c = next_char(r);

		if (at_start) {
			if (bomlen < sizeof(bom) && (unsigned char)c == bom[bomlen]) {
				bomlen++;
				continue;
			}
			if (bomlen)
				break;		/* a partial byte-order mark */
			at_start = false;
		}
		if (c == '\n') {
			if (r->eof)
				break;
			comment = false;
			continue;
		}
		if (comment || isspace(c))
			continue;
		if (c == '#' || c == ';') {
			comment = true;
			continue;
		}
		if (c == '[') {
			baselen = base_var(r, var);
			if (baselen <= 0)
				break;
			var[baselen++] = '.';
			var[baselen] = 0;
			continue;
		}
		if (!isalpha(c))
			break;
		var[baselen] = (char)tolower(c);
		if (get_value(r, var, (size_t)baselen + 1) < 0)
			break;
	}
	fclose(r->f);
	r->f = NULL;
}

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	if (!v)
		return false;
	return !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") ||
	       (*v && strtol(v, NULL, 0) != 0);
}

int tally_perf_config_get(const char *key, char *buf, size_t len)
{
	struct cfg_reader r = { .key = key, .out = buf, .len = len, .found = -ENOENT };
	const char *exclusive = getenv("PERF_CONFIG");
	const char *home = getenv("HOME");

	if (!len)
		return -ENAMETOOLONG;
	if (exclusive) {
		read_file(&r, exclusive);
		return r.found;
	}
	if (!env_true("PERF_CONFIG_NOSYSTEM") && !access("/etc/perfconfig", R_OK))
		read_file(&r, "/etc/perfconfig");
	if (!env_true("PERF_CONFIG_NOGLOBAL") && home) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/.perfconfig", home);
		if (!stat(path, &st) && (!st.st_uid || st.st_uid == geteuid()) && st.st_size)
			read_file(&r, path);
	}
	return r.found;
}
