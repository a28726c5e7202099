/*
 * uprobe and kprobe trace events (include/tally/probe.h): the kernel's definition lines,
 * written, listed and removed through tracefs's uprobe_events and kprobe_events files,
 * and the names perf gives new events.
 *
 * A test passes a plain directory as tracefs: writes then append to an ordinary file,
 * which is how the kprobe lines are checked on kernels without kprobe_events.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/probe.h>

#include "internal/util.h"

static const char *events_file(bool uprobe)
{
	return uprobe ? "uprobe_events" : "kprobe_events";
}

void tally_probe_event__exit(struct tally_probe_event *e)
{
	if (!e)
		return;
	free(e->path);
	free(e->module);
	free(e->symbol);
	for (size_t i = 0; i < e->nr_args; i++)
		free(e->args[i]);
	free(e->args);
	free(e->point);
	free(e->arg_desc);
	free(e->function);
	memset(e, 0, sizeof(*e));
}

void tally_probe_events__free(struct tally_probe_event *v, size_t nr)
{
	for (size_t i = 0; v && i < nr; i++)
		tally_probe_event__exit(&v[i]);
	free(v);
}

int tally_probe_event__format(const struct tally_probe_event *e, char *buf, size_t len)
{
	struct tly_buf b = { 0 };
	int ret;

	ret = tly_buf__printf(&b, "%c:%s/%s ", e->retprobe ? 'r' : 'p', e->group, e->event);
	if (!ret && e->uprobe)
		ret = tly_buf__printf(&b, "%s:0x%" PRIx64, e->path, e->offset);
	else if (!ret)
		ret = tly_buf__printf(&b, "%s%s%s+%" PRIu64, e->module ? e->module : "",
				      e->module ? ":" : "", e->symbol, e->offset);
	for (size_t i = 0; !ret && i < e->nr_args; i++)
		ret = tly_buf__printf(&b, " %s", e->args[i]);
	if (ret) {
		tly_buf__exit(&b);
		return ret;
	}
	ret = snprintf(buf, len, "%s", b.data);
	tly_buf__exit(&b);
	return ret;
}

/* "p:grp/ev" or "r:grp/ev" (maxactive "r10:" too). */
static int parse_head(const char *w, struct tally_probe_event *e)
{
	const char *colon = strchr(w, ':'), *slash;

	if ((w[0] != 'p' && w[0] != 'r') || !colon)
		return -EINVAL;
	e->retprobe = w[0] == 'r';
	slash = strchr(colon, '/');
	if (!slash || (size_t)(slash - colon - 1) >= sizeof(e->group) ||
	    strlen(slash + 1) >= sizeof(e->event) || slash == colon + 1 || !slash[1])
		return -EINVAL;
	memcpy(e->group, colon + 1, (size_t)(slash - colon - 1));
	e->group[slash - colon - 1] = 0;
	strcpy(e->event, slash + 1);
	return 0;
}

/* uprobe: PATH:0xOFF[(0xREF)]; kprobe: [MOD:]SYM[+OFF] or an address. */
static int parse_location(const char *w, bool uprobe, struct tally_probe_event *e)
{
	const char *colon = strrchr(w, ':'), *plus;
	char *end;

	if (uprobe) {
		if (!colon || colon == w)
			return -EINVAL;
		e->offset = strtoull(colon + 1, &end, 0);
		if (end == colon + 1 || (*end && *end != '('))
			return -EINVAL;
		e->path = strndup(w, (size_t)(colon - w));
		return e->path ? 0 : -ENOMEM;
	}
	colon = strchr(w, ':');
	if (colon) {
		e->module = strndup(w, (size_t)(colon - w));
		if (!e->module)
			return -ENOMEM;
		w = colon + 1;
	}
	plus = strchr(w, '+');
	e->symbol = plus ? strndup(w, (size_t)(plus - w)) : strdup(w);
	if (!e->symbol)
		return -ENOMEM;
	if (plus) {
		e->offset = strtoull(plus + 1, &end, 0);
		if (end == plus + 1 || *end)
			return -EINVAL;
	}
	return 0;
}

