/*
 * tally stat's event list: the -e specs (or the default set, with -d, -dd, -ddd cache
 * events) parsed into stat_evsels with perf stat's attr policy, and which events share
 * one printed line when a name expanded over several PMUs (--no-merge: none).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/event.h>

#include "cmd.h"
#include "stat.h"

/* ---- events ------------------------------------------------------------------- */

static const char *const default_events[] = {
	"task-clock", "context-switches", "cpu-migrations", "page-faults",
	"cycles", "instructions", "branches", "branch-misses",
};
static const char *const detail1[] = {
	"L1-dcache-loads", "L1-dcache-load-misses", "LLC-loads", "LLC-load-misses",
};
static const char *const detail2[] = {
	"L1-icache-loads", "L1-icache-load-misses", "dTLB-loads", "dTLB-load-misses",
	"iTLB-loads", "iTLB-load-misses",
};
static const char *const detail3[] = {
	"L1-dcache-prefetches", "L1-dcache-prefetch-misses",
};

static int add_evsel(struct stat_run *r, const char *name, const struct perf_event_attr *attr,
		     int leader)
{
	struct stat_evsel *n = realloc(r->ev, (size_t)(r->nr_ev + 1) * sizeof(*n)), *e;

	if (!n)
		return -ENOMEM;
	r->ev = n;
	e = &n[r->nr_ev];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->attr = *attr;
	e->leader = leader < 0 ? r->nr_ev : leader;
	e->shown_with = -1;
	e->cgroup = -1;
	stat_evsel_classify(e);
	r->nr_ev++;
	return 0;
}

/* Parse one -e list with the shared event parser and append its events. */
static int parse_spec(struct stat_run *r, struct tally_evlist *list, const char *spec,
		      const char *filter)
{
	struct tally_parse_error perr;
	size_t first = tally_evlist__nr(list);
	int base = r->nr_ev, err;

	memset(&perr, 0, sizeof(perr));
	err = tally_evlist__add(list, spec, &perr);
	if (err) {
		char msg[1024];

		if (err == -ENOMEM)
			return err;
		tally_parse_error__format(&perr, spec, msg, sizeof(msg));
		fflush(stdout);
		fprintf(stderr, "%s\nRun 'tally list' for a list of valid events\n", msg);
		return 129;
	}
	for (size_t i = first; i < tally_evlist__nr(list); i++) {
		const struct tally_event *e = tally_evlist__event(list, i);
		int leader = e->leader == (int)i ? -1 : base + (e->leader - (int)first);

		if (filter && e->attr.type != PERF_TYPE_TRACEPOINT) {
			cli_error("--filter: %s is not a tracepoint (tally sets tracepoint filters)",
				  e->name);
			return 129;
		}
		if (add_evsel(r, e->name, &e->attr, leader))
			return -ENOMEM;
		r->ev[r->nr_ev - 1].filter = filter;
		r->ev[r->nr_ev - 1].tool = e->tool;
		r->ev[r->nr_ev - 1].merge = e->merge;
		r->ev[r->nr_ev - 1].name_set = e->name_set;
		if (e->sysfs_pmu && e->pmu_name &&
		    !(r->ev[r->nr_ev - 1].pmu_name = strdup(e->pmu_name)))
			return -ENOMEM;
		if (e->tool)
			r->ev[r->nr_ev - 1].unit = "ns";
		if (e->unit && *e->unit) {
			r->ev[r->nr_ev - 1].unit_buf = strdup(e->unit);
			r->ev[r->nr_ev - 1].unit = r->ev[r->nr_ev - 1].unit_buf ?
						   r->ev[r->nr_ev - 1].unit_buf : "";
			r->ev[r->nr_ev - 1].scale = e->scale;
		}
	}
	return 0;
}

static int add_names(struct stat_run *r, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct perf_event_attr a;

		if (stat_event_lookup(names[i], &a) < 0)
			return -ENOENT;
		a.exclude_guest = 1;
		if (add_evsel(r, names[i], &a, -1))
			return -ENOMEM;
	}
	return 0;
}

