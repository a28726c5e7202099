/*
 * Samples into histograms (tally/hist.h): one pass in time order; each sample is
 * resolved in the session (its ip and its call chain, through the session's cache),
 * filtered, and added to its self entry, to the entries of the functions on its chain
 * (children mode) and to their call-chain trees.
 *
 * Two things keep a big file fast. Equal samples are resolved once: the sample memo
 * remembers which entries a sample went to (and which deferred chain record), and an
 * equal sample just adds its period there. And trees can be deferred: chains are logged
 * (each distinct one once, periods summed) and appended at the end only to the entries
 * heavy enough to print a branch.
 */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/cpumap.h>
#include <tally/record.h>
#include <tally/session.h>
#include <tally/srcline.h>
#include "internal/analysis.h"
#include "internal/session.h"
#include "internal/util.h"

#define SEEN_BITS 8	/* the set of rows one sample reached: chains below half of it */

/* A call-graph frame named by its address or source line (enum tally_cc_key): frames
 * are the same node when they have the same symbol object, and its name is what the
 * graph prints. */
struct cc_sym {
	const char *dso_key;
	uint64_t key;		/* the dso address, or the interned line's address */
	const struct tally_symbol *real;	/* by line: the function (NULL: the line's
						 * first address, in start) */
	struct tally_symbol *sym;
	uint64_t start;
	bool used;
};

/* dso -> interned names: rows are keyed by the shown name (perf's short name), chain
 * frames by the long name; per-process dso objects of one binary merge */
struct dso_slot {
	const struct tally_dso *dso;
	const char *key, *long_key;
};

struct tally_hists {
	struct tally_session *session;
	struct tally_hists_opts o;
	enum tally_hist_col keys[TALLY_HIST_NR_COLS];
	struct tally_hist *h;
	size_t nr;
	struct tally_strpool own_pool, *pool;
	struct tly_cc_arena arena;	/* every tree node (unless o.decay) */
	struct tally_frames frames;
	bool notes;		/* this object owns the session's cache notes (frame ids) */
	/* per sample: the entries it reached, its frames in display order */
	struct tally_hist_entry **seen;
	struct tally_cc_frame *ccf;
	size_t ccf_cap;
	/* deferred trees: record = n, self entry id, period (2 words), n frame ids, n
	 * children entry ids (0: none) */
	struct tly_cc_log log;
	struct tally_hist_entry **ents;	/* by id - 1 */
	uint32_t nr_ents, cap_ents;
	struct dso_slot *dso_keys;
	size_t dso_cap, nr_dso_keys;
	struct tally_sample_memo *memo;	/* NULL: every sample resolved */
	bool memo_cpu;		/* the cpu is a key: part of the memo's key */
	bool trace_key;		/* TALLY_HIST_TRACE is a key */
	bool time_key;		/* TALLY_HIST_TIME is a key */
	bool src_keys;		/* TALLY_HIST_SRCLINE or _SRCFILE is a key */
	bool parent_key;	/* TALLY_HIST_PARENT is a key: parent_re is compiled */
	regex_t parent_re;
	bool ignore_callees;	/* o.ignore_callees given: ignore_re is compiled */
	regex_t ignore_re;
	struct tally_dso_lines *lines;	/* source lines (opened on first use) */
	/* address/srcline call-graph frames: a symbol of their own per (dso, key) */
	struct cc_sym *cc_syms;
	size_t nr_cc_syms, cap_cc_syms;	/* cap: a power of two */
	/* inlined functions' frames: a symbol per (symbol holding them, name) named
	 * "NAME (inlined)" (tally_symbol__is_inlined), open addressing */
	struct inl_sym {
		const struct tally_symbol *base;
		const char *name;
		struct tally_symbol *sym;
	} *inl_syms;
	size_t nr_inl_syms, cap_inl_syms;
	/* rows by what decides them (row_of): NULL where the keys take more */
	struct row_slot *rows;
	unsigned row_bits;	/* 2^row_bits slots, more as rows come (ROW_SLOTS_BITS at most) */
	size_t row_fills;	/* slots written since the last growth */
	/* the rows one sample reached (add_children), a set stamped with the sample's
	 * number: no clearing between samples */
	struct seen_slot {
		const struct tally_hist_entry *e;
		uint32_t stamp;
	} seen_set[1u << SEEN_BITS];
	uint32_t seen_stamp;
	/* the last dsos dso_key saw, and their keys */
	struct dso_slot last_dso[2];
	unsigned last_dso_at;
	const char *last_comm;	/* the last comm interned */
	unsigned max_stack;	/* o.max_stack, UINT_MAX for all */
	int err;		/* sticky: out of memory somewhere in a sample */
	/* tally_hists__finish_start's thread replaying the log (replaying: not joined) */
	pthread_t replay_tid;
	bool replaying;
	int replay_err;
};

/* A row as the comm, dso and sym keys (any of them) decide it: by the comm, the dso,
 * the symbol and, without a symbol, the address. Direct-mapped in front of
 * tly_hist__findnew (rows never move while samples are added, unless they decay). */
#define ROW_SLOTS_BITS 14
#define ROW_SLOTS_MIN_BITS 9

struct row_slot {
	const struct tally_hist *h;
	const char *comm;
	const struct tally_dso *dso;
	const struct tally_symbol *sym;
	uint64_t ip;		/* without a symbol */
	struct tally_hist_entry *e;
};

static const enum tally_hist_col default_keys[] = {
	TALLY_HIST_COMM, TALLY_HIST_DSO, TALLY_HIST_SYM,
};

