/*
 * The DWARF half of the probe finder (see probe-finder.c for the rules it follows):
 * functions, source lines and lazy patterns to addresses, and variable expressions to
 * the kernel's fetch arguments, through libdw.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "internal/probe.h"

/* ---- small DWARF helpers ---- */

bool tly_probe_die_type(Dwarf_Die *die, Dwarf_Die *type)
{
	Dwarf_Attribute a;

	return dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, type);
}

/* The type under typedefs and qualifiers; false for void. */
bool tly_probe_strip_type(Dwarf_Die *type, Dwarf_Die *out)
{
	Dwarf_Die t = *type;

	for (int i = 0; i < 64; i++) {
		int tag = dwarf_tag(&t);

		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type &&
		    tag != DW_TAG_atomic_type) {
			*out = t;
			return true;
		}
		if (!tly_probe_die_type(&t, &t))
			return false;
	}
	return false;
}

static bool die_is_optimized_cu(Dwarf_Die *cu)
{
	Dwarf_Attribute a;
	const char *prod = dwarf_attr(cu, DW_AT_producer, &a) ? dwarf_formstring(&a) : NULL;
	const char *o = prod;

	if (!prod)
		return true;
	while ((o = strstr(o, " -O"))) {
		if (o[3] != '0')
			return true;
		o += 3;
	}
	return false;
}

bool tly_probe_die_entry(Dwarf_Die *die, uint64_t *entry)
{
	Dwarf_Addr a, base, start, end;

	if (dwarf_entrypc(die, &a) == 0 || dwarf_lowpc(die, &a) == 0) {
		*entry = a;
		return true;
	}
	if (dwarf_ranges(die, 0, &base, &start, &end) > 0) {
		*entry = start;
		return true;
	}
	return false;
}

unsigned tly_probe_die_decl_line(Dwarf_Die *die)
{
	int line = 0;

	dwarf_decl_line(die, &line);
	return line > 0 ? (unsigned)line : 0;
}

/* Does path name the file the user gave (its tail, at a '/' boundary)? */
static bool file_matches(const char *path, const char *want)
{
	size_t pl, wl;

	if (!want)
		return true;
	if (!path)
		return false;
	pl = strlen(path);
	wl = strlen(want);
	if (wl > pl || strcmp(path + pl - wl, want))
		return false;
	return wl == pl || path[pl - wl - 1] == '/' || want[0] == '/';
}

const char *tly_probe_reg_name(const struct tally_probe_finder *f, unsigned reg)
{
	static const char *const x86_64[] = {
		"%ax", "%dx", "%cx", "%bx", "%si", "%di", "%bp", "%sp",
		"%r8", "%r9", "%r10", "%r11", "%r12", "%r13", "%r14", "%r15", "%ip",
	};
	static const char *const i386[] = {
		"%ax", "%cx", "%dx", "%bx", "%sp", "%bp", "%si", "%di", "%ip",
	};
	static const char *const arm64[] = {
		"%x0", "%x1", "%x2", "%x3", "%x4", "%x5", "%x6", "%x7", "%x8", "%x9", "%x10",
		"%x11", "%x12", "%x13", "%x14", "%x15", "%x16", "%x17", "%x18", "%x19", "%x20",
		"%x21", "%x22", "%x23", "%x24", "%x25", "%x26", "%x27", "%x28", "%x29", "%x30",
		"%sp",
	};

	switch (f->machine) {
	case EM_X86_64:
		return reg < TLY_ARRAY_SIZE(x86_64) ? x86_64[reg] : NULL;
	case EM_386:
		return reg < TLY_ARRAY_SIZE(i386) ? i386[reg] : NULL;
	case EM_AARCH64:
		return reg < TLY_ARRAY_SIZE(arm64) ? arm64[reg] : NULL;
	default:
		return NULL;
	}
}

/* ---- functions ---- */

struct func_hit {
	Dwarf_Die die;
	Dwarf_Die cu;
	uint64_t entry;
	const char *name;
	const char *decl_file;
	unsigned decl_line;
	bool inlined;
};

struct hits {
	struct func_hit *v;
	size_t nr, cap;
};

