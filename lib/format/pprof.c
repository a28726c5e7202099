/*
 * pprof export (see tally/convert.h): a perf.data's resolved samples as a gzipped
 * profile.proto, encoded by the protoc-c code generated from profile.proto.
 *
 * Samples are gathered first, into compact tables of their own: a location per
 * (mapping, address, leaf or caller), a function per (name, file), a mapping per
 * (dso, start, limit, offset), a sample per (event, locations, labels) with its count
 * and period summed. Writing then packs one small Profile message at a time straight
 * into a gzip stream: protobuf messages concatenate into their merge (repeated fields
 * append), so a profile of a million samples never exists as one message tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include <tally/buildid.h>
#include <tally/convert.h>
#include <tally/srcline.h>
#include "internal/strpool.h"
#include "profile.pb-c.h"

#define MAX_LINES 16		/* inline depth kept per location */

/* ---- a hash of fixed-size keys (nw words) to uint32 values --------------------------- */

struct ktab {
	unsigned nw;
	uint64_t *keys;		/* cap * nw words */
	uint32_t *vals;		/* value + 1; 0 empty */
	uint32_t cap, nr;	/* cap: power of two */
};

static uint64_t key_hash(const uint64_t *k, unsigned nw)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < nw; i++)
		h = (h ^ k[i]) * 0xff51afd7ed558ccdull, h ^= h >> 32;
	return h;
}

static int ktab_grow(struct ktab *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 1024;
	uint64_t *keys = malloc((size_t)cap * t->nw * sizeof(*keys));
	uint32_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->cap; i++) {
		const uint64_t *k = t->keys + (size_t)i * t->nw;
		uint32_t j;

		if (!t->vals[i])
			continue;
		for (j = (uint32_t)key_hash(k, t->nw) & (cap - 1); vals[j]; j = (j + 1) & (cap - 1))
			;
		memcpy(keys + (size_t)j * t->nw, k, t->nw * sizeof(*k));
		vals[j] = t->vals[i];
	}
	free(t->keys);
	free(t->vals);
	t->keys = keys;
	t->vals = vals;
	t->cap = cap;
	return 0;
}

/* The slot of key k: *found tells whether it holds k or is the empty one to fill
 * (ktab_set). NULL: ENOMEM. */
static uint32_t *ktab_slot(struct ktab *t, const uint64_t *k, bool *found)
{
	uint32_t i;

	if ((t->nr + 1) * 2 > t->cap && ktab_grow(t))
		return NULL;
	for (i = (uint32_t)key_hash(k, t->nw) & (t->cap - 1); t->vals[i]; i = (i + 1) & (t->cap - 1)) {
		if (!memcmp(t->keys + (size_t)i * t->nw, k, t->nw * sizeof(*k))) {
			*found = true;
			return &t->vals[i];
		}
	}
	*found = false;
	memcpy(t->keys + (size_t)i * t->nw, k, t->nw * sizeof(*k));
	return &t->vals[i];
}

static void ktab_set(struct ktab *t, uint32_t *slot, uint32_t val)
{
	*slot = val + 1;
	t->nr++;
}

static void ktab_exit(struct ktab *t)
{
	free(t->keys);
	free(t->vals);
}

/* ---- the profile's tables ------------------------------------------------------------ */

struct mapping {
	uint64_t start, limit, pgoff;
	uint32_t file, build_id;	/* string ids */
	uint32_t nr_locs, nr_named, nr_lined;
	uint64_t leaf_samples;	/* samples whose innermost frame is in it */
	bool inlined;
	bool kernel;
};

struct pline {
	uint32_t function;	/* index */
	uint32_t line;
};

struct location {
	uint32_t mapping;	/* index + 1; 0: none */
	uint32_t nr_lines;
	uint64_t address;
	size_t first_line;	/* into lines */
};

struct function {
	uint32_t name, file;	/* string ids */
};

struct psample {
	uint32_t evidx;
	int32_t pid, tid, cpu;	/* cpu -1: not recorded */
	uint32_t comm;		/* string id */
	uint32_t nr_locs;
	size_t first_loc;	/* into loc_ids */
	uint64_t count, period;
};

