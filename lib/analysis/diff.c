/*
 * Profiles and their differences (see tally/diff.h): perf diff's pairing and arithmetic.
 *
 * perf diff keys rows by names, not addresses (its collapse compares symbol names), so
 * a rebuilt binary pairs; the samples of one dso that found no symbol are one row. Rows
 * live in an open-addressing hash per event, their strings interned in the profile.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tally/data.h>
#include <tally/diff.h>
#include <tally/record.h>
#include "internal/analysis.h"

struct prow {
	const char *comm, *dso, *sym;	/* interned; NULL: none */
	const struct tally_thread *thread;	/* pid key: named after its last comm */
	uint64_t ip;			/* shown: in its dso */
	uint64_t raw_ip;		/* the sample's, which picks the one shown */
	char level;
	int32_t pid, tid, cpu;
	uint64_t period, nr_samples;
	uint64_t hash;
	bool filtered;			/* its first sample was left out by a filter */
};

struct pevent {
	struct prow **table;
	size_t cap, nr;
	struct tally_profile_total total;
};

struct tally_profile {
	char *path;
	enum tally_diff_key keys[8];
	size_t nr_keys;
	struct tally_profile_opts o;
	struct tally_data *data;
	struct tally_session *session;
	struct pevent *ev;
	size_t nr_ev;
	struct tally_strpool strs;	/* interned strings */
	uint64_t truncated;
	int err;
};

/* ---- strings --------------------------------------------------------------------- */

static const char *intern(struct tally_profile *p, const char *s)
{
	return s ? tally_strpool__intern(&p->strs, s) : NULL;
}

/* ---- rows ------------------------------------------------------------------------ */

static bool has_key(const enum tally_diff_key *keys, size_t nr, enum tally_diff_key k)
{
	for (size_t i = 0; i < nr; i++)
		if (keys[i] == k)
			return true;
	return false;
}

/* Rows are equal on the keys; strings are compared by content (rows of two profiles
 * have their own pools). */
static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool row_eq(const enum tally_diff_key *keys, size_t nr, const struct prow *a,
		   const struct prow *b)
{
	for (size_t i = 0; i < nr; i++) {
		switch (keys[i]) {
		case TALLY_DIFF_KEY_COMM:
			if (!str_eq(a->comm, b->comm))
				return false;
			break;
		case TALLY_DIFF_KEY_PID:
			if (a->tid != b->tid)
				return false;
			break;
		case TALLY_DIFF_KEY_DSO:
			if (!str_eq(a->dso, b->dso))
				return false;
			break;
		case TALLY_DIFF_KEY_SYM:
			if (!str_eq(a->sym, b->sym))
				return false;
			break;
		case TALLY_DIFF_KEY_CPU:
			if (a->cpu != b->cpu)
				return false;
			break;
		}
	}
	return true;
}

static uint64_t row_hash(const enum tally_diff_key *keys, size_t nr, const struct prow *r)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < nr; i++) {
		uint64_t v = 0;

		switch (keys[i]) {
		case TALLY_DIFF_KEY_COMM:
			v = r->comm ? tly_str_hash(r->comm) : 0;
			break;
		case TALLY_DIFF_KEY_PID:
			v = (uint32_t)r->tid;
			break;
		case TALLY_DIFF_KEY_DSO:
			v = r->dso ? tly_str_hash(r->dso) : 0;
			break;
		case TALLY_DIFF_KEY_SYM:
			v = r->sym ? tly_str_hash(r->sym) : 1;
			break;
		case TALLY_DIFF_KEY_CPU:
			v = (uint32_t)r->cpu;
			break;
		}
		h = (h ^ v) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	return h | 1;
}

/* The row of ev equal to tmpl on the keys, made (zeroed counters) if new. */
static struct prow *row_findnew(struct tally_profile *p, struct pevent *e, const struct prow *tmpl)
{
	uint64_t h = row_hash(p->keys, p->nr_keys, tmpl);
	struct prow *r;
	size_t i;

	if ((e->nr + 1) * 2 > e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 256;
		struct prow **t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t k = 0; k < e->cap; k++) {
			if (!e->table[k])
				continue;
			for (i = e->table[k]->hash & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = e->table[k];
		}
		free(e->table);
		e->table = t;
		e->cap = cap;
	}
	for (i = h & (e->cap - 1); (r = e->table[i]); i = (i + 1) & (e->cap - 1))
		if (r->hash == h && row_eq(p->keys, p->nr_keys, r, tmpl))
			return r;
	r = malloc(sizeof(*r));
	if (!r)
		return NULL;
	*r = *tmpl;
	r->hash = h;
	r->period = r->nr_samples = 0;
	e->table[i] = r;
	e->nr++;
	return r;
}