int tally_probe_event__parse(const char *line, bool uprobe, struct tally_probe_event *e)
{
	char *copy = strdup(line), *save = NULL, *w;
	int ret = -EINVAL;

	memset(e, 0, sizeof(*e));
	e->uprobe = uprobe;
	if (!copy)
		return -ENOMEM;
	w = strtok_r(copy, " \t\n", &save);
	if (!w || parse_head(w, e))
		goto out;
	w = strtok_r(NULL, " \t\n", &save);
	if (!w || (ret = parse_location(w, uprobe, e)))
		goto out;
	while ((w = strtok_r(NULL, " \t\n", &save))) {
		char **v = realloc(e->args, (e->nr_args + 1) * sizeof(*v));

		ret = -ENOMEM;
		if (!v)
			goto out;
		e->args = v;
		if (!(v[e->nr_args] = strdup(w)))
			goto out;
		e->nr_args++;
	}
	ret = 0;
out:
	free(copy);
	if (ret)
		tally_probe_event__exit(e);
	return ret;
}

void tally_probe__sanitize_name(char *name)
{
	size_t n = strlen(name);

	for (char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			*p = '_';
	if (isdigit((unsigned char)name[0]) && n + 1 < TALLY_PROBE_NAME_MAX) {
		memmove(name + 1, name, n + 1);
		name[0] = '_';
	}
}

void tally_probe__default_group(const char *binary, char *buf, size_t len)
{
	const char *base;
	size_t n;

	if (!binary) {
		snprintf(buf, len, "probe");
		return;
	}
	base = strrchr(binary, '/');
	base = base ? base + 1 : binary;
	n = strcspn(base, ".");
	snprintf(buf, len, "probe_%.*s", (int)n, base);
	tally_probe__sanitize_name(buf);
}

static char *path_in(const char *tracefs, const char *name, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", tracefs, name) >= len)
		return NULL;
	return buf;
}

int tally_probe_events__supported(const char *tracefs, bool uprobe)
{
	char path[PATH_MAX];

	if (!path_in(tracefs, events_file(uprobe), path, sizeof(path)))
		return -ENAMETOOLONG;
	if (access(path, F_OK))
		return -ENOENT;
	if (access(path, W_OK))
		return -EACCES;
	return 0;
}

int tally_probe_events__read(const char *tracefs, bool uprobe, struct tally_probe_event **out,
			     size_t *nr)
{
	char path[PATH_MAX], *text = NULL, *save = NULL, *line;
	struct tally_probe_event *v = NULL;
	size_t n = 0, len;
	int ret;

	*out = NULL;
	*nr = 0;
	if (!path_in(tracefs, events_file(uprobe), path, sizeof(path)))
		return -ENAMETOOLONG;
	ret = tly_read_file_all(path, &text, &len);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct tally_probe_event e, *nv;

		if (tally_probe_event__parse(line, uprobe, &e))
			continue;	/* "-:..." of a test's file, or a line we do not know */
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			tally_probe_event__exit(&e);
			tally_probe_events__free(v, n);
			free(text);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = e;
	}
	free(text);
	*out = v;
	*nr = n;
	return 0;
}

static int write_line(const char *tracefs, bool uprobe, const char *line)
{
	char path[PATH_MAX];
	size_t len = strlen(line);
	char *buf;
	int fd, ret;

	if (!path_in(tracefs, events_file(uprobe), path, sizeof(path)))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(len + 2);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	memcpy(buf, line, len);
	buf[len] = '\n';
	/* the kernel takes a definition in one write; its answer is that write's errno */
	{
		ssize_t w = write(fd, buf, len + 1);

		ret = w == (ssize_t)(len + 1) ? 0 : w < 0 ? -errno : -EIO;
	}
	free(buf);
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

int tally_probe_events__add(const char *tracefs, bool uprobe, const char *line)
{
	return write_line(tracefs, uprobe, line);
}

int tally_probe_events__del(const char *tracefs, bool uprobe, const char *group,
			    const char *event)
{
	char line[2 * TALLY_PROBE_NAME_MAX + 8];

	snprintf(line, sizeof(line), "-:%s/%s", group, event);
	return write_line(tracefs, uprobe, line);
}

/* ---- naming ---- */

static bool name_taken(const char *group, const char *event,
		       const struct tally_probe_event *v, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(v[i].group, group) && !strcmp(v[i].event, event))
			return true;
	return false;
}

