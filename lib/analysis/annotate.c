/*
 * Annotate shares (see tally/annotate.h).
 *
 * perf keeps an array as long as the function for every symbol and event; most
 * functions get samples at a handful of addresses, so each symbol here has a small hash
 * of the offsets that got any, with a counter pair per event beside each. Range
 * questions come after all samples are in: the offsets are sorted once then.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/annotate.h>

struct tally_annotated {
	struct tally_dso *dso;
	const struct tally_symbol *sym;
	size_t nr_events;
	struct tally_annotate_count *total;	/* per event */
	/* offsets with samples: open addressing, slot -> index + 1 (0: empty) */
	uint32_t *slots;
	size_t nr_slots;
	uint64_t *offsets;			/* by index */
	struct tally_annotate_count *counts;	/* index * nr_events + event */
	size_t nr, cap;
	uint32_t *order;			/* indexes by offset (NULL: to be made) */
};

struct tally_annotate {
	size_t nr_events;
	struct tally_annotate_count *totals;	/* per event */
	struct tally_annotated **table;		/* open addressing by (dso, sym) */
	size_t cap, nr;
	struct tally_annotated *last;		/* samples repeat their symbol */
};

static uint64_t mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	return v;
}

static uint64_t sym_hash(const struct tally_dso *d, const struct tally_symbol *s)
{
	return mix((uint64_t)(uintptr_t)d * 31 + (uint64_t)(uintptr_t)s);
}

int tally_annotate__new(struct tally_annotate **out, size_t nr_events)
{
	struct tally_annotate *a;

	*out = NULL;
	if (!nr_events)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->nr_events = nr_events;
	a->totals = calloc(nr_events, sizeof(*a->totals));
	if (!a->totals) {
		free(a);
		return -ENOMEM;
	}
	*out = a;
	return 0;
}

static void annotated_free(struct tally_annotated *s)
{
	free(s->total);
	free(s->slots);
	free(s->offsets);
	free(s->counts);
	free(s->order);
	free(s);
}

void tally_annotate__delete(struct tally_annotate *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->cap; i++)
		if (a->table[i])
			annotated_free(a->table[i]);
	free(a->table);
	free(a->totals);
	free(a);
}

static int table_grow(struct tally_annotate *a)
{
	size_t cap = a->cap ? a->cap * 2 : 256;
	struct tally_annotated **t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++) {
		struct tally_annotated *s = a->table[i];
		size_t k;

		if (!s)
			continue;
		for (k = sym_hash(s->dso, s->sym) & (cap - 1); t[k]; k = (k + 1) & (cap - 1))
			;
		t[k] = s;
	}
	free(a->table);
	a->table = t;
	a->cap = cap;
	return 0;
}

static struct tally_annotated *findnew(struct tally_annotate *a, struct tally_dso *d,
				       const struct tally_symbol *sym)
{
	struct tally_annotated *s;
	size_t k;

	if ((a->nr + 1) * 2 > a->cap && table_grow(a))
		return NULL;
	for (k = sym_hash(d, sym) & (a->cap - 1); (s = a->table[k]); k = (k + 1) & (a->cap - 1))
		if (s->dso == d && s->sym == sym)
			return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dso = d;
	s->sym = sym;
	s->nr_events = a->nr_events;
	s->total = calloc(a->nr_events, sizeof(*s->total));
	if (!s->total) {
		free(s);
		return NULL;
	}
	a->table[k] = s;
	a->nr++;
	return s;
}

static int offsets_grow(struct tally_annotated *s)
{
	size_t cap = s->cap ? s->cap * 2 : 8, nslots = cap * 2;
	uint64_t *off = realloc(s->offsets, cap * sizeof(*off));
	struct tally_annotate_count *c;
	uint32_t *slots;

	if (!off)
		return -ENOMEM;
	s->offsets = off;
	c = realloc(s->counts, cap * s->nr_events * sizeof(*c));
	if (!c)
		return -ENOMEM;
	s->counts = c;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr; i++) {
		size_t k;

		for (k = mix(s->offsets[i]) & (nslots - 1); slots[k]; k = (k + 1) & (nslots - 1))
			;
		slots[k] = (uint32_t)i + 1;
	}
	free(s->slots);
	s->slots = slots;
	s->nr_slots = nslots;
	s->cap = cap;
	return 0;
}

static struct tally_annotate_count *offset_counts(struct tally_annotated *s, uint64_t off)
{
	size_t k;

	if (s->nr == s->cap && (s->nr >= UINT32_MAX - 1 || offsets_grow(s)))
		return NULL;
	for (k = mix(off) & (s->nr_slots - 1); s->slots[k]; k = (k + 1) & (s->nr_slots - 1))
		if (s->offsets[s->slots[k] - 1] == off)
			return &s->counts[(s->slots[k] - 1) * s->nr_events];
	s->slots[k] = (uint32_t)s->nr + 1;
	s->offsets[s->nr] = off;
	memset(&s->counts[s->nr * s->nr_events], 0, s->nr_events * sizeof(*s->counts));
	free(s->order);
	s->order = NULL;
	return &s->counts[s->nr++ * s->nr_events];
}