/* ---- loading --------------------------------------------------------------------- */

static bool list_has(char *const *l, const char *s)
{
	for (size_t i = 0; l && s && l[i]; i++)
		if (!strcmp(l[i], s))
			return true;
	return false;
}

static bool ids_have(const int32_t *v, size_t n, int32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static bool wanted(const struct tally_profile_opts *o, const struct tally_sample *smp,
		   const char *comm, const struct tally_addr_loc *loc)
{
	if (o->comms && !list_has(o->comms, comm))
		return false;
	if (o->pids && !ids_have(o->pids, o->nr_pids, (int32_t)smp->pid))
		return false;
	if (o->tids && !ids_have(o->tids, o->nr_tids, (int32_t)smp->tid))
		return false;
	if (o->dsos && !(loc->dso && (list_has(o->dsos, tally_dso__short_name(loc->dso)) ||
				      list_has(o->dsos, tally_dso__name(loc->dso)))))
		return false;
	if (o->syms && !(loc->sym && list_has(o->syms, loc->sym->name)))
		return false;
	return true;
}

static int add_sample(struct tally_profile *p, int evidx, const struct perf_event_header *hdr)
{
	const struct tally_data_event *ev = tally_data__event(p->data, (size_t)evidx);
	struct pevent *e = &p->ev[evidx];
	struct tally_sample smp;
	struct tally_addr_loc loc;
	struct prow tmpl = { 0 }, *r;
	uint64_t period;
	const char *comm;
	bool keep;

	if (tally_sample__parse(&ev->layout, hdr, &smp))
		return 0;	/* damaged: skipped, as perf does */
	/* perf drops samples of other cpus before counting them */
	if (p->o.cpus && (!(smp.type & PERF_SAMPLE_CPU) ||
			  tally_cpumap__idx(p->o.cpus, (int)smp.cpu) < 0))
		return 0;
	period = tally_sample__period(&smp, &ev->attr);
	e->total.nr_samples++;
	e->total.period += period;
	if (tally_session__resolve(p->session, (pid_t)smp.pid, (pid_t)smp.tid,
				   smp.misc & PERF_RECORD_MISC_CPUMODE_MASK, smp.ip, &loc))
		return -ENOMEM;
	comm = loc.thread ? tally_thread__comm(loc.thread) : "[unknown]";
	keep = wanted(&p->o, &smp, comm, &loc);
	if (keep)
		e->total.filtered_period += period;
	tmpl.thread = loc.thread;
	tmpl.comm = has_key(p->keys, p->nr_keys, TALLY_DIFF_KEY_COMM) ||
			    has_key(p->keys, p->nr_keys, TALLY_DIFF_KEY_PID) ? intern(p, comm) : NULL;
	tmpl.dso = loc.dso ? intern(p, tally_dso__short_name(loc.dso)) : NULL;
	tmpl.sym = loc.sym && loc.sym->name ? intern(p, loc.sym->name) : NULL;
	if ((loc.dso && !tmpl.dso) || (loc.sym && loc.sym->name && !tmpl.sym) ||
	    (comm && tmpl.comm == NULL && (has_key(p->keys, p->nr_keys, TALLY_DIFF_KEY_COMM) ||
					   has_key(p->keys, p->nr_keys, TALLY_DIFF_KEY_PID))))
		return -ENOMEM;
	tmpl.pid = (int32_t)smp.pid;
	tmpl.tid = (int32_t)smp.tid;
	tmpl.cpu = smp.type & PERF_SAMPLE_CPU ? (int32_t)smp.cpu : -1;
	tmpl.level = tally_cpumode_level(smp.misc & PERF_RECORD_MISC_CPUMODE_MASK);
	tmpl.ip = loc.map ? loc.dso_addr : loc.addr;
	r = row_findnew(p, e, &tmpl);
	if (!r)
		return -ENOMEM;
	/* as perf: a row is hidden by the filters when its first sample was; it counts
	 * every sample of its keys (a filter on something else than a key leaks) */
	if (!r->nr_samples)
		r->filtered = !keep;
	/* perf shows the address of the sample whose own address is the lowest (as the
	 * 64-bit difference taken as signed: its input tree's order), in its dso: of the
	 * unresolved samples of ls and dash merged by -s sym, dash's when dash was loaded
	 * lower */
	if (!r->nr_samples || (int64_t)(smp.ip - r->raw_ip) < 0) {
		r->ip = tmpl.ip;
		r->raw_ip = smp.ip;
		r->level = tmpl.level;
	}
	r->period += period;
	r->nr_samples++;
	return 0;
}

static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct tally_profile *p = arg;
	int evidx = ctx->evidx;

	if (hdr->type != PERF_RECORD_SAMPLE)
		return tally_session__process(p->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	if (evidx < 0 && p->nr_ev == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= p->nr_ev)
		return 0;
	return add_sample(p, evidx, hdr);
}

/* pid rows name their thread's last comm (perf shows the thread's, not the sample's) */
static int name_threads(struct tally_profile *p)
{
	if (!has_key(p->keys, p->nr_keys, TALLY_DIFF_KEY_PID))
		return 0;
	for (size_t e = 0; e < p->nr_ev; e++) {
		for (size_t i = 0; i < p->ev[e].cap; i++) {
			struct prow *r = p->ev[e].table[i];

			if (r && r->thread && !(r->comm = intern(p, tally_thread__comm(r->thread))))
				return -ENOMEM;
		}
	}
	return 0;
}

int tally_profile__load(struct tally_profile **out, const char *path,
			const struct tally_profile_opts *o, struct tally_data_error *err)
{
	static const enum tally_diff_key def[] = { TALLY_DIFF_KEY_DSO, TALLY_DIFF_KEY_SYM };
	struct tally_data_open_opts dopts = { 0 };
	struct tally_data_error e = { 0 };
	struct tally_profile *p;
	const void *buf;
	size_t len;
	int ret;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		free(p);
		return -ENOMEM;
	}
	if (o)
		p->o = *o;
	p->nr_keys = p->o.nr_keys ? p->o.nr_keys : 2;
	if (p->nr_keys > sizeof(p->keys) / sizeof(p->keys[0])) {
		tally_profile__delete(p);
		return -EINVAL;
	}
	memcpy(p->keys, p->o.nr_keys ? p->o.keys : def, p->nr_keys * sizeof(*p->keys));
	dopts.force = p->o.force;
	ret = tally_data__open(&p->data, path, &dopts, err ? err : &e);
	if (ret)
		goto fail;
	ret = tally_session__new(&p->session, &p->o.session);
	if (ret)
		goto fail;
	if (tally_data__feature(p->data, TALLY_FEAT_BUILD_ID, &buf, &len) == 0)
		tally_session__add_build_ids(p->session, buf, len);
	p->nr_ev = tally_data__nr_events(p->data);
	p->ev = calloc(p->nr_ev ? p->nr_ev : 1, sizeof(*p->ev));
	ret = -ENOMEM;
	if (!p->ev)
		goto fail;
	ret = tally_data__for_each(p->data, TALLY_DATA_ORDERED, on_record, p, err ? err : &e);
	if (ret > 0)
		ret = -EIO;
	if (!ret)
		ret = name_threads(p);
	if (ret)
		goto fail;
	p->truncated = tally_data__truncated(p->data);
	*out = p;
	return 0;
fail:
	tally_profile__delete(p);
	return ret;
}