static int setup(struct tally_hists *hs, size_t nr_events)
{
	struct tally_hists_opts *o = &hs->o;

	hs->pool = o->pool ? o->pool : &hs->own_pool;
	hs->h = calloc(nr_events ? nr_events : 1, sizeof(*hs->h));
	if (!hs->h)
		return -ENOMEM;
	for (size_t i = 0; i < nr_events; i++) {
		int err = tly_hist__init(&hs->h[i], hs->keys, o->nr_keys, hs->pool);

		hs->nr = i + 1;
		if (err)
			return err;
		hs->h[i].trees = o->callchains && o->trees != TALLY_TREES_NONE;
		hs->h[i].arena_trees = !o->decay;
		hs->h[i].caller = o->caller;
		hs->h[i].no_depth_ties = !hs->h[i].trees;
	}
	for (size_t i = 0; i < o->nr_keys; i++) {
		hs->memo_cpu |= hs->keys[i] == TALLY_HIST_CPU;
		hs->trace_key |= hs->keys[i] == TALLY_HIST_TRACE;
		hs->time_key |= hs->keys[i] == TALLY_HIST_TIME;
		hs->src_keys |= hs->keys[i] == TALLY_HIST_SRCLINE ||
				hs->keys[i] == TALLY_HIST_SRCFILE;
		if (hs->keys[i] == TALLY_HIST_PARENT && !hs->parent_key) {
			const char *pat = o->parent_pattern ? o->parent_pattern
							    : "^sys_|^do_page_fault";

			if (regcomp(&hs->parent_re, pat, REG_EXTENDED | REG_NOSUB))
				return -EINVAL;
			hs->parent_key = true;
		}
	}
	if (!o->decay) {
		bool simple = true;

		for (size_t i = 0; i < o->nr_keys; i++)
			simple &= hs->keys[i] == TALLY_HIST_COMM || hs->keys[i] == TALLY_HIST_DSO ||
				  hs->keys[i] == TALLY_HIST_SYM;
		if (simple) {
			hs->row_bits = ROW_SLOTS_MIN_BITS;
			hs->rows = calloc((size_t)1 << hs->row_bits, sizeof(*hs->rows));
			if (!hs->rows)
				return -ENOMEM;
		}
	}
	if (o->ignore_callees) {
		if (regcomp(&hs->ignore_re, o->ignore_callees, REG_EXTENDED | REG_NOSUB))
			return -EINVAL;
		hs->ignore_callees = true;
	}
	/* with trees built per sample, every sample must reach them; rows by trace output
	 * take each sample's own fields */
	if (!o->decay && !(o->callchains && o->trees == TALLY_TREES_BUILD) &&
	    !hs->trace_key && !hs->time_key && nr_events <= UINT16_MAX) {
		hs->memo = tally_sample_memo__new(0, 0);
		if (!hs->memo)
			return -ENOMEM;
	}
	if (o->callchains && o->trees == TALLY_TREES_DEFER)
		hs->notes = tly_session__own_notes(hs->session, hs);
	return 0;
}

int tally_hists__new(struct tally_hists **out, struct tally_session *session,
		     size_t nr_events, const struct tally_hists_opts *opts)
{
	struct tally_hists *hs = calloc(1, sizeof(*hs));
	int err;

	*out = NULL;
	if (!hs)
		return -ENOMEM;
	hs->session = session;
	if (opts)
		hs->o = *opts;
	if (!hs->o.keys) {
		hs->o.keys = default_keys;
		hs->o.nr_keys = TLY_ARRAY_SIZE(default_keys);
	}
	if (hs->o.nr_keys > TALLY_HIST_NR_COLS) {
		free(hs);
		return -EINVAL;
	}
	memcpy(hs->keys, hs->o.keys, hs->o.nr_keys * sizeof(*hs->keys));
	hs->o.keys = hs->keys;
	hs->max_stack = hs->o.max_stack ? hs->o.max_stack : UINT_MAX;
	err = setup(hs, nr_events);
	if (err) {
		tally_hists__delete(hs);
		return err;
	}
	*out = hs;
	return 0;
}

void tally_hists__delete(struct tally_hists *hs)
{
	if (!hs)
		return;
	if (hs->replaying)	/* a replay under way ends first (none is started here) */
		pthread_join(hs->replay_tid, NULL);
	for (size_t i = 0; i < hs->nr; i++)
		tly_hist__exit(&hs->h[i]);
	free(hs->h);
	if (hs->notes)
		tly_session__own_notes(hs->session, NULL);
	free(hs->frames.v);
	free(hs->frames.notes);
	free(hs->frames.lines);
	free(hs->seen);
	free(hs->ccf);
	tly_cc_log__exit(&hs->log);
	free(hs->ents);
	free(hs->dso_keys);
	free(hs->rows);
	tally_sample_memo__delete(hs->memo);
	tly_cc_arena__exit(&hs->arena);
	tly_strpool__exit(&hs->own_pool.ids);
	tally_dso_lines__delete(hs->lines);
	if (hs->parent_key)
		regfree(&hs->parent_re);
	if (hs->ignore_callees)
		regfree(&hs->ignore_re);
	for (size_t i = 0; i < hs->cap_cc_syms; i++)
		free(hs->cc_syms[i].sym);
	free(hs->cc_syms);
	for (size_t i = 0; i < hs->cap_inl_syms; i++)
		free(hs->inl_syms[i].sym);
	free(hs->inl_syms);
	free(hs);
}

static size_t inl_slot(const struct inl_sym *v, size_t cap, const struct tally_symbol *base,
		       const char *name)
{
	size_t i = tly_hash_mix((uintptr_t)base, (uintptr_t)name) & (cap - 1);

	while (v[i].sym && (v[i].base != base || v[i].name != name))
		i = (i + 1) & (cap - 1);
	return i;
}

/* The symbol of the frame of a function inlined in loc->sym (loc->inlined): as perf's,
 * it spans the symbol it is inlined in, and is named "NAME (inlined)". Names come
 * interned from the session (one pointer per name). NULL on ENOMEM. */
static const struct tally_symbol *inline_sym(struct tally_hists *hs,
					     const struct tally_addr_loc *loc)
{
	struct inl_sym *e;
	char buf[4096];

	if (hs->nr_inl_syms * 2 >= hs->cap_inl_syms) {
		size_t cap = hs->cap_inl_syms ? hs->cap_inl_syms * 2 : 64;
		struct inl_sym *v = calloc(cap, sizeof(*v));

		if (!v)
			goto nomem;
		for (size_t i = 0; i < hs->cap_inl_syms; i++) {
			const struct inl_sym *o = &hs->inl_syms[i];

			if (o->sym)
				v[inl_slot(v, cap, o->base, o->name)] = *o;
		}
		free(hs->inl_syms);
		hs->inl_syms = v;
		hs->cap_inl_syms = cap;
	}
	e = &hs->inl_syms[inl_slot(hs->inl_syms, hs->cap_inl_syms, loc->sym, loc->inlined)];
	if (e->sym)
		return e->sym;
	e->sym = calloc(1, sizeof(*e->sym));
	if (!e->sym)
		goto nomem;
	e->base = loc->sym;
	e->name = loc->inlined;
	hs->nr_inl_syms++;
	snprintf(buf, sizeof(buf), "%s" TALLY_INLINED_SUFFIX, loc->inlined);
	e->sym->start = loc->sym->start;
	e->sym->size = loc->sym->size;
	e->sym->name = tally_strpool__intern(hs->pool, buf);
	if (!e->sym->name)
		goto nomem;
	return e->sym;
nomem:
	hs->err = -ENOMEM;
	return loc->sym;
}