struct event {
	uint32_t samples_type, period_type, unit, count_unit;
	uint64_t fixed_period;
};

struct tally_pprof {
	const struct tally_data *data;
	struct tally_pprof_opts o;
	struct tally_dso_lines *lines;
	struct tly_strpool strs;
	struct event *ev;
	size_t nr_ev;

	struct mapping *maps;
	size_t nr_maps, cap_maps;
	struct ktab map_tab;		/* dso, start, limit, pgoff */
	struct location *locs;
	size_t nr_locs, cap_locs;
	struct ktab loc_tab;		/* mapping, address, caller */
	struct pline *lns;
	size_t nr_lns, cap_lns;
	struct function *funcs;
	size_t nr_funcs, cap_funcs;
	struct ktab func_tab;		/* name, file */
	struct psample *samples;
	size_t nr_samples, cap_samples;
	uint32_t *sample_slots;		/* index + 1 by hash; 0 empty */
	uint64_t *sample_hash;		/* by sample index */
	uint32_t nr_slots;
	uint64_t *loc_ids;		/* every sample's location ids, one after another */
	size_t nr_loc_ids, cap_loc_ids;
	uint64_t *scratch;		/* the sample being added */
	size_t cap_scratch;

	uint32_t k_pid, k_tid, k_comm, k_cpu;	/* label keys */
	uint32_t *user_keys, *user_values;
	uint32_t *map_id;		/* mapping index -> id written (the main binary first) */
	uint64_t t_min, t_max;
	bool any_time;
};

/* Grow *v (elements of size sz) to hold one more. */
static int grow(void *v, size_t *cap, size_t nr, size_t sz)
{
	void **p = v;

	if (nr < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 256;
	void *n = realloc(*p, ncap * sz);

	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = ncap;
	return 0;
}

static int str(struct tally_pprof *p, const char *s, uint32_t *id)
{
	int64_t r = tly_strpool__intern(&p->strs, s ? s : "");

	*id = 0;
	if (r < 0)
		return (int)r;
	*id = (uint32_t)r;
	return 0;
}

static bool clock_event(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE &&
	       (a->config == PERF_COUNT_SW_CPU_CLOCK || a->config == PERF_COUNT_SW_TASK_CLOCK);
}

static int setup_events(struct tally_pprof *p)
{
	uint32_t count;
	int err = str(p, "count", &count);

	p->nr_ev = tally_data__nr_events(p->data);
	p->ev = calloc(p->nr_ev ? p->nr_ev : 1, sizeof(*p->ev));
	if (!p->ev)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_ev && !err; i++) {
		const struct tally_data_event *ev = tally_data__event(p->data, i);
		const char *name = ev->name ? ev->name : "event";
		char buf[512];

		/* one event: "samples" and its name; several: "<name>_samples" each */
		if (p->nr_ev == 1)
			snprintf(buf, sizeof(buf), "samples");
		else
			snprintf(buf, sizeof(buf), "%s_samples", name);
		err = str(p, buf, &p->ev[i].samples_type);
		if (!err)
			err = str(p, name, &p->ev[i].period_type);
		if (!err)
			err = str(p, clock_event(&ev->attr) ? "nanoseconds" : "count", &p->ev[i].unit);
		p->ev[i].count_unit = count;
		if (!ev->attr.freq)
			p->ev[i].fixed_period = ev->attr.sample_period;
	}
	return err;
}