void tally_profile__delete(struct tally_profile *p)
{
	if (!p)
		return;
	for (size_t e = 0; p->ev && e < p->nr_ev; e++) {
		for (size_t i = 0; i < p->ev[e].cap; i++)
			free(p->ev[e].table[i]);
		free(p->ev[e].table);
	}
	free(p->ev);
	tly_strpool__exit(&p->strs.ids);
	tally_session__delete(p->session);
	tally_data__delete(p->data);
	free(p->path);
	free(p);
}

const char *tally_profile__path(const struct tally_profile *p)
{
	return p->path;
}

uint64_t tally_profile__truncated(const struct tally_profile *p)
{
	return p->truncated;
}

uint64_t tally_profile__nr_unknown_records(const struct tally_profile *p)
{
	return tally_data__nr_unknown_records(p->data);
}

const char *tally_profile__kernel_problem(const struct tally_profile *p)
{
	return tally_session__kernel_symbols_problem(p->session);
}

size_t tally_profile__nr_events(const struct tally_profile *p)
{
	return p->nr_ev;
}

const struct tally_data_event *tally_profile__event(const struct tally_profile *p, size_t ev)
{
	return ev < p->nr_ev ? tally_data__event(p->data, ev) : NULL;
}

struct tally_profile_total tally_profile__total(const struct tally_profile *p, size_t ev)
{
	struct tally_profile_total none = { 0 };