struct tally_hist *tally_hists__hist(struct tally_hists *hs, size_t evidx)
{
	return evidx < hs->nr ? &hs->h[evidx] : NULL;
}

static bool in_list(const char *const *l, const char *s)
{
	for (size_t i = 0; l[i]; i++)
		if (!strcmp(l[i], s))
			return true;
	return false;
}

static bool has_pid(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

static int grow_dso_keys(struct tally_hists *hs)
{
	size_t cap = hs->dso_cap ? hs->dso_cap * 2 : 256, i;
	struct dso_slot *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t j = 0; j < hs->dso_cap; j++) {
		if (!hs->dso_keys[j].dso)
			continue;
		for (i = ((uintptr_t)hs->dso_keys[j].dso >> 4) & (cap - 1); n[i].dso;
		     i = (i + 1) & (cap - 1))
			;
		n[i] = hs->dso_keys[j];
	}
	free(hs->dso_keys);
	hs->dso_keys = n;
	hs->dso_cap = cap;
	return 0;
}

/* The name a row of dso d shows (and merges by). */
static const char *shown_name(const struct tally_hists *hs, const struct tally_dso *d)
{
	const char *n = tally_dso__short_name(d);

	if (hs->o.kernel_name && tally_dso__is_kernel(d) && n && !strcmp(n, "[kernel.kallsyms]"))
		return hs->o.kernel_name;
	return n ? n : "[unknown]";
}

/* dso_key past its memo of the last two */
static const char *dso_key_slow(struct tally_hists *hs, const struct tally_dso *d, bool long_name)
{
	size_t i, mask;

	if (hs->nr_dso_keys * 2 >= hs->dso_cap && grow_dso_keys(hs)) {
		hs->err = -ENOMEM;
		return NULL;
	}
	mask = hs->dso_cap - 1;
	for (i = ((uintptr_t)d >> 4) & mask; hs->dso_keys[i].dso; i = (i + 1) & mask)
		if (hs->dso_keys[i].dso == d)
			goto found;
	hs->dso_keys[i].dso = d;
	hs->dso_keys[i].key = tally_strpool__intern(hs->pool, shown_name(hs, d));
	hs->dso_keys[i].long_key = tally_strpool__intern(hs->pool, tally_dso__name(d));
	if (!hs->dso_keys[i].key || !hs->dso_keys[i].long_key) {
		hs->err = -ENOMEM;
		return NULL;
	}
	hs->nr_dso_keys++;
found:
	hs->last_dso[hs->last_dso_at] = hs->dso_keys[i];
	hs->last_dso_at ^= 1;
	return long_name ? hs->dso_keys[i].long_key : hs->dso_keys[i].key;
}

/* d's interned row key (its shown name) or, with long_name, its frame key. */
static inline const char *dso_key(struct tally_hists *hs, const struct tally_dso *d,
				  bool long_name)
{
	if (!d)
		return NULL;
	/* a chain goes back and forth between few dsos (the kernel, a program, its libc) */
	if (hs->last_dso[0].dso == d)
		return long_name ? hs->last_dso[0].long_key : hs->last_dso[0].key;
	if (hs->last_dso[1].dso == d)
		return long_name ? hs->last_dso[1].long_key : hs->last_dso[1].key;
	return dso_key_slow(hs, d, long_name);
}

static void fill_entry(struct tally_hists *hs, struct tally_hist_entry *t,
		       const struct tally_addr_loc *loc, bool self)
{
	t->dso = loc->dso;
	t->dso_key = dso_key(hs, loc->dso, false);
	t->dso_name = t->dso_key ? t->dso_key : "[unknown]";
	t->sym = loc->inlined && loc->sym ? inline_sym(hs, loc) : loc->sym;
	t->ip = self && loc->map ? loc->dso_addr : loc->addr;
	t->level = tally_cpumode_level(loc->cpumode);
}

/* loc's source line as perf prints it (tally_dso_lines__text) into buf: its length, 0
 * when unknown. */
static int find_line(struct tally_hists *hs, const struct tally_addr_loc *loc, char *buf,
		     size_t len, size_t *file_len)
{
	int n;

	*file_len = 0;
	if (!loc->dso)
		return 0;
	if (!hs->lines && tally_dso_lines__new(&hs->lines, hs->session)) {
		hs->err = -ENOMEM;
		return 0;
	}
	n = tally_dso_lines__text(hs->lines, loc, hs->o.full_source_path, buf, len, file_len);
	if (n < 0) {
		hs->err = n;
		return 0;
	}
	return n;
}

/* The srcline and srcfile keys of a row at loc (see struct tally_hist_entry). */
static void fill_src(struct tally_hists *hs, struct tally_hist_entry *t,
		     const struct tally_addr_loc *loc)
{
	char buf[4096];
	size_t file_len;

	if (find_line(hs, loc, buf, sizeof(buf), &file_len) > 0) {
		t->srcline = tally_strpool__intern(hs->pool, buf);
		buf[file_len] = 0;
		t->srcfile = tally_strpool__intern(hs->pool, buf);
	} else {
		if (loc->sym && loc->sym->name)
			snprintf(buf, sizeof(buf), "%s+%" PRIu64, loc->sym->name,
				 loc->dso_addr - loc->sym->start);
		else if (loc->dso && loc->map)
			snprintf(buf, sizeof(buf), "%s[%" PRIx64 "]",
				 tally_dso__short_name(loc->dso), loc->dso_addr);
		else
			snprintf(buf, sizeof(buf), "??:0");
		t->srcline = tally_strpool__intern(hs->pool, buf);
		t->srcfile = tally_strpool__intern(hs->pool, "");
	}
	if (!t->srcline || !t->srcfile)
		hs->err = -ENOMEM;
}

/* A cache of twice the slots, empty (it only remembers; a failed allocation keeps the
 * old one). A small profile's rows stay in a few pages: the cache's slots are touched at
 * random, so its size is what it costs in peak RSS. */
static void rows_grow(struct tally_hists *hs)
{
	struct row_slot *v = calloc((size_t)2 << hs->row_bits, sizeof(*v));

	hs->row_fills = 0;
	if (!v)
		return;
	free(hs->rows);
	hs->rows = v;
	hs->row_bits++;
}

