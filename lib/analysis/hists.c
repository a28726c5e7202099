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
 *
 * A sample is resolved on one side (tally_hists__add_sample's caller, in order with the
 * session) and added to the rows on the other, which gets it as a message (struct
 * pm_head): at once, or through the pipeline's thread (tally_hists__pipeline_start).
 * The resolving side owns the session, the memo, the string pool, the dso keys, the
 * frames and the log's frame table; the rows side the hists, the row cache, the log's
 * records and what each memo id stands for.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* The fields each side writes start a cache line of their own (the pipeline's two
 * threads write them at once; tally_hists__new aligns the object). */
#define SIDE_ALIGN 64

struct tally_hists {
	/* set up once, read by both sides */
	struct tally_session *session;
	struct tally_hists_opts o;
	enum tally_hist_col keys[TALLY_HIST_NR_COLS];
	struct tally_hist *h;
	size_t nr;
	struct tally_strpool own_pool, *pool;
	bool notes;		/* this object owns the session's cache notes (frame ids) */
	bool trees;		/* the hists keep call-chain trees (tally_hist__has_trees) */
	bool memo_cpu;		/* the cpu is a key: part of the memo's key */
	bool trace_key;		/* TALLY_HIST_TRACE is a key */
	bool time_key;		/* TALLY_HIST_TIME is a key */
	bool src_keys;		/* TALLY_HIST_SRCLINE or _SRCFILE is a key */
	bool parent_key;	/* TALLY_HIST_PARENT is a key: parent_re is compiled */
	regex_t parent_re;
	bool ignore_callees;	/* o.ignore_callees given: ignore_re is compiled */
	regex_t ignore_re;
	unsigned max_stack;	/* o.max_stack, UINT_MAX for all */
	/* A sample goes from the side resolving it (the caller's thread) to the side
	 * adding it to the rows as a message (struct pm_head): through the pipeline's
	 * thread (tally_hists__pipeline_start), or taken at once from msg. */
	struct hists_pipe *pipe;
	/* tally_hists__finish_start's thread replaying the log (replaying: not joined) */
	pthread_t replay_tid;
	bool replaying;
	int replay_err;

	/* ---- the resolving side ---- */
	_Alignas(SIDE_ALIGN) struct tally_frames frames;
	/* the sample's frames in display order */
	struct tally_cc_frame *ccf;
	size_t ccf_cap;
	struct dso_slot *dso_keys;
	size_t dso_cap, nr_dso_keys;
	struct tally_sample_memo *memo;	/* NULL: every sample resolved */
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
	/* the last dsos dso_key saw, and their keys */
	struct dso_slot last_dso[2];
	unsigned last_dso_at;
	const char *last_comm;	/* the last comm interned */
	int err;		/* sticky: out of memory somewhere in a sample */
	unsigned char *msg;	/* the message, without the pipeline */
	size_t msg_cap;
	/* memo ids (the memo's payload): the last one given, and the memo's epoch it
	 * belongs to */
	uint32_t memo_id;
	uint32_t memo_epoch;

	/* deferred trees: record = n, self entry id, period (2 words), n frame ids, n
	 * children entry ids (0: none); its frame table is the resolving side's, its
	 * records the rows side's (each on lines of its own) */
	struct tly_cc_log log;

	/* ---- the rows side ---- */
	_Alignas(SIDE_ALIGN) struct tly_cc_arena arena;	/* every tree node (unless o.decay) */
	/* the entries the sample reached */
	struct tally_hist_entry **seen;
	size_t seen_cap;
	struct tally_hist_entry **ents;	/* by id - 1 */
	uint32_t nr_ents, cap_ents;
	/* rows by what decides them (row_of): NULL where the keys take more */
	struct row_slot *rows;
	unsigned row_bits;	/* 2^row_bits slots, more as rows come (ROW_SLOTS_BITS at most) */
	size_t row_fills;	/* slots written since the last growth */
	int cerr;		/* sticky: out of memory somewhere in a sample */
	/* what the sample of each memo id added (by id - 1) */
	struct memo_pay {
		struct tally_hist_entry *self;	/* NULL: filtered out */
		size_t log_at;			/* + 1; 0: no chain record */
		size_t kids_at;			/* in pay_kids */
		uint32_t nr_kids;
	} *pays;
	size_t nr_pays, cap_pays;
	struct tally_hist_entry **pay_kids;
	size_t nr_pay_kids, cap_pay_kids;
	/* the rows one sample reached (add_children), a set stamped with the sample's
	 * number: no clearing between samples */
	uint32_t seen_stamp;
	struct seen_slot {
		const struct tally_hist_entry *e;
		uint32_t stamp;
	} seen_set[1u << SEEN_BITS];
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
		hs->h[i].trees = hs->trees = o->callchains && o->trees != TALLY_TREES_NONE;
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
	struct tally_hists *hs;
	void *mem;
	int err;