	return ev < p->nr_ev ? p->ev[ev].total : none;
}

/* ---- differences ------------------------------------------------------------------ */

struct tally_diff {
	struct tally_diff_opts o;
	size_t nr;				/* profiles */
	struct tally_profile *const *files;
	const enum tally_diff_key *keys;
	size_t nr_keys;
	int *ev;				/* each profile's event (-1: none) */
	uint64_t *totals;			/* what shares are of, per profile */
	struct tally_diff_row *rows;
	struct tally_diff_cell *cells;		/* nr per row */
	const struct prow **keyrows;		/* each row's key fields */
	size_t nr_rows, cap_rows;
	struct tally_diff_row **order;
};

void tally_diff__delete(struct tally_diff *d)
{
	if (!d)
		return;
	free(d->ev);
	free(d->totals);
	free(d->rows);
	free(d->cells);
	free(d->keyrows);
	free(d->order);
	free(d);
}

static int add_row(struct tally_diff *d, const struct prow *k, bool dummy)
{
	if (d->nr_rows == d->cap_rows) {
		size_t cap = d->cap_rows ? d->cap_rows * 2 : 256;
		struct tally_diff_row *r = realloc(d->rows, cap * sizeof(*r));
		struct tally_diff_cell *c;
		const struct prow **kr;

		if (!r)
			return -ENOMEM;
		d->rows = r;
		c = realloc(d->cells, cap * d->nr * sizeof(*c));
		if (!c)
			return -ENOMEM;
		d->cells = c;
		kr = realloc(d->keyrows, cap * sizeof(*kr));
		if (!kr)
			return -ENOMEM;
		d->keyrows = kr;
		d->cap_rows = cap;
	}
	d->keyrows[d->nr_rows] = k;
	memset(&d->cells[d->nr_rows * d->nr], 0, d->nr * sizeof(*d->cells));
	d->rows[d->nr_rows] = (struct tally_diff_row){
		.comm = k->comm, .dso = k->dso, .sym = k->sym, .ip = k->ip, .level = k->level,
		.pid = k->pid, .tid = k->tid, .cpu = k->cpu, .dummy = dummy,
	};
	d->nr_rows++;
	return 0;
}

/* The row of profile f's event equal to k, or NULL. */
static const struct prow *lookup(const struct tally_diff *d, size_t f, const struct prow *k)
{
	const struct tally_profile *p = d->files[f];
	const struct pevent *e;
	uint64_t h;

	if (d->ev[f] < 0)
		return NULL;
	e = &p->ev[d->ev[f]];
	if (!e->cap)
		return NULL;
	h = row_hash(d->keys, d->nr_keys, k);
	for (size_t i = h & (e->cap - 1); e->table[i]; i = (i + 1) & (e->cap - 1))
		if (e->table[i]->hash == h && row_eq(d->keys, d->nr_keys, e->table[i], k))
			return e->table[i];
	return NULL;
}

/* The baseline's rows, then the rows only the others have (perf's dummy entries). */
static int collect_rows(struct tally_diff *d)
{
	for (size_t f = 0; f < d->nr; f++) {
		const struct pevent *e;

		if (d->ev[f] < 0 || (f && d->o.baseline_only))
			continue;
		e = &d->files[f]->ev[d->ev[f]];
		for (size_t i = 0; i < e->cap; i++) {
			const struct prow *r = e->table[i];
			bool seen = false;

			if (!r || r->filtered)
				continue;
			for (size_t g = 0; g < f && !seen; g++)
				seen = lookup(d, g, r) != NULL;
			if (!seen && add_row(d, r, f != 0))
				return -ENOMEM;
		}
	}
	return 0;
}

static uint64_t sample_total(const struct tally_diff *d, size_t f)
{
	struct tally_profile_total t;

	if (d->ev[f] < 0)
		return 0;
	t = d->files[f]->ev[d->ev[f]].total;
	return d->o.relative ? t.filtered_period : t.period;
}

static double share(uint64_t v, uint64_t total)
{
	return total ? (double)v * 100.0 / (double)total : 0.0;
}

