/*
 * tally stat -G/--cgroup and --for-each-cgroup: counting events only while tasks of a
 * cgroup run (perf_event_open's PERF_FLAG_PID_CGROUP, per CPU, so system-wide only).
 *
 * The rules are perf 6.1's, measured on this project's machine:
 * - -G names cgroups for the events defined so far, in order: the n-th name (counting
 *   empty ones, over every -G) goes to the n-th event; a single name goes to them all.
 *   More names than events, or -G before any -e, is a usage error.
 * - --for-each-cgroup repeats the whole event list (defaults too) for each cgroup, cgroup
 *   by cgroup. Names are taken as given ("" is the root, shown "/"), unless the list
 *   holds one of {}[]()|*+?^$: then every item is a basic regular expression matched
 *   anywhere in the path of each cgroup of the hierarchy (walked with nftw, the root
 *   being ""), and the matching cgroups are used in walk order, each once.
 * - Cgroups are looked up under the mount of the perf_event controller: a cgroup v1
 *   mount with it, else the cgroup2 mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "stat.h"
#include "target.h"

/* Open cgroup `name` and add it to r->cgroups; its index, or -1 after saying why. */
static int add_cgroup(struct stat_run *r, const char *name, const char *opt)
{
	struct stat_cgroup *n;
	int fd = cli_cgroup_open(name, opt);

	if (fd < 0)
		return -1;
	n = realloc(r->cgroups, (size_t)(r->nr_cgroups + 1) * sizeof(*n));
	if (n)
		r->cgroups = n;
	if (!n || !(n[r->nr_cgroups].name = strdup(name))) {
		close(fd);
		cli_error("out of memory");
		return -1;
	}
	n[r->nr_cgroups].fd = fd;
	return r->nr_cgroups++;
}

void stat_run__free_cgroups(struct stat_run *r)
{
	for (int i = 0; i < r->nr_cgroups; i++) {
		free(r->cgroups[i].name);
		close(r->cgroups[i].fd);
	}
	free(r->cgroups);
	r->cgroups = NULL;
	r->nr_cgroups = 0;
}

/* One -G list over the first nr_ev events. 0 or 129. */
static int apply_cgroup_arg(struct stat_run *r, const char *list, int nr_ev)
{
	const char *s = list;

	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);

		if (len) {
			char name[PATH_MAX];
			int cg;

			if (r->nr_cgroup_slots >= nr_ev) {
				cli_error("-G/--cgroup %s: more cgroups than events before it", list);
				return 129;
			}
			snprintf(name, sizeof(name), "%.*s", (int)len, s);
			cg = add_cgroup(r, name, "-G/--cgroup");
			if (cg < 0)
				return 129;
			r->ev[r->nr_cgroup_slots].cgroup = cg;
		}
		r->nr_cgroup_slots++;	/* empty names hold their event's place too */
		if (!comma)
			break;
		s = comma + 1;
	}
	/* one cgroup: for every event so far */
	if (r->nr_cgroup_slots == 1)
		for (int e = 1; e < nr_ev; e++)
			r->ev[e].cgroup = r->ev[0].cgroup;
	return 0;
}

int stat_run__cgroups_after_spec(struct stat_run *r, int nr_specs)
{
	const struct stat_opts *o = r->opts;

	for (int i = 0; i < o->nr_cgroup_args; i++) {
		int err;

		if (o->cgroup_args[i].after != nr_specs)
			continue;
		err = apply_cgroup_arg(r, o->cgroup_args[i].names, r->nr_ev);
		if (err)
			return err;
	}
	return 0;
}

/* ---- --for-each-cgroup --------------------------------------------------------- */

/* The hierarchy's directories in nftw's order, paths relative to the mount. */
static struct {
	char **path;
	size_t nr;
	size_t prefix;
	bool nomem;
} walk;

static int walk_one(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	const char *rel = fpath + walk.prefix;
	char **n;

	(void)sb, (void)ftw;
	if (type != FTW_D)
		return 0;
	if (rel[0] == '/' && rel[1])
		rel++;
	n = realloc(walk.path, (walk.nr + 1) * sizeof(*n));
	if (!n || !(n[walk.nr] = strdup(rel))) {
		if (n)
			walk.path = n;
		walk.nomem = true;
		return 1;
	}
	walk.path = n;
	walk.nr++;
	return 0;
}

static void walk_free(void)
{
	for (size_t i = 0; i < walk.nr; i++)
		free(walk.path[i]);
	free(walk.path);
	memset(&walk, 0, sizeof(walk));
}