int tally_pprof__new(struct tally_pprof **out, const struct tally_data *d, struct tally_session *s,
		     const struct tally_pprof_opts *opts)
{
	struct tally_pprof *p = calloc(1, sizeof(*p));
	uint32_t empty;
	int err;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->data = d;
	if (opts)
		p->o = *opts;
	p->map_tab.nw = 4;
	p->loc_tab.nw = 3;
	p->func_tab.nw = 1;
	err = str(p, "", &empty);	/* string_table[0] must be "" */
	if (!err && !p->o.no_lines)
		err = tally_dso_lines__new(&p->lines, s);
	if (!err)
		err = setup_events(p);
	if (!err)
		err = str(p, "pid", &p->k_pid) ?: str(p, "tid", &p->k_tid) ?:
		      str(p, "comm", &p->k_comm) ?: str(p, "cpu", &p->k_cpu);
	if (!err && p->o.nr_labels) {
		p->user_keys = calloc(p->o.nr_labels, sizeof(*p->user_keys));
		p->user_values = calloc(p->o.nr_labels, sizeof(*p->user_values));
		err = p->user_keys && p->user_values ? 0 : -ENOMEM;
		for (size_t i = 0; i < p->o.nr_labels && !err; i++)
			err = str(p, p->o.label_keys[i], &p->user_keys[i]) ?:
			      str(p, p->o.label_values[i], &p->user_values[i]);
	}
	p->o.label_keys = p->o.label_values = NULL;	/* copied: the caller's may go */
	if (err) {
		tally_pprof__delete(p);
		return err;
	}
	*out = p;
	return 0;
}

void tally_pprof__delete(struct tally_pprof *p)
{
	if (!p)
		return;
	tally_dso_lines__delete(p->lines);
	tly_strpool__exit(&p->strs);
	free(p->ev);
	free(p->maps);
	ktab_exit(&p->map_tab);
	free(p->locs);
	ktab_exit(&p->loc_tab);
	free(p->lns);
	free(p->funcs);
	ktab_exit(&p->func_tab);
	free(p->samples);
	free(p->sample_slots);
	free(p->sample_hash);
	free(p->loc_ids);
	free(p->scratch);
	free(p->user_keys);
	free(p->user_values);
	free(p->map_id);
	free(p);
}

/* The mapping of loc (index + 1), 0 when it has none. -ENOMEM. */
static int64_t mapping_of(struct tally_pprof *p, const struct tally_addr_loc *l)
{
	uint64_t k[4];
	uint32_t *slot;
	bool found;

	if (!l->map || !l->dso)
		return 0;
	k[0] = (uint64_t)(uintptr_t)l->dso;
	k[1] = tally_map__start(l->map);
	k[2] = tally_map__end(l->map);
	k[3] = tally_map__pgoff(l->map);
	slot = ktab_slot(&p->map_tab, k, &found);
	if (!slot)
		return -ENOMEM;
	if (found)
		return *slot;
	if (grow(&p->maps, &p->cap_maps, p->nr_maps, sizeof(*p->maps)))
		return -ENOMEM;
	struct mapping *x = &p->maps[p->nr_maps];
	const struct tally_build_id *bid = tally_dso__bid(l->dso);
	char hex[TALLY_BUILD_ID_HEX_SIZE];

	*x = (struct mapping){ .start = k[1], .limit = k[2], .pgoff = k[3],
			       .kernel = tally_dso__is_kernel(l->dso) };
	/* the build-id the recording gave: a server finds the binary's symbols by it */
	if (str(p, tally_dso__long_name(l->dso), &x->file) ||
	    (bid && bid->size && str(p, tally_build_id__hex(bid, hex), &x->build_id)))
		return -ENOMEM;
	ktab_set(&p->map_tab, slot, (uint32_t)p->nr_maps);
	return (int64_t)++p->nr_maps;
}

static int64_t function_of(struct tally_pprof *p, const char *name, const char *file)
{
	uint32_t n, f;
	uint64_t k;
	uint32_t *slot;
	bool found;

	if (str(p, name, &n) || str(p, file, &f))
		return -ENOMEM;
	k = (uint64_t)n << 32 | f;
	slot = ktab_slot(&p->func_tab, &k, &found);
	if (!slot)
		return -ENOMEM;
	if (found)
		return *slot - 1;
	if (grow(&p->funcs, &p->cap_funcs, p->nr_funcs, sizeof(*p->funcs)))
		return -ENOMEM;
	p->funcs[p->nr_funcs] = (struct function){ .name = n, .file = f };
	ktab_set(&p->func_tab, slot, (uint32_t)p->nr_funcs);
	return (int64_t)p->nr_funcs++;
}