static void compute(struct tally_diff *d)
{
	uint64_t kept = 0;

	for (size_t r = 0; r < d->nr_rows; r++) {
		struct tally_diff_cell *c = &d->cells[r * d->nr];

		d->rows[r].cells = c;
		for (size_t f = 0; f < d->nr; f++) {
			const struct prow *p = lookup(d, f, d->keyrows[r]);

			c[f].paired = p != NULL;
			c[f].period = p ? p->period : 0;
		}
		kept += c[0].period;
	}
	for (size_t f = 0; f < d->nr; f++)
		d->totals[f] = sample_total(d, f);
	/* perf computes deltas against the sample totals, then shows the baseline's
	 * shares of what its output keeps (all of it, but for -b) */
	for (size_t r = 0; r < d->nr_rows; r++) {
		struct tally_diff_cell *c = &d->cells[r * d->nr];
		double base = share(c[0].period, d->totals[0]);

		for (size_t f = 1; f < d->nr; f++) {
			c[f].percent = share(c[f].period, d->totals[f]);
			if (!c[f].paired)
				continue;
			c[f].delta = c[f].percent - base;
			c[f].ratio = (double)c[f].period / (double)(c[0].period ? c[0].period : 1);
			c[f].wdiff = (int64_t)c[f].period * d->o.w2 - (int64_t)c[0].period * d->o.w1;
		}
	}
	if (d->o.baseline_only)
		d->totals[0] = kept;
	for (size_t r = 0; r < d->nr_rows; r++)
		d->cells[r * d->nr].percent = share(d->cells[r * d->nr].period, d->totals[0]);
}

static int value_cmp(const struct tally_diff_cell *a, const struct tally_diff_cell *b,
		     enum tally_diff_compute c)
{
	double x, y;

	switch (c) {
	case TALLY_DIFF_DELTA:
		x = a->delta;
		y = b->delta;
		break;
	case TALLY_DIFF_DELTA_ABS:
		x = fabs(a->delta);
		y = fabs(b->delta);
		break;
	case TALLY_DIFF_RATIO:
		x = a->ratio;
		y = b->ratio;
		break;
	case TALLY_DIFF_WDIFF:
		return a->wdiff == b->wdiff ? 0 : a->wdiff > b->wdiff ? -1 : 1;
	default:
		return 0;
	}
	return x == y ? 0 : x > y ? -1 : 1;
}

static bool has_pairs(const struct tally_diff *d, const struct tally_diff_row *r)
{
	for (size_t f = 1; f < d->nr; f++)
		if (r->cells[f].paired)
			return true;
	return r->dummy;	/* perf's dummy entries are made as the pair of one */
}

static int str_cmp_null_last(const char *a, const char *b)
{
	if (!a || !b)
		return a == b ? 0 : a ? -1 : 1;
	return strcmp(a, b);
}

static int key_cmp(const struct tally_diff *d, const struct tally_diff_row *a,
		   const struct tally_diff_row *b)
{
	int c;

	for (size_t i = 0; i < d->nr_keys; i++) {
		switch (d->keys[i]) {
		case TALLY_DIFF_KEY_COMM:
			if ((c = str_cmp_null_last(a->comm, b->comm)))
				return c;
			break;
		case TALLY_DIFF_KEY_PID:
			if (a->tid != b->tid)
				return a->tid < b->tid ? -1 : 1;
			break;
		case TALLY_DIFF_KEY_DSO:
			if ((c = str_cmp_null_last(a->dso, b->dso)))
				return c;
			break;
		case TALLY_DIFF_KEY_SYM:
			if ((c = str_cmp_null_last(a->sym, b->sym)))
				return c;
			break;
		case TALLY_DIFF_KEY_CPU:
			if (a->cpu != b->cpu)
				return a->cpu < b->cpu ? -1 : 1;
			break;
		}
	}
	return 0;
}