/* perf's event name for the event's function: FUNC, FUNC_L<RL>, abs_<hex>, with
 * "__return" for a return probe. */
static void base_name(const struct tally_probe_spec *spec, const char *func, char *buf,
		      size_t len)
{
	if (spec->event)
		snprintf(buf, len, "%s", spec->event);
	else if (spec->has_address)
		snprintf(buf, len, "abs_%" PRIx64, spec->address);
	else if (spec->function && spec->has_line && spec->line)
		snprintf(buf, len, "%s_L%u", func, spec->line);
	else
		snprintf(buf, len, "%s", func);
	if (!spec->event) {
		/* a C++ or a compiler's local name: up to its first '.' (perf) */
		char *dot = strchr(buf, '.');

		if (dot && dot != buf)
			*dot = 0;
		tally_probe__sanitize_name(buf);
	}
	if (spec->retprobe && strlen(buf) + 8 < len)
		strcat(buf, "__return");
}

int tally_probe_events__name(struct tally_probe_event *evs, size_t nr,
			     const struct tally_probe_spec *spec, const char *target,
			     const struct tally_probe_event *existing, size_t nr_existing,
			     struct tally_probe_event *earlier, size_t nr_earlier, bool force,
			     char *err, size_t errlen)
{
	char group[TALLY_PROBE_NAME_MAX], prev_func[TALLY_PROBE_NAME_MAX * 4] = "";
	char prev_name[TALLY_PROBE_NAME_MAX] = "";

	if (spec->group)
		snprintf(group, sizeof(group), "%s", spec->group);
	else
		tally_probe__default_group(target, group, sizeof(group));
	for (size_t i = 0; i < nr; i++) {
		char base[TALLY_PROBE_NAME_MAX * 4], name[TALLY_PROBE_NAME_MAX * 4 + 32];
		snprintf(base, sizeof(base), "%s", evs[i].function ? evs[i].function : "probe");
		snprintf(evs[i].group, sizeof(evs[i].group), "%s", group);
		/* the same function's other addresses share its event (a multi-probe) */
		if (i && !strcmp(base, prev_func)) {
			snprintf(evs[i].event, sizeof(evs[i].event), "%s", prev_name);
			continue;
		}
		snprintf(prev_func, sizeof(prev_func), "%s", base);
		base_name(spec, base, name, sizeof(name));
		/* perf keeps event names under the kernel's 64 characters by cutting them,
		 * with room for a _NNN suffix */
		if (strlen(name) >= TALLY_PROBE_NAME_MAX - 8)
			name[TALLY_PROBE_NAME_MAX - 8] = 0;
		if (name_taken(group, name, existing, nr_existing) ||
		    name_taken(group, name, earlier, nr_earlier) ||
		    name_taken(group, name, evs, i)) {
			char try[TALLY_PROBE_NAME_MAX];
			int k;

			if (!force) {
				snprintf(err, errlen, "Error: event \"%s\" already exists.\n"
					 " Hint: Remove existing event by 'tally probe -d'\n"
					 "       or force duplicates by 'tally probe -f'", name);
				return -EEXIST;
			}
			for (k = 1; k < 1000; k++) {
				snprintf(try, sizeof(try), "%.*s_%d", TALLY_PROBE_NAME_MAX - 8, name, k);
				if (!name_taken(group, try, existing, nr_existing) &&
				    !name_taken(group, try, earlier, nr_earlier) &&
				    !name_taken(group, try, evs, i))
					break;
			}
			if (k == 1000) {
				snprintf(err, errlen, "Error: too many events named \"%s\"", name);
				return -EEXIST;
			}
			snprintf(name, sizeof(name), "%s", try);
		}
		snprintf(evs[i].event, sizeof(evs[i].event), "%.*s", TALLY_PROBE_NAME_MAX - 1, name);
		snprintf(prev_name, sizeof(prev_name), "%s", evs[i].event);
	}
	return 0;
}