static int add_line(struct tally_pprof *p, struct location *loc, const char *fn, const char *file,
		    unsigned line)
{
	int64_t f = function_of(p, fn, file);

	if (f < 0 || grow(&p->lns, &p->cap_lns, p->nr_lns, sizeof(*p->lns)))
		return -ENOMEM;
	p->lns[p->nr_lns++] = (struct pline){ .function = (uint32_t)f, .line = line };
	loc->nr_lines++;
	return 0;
}

/* A new location's lines: the functions inlined at it and its own, with their source
 * lines when DWARF has them; only its function when not; none when not even that. */
static int location_lines(struct tally_pprof *p, struct location *loc, const struct tally_addr_loc *l,
			  bool caller)
{
	struct tally_line ln[MAX_LINES];
	const char *own = l->sym && l->sym->name ? l->sym->name : NULL;
	struct mapping *m = loc->mapping ? &p->maps[loc->mapping - 1] : NULL;
	int n = 0;

	loc->first_line = p->nr_lns;
	if (p->lines && l->sym) {
		n = tally_dso_lines__find(p->lines, l, caller, ln, MAX_LINES);
		if (n < 0)
			return n;
	}
	for (int i = 0; i < n; i++) {
		/* the outermost is the function perf names (its symbol), the others inlined */
		const char *fn = i == n - 1 && own ? own : ln[i].function;

		if (add_line(p, loc, fn ? fn : "[unknown]", ln[i].file, ln[i].line))
			return -ENOMEM;
	}
	if (!n && own && add_line(p, loc, own, NULL, 0))
		return -ENOMEM;
	if (m) {
		m->nr_locs++;
		m->nr_named += loc->nr_lines > 0;
		m->nr_lined += n > 0;
		m->inlined |= n > 1;
	}
	return 0;
}

/* The id of frame l's location (caller: a return address). -ENOMEM. */
static int64_t location_of(struct tally_pprof *p, const struct tally_addr_loc *l, bool caller)
{
	int64_t m = mapping_of(p, l);
	uint64_t k[3];
	uint32_t *slot;
	bool found;

	if (m < 0)
		return m;
	k[0] = (uint64_t)m;
	/* a caller's address is the return address: pprof wants one inside the call */
	k[1] = caller && l->addr ? l->addr - 1 : l->addr;
	k[2] = caller;
	slot = ktab_slot(&p->loc_tab, k, &found);
	if (!slot)
		return -ENOMEM;
	if (found)
		return *slot;	/* index + 1 = id */
	if (grow(&p->locs, &p->cap_locs, p->nr_locs, sizeof(*p->locs)))
		return -ENOMEM;
	struct location *loc = &p->locs[p->nr_locs];

	*loc = (struct location){ .mapping = (uint32_t)m, .address = k[1] };
	if (location_lines(p, loc, l, caller))
		return -ENOMEM;
	ktab_set(&p->loc_tab, slot, (uint32_t)p->nr_locs);
	return (int64_t)++p->nr_locs;
}

static uint64_t sample_hash(const struct psample *s, const uint64_t *locs)
{
	uint64_t k[5] = { s->evidx, (uint64_t)(uint32_t)s->pid << 32 | (uint32_t)s->tid,
			  (uint64_t)(uint32_t)s->cpu, s->comm, s->nr_locs };

	return key_hash(k, 5) ^ key_hash(locs, s->nr_locs) * 31;
}

static bool sample_eq(const struct tally_pprof *p, const struct psample *a, const struct psample *b,
		      const uint64_t *b_locs)
{
	return a->evidx == b->evidx && a->pid == b->pid && a->tid == b->tid && a->cpu == b->cpu &&
	       a->comm == b->comm && a->nr_locs == b->nr_locs &&
	       (!a->nr_locs ||
		!memcmp(p->loc_ids + a->first_loc, b_locs, a->nr_locs * sizeof(*b_locs)));
}

static int grow_sample_slots(struct tally_pprof *p)
{
	uint32_t n = p->nr_slots ? p->nr_slots * 2 : 4096;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_samples; i++) {
		uint32_t j;

		for (j = (uint32_t)p->sample_hash[i] & (n - 1); slots[j]; j = (j + 1) & (n - 1))
			;
		slots[j] = (uint32_t)i + 1;
	}
	free(p->sample_slots);
	p->sample_slots = slots;
	p->nr_slots = n;
	return 0;
}