int stat_run__build_events(struct stat_run *r)
{
	struct stat_opts *o = r->opts;
	int err;

	if (o->nr_event_specs) {
		struct tally_evlist *list;

		err = tally_evlist__new(&list);
		if (!err && o->sysfs)
			err = tally_evlist__set_sysfs_root(list, o->sysfs);
		if (err) {
			tally_evlist__delete(list);
			return err;
		}
		for (int i = 0; i < o->nr_event_specs && !err; i++) {
			err = parse_spec(r, list, o->event_specs[i], o->spec_filters[i]);
			if (!err)
				err = stat_run__cgroups_after_spec(r, i + 1);
		}
		tally_evlist__delete(list);
		if (err)
			return err;
	}
	if (!r->nr_ev && !o->null_run) {
		err = add_names(r, default_events, sizeof(default_events) / sizeof(*default_events));
		/* perf 6.1 counts cpu-clock instead of task-clock for whole CPUs */
		if (!err && o->system_wide) {
			struct stat_evsel *c = &r->ev[r->nr_ev - 8];
			char *n = strdup("cpu-clock");

			if (!n)
				return -ENOMEM;
			free(c->name);
			c->name = n;
			c->attr.config = PERF_COUNT_SW_CPU_CLOCK;
		}
		if (!err && o->detail >= 1)
			err = add_names(r, detail1, sizeof(detail1) / sizeof(*detail1));
		if (!err && o->detail >= 2)
			err = add_names(r, detail2, sizeof(detail2) / sizeof(*detail2));
		if (!err && o->detail >= 3)
			err = add_names(r, detail3, sizeof(detail3) / sizeof(*detail3));
		if (err)
			return err;
	}
	err = stat_run__expand_cgroups(r);
	if (err)
		return err;
	/* -g: one group led by the first counted event (tool events are not counters) */
	for (int i = 0, lead = -1; o->group && i < r->nr_ev; i++) {
		if (r->ev[i].tool)
			continue;
		if (lead < 0)
			lead = i;
		r->ev[i].leader = lead;
	}
	/* perf stat's policy on top of the parsed attrs (checked with perf stat -vv). */
	for (int i = 0; i < r->nr_ev; i++) {
		struct perf_event_attr *a = &r->ev[i].attr;
		bool leader = r->ev[i].leader == i;

		a->size = sizeof(*a);
		a->sample_type = PERF_SAMPLE_IDENTIFIER;
		a->disabled = leader;
		a->inherit = !o->no_inherit;
		a->enable_on_exec = leader && o->argc && !o->system_wide && !o->pid_list &&
				    !o->tid_list && o->delay_ms == 0;
		/* --all-user, --all-kernel over each event's modifiers (both: neither, as perf) */
		if (o->all_user != o->all_kernel) {
			a->exclude_kernel = o->all_user;
			a->exclude_user = o->all_kernel;
		}
	}
	return 0;
}

/* ---- one line for one name on several PMUs -------------------------------------- */

/* perf's uniquify_event_name: "uncore_imc_0/cas_count_read/", "tsc [msr]". */
static int unique_name(struct stat_evsel *e)
{
	const char *slash = strchr(e->name, '/');
	char *n;
	int len;

	if (e->name_set || !e->pmu_name || !strncmp(e->name, e->pmu_name, strlen(e->pmu_name)))
		return 0;
	len = slash ? asprintf(&n, "%s%s", e->pmu_name, slash) :
		      asprintf(&n, "%s [%s]", e->name, e->pmu_name);
	if (len < 0)
		return -ENOMEM;
	free(e->name);
	e->name = n;
	return 0;
}

/*
 * perf 6.1 shows the events a name expanded to over several PMUs (uncore_imc_0, _1 …,
 * or a bare alias) as one line: each later event with the same name, scale, unit and
 * clock-ness on another PMU is added into the first one's line. --no-merge keeps a line
 * per event, named after its PMU. --per-thread does neither (perf prints each event).
 */
int stat_run__plan_merges(struct stat_run *r)
{
	if (r->opts->aggr == AGGR_THREAD)
		return 0;
	for (int e = 0; e < r->nr_ev; e++) {
		struct stat_evsel *c = &r->ev[e];

		if (r->opts->no_merge) {
			if (unique_name(c))
				return -ENOMEM;
			continue;
		}
		if (!c->merge || c->shown_with >= 0)
			continue;
		for (int x = e + 1; x < r->nr_ev; x++) {
			struct stat_evsel *a = &r->ev[x];

			if (a->shown_with < 0 && a->cgroup == c->cgroup &&
			    !strcmp(a->name, c->name) && a->scale == c->scale &&
			    !strcmp(a->unit, c->unit) && (a->kind == K_CLOCK) == (c->kind == K_CLOCK) &&
			    strcmp(a->pmu_name ? a->pmu_name : "", c->pmu_name ? c->pmu_name : ""))
				a->shown_with = e;
		}
	}
	return 0;
}