int tally_annotate__add(struct tally_annotate *a, size_t evidx, const struct tally_addr_loc *loc,
			uint64_t period)
{
	struct tally_annotated *s;
	struct tally_annotate_count *c;
	uint64_t off;

	if (evidx >= a->nr_events)
		return -EINVAL;
	a->totals[evidx].nr_samples++;
	a->totals[evidx].period += period;
	if (!loc->sym || !loc->dso || loc->dso_addr < loc->sym->start ||
	    loc->dso_addr - loc->sym->start >= loc->sym->size)
		return 0;	/* perf leaves such samples out of every symbol's histogram */
	off = loc->dso_addr - loc->sym->start;
	s = a->last;
	if (!s || s->sym != loc->sym || s->dso != loc->dso) {
		s = findnew(a, loc->dso, loc->sym);
		if (!s)
			return -ENOMEM;
		a->last = s;
	}
	c = offset_counts(s, off);
	if (!c)
		return -ENOMEM;
	c[evidx].nr_samples++;
	c[evidx].period += period;
	s->total[evidx].nr_samples++;
	s->total[evidx].period += period;
	return 0;
}

struct tally_annotate_count tally_annotate__event_total(const struct tally_annotate *a,
							 size_t evidx)
{
	struct tally_annotate_count none = { 0, 0 };

	return evidx < a->nr_events ? a->totals[evidx] : none;
}

/* perf annotate's order: its hists are keyed by dso and symbol and sorted by period,
 * equal periods by dso short name and symbol name. */
static int hotter(const void *x, const void *y, void *arg)
{
	const struct tally_annotated *a = *(struct tally_annotated *const *)x;
	const struct tally_annotated *b = *(struct tally_annotated *const *)y;
	size_t ev = *(const size_t *)arg;
	uint64_t pa = a->total[ev].period, pb = b->total[ev].period;
	int c;

	if (pa != pb)
		return pa > pb ? -1 : 1;
	c = strcmp(tally_dso__short_name(a->dso), tally_dso__short_name(b->dso));
	if (c)
		return c;
	c = strcmp(a->sym->name ? a->sym->name : "", b->sym->name ? b->sym->name : "");
	if (c)
		return c;
	if (a->sym->start != b->sym->start)
		return a->sym->start < b->sym->start ? -1 : 1;
	return tally_dso__index(a->dso) < tally_dso__index(b->dso) ? -1 : 1;
}

int tally_annotate__symbols(struct tally_annotate *a, size_t evidx, struct tally_annotated ***out,
			    size_t *nr)
{
	struct tally_annotated **v;
	size_t n = 0;

	*out = NULL;
	*nr = 0;
	if (evidx >= a->nr_events)
		return 0;
	v = malloc((a->nr ? a->nr : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++)
		if (a->table[i] && a->table[i]->total[evidx].nr_samples)
			v[n++] = a->table[i];
	qsort_r(v, n, sizeof(*v), hotter, &evidx);
	*out = v;
	*nr = n;
	return 0;
}

struct tally_dso *tally_annotated__dso(const struct tally_annotated *s)
{
	return s->dso;
}

const struct tally_symbol *tally_annotated__symbol(const struct tally_annotated *s)
{
	return s->sym;
}

struct tally_annotate_count tally_annotated__total(const struct tally_annotated *s, size_t evidx)
{
	struct tally_annotate_count none = { 0, 0 };

	return evidx < s->nr_events ? s->total[evidx] : none;
}

static int by_offset(const void *x, const void *y, void *arg)
{
	const uint64_t *offsets = arg;
	uint64_t a = offsets[*(const uint32_t *)x];
	uint64_t b = offsets[*(const uint32_t *)y];

	return a < b ? -1 : a > b;
}

struct tally_annotate_count tally_annotated__range(struct tally_annotated *s, size_t evidx,
						   uint64_t from, uint64_t to)
{
	struct tally_annotate_count sum = { 0, 0 };
	size_t lo = 0, hi = s->nr;

	if (evidx >= s->nr_events || !s->nr)
		return sum;
	if (!s->order) {
		s->order = malloc(s->nr * sizeof(*s->order));
		if (!s->order) {
			/* no room to sort: walk them all */
			for (size_t i = 0; i < s->nr; i++) {
				if (s->offsets[i] >= from && s->offsets[i] < to) {
					sum.nr_samples += s->counts[i * s->nr_events + evidx].nr_samples;
					sum.period += s->counts[i * s->nr_events + evidx].period;
				}
			}
			return sum;
		}
		for (size_t i = 0; i < s->nr; i++)
			s->order[i] = (uint32_t)i;
		qsort_r(s->order, s->nr, sizeof(*s->order), by_offset, s->offsets);
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->offsets[s->order[mid]] < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < s->nr && s->offsets[s->order[i]] < to; i++) {
		const struct tally_annotate_count *c = &s->counts[s->order[i] * s->nr_events + evidx];

		sum.nr_samples += c->nr_samples;
		sum.period += c->period;
	}
	return sum;
}