int tally_pprof__add(struct tally_pprof *p, const struct tally_convert_sample *s)
{
	const struct tally_sample *smp = s->smp;
	struct psample key = {
		.evidx = (uint32_t)s->evidx, .pid = (int32_t)smp->pid, .tid = (int32_t)smp->tid,
		.cpu = smp->type & PERF_SAMPLE_CPU ? (int32_t)smp->cpu : -1,
		.nr_locs = (uint32_t)s->nr_frames,
	};
	uint64_t h;
	uint32_t j;

	if (s->evidx < 0 || (size_t)s->evidx >= p->nr_ev)
		return 0;
	if (!(smp->type & PERF_SAMPLE_TID))
		key.pid = key.tid = -1;
	if (str(p, s->thread ? tally_thread__comm(s->thread) : "", &key.comm))
		return -ENOMEM;
	if (s->nr_frames > p->cap_scratch) {
		uint64_t *v = realloc(p->scratch, s->nr_frames * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->scratch = v;
		p->cap_scratch = s->nr_frames;
	}
	for (size_t i = 0; i < s->nr_frames; i++) {
		/* every frame after the first of a call chain was reached by a call; an
		 * unwound caller's address is in the call already */
		int64_t id = location_of(p, &s->frames[i],
					 s->chain && i > 0 && !s->frames[i].unwound);

		if (id < 0)
			return (int)id;
		p->scratch[i] = (uint64_t)id;
	}
	if (s->nr_frames && p->locs[p->scratch[0] - 1].mapping)
		p->maps[p->locs[p->scratch[0] - 1].mapping - 1].leaf_samples++;
	if (smp->type & PERF_SAMPLE_TIME) {
		if (!p->any_time || smp->time < p->t_min)
			p->t_min = smp->time;
		if (!p->any_time || smp->time > p->t_max)
			p->t_max = smp->time;
		p->any_time = true;
	}
	h = sample_hash(&key, p->scratch);
	if ((p->nr_samples + 1) * 2 > p->nr_slots && grow_sample_slots(p))
		return -ENOMEM;
	for (j = (uint32_t)h & (p->nr_slots - 1); p->sample_slots[j]; j = (j + 1) & (p->nr_slots - 1)) {
		struct psample *e = &p->samples[p->sample_slots[j] - 1];

		if (p->sample_hash[p->sample_slots[j] - 1] == h && sample_eq(p, e, &key, p->scratch)) {
			e->count++;
			e->period += s->period;
			return 0;
		}
	}
	if (grow(&p->samples, &p->cap_samples, p->nr_samples, sizeof(*p->samples)))
		return -ENOMEM;
	{
		size_t cap = p->cap_samples;	/* the hashes follow the samples' capacity */
		uint64_t *hv = realloc(p->sample_hash, cap * sizeof(*hv));

		if (!hv)
			return -ENOMEM;
		p->sample_hash = hv;
	}
	while (p->nr_loc_ids + s->nr_frames > p->cap_loc_ids) {
		size_t cap = p->cap_loc_ids ? p->cap_loc_ids * 2 : 4096;
		uint64_t *v = realloc(p->loc_ids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->loc_ids = v;
		p->cap_loc_ids = cap;
	}
	key.first_loc = p->nr_loc_ids;
	if (s->nr_frames)	/* (a sample without frames: nothing yet to copy from or to) */
		memcpy(p->loc_ids + p->nr_loc_ids, p->scratch, s->nr_frames * sizeof(*p->scratch));
	p->nr_loc_ids += s->nr_frames;
	key.count = 1;
	key.period = s->period;
	p->samples[p->nr_samples] = key;
	p->sample_hash[p->nr_samples] = h;
	p->sample_slots[j] = (uint32_t)++p->nr_samples;
	return 0;
}

void tally_pprof__counts(const struct tally_pprof *p, size_t *samples, size_t *locations,
			 size_t *functions, size_t *mappings)
{
	*samples = p->nr_samples;
	*locations = p->nr_locs;
	*functions = p->nr_funcs;
	*mappings = p->nr_maps;
}

/* ---- writing ------------------------------------------------------------------------- */

/* A protobuf-c output buffer that deflates into a gzip stream on fp. */
struct gz_out {
	ProtobufCBuffer base;
	z_stream z;
	FILE *fp;
	int err;
	unsigned char buf[1 << 16];
};

static void gz_push(struct gz_out *g, const uint8_t *data, size_t len, int flush)
{
	g->z.next_in = (Bytef *)data;
	g->z.avail_in = (uInt)len;
	do {
		int r;

		g->z.next_out = g->buf;
		g->z.avail_out = sizeof(g->buf);
		r = deflate(&g->z, flush);
		if (r == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		size_t n = sizeof(g->buf) - g->z.avail_out;

		if (n && fwrite(g->buf, 1, n, g->fp) != n)
			g->err = -EIO;
	} while (g->z.avail_out == 0 && !g->err);
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gz_out *g = (struct gz_out *)b;

	if (!g->err && len)
		gz_push(g, data, len, Z_NO_FLUSH);
}

static void pack(struct gz_out *g, const Perftools__Profiles__Profile *chunk)
{
	if (!g->err)
		perftools__profiles__profile__pack_to_buffer(chunk, &g->base);
}

#define BATCH 256

static int write_header(struct tally_pprof *p, struct gz_out *g)
{
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType *types = calloc(2 * p->nr_ev + 1, sizeof(*types));
	Perftools__Profiles__ValueType **tp = calloc(2 * p->nr_ev + 1, sizeof(*tp));
	Perftools__Profiles__ValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	int64_t comment[1];
	uint32_t c;
	char text[1024];
	const char *host = tally_data__feature_string(p->data, TALLY_FEAT_HOSTNAME);
	const char *osr = tally_data__feature_string(p->data, TALLY_FEAT_OSRELEASE);
	const char *ver = tally_data__feature_string(p->data, TALLY_FEAT_VERSION);

	if (!types || !tp) {
		free(types);
		free(tp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nr_ev; i++) {
		Perftools__Profiles__ValueType init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;

		types[2 * i] = init;
		types[2 * i].type = p->ev[i].samples_type;
		types[2 * i].unit = p->ev[i].count_unit;
		types[2 * i + 1] = init;
		types[2 * i + 1].type = p->ev[i].period_type;
		types[2 * i + 1].unit = p->ev[i].unit;
		tp[2 * i] = &types[2 * i];
		tp[2 * i + 1] = &types[2 * i + 1];
	}
	prof.n_sample_type = 2 * p->nr_ev;
	prof.sample_type = tp;
	if (p->nr_ev) {
		period.type = p->ev[0].period_type;
		period.unit = p->ev[0].unit;
		prof.period_type = &period;
		prof.period = (int64_t)p->ev[0].fixed_period;
		prof.default_sample_type = p->ev[0].period_type;
	}
	if (p->any_time) {
		prof.duration_nanos = (int64_t)(p->t_max - p->t_min);
		if (p->o.end_ns)
			prof.time_nanos = p->o.end_ns - prof.duration_nanos;
	}
	snprintf(text, sizeof(text), "perf.data of %s (Linux %s), recorded by perf %s; converted by tally",
		 host ? host : "?", osr ? osr : "?", ver ? ver : "?");
	if (str(p, text, &c)) {
		free(types);
		free(tp);
		return -ENOMEM;
	}
	comment[0] = c;
	prof.n_comment = 1;
	prof.comment = comment;
	pack(g, &prof);
	free(types);
	free(tp);
	return 0;
}

/* pprof takes mapping 1 for the main binary (it names the profile's "File"): the user
 * mapping most samples ran in goes first, the others keep their order. */
static int order_mappings(struct tally_pprof *p)
{
	size_t main_idx = 0;
	uint64_t best = 0;

	p->map_id = calloc(p->nr_maps ? p->nr_maps : 1, sizeof(*p->map_id));
	if (!p->map_id)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_maps; i++) {
		if (!p->maps[i].kernel && p->maps[i].leaf_samples > best) {
			best = p->maps[i].leaf_samples;
			main_idx = i;
		}
	}
	for (size_t i = 0, id = 2; i < p->nr_maps; i++)
		p->map_id[i] = i == main_idx ? 1 : (uint32_t)id++;
	return 0;
}

static void write_mappings(struct tally_pprof *p, struct gz_out *g)
{
	Perftools__Profiles__Mapping m[BATCH], *mp[BATCH];
	size_t *by_id = malloc((p->nr_maps ? p->nr_maps : 1) * sizeof(*by_id));

	if (!by_id) {
		g->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < p->nr_maps; i++)
		by_id[p->map_id[i] - 1] = i;
	for (size_t at = 0; at < p->nr_maps && !g->err; at += BATCH) {
		Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
		size_t n = p->nr_maps - at < BATCH ? p->nr_maps - at : BATCH;

		for (size_t i = 0; i < n; i++) {
			const struct mapping *x = &p->maps[by_id[at + i]];
			Perftools__Profiles__Mapping init = PERFTOOLS__PROFILES__MAPPING__INIT;

			m[i] = init;
			m[i].id = at + i + 1;
			m[i].memory_start = x->start;
			m[i].memory_limit = x->limit;
			m[i].file_offset = x->pgoff;
			m[i].filename = x->file;
			m[i].build_id = x->build_id;
			m[i].has_functions = x->nr_locs && x->nr_named == x->nr_locs;
			m[i].has_filenames = m[i].has_line_numbers = x->nr_locs && x->nr_lined == x->nr_locs;
			m[i].has_inline_frames = m[i].has_line_numbers;
			mp[i] = &m[i];
		}
		prof.n_mapping = n;
		prof.mapping = mp;
		pack(g, &prof);
	}
	free(by_id);
}

static void write_locations(struct tally_pprof *p, struct gz_out *g)
{
	Perftools__Profiles__Location l[BATCH], *lp[BATCH];
	Perftools__Profiles__Line ln[BATCH * 4], *lnp[BATCH * 4];

	for (size_t at = 0; at < p->nr_locs && !g->err;) {
		Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
		size_t n = 0, nl = 0;

		/* as many locations as fit the batch's room for lines */
		while (at + n < p->nr_locs && n < BATCH &&
		       (nl + p->locs[at + n].nr_lines <= BATCH * 4 || !n)) {
			const struct location *x = &p->locs[at + n];
			Perftools__Profiles__Location init = PERFTOOLS__PROFILES__LOCATION__INIT;
			size_t k = x->nr_lines < BATCH * 4 ? x->nr_lines : BATCH * 4;

			l[n] = init;
			l[n].id = at + n + 1;
			l[n].mapping_id = x->mapping ? p->map_id[x->mapping - 1] : 0;
			l[n].address = x->address;
			l[n].line = &lnp[nl];
			l[n].n_line = k;
			for (size_t i = 0; i < k; i++) {
				Perftools__Profiles__Line li = PERFTOOLS__PROFILES__LINE__INIT;
				const struct pline *pl = &p->lns[x->first_line + i];

				li.function_id = pl->function + 1;
				li.line = pl->line;
				ln[nl] = li;
				lnp[nl] = &ln[nl];
				nl++;
			}
			lp[n] = &l[n];
			n++;
		}
		prof.n_location = n;
		prof.location = lp;
		pack(g, &prof);
		at += n;
	}
}

static void write_functions(struct tally_pprof *p, struct gz_out *g)
{
	Perftools__Profiles__Function f[BATCH], *fp[BATCH];

	for (size_t at = 0; at < p->nr_funcs && !g->err; at += BATCH) {
		Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
		size_t n = p->nr_funcs - at < BATCH ? p->nr_funcs - at : BATCH;

		for (size_t i = 0; i < n; i++) {
			Perftools__Profiles__Function init = PERFTOOLS__PROFILES__FUNCTION__INIT;

			f[i] = init;
			f[i].id = at + i + 1;
			f[i].name = f[i].system_name = p->funcs[at + i].name;
			f[i].filename = p->funcs[at + i].file;
			fp[i] = &f[i];
		}
		prof.n_function = n;
		prof.function = fp;
		pack(g, &prof);
	}
}

#define MAX_LABELS 8

static int write_samples(struct tally_pprof *p, struct gz_out *g)
{
	size_t nv = 2 * p->nr_ev, nlab = 4 + p->o.nr_labels;
	Perftools__Profiles__Sample *s = calloc(BATCH, sizeof(*s));
	Perftools__Profiles__Sample **sp = calloc(BATCH, sizeof(*sp));
	int64_t *vals = calloc(BATCH * (nv ? nv : 1), sizeof(*vals));
	Perftools__Profiles__Label *lab = calloc(BATCH * nlab, sizeof(*lab));
	Perftools__Profiles__Label **labp = calloc(BATCH * nlab, sizeof(*labp));
	int err = s && sp && vals && lab && labp ? 0 : -ENOMEM;

	for (size_t at = 0; at < p->nr_samples && !g->err && !err; at += BATCH) {
		Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
		size_t n = p->nr_samples - at < BATCH ? p->nr_samples - at : BATCH;

		memset(vals, 0, BATCH * nv * sizeof(*vals));
		for (size_t i = 0; i < n; i++) {
			const struct psample *x = &p->samples[at + i];
			Perftools__Profiles__Sample init = PERFTOOLS__PROFILES__SAMPLE__INIT;
			Perftools__Profiles__Label linit = PERFTOOLS__PROFILES__LABEL__INIT;
			Perftools__Profiles__Label *L = &lab[i * nlab];
			size_t k = 0;

			s[i] = init;
			s[i].n_location_id = x->nr_locs;
			s[i].location_id = p->loc_ids + x->first_loc;
			s[i].n_value = nv;
			s[i].value = vals + i * nv;
			s[i].value[2 * x->evidx] = (int64_t)x->count;
			s[i].value[2 * x->evidx + 1] = (int64_t)x->period;
			if (x->pid >= 0 || x->tid >= 0) {
				L[k] = linit, L[k].key = p->k_pid, L[k].num_unit = p->k_pid, L[k++].num = x->pid;
				L[k] = linit, L[k].key = p->k_tid, L[k].num_unit = p->k_tid, L[k++].num = x->tid;
			}
			L[k] = linit, L[k].key = p->k_comm, L[k++].str = x->comm;
			if (x->cpu >= 0)
				L[k] = linit, L[k].key = p->k_cpu, L[k].num_unit = p->k_cpu, L[k++].num = x->cpu;
			for (size_t u = 0; u < p->o.nr_labels; u++)
				L[k] = linit, L[k].key = p->user_keys[u], L[k++].str = p->user_values[u];
			for (size_t u = 0; u < k; u++)
				labp[i * nlab + u] = &L[u];
			s[i].n_label = k;
			s[i].label = &labp[i * nlab];
			sp[i] = &s[i];
		}
		prof.n_sample = n;
		prof.sample = sp;
		pack(g, &prof);
	}
	free(s);
	free(sp);
	free(vals);
	free(lab);
	free(labp);
	return err;
}

static void write_strings(struct tally_pprof *p, struct gz_out *g)
{
	for (uint32_t at = 0; at < p->strs.nr && !g->err; at += 4096) {
		Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;

		prof.n_string_table = p->strs.nr - at < 4096 ? p->strs.nr - at : 4096;
		prof.string_table = p->strs.names + at;
		pack(g, &prof);
	}
}

int tally_pprof__write(struct tally_pprof *p, FILE *fp)
{
	struct gz_out *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	g->base.append = gz_append;
	g->fp = fp;
	/* windowBits 15 + 16: a gzip stream, as pprof files are */
	if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	err = order_mappings(p) ?: write_header(p, g);
	if (!err) {
		write_mappings(p, g);
		write_locations(p, g);
		write_functions(p, g);
		err = write_samples(p, g);
	}
	/* last: every string the parts above named is in the table now */
	if (!err)
		write_strings(p, g);
	if (!err && !g->err)
		gz_push(g, NULL, 0, Z_FINISH);
	deflateEnd(&g->z);
	if (!err)
		err = g->err;
	if (!err && (fflush(fp) || ferror(fp)))
		err = -EIO;
	free(g);
	return err;
}