/* The row of h a sample's frame at loc goes to (self: the sample's own address), tmpl
 * holding the sample's fields. *level: in, the level of the frame before; out, this
 * frame's (perf keeps the one before for a frame outside any map). NULL: out of memory. */
static inline struct tally_hist_entry *row_of(struct tally_hists *hs, struct tally_hist *h,
					      struct tally_hist_entry *tmpl,
					      const struct tally_addr_loc *loc, bool self,
					      char *level)
{
	uint64_t ip = self && loc->map ? loc->dso_addr : loc->addr;
	struct tally_hist_entry *e;
	struct row_slot *rs = NULL;

	if (hs->rows && !loc->inlined) {
		uint64_t x = (uintptr_t)tmpl->comm ^ (uintptr_t)loc->dso * 0x9e3779b97f4a7c15ull ^
			     (loc->sym ? (uintptr_t)loc->sym : ip) * 0xff51afd7ed558ccdull;

		rs = &hs->rows[(x * 0xc4ceb9fe1a85ec53ull) >> (64 - hs->row_bits)];
		if (rs->e && rs->h == h && rs->comm == tmpl->comm && rs->dso == loc->dso &&
		    rs->sym == loc->sym && (loc->sym || rs->ip == ip)) {
			if (!self && (loc->sym || loc->map))
				*level = tally_cpumode_level(loc->cpumode);
			return rs->e;
		}
	}
	fill_entry(hs, tmpl, loc, self);
	if (hs->src_keys)
		fill_src(hs, tmpl, loc);
	/* perf keeps the previous entry's level for a frame outside any map */
	if (!self && !loc->sym && !loc->map)
		tmpl->level = *level;
	*level = tmpl->level;
	e = tly_hist__findnew(h, tmpl);
	if (e && rs && !hs->err) {
		*rs = (struct row_slot){ h, tmpl->comm, loc->dso, loc->sym, ip, e };
		if (++hs->row_fills > (size_t)2 << hs->row_bits && hs->row_bits < ROW_SLOTS_BITS)
			rows_grow(hs);
	}
	return e;
}

static size_t cc_slot_of(const struct cc_sym *v, size_t cap, const char *dso_key, uint64_t key,
			 const struct tally_symbol *real)
{
	size_t i = tly_hash_mix(tly_hash_mix((uintptr_t)dso_key, key), (uintptr_t)real) & (cap - 1);

	for (; v[i].used; i = (i + 1) & (cap - 1))
		if (v[i].dso_key == dso_key && v[i].key == key && v[i].real == real)
			break;
	return i;
}

/* The slot of (dso_key, key, real), used or free for it (NULL: out of memory). */
static struct cc_sym *cc_slot(struct tally_hists *hs, const char *dso_key, uint64_t key,
			      const struct tally_symbol *real)
{
	if (hs->nr_cc_syms * 2 >= hs->cap_cc_syms) {
		size_t cap = hs->cap_cc_syms ? hs->cap_cc_syms * 2 : 256;
		struct cc_sym *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t j = 0; j < hs->cap_cc_syms; j++) {
			const struct cc_sym *o = &hs->cc_syms[j];

			if (o->used)
				v[cc_slot_of(v, cap, o->dso_key, o->key, o->real)] = *o;
		}
		free(hs->cc_syms);
		hs->cc_syms = v;
		hs->cap_cc_syms = cap;
	}
	return &hs->cc_syms[cc_slot_of(hs->cc_syms, hs->cap_cc_syms, dso_key, key, real)];
}

/*
 * The symbol of a frame keyed by address or source line (enum tally_cc_key), named as
 * perf names such frames, or the frame's own symbol where the key falls back to the
 * function. Frames are one node when their symbols start alike (tally_cc_frame__same):
 * by address, one symbol per address; by line, one per (line, function), all of a
 * line starting at the first address seen with it, so a node keeps the name of its
 * first frame as in perf.
 */
static const struct tally_symbol *cc_sym(struct tally_hists *hs, const struct tally_addr_loc *l,
					 const char *dso_key)
{
	bool by_line = hs->o.cc_key == TALLY_CC_KEY_SRCLINE;
	const struct tally_symbol *inl = NULL, *real;
	const char *line = NULL, *name;
	struct cc_sym *c;
	char buf[4096];
	uint64_t key, start = l->dso_addr;
	size_t flen;
	int n;

	if (!l->sym || !l->sym->name)
		return l->sym;
	if (l->inlined) {
		inl = inline_sym(hs, l);
		if (hs->err)
			return l->sym;
	}
	if (l->line) {
		/* an expanded frame: the line of its own function (perf's inline list) */
		const char *file = l->line->file ? l->line->file : "??";

		if (!hs->o.full_source_path && strrchr(file, '/'))
			file = strrchr(file, '/') + 1;
		n = snprintf(buf, sizeof(buf), "%s:%u", file, l->line->line);
	} else {
		n = find_line(hs, l, buf, sizeof(buf), &flen);
	}
	if (n > 0) {
		line = tally_strpool__intern(hs->pool, buf);
		if (!line)
			goto nomem;
	} else if (by_line) {
		return l->sym;
	}
	key = by_line ? (uint64_t)(uintptr_t)line : l->dso_addr;
	if (by_line) {
		c = cc_slot(hs, dso_key, key, NULL);
		if (!c)
			goto nomem;
		if (!c->used) {
			*c = (struct cc_sym){ .dso_key = dso_key, .key = key, .start = start,
					      .used = true };
			hs->nr_cc_syms++;
		}
		start = c->start;
	}
	/* an inlined function's frame is a node apart from the others at its address */
	real = inl ? inl : by_line ? l->sym : NULL;
	c = cc_slot(hs, dso_key, key, real);
	if (!c)
		goto nomem;
	if (c->used)
		return c->sym;
	name = l->inlined ? l->inlined : l->sym->name;
	if (line)
		snprintf(buf, sizeof(buf), "%s %s%s", name, line, inl ? TALLY_INLINED_SUFFIX : "");
	else
		snprintf(buf, sizeof(buf), "%s +%" PRIu64 "%s", name, l->dso_addr - l->sym->start,
			 inl ? TALLY_INLINED_SUFFIX : "");
	*c = (struct cc_sym){ .dso_key = dso_key, .key = key, .real = real,
			      .start = start, .used = true };
	hs->nr_cc_syms++;
	c->sym = calloc(1, sizeof(*c->sym));
	if (!c->sym)
		goto nomem;
	/* perf orders sibling frames of equal weight by this address */
	c->sym->start = start;
	c->sym->name = tally_strpool__intern(hs->pool, buf);
	if (!c->sym->name)
		goto nomem;
	return c->sym;
nomem:
	hs->err = -ENOMEM;
	return l->sym;
}