/* perf diff's output order (negative: a first). */
static int row_cmp(const void *x, const void *y, void *arg)
{
	const struct tally_diff *d = arg;
	const struct tally_diff_row *a = *(struct tally_diff_row *const *)x;
	const struct tally_diff_row *b = *(struct tally_diff_row *const *)y;
	size_t s = d->o.sort_idx;
	int c;

	if (s) {
		bool pa = a->cells[s].paired, pb = b->cells[s].paired;

		if (pa != pb)
			return pa ? -1 : 1;
		if (pa) {
			/* a ratio or weighted difference without a baseline means nothing */
			if (d->o.compute != TALLY_DIFF_DELTA && d->o.compute != TALLY_DIFF_DELTA_ABS &&
			    a->dummy != b->dummy)
				return a->dummy ? 1 : -1;
			if ((c = value_cmp(&a->cells[s], &b->cells[s], d->o.compute)))
				return c;
		}
	}
	if (a->cells[0].period != b->cells[0].period)
		return a->cells[0].period > b->cells[0].period ? -1 : 1;
	for (size_t f = 1; f < d->nr; f++) {
		bool ha = has_pairs(d, a), hb = has_pairs(d, b);
		bool pa = a->cells[f].paired, pb = b->cells[f].paired;

		if (ha != hb)
			return ha ? -1 : 1;
		if (!ha)
			break;
		if (pa != pb)
			return pa ? -1 : 1;
		if (pa && (c = value_cmp(&a->cells[f], &b->cells[f], d->o.compute)))
			return c;
	}
	if ((c = key_cmp(d, a, b)))
		return c;
	return a < b ? -1 : a > b;
}

int tally_diff__new(struct tally_diff **out, struct tally_profile *const *files, size_t nr,
		    size_t ev, const struct tally_diff_opts *o)
{
	const struct tally_data_event *be;
	struct tally_diff *d;

	*out = NULL;
	if (nr < 2 || !files[0] || ev >= files[0]->nr_ev)
		return -EINVAL;
	for (size_t f = 1; f < nr; f++)
		if (!files[f] || files[f]->nr_keys != files[0]->nr_keys ||
		    memcmp(files[f]->keys, files[0]->keys, files[0]->nr_keys * sizeof(files[0]->keys[0])))
			return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->o = o ? *o : (struct tally_diff_opts){ .compute = TALLY_DIFF_DELTA_ABS, .sort_idx = 1 };
	if (d->o.sort_idx >= nr) {
		free(d);
		return -EINVAL;
	}
	d->nr = nr;
	d->files = files;
	d->keys = files[0]->keys;
	d->nr_keys = files[0]->nr_keys;
	d->ev = calloc(nr, sizeof(*d->ev));
	d->totals = calloc(nr, sizeof(*d->totals));
	if (!d->ev || !d->totals)
		goto nomem;
	/* perf pairs events by type and config */
	be = tally_data__event(files[0]->data, ev);
	d->ev[0] = (int)ev;
	for (size_t f = 1; f < nr; f++) {
		d->ev[f] = -1;
		for (size_t k = 0; k < files[f]->nr_ev; k++) {
			const struct tally_data_event *e = tally_data__event(files[f]->data, k);

			if (e->attr.type == be->attr.type && e->attr.config == be->attr.config) {
				d->ev[f] = (int)k;
				break;
			}
		}
	}
	if (collect_rows(d))
		goto nomem;
	if (d->o.baseline_only) {
		/* only rows the others pair with */
		size_t n = 0;

		for (size_t r = 0; r < d->nr_rows; r++) {
			bool any = false;

			for (size_t f = 1; f < nr && !any; f++)
				any = lookup(d, f, d->keyrows[r]) != NULL;
			if (any) {
				d->rows[n] = d->rows[r];
				d->keyrows[n++] = d->keyrows[r];
			}
		}
		d->nr_rows = n;
	}
	compute(d);
	d->order = malloc((d->nr_rows ? d->nr_rows : 1) * sizeof(*d->order));
	if (!d->order)
		goto nomem;
	for (size_t r = 0; r < d->nr_rows; r++)
		d->order[r] = &d->rows[r];
	qsort_r(d->order, d->nr_rows, sizeof(*d->order), row_cmp, d);
	*out = d;
	return 0;
nomem:
	tally_diff__delete(d);
	return -ENOMEM;
}

bool tally_diff__matched(const struct tally_diff *d, size_t i)
{
	return i < d->nr && d->ev[i] >= 0;
}

size_t tally_diff__nr_rows(const struct tally_diff *d)
{
	return d->nr_rows;
}

const struct tally_diff_row *tally_diff__row(const struct tally_diff *d, size_t i)
{
	return i < d->nr_rows ? d->order[i] : NULL;
}

uint64_t tally_diff__total(const struct tally_diff *d, size_t i)
{
	return i < d->nr ? d->totals[i] : 0;
}