static int hits_add(struct hits *h, const struct func_hit *fh)
{
	if (h->nr == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct func_hit *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->nr++] = *fh;
	return 0;
}

struct func_query {
	const char *name;	/* glob */
	const char *file;	/* decl file tail, or NULL */
	bool inlines;		/* inlined instances too */
};

static int walk_funcs(Dwarf_Die *parent, Dwarf_Die *cu, const struct func_query *q,
		      struct hits *h, int depth)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child), ret;
		const char *name;
		struct func_hit fh;

		if (tag == DW_TAG_subprogram || (q->inlines && tag == DW_TAG_inlined_subroutine)) {
			name = dwarf_diename(&child);
			if (name && !fnmatch(q->name, name, 0) && tly_probe_die_entry(&child, &fh.entry) &&
			    file_matches(dwarf_decl_file(&child), q->file)) {
				fh.die = child;
				fh.cu = *cu;
				fh.name = name;
				fh.decl_file = dwarf_decl_file(&child);
				fh.decl_line = tly_probe_die_decl_line(&child);
				fh.inlined = tag == DW_TAG_inlined_subroutine;
				if (hits_add(h, &fh))
					return -ENOMEM;
			}
		}
		if (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
		    tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
		    tag == DW_TAG_structure_type || tag == DW_TAG_inlined_subroutine) {
			ret = walk_funcs(&child, cu, q, h, depth + 1);
			if (ret)
				return ret;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* Each compilation unit once. */
#define for_each_cu(dw, off, next, hsize, cu)                                              \
	for (off = 0; dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0; off = next) \
		if (dwarf_offdie(dw, off + hsize, &cu))

static int find_funcs(struct tally_probe_finder *f, const struct func_query *q, struct hits *h)
{
	Dwarf_Off off, next;
	size_t hsize;
	Dwarf_Die cu;
	int ret;

	for_each_cu(f->dw, off, next, hsize, cu) {
		ret = walk_funcs(&cu, &cu, q, h, 0);
		if (ret)
			return ret;
	}
	/* out-of-line first, then inlined copies, each in address order, no duplicates */
	for (size_t i = 0; i < h->nr; i++)
		for (size_t j = i + 1; j < h->nr; j++)
			if (h->v[j].entry == h->v[i].entry && h->v[j].inlined == h->v[i].inlined) {
				memmove(&h->v[j], &h->v[j + 1], (h->nr - j - 1) * sizeof(*h->v));
				h->nr--;
				j--;
			}
	return 0;
}

/* ---- lines ---- */

struct addrs {
	uint64_t *v;
	size_t nr, cap;
};

static int addrs_add(struct addrs *a, uint64_t addr)
{
	for (size_t i = 0; i < a->nr; i++)
		if (a->v[i] == addr)
			return 0;
	if (a->nr == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		uint64_t *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->nr++] = addr;
	return 0;
}

struct row {
	uint64_t addr;
	unsigned line;
	const char *file;
	bool stmt;
};

static bool get_row(Dwarf_Lines *lines, size_t i, struct row *r)
{
	Dwarf_Line *l = dwarf_onesrcline(lines, i);
	Dwarf_Addr a;
	int line;
	bool b;

	if (!l || dwarf_lineaddr(l, &a) || dwarf_lineno(l, &line) ||
	    (dwarf_lineendsequence(l, &b) == 0 && b))
		return false;
	r->addr = a;
	r->line = line > 0 ? (unsigned)line : 0;
	r->file = dwarf_linesrc(l, NULL, NULL);
	r->stmt = dwarf_linebeginstatement(l, &b) == 0 && b;
	return true;
}

/* perf's lazy match: a glob where blanks of the text do not count. */
static bool lazy_match(const char *text, const char *pat)
{
	while (*text && isspace((unsigned char)*text))
		text++;
	for (; *pat; pat++) {
		if (*pat == '*') {
			while (pat[1] == '*')
				pat++;
			if (!pat[1])
				return true;
			for (; *text; text++)
				if (lazy_match(text, pat + 1))
					return true;
			return false;
		}
		while (*text && isspace((unsigned char)*text) && !isspace((unsigned char)*pat))
			text++;
		if (!*text)
			return false;
		if (*pat != '?' && *pat != *text)
			return false;
		text++;
	}
	while (*text && isspace((unsigned char)*text))
		text++;
	return !*text;
}

static int source_line(struct tally_probe_finder *f, const char *file, unsigned line,
		       const char **text, size_t *len)
{
	if (!f->src && tally_sources__new(&f->src))
		return -ENOMEM;
	return tally_sources__line(f->src, file, line, text, len);
}

/* Rows of the function (or of every unit for a file) that the spec asks for. */
struct line_query {
	Dwarf_Die *func;	/* NULL: any address of the unit */
	uint64_t entry;
	const char *file;	/* rows of this file only */
	unsigned line;		/* 0: lazy */
	const char *lazy;
};

static int match_rows(struct tally_probe_finder *f, Dwarf_Die *cu, const struct line_query *q,
		      struct addrs *out, bool *at_entry, int *src_err)
{
	Dwarf_Lines *lines;
	size_t n;

	if (dwarf_getsrclines(cu, &lines, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct row r;
		const char *text;
		size_t len;
		int ret;

		if (!get_row(lines, i, &r) || !r.stmt || !r.line)
			continue;
		if (q->func && !dwarf_haspc(q->func, r.addr))
			continue;
		if (!file_matches(r.file, q->file))
			continue;
		if (q->line) {
			if (r.line != q->line)
				continue;
		} else {
			ret = source_line(f, r.file, r.line, &text, &len);
			if (ret) {
				*src_err = ret;
				continue;
			}
			{
				char *copy = strndup(text, len);
				bool m;

				if (!copy)
					return -ENOMEM;
				m = lazy_match(copy, q->lazy);
				free(copy);
				if (!m)
					continue;
			}
		}
		if (q->func && r.addr == q->entry) {
			*at_entry = true;
			continue;
		}
		ret = addrs_add(out, r.addr);
		if (ret)
			return ret;
	}
	return 0;
}

/* The first statement row after the entry: where a -O0 prologue ends. */
static uint64_t after_prologue(Dwarf_Die *cu, Dwarf_Die *func, uint64_t entry)
{
	Dwarf_Lines *lines;
	size_t n;
	uint64_t best = entry;

	if (dwarf_getsrclines(cu, &lines, &n))
		return entry;
	for (size_t i = 0; i < n; i++) {
		struct row r;

		if (!get_row(lines, i, &r) || !r.stmt || r.addr <= entry ||
		    !dwarf_haspc(func, r.addr))
			continue;
		if (best == entry || r.addr < best)
			best = r.addr;
	}
	return best;
}

/* ---- probe points ---- */

struct result {
	struct tally_probe_event *v;
	size_t nr;
};

static int add_event(struct tally_probe_finder *f, struct result *r, Dwarf_Die *cu, uint64_t addr,
		     const char *func, const struct tally_probe_spec *spec, char *err, size_t errlen)
{
	struct tally_probe_event *v, *e;
	uint64_t off;
	int ret;

	if (tly_probe_vaddr_to_offset(f, addr, &off))
		return tly_probe_err(err, errlen, -ERANGE, "0x%" PRIx64 " is in no loadable "
				     "segment of %s", addr, f->path);
	v = realloc(r->v, (r->nr + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->v = v;
	e = &v[r->nr++];
	memset(e, 0, sizeof(*e));
	e->uprobe = true;
	e->retprobe = spec->retprobe;
	e->offset = off;
	e->path = strdup(f->path);
	e->function = func ? strdup(func) : NULL;
	if (!e->path || (func && !e->function))
		return -ENOMEM;
	ret = tally_probe_spec__needs_dwarf(spec) || spec->nr_args ?
	      tly_probe_resolve_args(f, cu, addr, spec, e, err, errlen) : 0;
	return ret;
}

static bool spec_has_vars(const struct tally_probe_spec *s)
{
	for (size_t i = 0; i < s->nr_args; i++)
		if (!s->args[i].raw && strcmp(s->args[i].expr, "$retval"))
			return true;
	return false;
}

static int probe_function(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			  struct func_hit *h, struct result *r, char *err, size_t errlen,
			  char *note, size_t notelen)
{
	struct addrs a = { 0 };
	int ret = 0, src_err = 0;
	bool at_entry = false;

	if (spec->has_line && spec->line) {
		struct line_query q = { .func = &h->die, .entry = h->entry, .file = h->decl_file,
					.line = h->decl_line + spec->line };

		ret = match_rows(f, &h->cu, &q, &a, &at_entry, &src_err);
		if (!ret && at_entry)
			ret = tly_probe_err(err, errlen, -ENOENT, "This line is sharing the "
					    "address with other lines.\nPlease try to probe at "
					    "%s:0 instead.", h->name);
	} else if (spec->lazy) {
		struct line_query q = { .func = &h->die, .entry = h->entry, .file = NULL,
					.lazy = spec->lazy };

		ret = match_rows(f, &h->cu, &q, &a, &at_entry, &src_err);
		if (!ret && !a.nr && src_err)
			ret = tly_probe_err(err, errlen, src_err, "cannot read the source of %s "
					    "to match ';%s' (%s)", h->name, spec->lazy,
					    h->decl_file ? h->decl_file : "no file name");
	} else {
		uint64_t addr = h->entry + spec->offset;

		if (!spec->retprobe && !spec->offset && spec_has_vars(spec) &&
		    !die_is_optimized_cu(&h->cu)) {
			addr = after_prologue(&h->cu, &h->die, h->entry);
			if (note && notelen && !note[0])
				snprintf(note, notelen, "Target program is compiled without "
					 "optimization. Skipping prologue.\nProbe on address "
					 "0x%" PRIx64 " to force probing at the function entry.\n",
					 h->entry);
		}
		ret = addrs_add(&a, addr);
	}
	for (size_t i = 0; !ret && i < a.nr; i++)
		ret = add_event(f, r, &h->cu, a.v[i], h->name, spec, err, errlen);
	free(a.v);
	return ret;
}

/* The concrete function containing addr (for names). */
static bool concrete_at(Dwarf_Die *parent, uint64_t addr, Dwarf_Die *out, int depth)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_subprogram && dwarf_haspc(&child, addr) > 0) {
			*out = child;
			return true;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
		     tag == DW_TAG_structure_type) && concrete_at(&child, addr, out, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

const char *tly_probe_function_at(Dwarf_Die *cu, uint64_t addr, Dwarf_Die *out)
{
	Dwarf_Die die;

	if (!concrete_at(cu, addr, &die, 0))
		return NULL;
	if (out)
		*out = die;
	return dwarf_diename(&die);
}

/* The innermost function at addr, an inlined one too (it names FILE:LINE probes). */
static const char *innermost_at(Dwarf_Die *cu, uint64_t addr)
{
	Dwarf_Die *scopes;
	int n = dwarf_getscopes(cu, addr, &scopes);
	const char *name = NULL;

	for (int i = 0; i < n && !name; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			name = dwarf_diename(&scopes[i]);
	}
	if (n > 0)
		free(scopes);
	return name ? name : tly_probe_function_at(cu, addr, NULL);
}

/* A SRC:AL row at a function's entry shares its address with the declaration line:
 * perf refuses it and names the line to use. */
static int file_line_at_entry(struct tally_probe_finder *f, Dwarf_Die *cu,
			      const struct addrs *a, const struct tally_probe_spec *spec,
			      char *err, size_t errlen)
{
	struct func_query q = { .name = "*", .inlines = true };
	struct hits h = { 0 };
	int ret = walk_funcs(cu, cu, &q, &h, 0);

	(void)f;
	for (size_t j = 0; !ret && j < a->nr; j++) {
		const struct func_hit *other = NULL;
		bool own = false;

		for (size_t i = 0; i < h.nr; i++) {
			if (a->v[j] != h.v[i].entry)
				continue;
			if (h.v[i].decl_line == spec->line)
				own = true;
			else
				other = &h.v[i];
		}
		if (other && !own)
			ret = tly_probe_err(err, errlen, -ENOENT, "This line is sharing the address "
					    "with other lines.\nPlease try to probe at %s:%u instead.",
					    other->decl_file ? other->decl_file : spec->file,
					    other->decl_line);
	}
	free(h.v);
	return ret;
}

/* SRC:AL and SRC;PT: rows of every unit that has the file. */
static int probe_file(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
		      struct result *r, char *err, size_t errlen)
{
	Dwarf_Off off, next;
	size_t hsize;
	Dwarf_Die cu;
	int ret = 0, src_err = 0;

	for_each_cu(f->dw, off, next, hsize, cu) {
		struct line_query q = { .file = spec->file, .line = spec->has_line ? spec->line : 0,
					.lazy = spec->lazy };
		struct addrs a = { 0 };
		bool at_entry = false;

		ret = match_rows(f, &cu, &q, &a, &at_entry, &src_err);
		if (!ret && a.nr && spec->has_line)
			ret = file_line_at_entry(f, &cu, &a, spec, err, errlen);
		if (!ret && !a.nr && spec->has_line) {
			/* a function's declaration line: its entry */
			struct func_query fq = { .name = "*", .file = spec->file };
			struct hits h = { 0 };

			ret = walk_funcs(&cu, &cu, &fq, &h, 0);
			for (size_t i = 0; !ret && i < h.nr; i++)
				if (!h.v[i].inlined && h.v[i].decl_line == spec->line)
					ret = addrs_add(&a, h.v[i].entry);
			free(h.v);
		}
		for (size_t i = 0; !ret && i < a.nr; i++)
			ret = add_event(f, r, &cu, a.v[i], innermost_at(&cu, a.v[i]), spec, err,
					errlen);
		free(a.v);
		if (ret)
			return ret;
	}
	if (!r->nr && src_err && spec->lazy)
		return tly_probe_err(err, errlen, src_err, "cannot read %s to match ';%s'",
				     spec->file, spec->lazy);
	return 0;
}

int tly_probe_find_dwarf(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			 struct tally_probe_event **out, size_t *nr, char *err, size_t errlen,
			 char *note, size_t notelen)
{
	struct result r = { 0 };
	int ret = 0;

	if (spec->function) {
		/* inlined copies too (not for %return: an inlined copy does not return) */
		struct func_query q = { .name = spec->function, .file = spec->file,
					.inlines = !spec->retprobe && !f->no_inlines };
		struct hits h = { 0 };

		ret = find_funcs(f, &q, &h);
		for (size_t i = 0; !ret && i < h.nr; i++)
			ret = probe_function(f, spec, &h.v[i], &r, err, errlen, note, notelen);
		free(h.v);
	} else {
		ret = probe_file(f, spec, &r, err, errlen);
	}
	if (!ret && !r.nr && spec->function)	/* perf names it without its lazy pattern */
		ret = tly_probe_err(err, errlen, -ENOENT, "Probe point '%.*s' not found.",
				    (int)strcspn(spec->text, ";"), spec->text);
	else if (!ret && !r.nr)
		ret = tly_probe_err(err, errlen, -ENOENT, "Probe point '@%s%s%.0u' not found.",
				    spec->file, spec->has_line ? ":" : "", spec->line);
	if (ret) {
		tally_probe_events__free(r.v, r.nr);
		return ret;
	}
	*out = r.v;
	*nr = r.nr;
	return 0;
}

int tly_probe_find_address(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			   struct tally_probe_event **out, size_t *nr, char *err, size_t errlen)
{
	struct result r = { 0 };
	Dwarf_Die cu;
	const struct tly_probe_sym *s = tly_probe_sym_at(f, spec->address, true);
	bool have_cu = f->dw && dwarf_addrdie(f->dw, spec->address, &cu);
	int ret;

	if (spec_has_vars(spec) && !have_cu)
		return tly_probe_err(err, errlen, -ENOENT, "no debug information covers 0x%"
				     PRIx64 " in %s", spec->address, f->path);
	ret = add_event(f, &r, have_cu ? &cu : NULL, spec->address, s ? s->name : NULL, spec,
			err, errlen);
	if (ret) {
		tally_probe_events__free(r.v, r.nr);
		return ret;
	}
	*out = r.v;
	*nr = r.nr;
	return 0;
}

/* ---- -l ---- */

/* The source line perf gives an address: at the entry of an inlined copy, the line of
 * its call; else the first row at the address (or the last before it). */
static bool line_of(Dwarf_Die *cu, uint64_t addr, int *line)
{
	Dwarf_Die *scopes;
	int n = dwarf_getscopes(cu, addr, &scopes);
	Dwarf_Lines *lines;
	size_t nl;
	bool found = false;

	for (int i = 0; i < n && !found; i++) {
		Dwarf_Attribute a;
		Dwarf_Word call;
		uint64_t entry;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		if (tly_probe_die_entry(&scopes[i], &entry) && entry == addr &&
		    dwarf_attr(&scopes[i], DW_AT_call_line, &a) && !dwarf_formudata(&a, &call)) {
			*line = (int)call;
			found = true;
		}
		break;
	}
	if (n > 0)
		free(scopes);
	if (found || dwarf_getsrclines(cu, &lines, &nl))
		return found;
	for (size_t i = 0; i < nl; i++) {
		struct row r;

		if (!get_row(lines, i, &r) || r.addr > addr)
			continue;
		if (r.addr == addr) {
			*line = (int)r.line;
			return true;
		}
		if (i + 1 < nl) {	/* the last row before addr, in its sequence */
			struct row next;

			if (get_row(lines, i + 1, &next) && next.addr > addr) {
				*line = (int)r.line;
				found = true;
			}
		}
	}
	return found;
}

static int describe_symbol(struct tally_probe_finder *f, uint64_t addr, uint64_t offset,
			   bool retprobe, char *buf, size_t len)
{
	const struct tly_probe_sym *s = tly_probe_sym_at(f, addr, true);

	if (!s)
		return snprintf(buf, len, "0x%" PRIx64, offset);
	if (addr == s->addr)
		return snprintf(buf, len, "%s%s", s->name, retprobe ? "%return" : "");
	return snprintf(buf, len, "%s+%" PRIu64, s->name, addr - s->addr);
}

int tally_probe_finder__describe(struct tally_probe_finder *f, uint64_t offset, bool retprobe,
				 char *buf, size_t len)
{
	uint64_t addr, entry = 0;
	Dwarf_Die cu, func;
	const char *name, *file;
	int line = 0, rel;

	if (f->kernel)
		return describe_symbol(f, offset + f->text_addr, offset, retprobe, buf, len);
	if (tly_probe_offset_to_vaddr(f, offset, &addr))
		return snprintf(buf, len, "0x%" PRIx64, offset);
	if (!f->dw || !dwarf_addrdie(f->dw, addr, &cu) ||
	    !(name = tly_probe_function_at(&cu, addr, &func)))
		return describe_symbol(f, addr, offset, retprobe, buf, len);
	file = dwarf_decl_file(&func);
	if (!file)
		file = "";
	tly_probe_die_entry(&func, &entry);
	if (retprobe)
		return snprintf(buf, len, "%s%%return@%s", name, file);
	rel = line_of(&cu, addr, &line) ? line - (int)tly_probe_die_decl_line(&func) : 0;
	if (addr == entry || !rel)
		return snprintf(buf, len, "%s@%s", name, file);
	return snprintf(buf, len, "%s:%d@%s", name, rel, file);
}

/* ---- -L ---- */

struct line_range {
	char *func, *file;
	unsigned start, end;	/* end 0: open */
	bool has_start;
};

static int parse_range(const char *text, struct line_range *lr, char *err, size_t errlen)
{
	char *s = strdup(text), *colon, *at;
	int ret = 0;

	if (!s)
		return -ENOMEM;
	colon = strchr(s, ':');
	if (colon) {
		char *end, *p = colon + 1;
		unsigned long a = strtoul(p, &end, 10), b;

		*colon = 0;
		if (end == p)
			ret = tly_probe_err(err, errlen, -EINVAL, "'%s' is not a line range "
					    "(START[-END|+N])", p);
		lr->start = (unsigned)a;
		lr->has_start = true;
		if (!ret && *end == '-') {
			b = strtoul(end + 1, &p, 10);
			if (p == end + 1 || *p || b < a)
				ret = tly_probe_err(err, errlen, -EINVAL, "bad line range '%s'",
						    colon + 1);
			lr->end = (unsigned)b;
		} else if (!ret && *end == '+') {
			b = strtoul(end + 1, &p, 10);
			if (p == end + 1 || *p || !b)
				ret = tly_probe_err(err, errlen, -EINVAL, "bad line range '%s'",
						    colon + 1);
			lr->end = (unsigned)(a + b - 1);
		} else if (!ret && *end) {
			ret = tly_probe_err(err, errlen, -EINVAL, "bad line range '%s'", colon + 1);
		}
	}
	at = strchr(s, '@');
	if (at) {
		*at = 0;
		lr->file = strdup(at + 1);
	}
	if (!at && strchr(s, '.'))
		lr->file = strdup(s);
	else
		lr->func = strdup(s);
	free(s);
	if (!ret && ((at && !lr->file) || (!lr->file && !lr->func)))
		ret = -ENOMEM;
	return ret;
}

static int mark(uint8_t **marks, size_t *nmarks, unsigned line);

/* Lines with code, as perf's -L numbers them: the first statement row at each address
 * (a later row at the same address shares it), not at a function's entry (that row is
 * the function's line 0, its declaration), inside func when given. */
static int code_lines(Dwarf_Die *cu, Dwarf_Die *func, const uint64_t *entries, size_t nentries,
		      const char *file, unsigned *max, uint8_t **marks, size_t *nmarks)
{
	Dwarf_Lines *lines;
	size_t n;
	uint64_t prev = UINT64_MAX;

	if (dwarf_getsrclines(cu, &lines, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct row r;
		bool skip = false;
		int ret;

		if (!get_row(lines, i, &r) || !r.stmt)
			continue;
		if (r.addr == prev)
			continue;
		prev = r.addr;
		if (!r.line || !file_matches(r.file, file))
			continue;
		if (func && !dwarf_haspc(func, r.addr))
			continue;
		for (size_t e = 0; e < nentries && !skip; e++)
			skip = r.addr == entries[e];
		if (skip)
			continue;
		ret = mark(marks, nmarks, r.line);
		if (ret)
			return ret;
		if (r.line > *max)
			*max = r.line;
	}
	return 0;
}

static int mark(uint8_t **marks, size_t *nmarks, unsigned line)
{
	if (line >= *nmarks) {
		size_t nn = line + 64;
		uint8_t *v = realloc(*marks, nn);

		if (!v)
			return -ENOMEM;
		memset(v + *nmarks, 0, nn - *nmarks);
		*marks = v;
		*nmarks = nn;
	}
	(*marks)[line] = 1;
	return 0;
}

/* What -L prints: the lines first..last of path, numbered from base when marked. */
struct listing {
	uint8_t *marks;
	size_t nmarks;
	unsigned first, last, base, max;
	char header[PATH_MAX + 300], path[PATH_MAX];
};

/* FUNC[@SRC][:START[-END|+N]]: from the declaration line on; open ranges end three
 * lines after the last line with code (perf). */
static int function_listing(struct tally_probe_finder *f, const struct line_range *lr,
			    struct listing *l, char *err, size_t errlen)
{
	struct func_query q = { .name = lr->func, .file = lr->file };
	struct hits h = { 0 };
	struct func_hit *fh;
	int ret = find_funcs(f, &q, &h);

	if (!ret && !h.nr)
		ret = tly_probe_err(err, errlen, -ENOENT, "Specified source line is not found.");
	if (ret) {
		free(h.v);
		return ret;
	}
	fh = &h.v[0];
	snprintf(l->path, sizeof(l->path), "%s", fh->decl_file ? fh->decl_file : "");
	l->base = fh->decl_line;
	ret = code_lines(&fh->cu, &fh->die, &fh->entry, 1, fh->decl_file, &l->max, &l->marks,
			 &l->nmarks);
	if (!ret)
		ret = mark(&l->marks, &l->nmarks, l->base);
	if (l->max < l->base)
		l->max = l->base;
	l->first = l->base + lr->start;
	l->last = lr->end ? l->base + lr->end : l->max + 3;
	snprintf(l->header, sizeof(l->header), "<%s@%s:%u>", fh->name, l->path, lr->start);
	free(h.v);
	return ret;
}

/* SRC[:START[-END|+N]]: every unit's lines of the file, and its functions' declaration
 * lines. */
static int file_listing(struct tally_probe_finder *f, const struct line_range *lr,
			struct listing *l, char *err, size_t errlen)
{
	Dwarf_Off off, next;
	size_t hsize;
	Dwarf_Die cu;
	int ret = 0;

	for_each_cu(f->dw, off, next, hsize, cu) {
		struct func_query q = { .name = "*", .file = lr->file };
		struct hits h = { 0 };
		uint64_t *entries = NULL;
		size_t ne = 0;

		ret = walk_funcs(&cu, &cu, &q, &h, 0);
		if (!ret && h.nr && !(entries = calloc(h.nr, sizeof(*entries))))
			ret = -ENOMEM;
		for (size_t i = 0; !ret && i < h.nr; i++) {
			if (h.v[i].inlined)
				continue;
			if (!l->path[0] && h.v[i].decl_file)
				snprintf(l->path, sizeof(l->path), "%s", h.v[i].decl_file);
			entries[ne++] = h.v[i].entry;
			ret = mark(&l->marks, &l->nmarks, h.v[i].decl_line);
		}
		if (!ret)
			ret = code_lines(&cu, NULL, entries, ne, lr->file, &l->max, &l->marks,
					 &l->nmarks);
		free(entries);
		free(h.v);
		if (ret)
			return ret;
	}
	if (!l->path[0])
		return tly_probe_err(err, errlen, -ENOENT, "Specified source line is not found.");
	l->first = lr->start ? lr->start : 1;
	l->last = lr->end ? lr->end : UINT_MAX;
	snprintf(l->header, sizeof(l->header), "<%s:%u>", l->path, lr->start);
	return 0;
}

static int print_listing(struct tally_probe_finder *f, struct listing *l, bool closed,
			 tally_probe_line_fn fn, void *arg, char *err, size_t errlen)
{
	unsigned nlines;
	int ret;

	if (!f->src && tally_sources__new(&f->src))
		return -ENOMEM;
	nlines = tally_sources__nr_lines(f->src, l->path);
	if (!nlines)
		return tly_probe_err(err, errlen, -ENOENT, "Failed to open %s: the source file is "
				     "not there", l->path);
	if (l->last > nlines)
		l->last = nlines;
	if (l->first == 0)
		l->first = 1;
	if (closed) {	/* a closed range with no line of code is not found (perf) */
		bool any = false;

		for (unsigned n = l->first; n <= l->last && n < l->nmarks && !any; n++)
			any = l->marks[n];
		if (!any)
			return tly_probe_err(err, errlen, -ENOENT, "Specified source line is not "
					     "found.");
	}
	ret = fn(arg, l->header, -1, false, NULL, 0);
	for (unsigned n = l->first; !ret && n <= l->last; n++) {
		const char *text;
		size_t len;

		if (tally_sources__line(f->src, l->path, n, &text, &len))
			break;
		ret = fn(arg, l->header, (long)n - (long)l->base, n < l->nmarks && l->marks[n],
			 text, len);
	}
	return ret;
}

int tally_probe_finder__lines(struct tally_probe_finder *f, const char *range,
			      tally_probe_line_fn fn, void *arg, char *err, size_t errlen)
{
	struct line_range lr = { 0 };
	struct listing l = { 0 };
	int ret;

	if (f->kernel || !f->dw)
		return tly_probe_err(err, errlen, -ENODATA, "The %s file has no debug "
				     "information.\nRebuild with -g, or install an appropriate "
				     "debuginfo package.", f->kernel ? "kernel" : f->path);
	ret = parse_range(range, &lr, err, errlen);
	if (!ret)
		ret = lr.func ? function_listing(f, &lr, &l, err, errlen)
			      : file_listing(f, &lr, &l, err, errlen);
	if (!ret)
		ret = print_listing(f, &l, lr.end != 0, fn, arg, err, errlen);
	free(l.marks);
	free(lr.func);
	free(lr.file);
	return ret;
}