/* the entry's id for the deferred log (given on first use) */
static inline uint32_t entry_id(struct tally_hists *hs, struct tally_hist_entry *e)
{
	if (!e->id) {
		if (hs->nr_ents == hs->cap_ents) {
			uint32_t cap = hs->cap_ents ? hs->cap_ents * 2 : 1024;
			struct tally_hist_entry **v = tly_realloc_big(hs->ents, cap * sizeof(*v));

			if (!v) {
				hs->err = -ENOMEM;
				return 0;
			}
			hs->ents = v;
			hs->cap_ents = cap;
		}
		hs->ents[hs->nr_ents++] = e;
		e->id = hs->nr_ents;
	}
	return e->id;
}

/* Log one sample's chain (hs->ccf, n frames) for self; the children's ids are filled
 * in by the caller (NULL: out of memory). */
static uint32_t *log_chain(struct tally_hists *hs, struct tally_hist_entry *self, size_t n,
			   uint64_t period)
{
	uint32_t *w = tly_cc_log__append(&hs->log, 4 + 2 * n);

	if (!w)
		return NULL;
	w[0] = (uint32_t)n;
	w[1] = entry_id(hs, self);
	w[2] = (uint32_t)period;
	w[3] = (uint32_t)(period >> 32);
	for (size_t i = 0; i < n; i++) {
		/* the frame's id rides along in its cache slot's note: most frames were seen */
		size_t k = hs->o.caller ? n - 1 - i : i;
		uint32_t *note = hs->notes ? hs->frames.notes[k] : NULL;

		if (note && *note) {
			w[4 + i] = *note - 1;
			continue;
		}
		if (tly_cc_log__intern(&hs->log, &hs->ccf[i], &w[4 + i]))
			return NULL;
		if (note)
			*note = w[4 + i] + 1;
	}
	memset(w + 4 + n, 0, n * sizeof(*w));
	return hs->err ? NULL : w;
}

/* Replay the deferred log (tally_hists__finish). Equal samples share one record with
 * their periods summed; replaying records in the order they first appeared builds the
 * same trees as appending every sample in file order would (each tree gets one chain
 * per record, and a node is made by the first record whose chain has it). An entry
 * whose period (self plus children, an upper bound of its tree's weight) is below the
 * tree threshold of the total cannot print a branch, so its chains are dropped. */
static void mark_heavy(struct tally_hists *hs, uint8_t *big)
{
	for (size_t k = 0; k < hs->nr; k++) {
		struct tally_hist *h = &hs->h[k];
		uint64_t total = hs->o.relative ? h->totals.filtered_period : h->totals.period;
		uint64_t min_hit = (uint64_t)((double)total * (hs->o.tree_min_percent / 100.0));

		for (size_t i = 0; i < h->cap; i++) {
			struct tally_hist_entry *e = h->table[i];

			if (e && e->id && e->period_acc >= min_hit)
				big[e->id] = 1;
		}
	}
}

static int replay_record(struct tally_hists *hs, const uint32_t *w, const uint8_t *big)
{
	size_t n = w[0];
	uint64_t period = w[2] | (uint64_t)w[3] << 32;
	const uint32_t *ids = w + 4, *ents = w + 4 + n;
	bool any = big[w[1]];

	for (size_t i = 0; i < n && !any; i++)
		any = big[ents[i]];
	if (!any)
		return 0;
	for (size_t i = 0; i < n; i++)
		hs->ccf[i] = hs->log.frames[ids[i]];
	if (big[w[1]] &&
	    tly_cc_append(&hs->ents[w[1] - 1]->chain, &hs->arena, hs->ccf, n, period))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (big[ents[i]] && tly_cc_append(&hs->ents[ents[i] - 1]->chain, &hs->arena,
						  hs->ccf + i, n - i, period))
			return -ENOMEM;
	}
	return 0;
}

static int replay_log(struct tally_hists *hs)
{
	struct tly_cc_log *l = &hs->log;
	uint8_t *big;

	if (!l->nr)
		return 0;
	big = calloc(hs->nr_ents + 1, 1);
	if (!big)
		return -ENOMEM;
	mark_heavy(hs, big);
	for (size_t off = 0, released = 0; off < l->nr; off += 4 + 2 * (size_t)l->w[off]) {
		/* give back the log behind: the trees grow as it is read */
		if (off - released >= (1u << 18)) {
			size_t to = off & ~(size_t)((1u << 18) - 1);

			tly_cc_log__drop(l, released, to);
			released = to;
		}
		if (replay_record(hs, l->w + off, big)) {
			free(big);
			return -ENOMEM;
		}
	}
	free(big);
	tly_cc_log__exit(l);
	return 0;
}

static void *replay_fn(void *arg)
{
	struct tally_hists *hs = arg;

	hs->replay_err = replay_log(hs);
	return NULL;
}

/* A log from this many words (4 MiB) is replayed on a thread: a smaller one takes
 * less than the thread's start and its malloc arena's pages. */
#define REPLAY_THREAD_MIN_WORDS (UINT64_C(1) << 20)

int tally_hists__finish_start(struct tally_hists *hs)
{
	if (!hs)
		return -EINVAL;
	if (hs->replaying)
		return 0;
	if (hs->log.nr < REPLAY_THREAD_MIN_WORDS || tally_cpumap__nr_usable() < 2 ||
	    pthread_create(&hs->replay_tid, NULL, replay_fn, hs))
		return replay_log(hs);
	hs->replaying = true;
	return 0;
}

int tally_hists__finish(struct tally_hists *hs)
{
	if (!hs)
		return -EINVAL;
	if (hs->replaying) {
		pthread_join(hs->replay_tid, NULL);
		hs->replaying = false;
		return hs->replay_err;
	}
	return replay_log(hs);
}

/* What the slow path of one sample did, for the memo: it was filtered out, or it added
 * to self, to the entries in hs->seen[1 .. nr_kids] (children) and to the deferred chain
 * record at log_at - 1 (0: none). */
struct added {
	bool filtered;
	struct tally_hist_entry *self;
	size_t nr_kids;
	size_t log_at;
};