	*out = NULL;
	if (posix_memalign(&mem, SIDE_ALIGN, sizeof(*hs)))
		return -ENOMEM;
	hs = memset(mem, 0, sizeof(*hs));
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
	tally_hists__pipeline_end(hs);
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
	free(hs->msg);
	free(hs->pays);
	free(hs->pay_kids);
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

/* A frame as the rows take it (row_of): what the side adding to the rows needs of a
 * resolved location, made on the side resolving it (row_loc_of). */
struct row_loc {
	const struct tally_dso *dso;
	const char *dso_key;		/* the dso's row key (its shown name) */
	const struct tally_symbol *sym;	/* the row's (an inlined function's own) */
	uint64_t ip;			/* the row's address */
	uint8_t cpumode;
	bool has_map, inlined;
};

/* The srcline and srcfile keys of a row at loc (see struct tally_hist_entry). */
static void fill_src(struct tally_hists *hs, const char **srcline, const char **srcfile,
		     const struct tally_addr_loc *loc)
{
	char buf[4096];
	size_t file_len;

	if (find_line(hs, loc, buf, sizeof(buf), &file_len) > 0) {
		*srcline = tally_strpool__intern(hs->pool, buf);
		buf[file_len] = 0;
		*srcfile = tally_strpool__intern(hs->pool, buf);
	} else {
		if (loc->sym && loc->sym->name)
			snprintf(buf, sizeof(buf), "%s+%" PRIu64, loc->sym->name,
				 loc->dso_addr - loc->sym->start);
		else if (loc->dso && loc->map)
			snprintf(buf, sizeof(buf), "%s[%" PRIx64 "]",
				 tally_dso__short_name(loc->dso), loc->dso_addr);
		else
			snprintf(buf, sizeof(buf), "??:0");
		*srcline = tally_strpool__intern(hs->pool, buf);
		*srcfile = tally_strpool__intern(hs->pool, "");
	}
	if (!*srcline || !*srcfile)
		hs->err = -ENOMEM;
}

/* l as a row takes it (self: the sample's own address); with source keys, its line
 * and file into src[0], src[1]. */
static void row_loc_of(struct tally_hists *hs, const struct tally_addr_loc *l, bool self,
		       struct row_loc *rl, const char **src)
{
	rl->dso = l->dso;
	rl->dso_key = dso_key(hs, l->dso, false);
	rl->sym = l->inlined && l->sym ? inline_sym(hs, l) : l->sym;
	rl->ip = self && l->map ? l->dso_addr : l->addr;
	rl->cpumode = l->cpumode;
	rl->has_map = l->map != NULL;
	rl->inlined = l->inlined != NULL;
	if (src)
		fill_src(hs, &src[0], &src[1], l);
}

static void fill_entry(struct tally_hist_entry *t, const struct row_loc *rl, const char **src)
{
	t->dso = rl->dso;
	t->dso_key = rl->dso_key;
	t->dso_name = t->dso_key ? t->dso_key : "[unknown]";
	t->sym = rl->sym;
	t->ip = rl->ip;
	t->level = tally_cpumode_level(rl->cpumode);
	if (src) {
		t->srcline = src[0];
		t->srcfile = src[1];
	}
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

/* The row of h a sample's frame rl goes to (self: the sample's own address; src: its
 * source keys, NULL without), tmpl holding the sample's fields. *level: in, the level
 * of the frame before; out, this frame's (perf keeps the one before for a frame outside
 * any map). NULL: out of memory. The rows side. */
static inline struct tally_hist_entry *row_of(struct tally_hists *hs, struct tally_hist *h,
					      struct tally_hist_entry *tmpl,
					      const struct row_loc *rl, const char **src,
					      bool self, char *level)
{
	struct tally_hist_entry *e;
	struct row_slot *rs = NULL;

	if (hs->rows && !rl->inlined) {
		uint64_t x = (uintptr_t)tmpl->comm ^ (uintptr_t)rl->dso * 0x9e3779b97f4a7c15ull ^
			     (rl->sym ? (uintptr_t)rl->sym : rl->ip) * 0xff51afd7ed558ccdull;

		rs = &hs->rows[(x * 0xc4ceb9fe1a85ec53ull) >> (64 - hs->row_bits)];
		if (rs->e && rs->h == h && rs->comm == tmpl->comm && rs->dso == rl->dso &&
		    rs->sym == rl->sym && (rl->sym || rs->ip == rl->ip)) {
			if (!self && (rl->sym || rl->has_map))
				*level = tally_cpumode_level(rl->cpumode);
			return rs->e;
		}
	}
	fill_entry(tmpl, rl, src);
	/* perf keeps the previous entry's level for a frame outside any map */
	if (!self && !rl->sym && !rl->has_map)
		tmpl->level = *level;
	*level = tmpl->level;
	e = tly_hist__findnew(h, tmpl);
	if (e && rs && !hs->cerr) {
		*rs = (struct row_slot){ h, tmpl->comm, rl->dso, rl->sym, rl->ip, e };
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

/* the entry's id for the deferred log (given on first use; the rows side) */
static inline uint32_t entry_id(struct tally_hists *hs, struct tally_hist_entry *e)
{
	if (!e->id) {
		if (hs->nr_ents == hs->cap_ents) {
			uint32_t cap = hs->cap_ents ? hs->cap_ents * 2 : 1024;
			struct tally_hist_entry **v = tly_realloc_big(hs->ents, cap * sizeof(*v));

			if (!v) {
				hs->cerr = -ENOMEM;
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

static void display_frame(struct tally_hists *hs, size_t i, size_t n, struct tally_cc_frame *f);

/* The log ids of the sample's n frames (hs->frames, in display order) into ids (the
 * resolving side). */
static int frame_ids(struct tally_hists *hs, size_t n, uint32_t *ids)
{
	for (size_t i = 0; i < n; i++) {
		/* the frame's id rides along in its cache slot's note: most frames were seen
		 * (and named: the first sight of each frame names it) */
		size_t k = hs->o.caller ? n - 1 - i : i;
		uint32_t *note = hs->notes ? hs->frames.notes[k] : NULL;
		struct tally_cc_frame f;

		if (note && *note) {
			ids[i] = *note - 1;
			continue;
		}
		display_frame(hs, i, n, &f);
		if (hs->err)
			return hs->err;
		if (tly_cc_log__intern(&hs->log, &f, &ids[i]))
			return hs->err = -ENOMEM;
		if (note)
			*note = ids[i] + 1;
	}
	return 0;
}

/* Log one sample's chain (n frames of log ids ids) for self; the children's ids are
 * filled in by the caller (NULL: out of memory). */
static uint32_t *log_chain(struct tally_hists *hs, struct tally_hist_entry *self, size_t n,
			   uint64_t period, const uint32_t *ids)
{
	uint32_t *w = tly_cc_log__append(&hs->log, 4 + 2 * n);

	if (!w)
		return NULL;
	w[0] = (uint32_t)n;
	w[1] = entry_id(hs, self);
	w[2] = (uint32_t)period;
	w[3] = (uint32_t)(period >> 32);
	memcpy(w + 4, ids, n * sizeof(*w));
	memset(w + 4 + n, 0, n * sizeof(*w));
	return hs->cerr ? NULL : w;
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

static int chain_buf(struct tally_hists *hs, size_t n);

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
	if (chain_buf(hs, n))
		return -ENOMEM;
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
	int err;

	if (!hs)
		return -EINVAL;
	if ((err = tally_hists__pipeline_end(hs)))
		return err;
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
	int err;

	if (!hs)
		return -EINVAL;
	if ((err = tally_hists__pipeline_end(hs)))
		return err;
	if (hs->replaying) {
		pthread_join(hs->replay_tid, NULL);
		hs->replaying = false;
		return hs->replay_err;
	}
	return replay_log(hs);
}

/* What one sample added to the rows, for the memo: self, the entries in
 * hs->seen[1 .. nr_kids] (children) and the deferred chain record at log_at - 1 (0:
 * none). */
struct added {
	struct tally_hist_entry *self;
	size_t nr_kids;
	size_t log_at;
};

static int chain_buf(struct tally_hists *hs, size_t n)
{
	if (n > hs->ccf_cap) {
		struct tally_cc_frame *f = realloc(hs->ccf, n * sizeof(*f));

		if (!f)
			return hs->err = -ENOMEM;
		hs->ccf = f;
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

/* Frame i of the n of hs->frames, in display order, as the trees take it. */
static void display_frame(struct tally_hists *hs, size_t i, size_t n, struct tally_cc_frame *f)
{
	const struct tally_addr_loc *l = &hs->frames.v[hs->o.caller ? n - 1 - i : i];

	f->dso = l->dso;
	f->dso_key = dso_key(hs, l->dso, true);
	if (hs->o.cc_key != TALLY_CC_KEY_FUNCTION)
		f->sym = cc_sym(hs, l, f->dso_key);
	else
		f->sym = l->inlined && l->sym ? inline_sym(hs, l) : l->sym;
	f->ip = l->addr;
}

/* The frames of hs->frames in display order into hs->ccf. */
static int display_frames(struct tally_hists *hs)
{
	size_t n = hs->frames.nr;

	if (chain_buf(hs, n + 1))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		display_frame(hs, i, n, &hs->ccf[i]);
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
 * record logw). rl: the n frames in display order (src: their source keys, two each,
 * or NULL). Returns how many entries besides self it reached, or -ENOMEM. */
static ssize_t add_children(struct tally_hists *hs, struct tally_hist *h,
			    struct tally_hist_entry *tmpl, struct tally_hist_entry *self,
			    const struct row_loc *rl, const char **src, size_t n,
			    uint32_t *logw, uint64_t period)
{
	size_t nseen = 0;
	char level = self->level;
	/* a long chain (recursion) would make the look for rows seen before quadratic */
	bool by_set = !hs->time_key && n >= 8 && n < (1u << (SEEN_BITS - 1));

	if (n + 1 > hs->seen_cap) {
		struct tally_hist_entry **v = realloc(hs->seen, (n + 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		hs->seen = v;
		hs->seen_cap = n + 1;
	}
	if (by_set) {
		if (++hs->seen_stamp == 0) {
			memset(hs->seen_set, 0, sizeof(hs->seen_set));
			hs->seen_stamp = 1;
		}
		seen_before(hs, self);
	}
	hs->seen[nseen++] = self;
	for (size_t i = 0; i < n; i++) {
		struct tally_hist_entry *e;
		bool dup = false;

		e = row_of(hs, h, tmpl, &rl[i], src ? src + 2 * i : NULL, false, &level);
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
			if (hs->cerr)
				return hs->cerr;
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

/* ---- the message of one sample, resolving side to rows side ---- */

enum pm_type {
	PM_HIT = 1,	/* the memo knows the sample (id): add to what its first one did */
	PM_MISS,	/* resolved (struct pm_miss) */
	PM_FILTERED,	/* filtered out after the totals (by its thread or location) */
	PM_RESET,	/* the memo started over: ids from 1 again */
};

struct pm_head {
	uint8_t type;
	uint8_t cpumode;	/* the sample's */
	uint16_t unused;
	uint32_t evidx;
	uint32_t size;		/* bytes, this head included (a multiple of 8) */
	uint32_t nr;		/* PM_MISS: frames of the chain */
	uint64_t period;
	uint32_t id;		/* the memo's id of the sample (0: none) */
	uint32_t unused2;
};

/* A resolved sample: its fields, its self frame, then nr frames (struct row_loc, in
 * display order), with source keys 2 + 2 nr names (self's, then each frame's line and
 * file), and with deferred trees nr log ids of the frames. */
struct pm_miss {
	struct pm_head h;
	const char *comm, *parent, *trace;
	struct tally_thread *thread;
	uint64_t time;
	int32_t pid, tid, cpu;
	bool defer;
	struct row_loc self;
};

static inline struct row_loc *pm_frames(const struct pm_miss *m)
{
	return (struct row_loc *)(m + 1);
}

static inline const char **pm_src(const struct tally_hists *hs, const struct pm_miss *m)
{
	return hs->src_keys ? (const char **)(pm_frames(m) + m->h.nr) : NULL;
}

static inline uint32_t *pm_ids(const struct tally_hists *hs, const struct pm_miss *m)
{
	return (uint32_t *)((char *)(pm_frames(m) + m->h.nr) +
			    (hs->src_keys ? (2 + 2 * (size_t)m->h.nr) * sizeof(char *) : 0));
}

static size_t pm_miss_size(const struct tally_hists *hs, size_t n, bool defer)
{
	size_t size = sizeof(struct pm_miss) + n * sizeof(struct row_loc) +
		      (hs->src_keys ? (2 + 2 * n) * sizeof(char *) : 0) +
		      (defer ? n * sizeof(uint32_t) : 0);

	return (size + 7) & ~(size_t)7;
}

/* The pipeline (tally_hists__pipeline_start): messages in blocks, full ones queued to
 * the rows side's thread, which gives them back to be filled again. */
#define PIPE_BLOCK (64u << 10)
#define PIPE_BLOCKS 16	/* in flight at most (of PIPE_BLOCK; a bigger message gets its own) */

struct pipe_block {
	struct pipe_block *next;
	size_t used, cap;
	uint64_t data[];
};

struct hists_pipe {
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t more, room;
	struct pipe_block *head, *tail;	/* full blocks, oldest first */
	struct pipe_block *free;
	unsigned nr_blocks;		/* of PIPE_BLOCK made */
	bool done;			/* no more blocks will come */
	/* read by the resolving side at each sample: lines of their own */
	_Alignas(SIDE_ALIGN) atomic_int err;	/* the rows side's first error */
	_Alignas(SIDE_ALIGN) struct pipe_block *cur;	/* the one being filled */
};

/* The block being filled to the end of the queue, woken (p->mu held). */
static void pipe_queue_cur(struct hists_pipe *p)
{
	p->cur->next = NULL;
	if (p->tail)
		p->tail->next = p->cur;
	else
		p->head = p->cur;
	p->tail = p->cur;
	p->cur = NULL;
	pthread_cond_signal(&p->more);
}

/* The block after p->cur, with room for size bytes (the current one is queued). */
static int pipe_next(struct hists_pipe *p, size_t size)
{
	struct pipe_block *b = NULL;
	size_t cap = size > PIPE_BLOCK ? size : PIPE_BLOCK;
	bool made = false;

	pthread_mutex_lock(&p->mu);
	if (p->cur)
		pipe_queue_cur(p);
	if (cap == PIPE_BLOCK) {
		while (!p->free && p->nr_blocks >= PIPE_BLOCKS)
			pthread_cond_wait(&p->room, &p->mu);
		if (p->free) {
			b = p->free;
			p->free = b->next;
		} else {
			p->nr_blocks++;
			made = true;
		}
	}
	pthread_mutex_unlock(&p->mu);
	if (!b) {
		b = malloc(sizeof(*b) + cap);
		if (!b) {
			if (made) {
				pthread_mutex_lock(&p->mu);
				p->nr_blocks--;
				pthread_mutex_unlock(&p->mu);
			}
			return -ENOMEM;
		}
		b->cap = cap;
	}
	b->used = 0;
	p->cur = b;
	return 0;
}

/* Room for a message of size bytes (a multiple of 8), NULL: out of memory. */
static void *pm_get(struct tally_hists *hs, size_t size)
{
	struct hists_pipe *p = hs->pipe;

	if (!p) {
		if (size > hs->msg_cap) {
			size_t cap = hs->msg_cap ? hs->msg_cap : 4096;
			void *v;

			while (cap < size)
				cap *= 2;
			v = realloc(hs->msg, cap);
			if (!v)
				return NULL;
			hs->msg = v;
			hs->msg_cap = cap;
		}
		return hs->msg;
	}
	if (!p->cur || p->cur->cap - p->cur->used < size) {
		if (pipe_next(p, size))
			return NULL;
	}
	return (char *)p->cur->data + p->cur->used;
}

static int take(struct tally_hists *hs, const struct pm_head *m);

/* The message is written: taken now, or queued to the rows side's thread. */
static int pm_put(struct tally_hists *hs, struct pm_head *m)
{
	if (!hs->pipe)
		return take(hs, m);
	hs->pipe->cur->used += m->size;
	return 0;
}

/* A message without a resolved sample (type PM_HIT, PM_FILTERED or PM_RESET). */
static int pm_short(struct tally_hists *hs, enum pm_type type, size_t evidx,
		    const struct tally_sample *smp, uint64_t period, uint32_t id)
{
	struct pm_head *m = pm_get(hs, sizeof(*m));

	if (!m)
		return -ENOMEM;
	*m = (struct pm_head){
		.type = (uint8_t)type,
		.cpumode = smp ? smp->misc & PERF_RECORD_MISC_CPUMODE_MASK : 0,
		.evidx = (uint32_t)evidx,
		.size = sizeof(*m),
		.period = period,
		.id = id,
	};
	return pm_put(hs, m);
}

/* ---- the rows side ---- */

/* The sample's chain (m's frames): into self's tree (or the log), and the children's. */
static int add_chain(struct tally_hists *hs, struct tally_hist *h, struct tally_hist_entry *tmpl,
		     const struct pm_miss *m, struct added *out)
{
	struct tally_hist_entry *self = out->self;
	uint64_t period = m->h.period;
	uint32_t *logw = NULL;
	size_t n = m->h.nr;
	int ret;

	if (m->defer) {
		logw = log_chain(hs, self, n, period, pm_ids(hs, m));
		if (!logw)
			return hs->cerr ? hs->cerr : -ENOMEM;
	} else if (h->trees && tly_cc_append(&self->chain, h->arena_trees ? &hs->arena : NULL,
					     hs->ccf, n, period)) {
		return -ENOMEM;	/* (trees built per sample: never through the pipeline) */
	}
	if (n > self->max_depth)
		self->max_depth = (uint32_t)n;
	if (hs->o.children) {
		const char **src = pm_src(hs, m);
		ssize_t kids = add_children(hs, h, tmpl, self, pm_frames(m), src ? src + 2 : NULL,
					    n, logw, period);

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

/* A sample kept by the filter (parent: the parent it counts by) into self, its row, and
 * into h's filtered totals. */
static void add_self(struct tally_hists *hs, struct tally_hist *h, struct tally_hist_entry *self,
		     const char *parent, uint64_t period, uint8_t cpumode)
{
	if (!excluded(hs, parent)) {
		h->totals.filtered_period += period;
		h->totals.nr_filtered++;
	}
	self->period += period;
	self->nr_samples++;
	self->period_acc += period;
	self->nr_samples_acc++;
	add_by_mode(self, cpumode, period);
}

/* Remember what the sample of memo id did (a: NULL, filtered out). */
static int pay_store(struct tally_hists *hs, uint32_t id, const struct added *a)
{
	struct memo_pay *p;

	if (tly_grow_big((void **)&hs->pays, &hs->cap_pays, id, sizeof(*hs->pays), 4096))
		return -ENOMEM;
	while (hs->nr_pays < id)	/* ids the resolving side gave out and never sent */
		hs->pays[hs->nr_pays++] = (struct memo_pay){ 0 };
	p = &hs->pays[id - 1];
	*p = (struct memo_pay){ 0 };
	if (!a)
		return 0;
	if (tly_grow_big((void **)&hs->pay_kids, &hs->cap_pay_kids, hs->nr_pay_kids + a->nr_kids,
			 sizeof(*hs->pay_kids), 8192))
		return -ENOMEM;
	p->self = a->self;
	p->log_at = a->log_at;
	p->kids_at = hs->nr_pay_kids;
	p->nr_kids = (uint32_t)a->nr_kids;
	if (a->nr_kids)
		memcpy(hs->pay_kids + hs->nr_pay_kids, hs->seen + 1,
		       a->nr_kids * sizeof(*hs->seen));
	hs->nr_pay_kids += a->nr_kids;
	return 0;
}

/* Add a sample the memo knows (id) where its first one went. */
static int pay_apply(struct tally_hists *hs, struct tally_hist *h, const struct pm_head *m)
{
	const struct memo_pay *p;

	if (!m->id || m->id > hs->nr_pays)
		return -EINVAL;	/* never given: a broken message */
	p = &hs->pays[m->id - 1];
	if (!p->self)
		return 0;	/* filtered out */
	add_self(hs, h, p->self, p->self->parent, m->period, m->cpumode);
	for (size_t i = 0; i < p->nr_kids; i++) {
		struct tally_hist_entry *e = hs->pay_kids[p->kids_at + i];

		e->period_acc += m->period;
		e->nr_samples_acc++;
	}
	if (p->log_at)
		tly_cc_log__add_period(&hs->log, p->log_at - 1, m->period);
	return 0;
}

/* A resolved sample into its rows: self entry, call chain, children. */
static int take_miss(struct tally_hists *hs, struct tally_hist *h, const struct pm_miss *m)
{
	const char **src = pm_src(hs, m);
	struct tally_hist_entry tmpl = {
		.comm = m->comm,
		.parent = m->parent,
		.trace = m->trace,
		.thread = m->thread,
		.pid = m->pid,
		.tid = m->tid,
		.cpu = m->cpu,
		.time = m->time,
	};
	struct added added = { 0 };
	struct tally_hist_entry *self;
	char level = 0;
	int ret;

	self = row_of(hs, h, &tmpl, &m->self, src, true, &level);
	if (!self)
		return -ENOMEM;
	if (hs->cerr)
		return hs->cerr;
	added.self = self;
	add_self(hs, h, self, tmpl.parent, m->h.period, m->h.cpumode);
	if (m->h.nr && (ret = add_chain(hs, h, &tmpl, m, &added)))
		return ret;
	return m->h.id ? pay_store(hs, m->h.id, &added) : 0;
}

static int take(struct tally_hists *hs, const struct pm_head *m)
{
	struct tally_hist *h;

	if (m->type == PM_RESET) {
		hs->nr_pays = 0;
		hs->nr_pay_kids = 0;
		return 0;
	}
	if (m->evidx >= hs->nr)
		return -EINVAL;
	h = &hs->h[m->evidx];
	h->totals.period += m->period;
	h->totals.nr_samples++;
	switch (m->type) {
	case PM_HIT:
		return pay_apply(hs, h, m);
	case PM_FILTERED:
		return m->id ? pay_store(hs, m->id, NULL) : 0;
	case PM_MISS:
		return take_miss(hs, h, (const struct pm_miss *)m);
	default:
		return -EINVAL;
	}
}

static void *pipe_fn(void *arg)
{
	struct tally_hists *hs = arg;
	struct hists_pipe *p = hs->pipe;

	for (;;) {
		struct pipe_block *b;

		pthread_mutex_lock(&p->mu);
		while (!p->head && !p->done)
			pthread_cond_wait(&p->more, &p->mu);
		b = p->head;
		if (b) {
			p->head = b->next;
			if (!p->head)
				p->tail = NULL;
		}
		pthread_mutex_unlock(&p->mu);
		if (!b)
			break;
		/* after an error, blocks only go back (the resolving side stops at its next
		 * sample) */
		for (size_t off = 0; off < b->used && !atomic_load_explicit(&p->err,
									   memory_order_relaxed);) {
			const struct pm_head *m = (const void *)((const char *)b->data + off);
			int err = take(hs, m);

			if (err)
				atomic_store(&p->err, err);
			off += m->size;
		}
		pthread_mutex_lock(&p->mu);
		if (b->cap > PIPE_BLOCK) {
			free(b);
		} else {
			b->next = p->free;
			p->free = b;
			pthread_cond_signal(&p->room);
		}
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

static void pipe_free(struct hists_pipe *p)
{
	for (struct pipe_block *b = p->free, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(p->cur);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->more);
	pthread_cond_destroy(&p->room);
	free(p);
}

int tally_hists__pipeline_start(struct tally_hists *hs)
{
	struct hists_pipe *p;

	if (!hs)
		return -EINVAL;
	if (hs->pipe)
		return 1;
	/* trees built per sample take the resolving side's frames; decaying rows move */
	if (hs->o.decay || (hs->o.callchains && hs->o.trees == TALLY_TREES_BUILD) ||
	    tally_cpumap__nr_usable() < 2)
		return 0;
	if (posix_memalign((void **)&p, SIDE_ALIGN, sizeof(*p)))
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	if (pthread_mutex_init(&p->mu, NULL)) {
		free(p);
		return -ENOMEM;
	}
	pthread_cond_init(&p->more, NULL);
	pthread_cond_init(&p->room, NULL);
	atomic_init(&p->err, 0);
	hs->pipe = p;
	if (pthread_create(&p->tid, NULL, pipe_fn, hs)) {
		hs->pipe = NULL;
		pipe_free(p);
		return 0;	/* samples are added here */
	}
	return 1;
}

int tally_hists__pipeline_end(struct tally_hists *hs)
{
	struct hists_pipe *p;
	int err;

	if (!hs)
		return -EINVAL;
	p = hs->pipe;
	if (!p)
		return 0;
	pthread_mutex_lock(&p->mu);
	if (p->cur && p->cur->used)
		pipe_queue_cur(p);
	p->done = true;
	pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->tid, NULL);
	err = atomic_load(&p->err);
	hs->pipe = NULL;
	pipe_free(p);
	return err;
}

/* ---- the resolving side ---- */

/* The memo's id for key k's sample (0: the memo keeps none); a message tells the rows
 * side when the memo started over. */
static int memo_id(struct tally_hists *hs, const struct tally_sample_key *k, uint64_t hash,
		   uint32_t *id)
{
	uint64_t *w = tally_sample_memo__add(hs->memo, hs->session, k, hash, 1);

	*id = 0;
	if (hs->memo->epoch != hs->memo_epoch) {
		hs->memo_epoch = hs->memo->epoch;
		hs->memo_id = 0;
		if (pm_short(hs, PM_RESET, 0, NULL, 0, 0))
			return -ENOMEM;
	}
	if (w && hs->memo_id < UINT32_MAX) {
		*id = ++hs->memo_id;
		*w = *id;
	}
	return 0;
}

/* Resolve one sample (filters, thread, self frame, chain) and send it to the rows
 * side with memo id id (0: none). */
static int resolve(struct tally_hists *hs, size_t evidx, const struct tally_sample *smp,
		   uint64_t period, uint32_t id)
{
	uint8_t cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	const char *parent = NULL, *trace = NULL, *comm;
	struct tally_addr_loc loc;
	struct tally_thread *th;
	struct pm_miss *m;
	const char **src;
	bool chain, defer;
	size_t n = 0, size;
	int ret;

	th = tally_session__thread(hs->session, (pid_t)smp->pid, (pid_t)smp->tid);
	comm = th ? tally_thread__comm(th) : NULL;
	if (!comm)
		comm = "[unknown]";
	if (!tally_hist_filter__keeps_thread(hs->o.filter, smp, comm))
		return pm_short(hs, PM_FILTERED, evidx, smp, period, id);
	tly_session__resolve_noted(hs->session, (pid_t)smp->pid, (pid_t)smp->tid, cpumode, smp->ip,
				   &loc, NULL);
	if (!tally_hist_filter__keeps_loc(hs->o.filter, &loc))
		return pm_short(hs, PM_FILTERED, evidx, smp, period, id);
	chain = hs->o.callchains && (smp->type & PERF_SAMPLE_CALLCHAIN);
	if (chain && (ret = chain_frames(hs, smp)))
		return ret;
	if (hs->parent_key && chain) {
		parent = find_parent(hs);
		if (hs->err)
			return hs->err;
	}
	if (hs->ignore_callees && chain)
		ignore_callees(hs, &loc);
	if (loc.dso && !tally_dso__hit(loc.dso))
		tally_dso__set_hit(loc.dso);

	/* samples come in runs of one program's */
	if (!hs->last_comm || strcmp(comm, hs->last_comm)) {
		hs->last_comm = tally_strpool__intern(hs->pool, comm);
		if (!hs->last_comm)
			return -ENOMEM;
	}
	if (hs->trace_key && hs->o.trace_text) {
		char *t = hs->o.trace_text(hs->o.trace_arg, evidx, smp);

		trace = t ? tally_strpool__intern(hs->pool, t) : NULL;
		free(t);
		if (t && !trace)
			return -ENOMEM;
	}
	if (chain)
		n = hs->frames.nr;
	defer = n && hs->trees && hs->o.trees == TALLY_TREES_DEFER;
	/* trees built per sample take every frame as the trees name it (deferred ones
	 * take ids, frame_ids) */
	if (n && hs->trees && !defer && display_frames(hs))
		return -ENOMEM;
	size = pm_miss_size(hs, n, defer);
	m = pm_get(hs, size);
	if (!m)
		return -ENOMEM;
	m->h = (struct pm_head){
		.type = PM_MISS,
		.cpumode = cpumode,
		.evidx = (uint32_t)evidx,
		.size = (uint32_t)size,
		.nr = (uint32_t)n,
		.period = period,
		.id = id,
	};
	m->comm = hs->last_comm;
	m->parent = parent;
	m->trace = trace;
	m->thread = th;
	m->pid = (int32_t)smp->pid;
	m->tid = (int32_t)smp->tid;
	m->cpu = smp->type & PERF_SAMPLE_CPU ? (int32_t)smp->cpu : -1;
	m->time = 0;
	if (hs->time_key && (smp->type & PERF_SAMPLE_TIME)) {
		uint64_t q = hs->o.time_quantum ? hs->o.time_quantum : 100000000ull;

		m->time = smp->time / q * q;
	}
	m->defer = defer;
	src = pm_src(hs, m);
	row_loc_of(hs, &loc, true, &m->self, src);
	for (size_t i = 0; i < n; i++)
		row_loc_of(hs, &hs->frames.v[hs->o.caller ? n - 1 - i : i], false,
			   &pm_frames(m)[i], src ? src + 2 + 2 * i : NULL);
	if (defer && frame_ids(hs, n, pm_ids(hs, m)))
		return -ENOMEM;
	if (hs->err)
		return hs->err;
	return pm_put(hs, &m->h);
}

int tally_hists__add_sample(struct tally_hists *hs, size_t evidx,
			    const struct tally_sample *smp, uint64_t period)
{
	const struct tally_hist_filter *f = hs->o.filter;
	uint32_t id = 0;
	int ret;

	if (evidx >= hs->nr)
		return -EINVAL;
	if (hs->pipe && (ret = atomic_load_explicit(&hs->pipe->err, memory_order_relaxed)))
		return ret;
	/* perf drops samples of other cpus before counting them (unlike the other filters) */
	if (!tally_hist_filter__keeps_cpu(f, smp) || !tally_hist_filter__keeps_time(f, smp) ||
	    !tally_hist_filter__keeps_resolved(f, hs->session, smp))
		return 0;
	/* the memo knows a sample by its recorded chain, which a dwarf sample's user
	 * frames are not in */
	if (hs->memo && !(hs->o.callchains && tally_sample__has_user_stack(smp))) {
		bool chain = hs->o.callchains && (smp->type & PERF_SAMPLE_CALLCHAIN);
		struct tally_sample_key key = {
			.pid = (int32_t)smp->pid, .tid = (int32_t)smp->tid,
			.cpu = hs->memo_cpu && (smp->type & PERF_SAMPLE_CPU) ? (int32_t)smp->cpu
									       : -1,
			.evidx = (uint16_t)evidx,
			.cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK,
			.ip = smp->ip,
			.chain = chain ? smp->callchain : NULL,
			.nr_chain = chain ? (size_t)smp->callchain_nr : 0,
		};
		uint64_t hash;
		size_t nr_words;
		const uint64_t *w = tally_sample_memo__find(hs->memo, hs->session, &key, &hash,
							    &nr_words);

		if (w && nr_words == 1 && hs->memo->epoch == hs->memo_epoch)
			return pm_short(hs, PM_HIT, evidx, smp, period, (uint32_t)*w);
		if ((ret = memo_id(hs, &key, hash, &id)))
			return ret;
	}
	return resolve(hs, evidx, smp, period, id);
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