/* The cgroups a pattern list matches, added to r->cgroups in walk order. 0 or 129. */
static int match_cgroups(struct stat_run *r, const char *list)
{
	char mnt[PATH_MAX];
	bool *used;
	int ret = 129;

	if (cli_cgroup_mount(mnt, sizeof(mnt))) {
		cli_error("--for-each-cgroup: no perf_event cgroup hierarchy is mounted "
			  "(see /proc/mounts)");
		return 129;
	}
	walk.prefix = strlen(mnt);
	if (nftw(mnt, walk_one, 20, FTW_PHYS) < 0 || walk.nomem) {
		cli_error("--for-each-cgroup: cannot walk %s: %s", mnt,
			  walk.nomem ? strerror(ENOMEM) : strerror(errno));
		walk_free();
		return 129;
	}
	used = calloc(walk.nr + 1, sizeof(*used));
	if (!used) {
		walk_free();
		return 1;
	}
	for (const char *s = list;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);

		if (len) {
			char pat[PATH_MAX];
			regex_t re;

			snprintf(pat, sizeof(pat), "%.*s", (int)len, s);
			if (regcomp(&re, pat, REG_NOSUB)) {
				cli_error("--for-each-cgroup: bad regular expression '%s'", pat);
				goto out;
			}
			for (size_t i = 0; i < walk.nr; i++)
				if (!regexec(&re, walk.path[i], 0, NULL, 0))
					used[i] = true;
			regfree(&re);
		}
		if (!comma)
			break;
		s = comma + 1;
	}
	ret = 0;
	for (size_t i = 0; i < walk.nr && !ret; i++)
		if (used[i] && add_cgroup(r, walk.path[i], "--for-each-cgroup") < 0)
			ret = 129;
out:
	free(used);
	walk_free();
	return ret;
}

/* The names as given ("" is the root, shown "/"). 0 or 129. */
static int list_cgroups(struct stat_run *r, const char *list)
{
	for (const char *s = list;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char name[PATH_MAX];

		snprintf(name, sizeof(name), "%.*s", (int)len, s);
		if (add_cgroup(r, len ? name : "/", "--for-each-cgroup") < 0)
			return 129;
		if (!comma)
			break;
		s = comma + 1;
	}
	return 0;
}

/* A copy of event `from`, its owned strings duplicated, in cgroup cg. */
static int clone_evsel(struct stat_evsel *to, const struct stat_evsel *from, int cg)
{
	*to = *from;
	to->name = strdup(from->name);
	to->unit_buf = from->unit_buf ? strdup(from->unit_buf) : NULL;
	to->pmu_name = from->pmu_name ? strdup(from->pmu_name) : NULL;
	if (from->unit_buf)
		to->unit = to->unit_buf ? to->unit_buf : "";
	to->cgroup = cg;
	if (!to->name || (from->unit_buf && !to->unit_buf) || (from->pmu_name && !to->pmu_name)) {
		free(to->name);
		free(to->unit_buf);
		free(to->pmu_name);
		return -ENOMEM;
	}
	return 0;
}

int stat_run__expand_cgroups(struct stat_run *r)
{
	const char *list = r->opts->for_each_cgroup;
	struct stat_evsel *ev;
	int n = r->nr_ev, err;

	if (!list)
		return 0;
	if (!n) {
		cli_error("--for-each-cgroup: must define events before cgroups");
		return 129;
	}
	err = strpbrk(list, "{}[]()|*+?^$") ? match_cgroups(r, list) : list_cgroups(r, list);
	if (err)
		return err;
	if (!r->nr_cgroups) {
		cli_error("--for-each-cgroup: no cgroup matched: %s", list);
		return 129;
	}
	ev = calloc((size_t)r->nr_cgroups * (size_t)n, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (int cg = 0; cg < r->nr_cgroups; cg++) {
		for (int e = 0; e < n; e++) {
			struct stat_evsel *c = &ev[cg * n + e];

			if (clone_evsel(c, &r->ev[e], cg)) {
				r->nr_ev = n;
				for (int i = 0; i < cg * n + e; i++) {
					free(ev[i].name);
					free(ev[i].unit_buf);
					free(ev[i].pmu_name);
				}
				free(ev);
				return -ENOMEM;
			}
			c->leader += cg * n;
			if (c->shown_with >= 0)
				c->shown_with += cg * n;
		}
	}
	for (int e = 0; e < n; e++) {
		free(r->ev[e].name);
		free(r->ev[e].unit_buf);
		free(r->ev[e].pmu_name);
	}
	free(r->ev);
	r->ev = ev;
	r->nr_ev = n * r->nr_cgroups;
	return 0;
}