static int chain_buf(struct tally_hists *hs, size_t n)
{
	if (n > hs->ccf_cap) {
		struct tally_cc_frame *f = realloc(hs->ccf, n * sizeof(*f));
		struct tally_hist_entry **s;

		if (!f)
			return hs->err = -ENOMEM;
		hs->ccf = f;
		s = realloc(hs->seen, n * sizeof(*s) + sizeof(*s));
		if (!s)
			return hs->err = -ENOMEM;
		hs->seen = s;
		hs->ccf_cap = n;
	}
	return 0;
}

bool tally_hist_filter__keeps_cpu(const struct tally_hist_filter *f,
				  const struct tally_sample *smp)
{
	return !f || !f->cpus || ((smp->type & PERF_SAMPLE_CPU) &&
				  tally_cpumap__idx(f->cpus, (int)smp->cpu) >= 0);
}

bool tally_hist_filter__keeps_time(const struct tally_hist_filter *f,
				   const struct tally_sample *smp)
{
	if (!f || (!f->time_start && !f->time_end))
		return true;
	return (!f->time_start || smp->time >= f->time_start) &&
	       (!f->time_end || smp->time <= f->time_end);
}

bool tally_hist_filter__keeps_resolved(const struct tally_hist_filter *f,
				       struct tally_session *s, const struct tally_sample *smp)
{
	struct tally_addr_loc loc;

	if (!f || !f->hide_unresolved)
		return true;
	tally_session__resolve(s, (pid_t)smp->pid, (pid_t)smp->tid,
			       smp->misc & PERF_RECORD_MISC_CPUMODE_MASK, smp->ip, &loc);
	return loc.sym != NULL;
}

bool tally_hist_filter__keeps_thread(const struct tally_hist_filter *f,
				     const struct tally_sample *smp, const char *comm)
{
	if (!f)
		return true;
	if (f->comms && !in_list(f->comms, comm))
		return false;
	if (f->pids && !has_pid(f->pids, f->nr_pids, (pid_t)smp->pid))
		return false;
	return !f->tids || has_pid(f->tids, f->nr_tids, (pid_t)smp->tid);
}

bool tally_hist_filter__keeps_loc(const struct tally_hist_filter *f,
				  const struct tally_addr_loc *loc)
{
	if (!f)
		return true;
	if (f->dsos && !(loc->dso && (in_list(f->dsos, tally_dso__short_name(loc->dso)) ||
				      in_list(f->dsos, tally_dso__name(loc->dso)))))
		return false;
	return !f->syms || (loc->sym && loc->sym->name && in_list(f->syms, loc->sym->name));
}

/* The frames of hs->frames in display order into hs->ccf. */
static int display_frames(struct tally_hists *hs)
{
	size_t n = hs->frames.nr;

	if (chain_buf(hs, n + 1))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct tally_addr_loc *l = &hs->frames.v[hs->o.caller ? n - 1 - i : i];

		hs->ccf[i].dso = l->dso;
		hs->ccf[i].dso_key = dso_key(hs, l->dso, true);
		if (hs->o.cc_key != TALLY_CC_KEY_FUNCTION)
			hs->ccf[i].sym = cc_sym(hs, l, hs->ccf[i].dso_key);
		else
			hs->ccf[i].sym = l->inlined && l->sym ? inline_sym(hs, l) : l->sym;
		hs->ccf[i].ip = l->addr;
	}
	return hs->err;
}

/* Is e in the sample's set of rows (hs->seen_set)? It is afterwards. */
static bool seen_before(struct tally_hists *hs, const struct tally_hist_entry *e)
{
	size_t i = (size_t)(((uintptr_t)e * 0x9e3779b97f4a7c15ull) >> (64 - SEEN_BITS));

	for (; hs->seen_set[i].stamp == hs->seen_stamp; i = (i + 1) & ((1u << SEEN_BITS) - 1))
		if (hs->seen_set[i].e == e)
			return true;
	hs->seen_set[i] = (struct seen_slot){ e, hs->seen_stamp };
	return false;
}

/* Children mode: every function on the chain (once per sample, even in recursion) gets
 * the period in its period_acc and the chain from it down in its tree (or the log
 * record logw). Returns how many entries besides self it reached, or -ENOMEM. */
static ssize_t add_children(struct tally_hists *hs, struct tally_hist *h,
			    struct tally_hist_entry *tmpl, struct tally_hist_entry *self,
			    uint32_t *logw, uint64_t period)
{
	size_t n = hs->frames.nr, nseen = 0;
	char level = self->level;
	/* a long chain (recursion) would make the look for rows seen before quadratic */
	bool by_set = !hs->time_key && n >= 8 && n < (1u << (SEEN_BITS - 1));

	if (by_set) {
		if (++hs->seen_stamp == 0) {
			memset(hs->seen_set, 0, sizeof(hs->seen_set));
			hs->seen_stamp = 1;
		}
		seen_before(hs, self);
	}
	hs->seen[nseen++] = self;
	for (size_t i = 0; i < n; i++) {
		const struct tally_addr_loc *l = &hs->frames.v[hs->o.caller ? n - 1 - i : i];
		struct tally_hist_entry *e;
		bool dup = false;

		e = row_of(hs, h, tmpl, l, false, &level);
		if (!e)
			return -ENOMEM;
		/* perf 6.1 with the time key: its check for a frame seen before compares the
		 * unrounded time, so every frame adds again */
		if (by_set)
			dup = seen_before(hs, e);
		else
			for (size_t k = 0; k < nseen && !hs->time_key; k++)
				dup |= hs->seen[k] == e;
		if (dup)
			continue;
		hs->seen[nseen++] = e;
		e->period_acc += period;
		e->nr_samples_acc++;
		if (logw) {
			logw[4 + n + i] = entry_id(hs, e);
			if (hs->err)
				return hs->err;
		} else if (h->trees && tly_cc_append(&e->chain, h->arena_trees ? &hs->arena : NULL,
						     hs->ccf + i, n - i, period)) {
			return -ENOMEM;
		}
		if (n - i > e->max_depth)
			e->max_depth = (uint32_t)(n - i);
	}
	return (ssize_t)nseen - 1;
}

/* The sample's chain into hs->frames as the trees take it: frames without a symbol
 * gone with -U, at most max_stack of them. 0 or -ENOMEM. */
static int chain_frames(struct tally_hists *hs, const struct tally_sample *smp)
{
	size_t n;
	int ret;

	/* a corrupt chain (unknown context marker) is dropped, the sample stays, as in perf */
	ret = tally_session__resolve_chain(hs->session, smp, hs->o.caller ? UINT_MAX : hs->max_stack,
					   &hs->frames);
	if (ret < 0)
		return ret;
	n = hs->frames.nr;
	if (hs->o.filter && hs->o.filter->hide_unresolved) {
		/* -U: perf leaves the frames without a symbol out of the chain */
		size_t k = 0;

		for (size_t i = 0; i < n; i++) {
			if (!hs->frames.v[i].sym)
				continue;
			hs->frames.v[k] = hs->frames.v[i];
			hs->frames.notes[k++] = hs->frames.notes[i];
		}
		hs->frames.nr = n = k;
	}
	/* perf keeps the first --max-stack frames in the order it reads the chain: the
	 * innermost callee first, or the outermost in the caller view */
	if (hs->o.caller && n > hs->max_stack) {
		size_t drop = n - hs->max_stack;

		memmove(hs->frames.v, hs->frames.v + drop, hs->max_stack * sizeof(*hs->frames.v));
		memmove(hs->frames.notes, hs->frames.notes + drop,
			hs->max_stack * sizeof(*hs->frames.notes));
		hs->frames.nr = hs->max_stack;
	}
	return 0;
}

/* perf's parent of the sample in hs->frames: the first function, in the chain's
 * order, whose name matches the pattern; its interned name, or NULL. */
static const char *find_parent(struct tally_hists *hs)
{
	size_t n = hs->frames.nr;

	for (size_t i = 0; i < n; i++) {
		const struct tally_addr_loc *l = &hs->frames.v[hs->o.caller ? n - 1 - i : i];

		if (l->sym && l->sym->name && !regexec(&hs->parent_re, l->sym->name, 0, NULL, 0)) {
			const char *p = tally_strpool__intern(hs->pool, l->sym->name);

			if (!p)
				hs->err = -ENOMEM;
			return p;
		}
	}
	return NULL;
}

/* perf's --ignore-callees: the last frame, in the chain's order, whose function matches
 * takes the sample (*loc), and the frames read before it leave the chain (the callees
 * in callee order, the callers in caller order, as perf does it). */
static void ignore_callees(struct tally_hists *hs, struct tally_addr_loc *loc)
{
	size_t n = hs->frames.nr, m = n, keep;

	for (size_t i = 0; i < n; i++) {
		size_t k = hs->o.caller ? n - 1 - i : i;
		const struct tally_addr_loc *l = &hs->frames.v[k];

		if (l->sym && l->sym->name && !regexec(&hs->ignore_re, l->sym->name, 0, NULL, 0))
			m = k;
	}
	if (m == n)
		return;
	*loc = hs->frames.v[m];
	if (hs->o.caller) {
		hs->frames.nr = m + 1;
		return;
	}
	keep = n - m;
	memmove(hs->frames.v, hs->frames.v + m, keep * sizeof(*hs->frames.v));
	memmove(hs->frames.notes, hs->frames.notes + m, keep * sizeof(*hs->frames.notes));
	hs->frames.nr = keep;
}

/* The sample's chain (in hs->frames, chain_frames): into self's tree (or the log), and
 * the children's. */
static int add_chain(struct tally_hists *hs, struct tally_hist *h, struct tally_hist_entry *tmpl,
		     uint64_t period, struct added *out)
{
	struct tally_hist_entry *self = out->self;
	uint32_t *logw = NULL;
	size_t n = hs->frames.nr;
	int ret;

	if (n == 0)
		return 0;
	if (display_frames(hs))
		return -ENOMEM;
	if (h->trees && hs->o.trees == TALLY_TREES_DEFER) {
		logw = log_chain(hs, self, n, period);
		if (!logw)
			return hs->err ? hs->err : -ENOMEM;
	} else if (h->trees && tly_cc_append(&self->chain, h->arena_trees ? &hs->arena : NULL,
					     hs->ccf, n, period)) {
		return -ENOMEM;
	}
	if (n > self->max_depth)
		self->max_depth = (uint32_t)n;
	if (hs->o.children) {
		ssize_t kids = add_children(hs, h, tmpl, self, logw, period);

		if (kids < 0)
			return (int)kids;
		out->nr_kids = (size_t)kids;
	}
	if (logw) {
		ret = tly_cc_log__commit(&hs->log, 4 + 2 * n, &out->log_at);
		out->log_at++;
		return ret;
	}
	return 0;
}

/* A self period by the sample's cpumode (perf's --show-cpu-utilization). */
static void add_by_mode(struct tally_hist_entry *e, uint8_t cpumode, uint64_t period)
{
	switch (cpumode) {
	case PERF_RECORD_MISC_KERNEL:
		e->period_sys += period;
		break;
	case PERF_RECORD_MISC_USER:
		e->period_us += period;
		break;
	case PERF_RECORD_MISC_GUEST_KERNEL:
		e->period_guest_sys += period;
		break;
	case PERF_RECORD_MISC_GUEST_USER:
		e->period_guest_us += period;
		break;
	default:
		break;
	}
}

/* -x: a sample without a parent goes to its rows as any other (perf keeps them, hidden:
 * they shape its trees, so the order of ties), but not to the filtered totals. */
static bool excluded(const struct tally_hists *hs, const char *parent)
{
	return hs->o.exclude_other && !parent;
}

/* Resolve one sample and add it to h: filter, self entry, call chain, children. */
static int add_resolved(struct tally_hists *hs, struct tally_hist *h,
			const struct tally_sample *smp, uint64_t period, struct added *out)
{
	uint8_t cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	struct tally_hist_entry tmpl = { 0 }, *self;
	struct tally_addr_loc loc;
	char level = 0;
	struct tally_thread *th;
	const char *comm;
	bool chain;
	int ret;

	out->filtered = true;
	th = tally_session__thread(hs->session, (pid_t)smp->pid, (pid_t)smp->tid);
	comm = th ? tally_thread__comm(th) : NULL;
	if (!comm)
		comm = "[unknown]";
	if (!tally_hist_filter__keeps_thread(hs->o.filter, smp, comm))
		return 0;
	tly_session__resolve_noted(hs->session, (pid_t)smp->pid, (pid_t)smp->tid, cpumode, smp->ip,
				   &loc, NULL);
	if (!tally_hist_filter__keeps_loc(hs->o.filter, &loc))
		return 0;
	chain = hs->o.callchains && (smp->type & PERF_SAMPLE_CALLCHAIN);
	if (chain && (ret = chain_frames(hs, smp)))
		return ret;
	if (hs->parent_key && chain) {
		tmpl.parent = find_parent(hs);
		if (hs->err)
			return hs->err;
	}
	if (hs->ignore_callees && chain)
		ignore_callees(hs, &loc);
	out->filtered = false;
	if (loc.dso)
		tally_dso__set_hit(loc.dso);
	if (!excluded(hs, tmpl.parent)) {
		h->totals.filtered_period += period;
		h->totals.nr_filtered++;
	}

	/* samples come in runs of one program's */
	if (hs->last_comm && !strcmp(comm, hs->last_comm)) {
		tmpl.comm = hs->last_comm;
	} else {
		tmpl.comm = tally_strpool__intern(hs->pool, comm);
		if (!tmpl.comm)
			return -ENOMEM;
		hs->last_comm = tmpl.comm;
	}
	tmpl.thread = th;
	tmpl.pid = (int32_t)smp->pid;
	tmpl.tid = (int32_t)smp->tid;
	tmpl.cpu = smp->type & PERF_SAMPLE_CPU ? (int32_t)smp->cpu : -1;
	if (hs->time_key && (smp->type & PERF_SAMPLE_TIME)) {
		uint64_t q = hs->o.time_quantum ? hs->o.time_quantum : 100000000ull;

		tmpl.time = smp->time / q * q;
	}
	if (hs->trace_key && hs->o.trace_text) {
		char *t = hs->o.trace_text(hs->o.trace_arg, (size_t)(h - hs->h), smp);

		tmpl.trace = t ? tally_strpool__intern(hs->pool, t) : NULL;
		free(t);
		if (t && !tmpl.trace)
			return -ENOMEM;
	}
	self = row_of(hs, h, &tmpl, &loc, true, &level);
	if (!self)
		return -ENOMEM;
	out->self = self;
	self->period += period;
	self->nr_samples++;
	self->period_acc += period;
	self->nr_samples_acc++;
	add_by_mode(self, cpumode, period);
	if (hs->err)
		return hs->err;
	return chain ? add_chain(hs, h, &tmpl, period, out) : 0;
}

/* What the memo keeps of a sample that was not filtered out (a filtered one has no
 * payload). */
struct memo_added {
	struct tally_hist_entry *self;
	uint64_t log_at;		/* + 1; 0: no chain record */
	struct tally_hist_entry *kids[];	/* nr_words - 2 */
};

/* Remember what add_resolved did for the sample of key k. */
static void memo_add(struct tally_hists *hs, const struct tally_sample_key *k, uint64_t hash,
		     const struct added *a)
{
	size_t words = a->filtered ? 0 : 2 + a->nr_kids;
	struct memo_added *m = tally_sample_memo__add(hs->memo, hs->session, k, hash, words);

	if (!m || a->filtered)
		return;
	m->self = a->self;
	m->log_at = a->log_at;
	memcpy(m->kids, hs->seen + 1, a->nr_kids * sizeof(*hs->seen));
}

/* Add a sample the memo knows. */
static void memo_apply(struct tally_hists *hs, struct tally_hist *h, struct memo_added *m,
		       size_t nr_words, uint64_t period, uint8_t cpumode)
{
	if (!nr_words)
		return;		/* filtered out */
	if (!excluded(hs, m->self->parent)) {
		h->totals.filtered_period += period;
		h->totals.nr_filtered++;
	}
	m->self->period += period;
	m->self->nr_samples++;
	m->self->period_acc += period;
	m->self->nr_samples_acc++;
	add_by_mode(m->self, cpumode, period);
	for (size_t i = 0; i + 2 < nr_words; i++) {
		m->kids[i]->period_acc += period;
		m->kids[i]->nr_samples_acc++;
	}
	if (m->log_at)
		tly_cc_log__add_period(&hs->log, m->log_at - 1, period);
}

int tally_hists__add_sample(struct tally_hists *hs, size_t evidx,
			    const struct tally_sample *smp, uint64_t period)
{
	const struct tally_hist_filter *f = hs->o.filter;
	struct tally_hist *h;
	struct tally_sample_key key;
	struct added added = { 0 };
	uint64_t hash = 0;
	bool chain;
	int ret;

	if (evidx >= hs->nr)
		return -EINVAL;
	h = &hs->h[evidx];
	/* perf drops samples of other cpus before counting them (unlike the other filters) */
	if (!tally_hist_filter__keeps_cpu(f, smp) || !tally_hist_filter__keeps_time(f, smp) ||
	    !tally_hist_filter__keeps_resolved(f, hs->session, smp))
		return 0;
	h->totals.period += period;
	h->totals.nr_samples++;
	/* the memo knows a sample by its recorded chain, which a dwarf sample's user
	 * frames are not in */
	if (hs->memo && !(hs->o.callchains && tally_sample__has_user_stack(smp))) {
		size_t nr_words;
		void *m;

		chain = hs->o.callchains && (smp->type & PERF_SAMPLE_CALLCHAIN);
		key = (struct tally_sample_key){
			.pid = (int32_t)smp->pid, .tid = (int32_t)smp->tid,
			.cpu = hs->memo_cpu && (smp->type & PERF_SAMPLE_CPU) ? (int32_t)smp->cpu
									       : -1,
			.evidx = (uint16_t)evidx,
			.cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK,
			.ip = smp->ip,
			.chain = chain ? smp->callchain : NULL,
			.nr_chain = chain ? (size_t)smp->callchain_nr : 0,
		};
		m = tally_sample_memo__find(hs->memo, hs->session, &key, &hash, &nr_words);
		if (m) {
			memo_apply(hs, h, m, nr_words, period,
				   smp->misc & PERF_RECORD_MISC_CPUMODE_MASK);
			return 0;
		}
	}
	ret = add_resolved(hs, h, smp, period, &added);
	if (ret)
		return ret;
	if (hs->memo && !(hs->o.callchains && tally_sample__has_user_stack(smp)))
		memo_add(hs, &key, hash, &added);
	return 0;
}

int tally_hists__decay(struct tally_hists *hs, bool zero)
{
	int err = 0;

	if (!hs->o.decay)
		return -EINVAL;
	for (size_t i = 0; i < hs->nr; i++)
		if (tly_hist__decay(&hs->h[i], zero))
			err = -ENOMEM;
	return err;
}
