/*
 * Listings of functions (see tally/listing.h): capstone for the instructions, libdw for
 * the lines, and objdump -l -S's rules for what goes between two instructions, so that
 * annotate shows what perf shows without running objdump.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/disasm.h>
#include <tally/listing.h>
#include <tally/srcline.h>
#include "internal/symbols.h"

/* objdump -S: lines of context shown before a file's first line */
#define PRECEDING_CONTEXT 5

/* What the lister keeps per dso: its code, decoder and line tables. */
struct dso_slot {
	struct tally_dso *dso;
	int err;		/* why it cannot be listed (0: it can) */
	char why[5000];
	char path[4096];
	struct tally_code *code;
	struct tally_disasm *dis;
	struct tally_lines *lines;
	int64_t kaslr;		/* vmlinux: runtime address - link address */
	bool kaslr_known;
	struct dso_slot *next;
};

struct interned {
	struct interned *next;
	char s[];
};

struct tally_lister {
	struct tally_session *s;
	struct tally_lister_opts o;
	char *vmlinux, *kcore;
	struct dso_slot *slots;
	struct tally_sources *sources;
	struct interned *strings[256];
};

int tally_lister__new(struct tally_lister **out, struct tally_session *s,
		      const struct tally_lister_opts *opts)
{
	struct tally_lister *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->s = s;
	if (opts)
		l->o = *opts;
	l->vmlinux = l->o.vmlinux ? strdup(l->o.vmlinux) : NULL;
	l->kcore = strdup(l->o.kcore ? l->o.kcore : "/proc/kcore");
	if ((l->o.vmlinux && !l->vmlinux) || !l->kcore || tally_sources__new(&l->sources)) {
		tally_lister__delete(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void tally_lister__delete(struct tally_lister *l)
{
	if (!l)
		return;
	for (struct dso_slot *d = l->slots, *n; d; d = n) {
		n = d->next;
		tally_code__delete(d->code);
		tally_disasm__delete(d->dis);
		tally_lines__delete(d->lines);
		free(d);
	}
	for (size_t i = 0; i < 256; i++) {
		for (struct interned *s = l->strings[i], *n; s; s = n) {
			n = s->next;
			free(s);
		}
	}
	tally_sources__delete(l->sources);
	free(l->vmlinux);
	free(l->kcore);
	free(l);
}

void tally_listing__delete(struct tally_listing *x)
{
	if (!x)
		return;
	free(x->rows);
	free(x);
}

/* A copy of s that lives as long as the lister. */
static const char *intern(struct tally_lister *l, const char *s)
{
	uint32_t h = 2166136261u;
	struct interned *i;
	size_t n;

	if (!s)
		return NULL;
	for (const char *p = s; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	for (i = l->strings[h & 255]; i; i = i->next)
		if (!strcmp(i->s, s))
			return i->s;
	n = strlen(s) + 1;
	i = malloc(sizeof(*i) + n);
	if (!i)
		return NULL;
	memcpy(i->s, s, n);
	i->next = l->strings[h & 255];
	l->strings[h & 255] = i;
	return i->s;
}

static const char *errno_text(int err)
{
	return strerror(err < 0 ? -err : err);
}

/* The kernel's code: a vmlinux given, or this machine's running kernel if it is the
 * one the file was recorded on. */
static void open_kernel(struct tally_lister *l, struct dso_slot *d)
{
	const uint8_t *id;
	size_t n;
	int r;

	if (l->vmlinux) {
		snprintf(d->path, sizeof(d->path), "%s", l->vmlinux);
		d->err = tally_code__open(&d->code, l->vmlinux);
		if (d->err)
			snprintf(d->why, sizeof(d->why), "cannot read the vmlinux %s: %s", l->vmlinux,
				 d->err == -ENOEXEC ? "not an ELF file" : errno_text(d->err));
		else
			tally_lines__open(&d->lines, l->vmlinux, NULL);
		return;
	}
	r = tally_session__runs_recording_kernel(l->s);
	if (r == 0) {
		char hexid[41] = "";

		n = tally_dso__build_id(d->dso, &id);
		for (size_t i = 0; i < n && i < 20; i++)
			snprintf(hexid + 2 * i, 3, "%02x", id[i]);
		d->err = -ESRCH;
		snprintf(d->why, sizeof(d->why),
			 "the file was recorded on another kernel (build-id %s) than this machine "
			 "runs, so %s holds other code: pass that kernel's vmlinux with -k/--vmlinux",
			 hexid[0] ? hexid : "unknown", l->kcore);
		return;
	}
	snprintf(d->path, sizeof(d->path), "%s", l->kcore);
	d->err = tally_code__open(&d->code, l->kcore);
	if (d->err == -EACCES || d->err == -EPERM)
		snprintf(d->why, sizeof(d->why),
			 "reading %s needs root (CAP_SYS_RAWIO); run as root or pass the kernel's "
			 "vmlinux with -k/--vmlinux", l->kcore);
	else if (d->err)
		snprintf(d->why, sizeof(d->why), "cannot read %s: %s; pass the kernel's vmlinux "
			 "with -k/--vmlinux", l->kcore, d->err == -ENOEXEC ? "not an ELF file" :
			 errno_text(d->err));
}

/* The vdso: perf's copy in the build-id cache, else this machine's when it is the one
 * recorded (same build-id, or none recorded). */
static void open_vdso(struct tally_lister *l, struct dso_slot *d)
{
	const uint8_t *want, *have;
	size_t nw = tally_dso__build_id(d->dso, &want), nh;
	const void *image;
	size_t size;

	if (tally_session__dso_files(l->s, d->dso, d->path, sizeof(d->path), NULL, 0) == 0 &&
	    tally_code__open(&d->code, d->path) == 0)
		return;
	snprintf(d->path, sizeof(d->path), "[vdso]");
	if (tally_vdso_image(&image, &size) == 0 && tally_code__open_mem(&d->code, image, size) == 0) {
		nh = tally_code__build_id(d->code, &have);
		if (!nw || (nw == nh && !memcmp(want, have, nw)))
			return;
		tally_code__delete(d->code);
		d->code = NULL;
	}
	d->err = -ENOENT;
	snprintf(d->why, sizeof(d->why), "the [vdso] recorded is not this kernel's and the "
		 "build-id cache has no copy of it");
}

static void open_user(struct tally_lister *l, struct dso_slot *d)
{
	char debug[4096];
	const char *name = tally_dso__name(d->dso);

	if (!strcmp(name, "[vdso]")) {
		open_vdso(l, d);
		return;
	}
	if (!strcmp(name, "[vsyscall]") || name[0] == '[' ||
	    !strncmp(name, "/tmp/perf-", 10) || !strncmp(name, "//anon", 6)) {
		d->err = -ENOENT;
		snprintf(d->why, sizeof(d->why), "%s is no file on disk: its code was not "
			 "recorded", name);
		return;
	}
	if (tally_session__dso_files(l->s, d->dso, d->path, sizeof(d->path), debug,
				     sizeof(debug))) {
		d->err = -ENOENT;
		snprintf(d->why, sizeof(d->why), "%s is not there (or is another build than the "
			 "one recorded) and the build-id cache has no copy", name);
		return;
	}
	d->err = tally_code__open(&d->code, d->path);
	if (d->err) {
		snprintf(d->why, sizeof(d->why), "cannot read %s: %s", d->path,
			 d->err == -ENOEXEC ? "not an ELF file" : errno_text(d->err));
		return;
	}
	if (l->o.lines || l->o.source)
		tally_lines__open(&d->lines, d->path, debug[0] ? debug : NULL);
	/* objdump -S follows the link to the debuginfo and names code with its symbols
	 * too (glibc's __GI_ aliases); without them it names what the file has */
	if (l->o.source && debug[0] && strcmp(debug, d->path))
		tally_code__add_symbols(d->code, debug);
}

static struct dso_slot *slot(struct tally_lister *l, struct tally_dso *dso)
{
	struct dso_slot *d;

	for (d = l->slots; d; d = d->next)
		if (d->dso == dso)
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dso = dso;
	d->next = l->slots;
	l->slots = d;
	if (tally_dso__is_kernel(dso))
		open_kernel(l, d);
	else
		open_user(l, d);
	if (!d->err) {
		d->err = tally_disasm__new(&d->dis, tally_code__machine(d->code),
					   tally_code__is_64bit(d->code), l->o.syntax);
		if (d->err == -ELIBACC)
			snprintf(d->why, sizeof(d->why), "%s: cannot disassemble: the capstone "
				 "library cannot be loaded", d->path);
		else if (d->err)
			snprintf(d->why, sizeof(d->why), "%s: no disassembler for ELF machine %u",
				 d->path, tally_code__machine(d->code));
	}
	return d;
}

/* ---- rows ----------------------------------------------------------------------- */

struct build {
	struct tally_lister *l;
	struct dso_slot *d;
	const struct tally_symbol *sym;
	struct tally_listing *x;
	size_t cap;
	/* objdump's state across the instructions of a listing */
	const char *prev_function;
	unsigned prev_line, prev_disc;
	/* per source file: the last line shown and the highest one (objdump keeps them
	 * for every file it shows: a C++ function with inlined library code touches
	 * dozens of headers) */
	struct shown {
		const char *file;
		unsigned last, max;
	} *shown;
	size_t nr_shown, cap_shown;
};

static struct tally_row *row(struct build *b, enum tally_row_kind kind)
{
	struct tally_row *r;

	if (b->x->nr_rows == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct tally_row *v = realloc(b->x->rows, cap * sizeof(*v));

		if (!v)
			return NULL;
		b->x->rows = v;
		b->cap = cap;
	}
	r = &b->x->rows[b->x->nr_rows++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	return r;
}

/* The state of file (an interned name); NULL without memory. */
static struct shown *shown_file(struct build *b, const char *file)
{
	for (size_t i = 0; i < b->nr_shown; i++)
		if (!strcmp(b->shown[i].file, file))
			return &b->shown[i];
	if (b->nr_shown == b->cap_shown) {
		size_t cap = b->cap_shown ? b->cap_shown * 2 : 16;
		struct shown *v = realloc(b->shown, cap * sizeof(*v));

		if (!v)
			return NULL;
		b->shown = v;
		b->cap_shown = cap;
	}
	b->shown[b->nr_shown] = (struct shown){ .file = file };
	return &b->shown[b->nr_shown++];
}

/* objdump -S: the lines to show for a new line number of a file. */
static int source_rows(struct build *b, const char *file, unsigned line)
{
	struct tally_sources *src = b->l->sources;
	unsigned nr = tally_sources__nr_lines(src, file), first;
	struct shown *sh;

	if (!nr)
		return 0;	/* objdump shows nothing of a file it cannot open */
	sh = shown_file(b, file);
	if (!sh)
		return -ENOMEM;
	if (line == sh->last)
		return 0;
	first = line > PRECEDING_CONTEXT ? line - PRECEDING_CONTEXT : 1;
	if (sh->max >= first)
		first = sh->max < line ? sh->max + 1 : line;
	for (unsigned n = first; n <= line; n++) {
		struct tally_row *r;
		const char *text;
		size_t len;

		if (n > nr || tally_sources__line(src, file, n, &text, &len))
			break;
		r = row(b, TALLY_ROW_SOURCE);
		if (!r)
			return -ENOMEM;
		r->text = text;
		r->len = len;
		r->line = n;
	}
	if (sh->max < line)
		sh->max = line;
	sh->last = line;
	return 0;
}

/* objdump's show_line for the instruction at addr (an address of the line tables). */
static int line_rows(struct build *b, uint64_t addr)
{
	struct tally_line ln;
	const char *file, *fn;
	struct tally_row *r;

	if (!b->d->lines)
		return 0;
	switch (tally_lines__find(b->d->lines, addr, &ln)) {
	case 0:
		break;
	case -ENOENT:	/* no unit's code: binutils names the symbol table's function */
	case -ENODATA:	/* a unit without a row for it: the same */
		memset(&ln, 0, sizeof(ln));
		if (!(ln.function = tally_lines__symtab_function(b->d->lines, addr)))
			return 0;
		break;
	default:
		return 0;
	}
	file = ln.file ? intern(b->l, ln.file) : NULL;
	fn = ln.function ? intern(b->l, ln.function) : NULL;
	if ((ln.file && !file) || (ln.function && !fn))
		return -ENOMEM;
	if (b->l->o.lines) {
		if (fn && (!b->prev_function || strcmp(fn, b->prev_function))) {
			r = row(b, TALLY_ROW_FUNCTION);
			if (!r)
				return -ENOMEM;
			r->text = fn;
			r->len = strlen(fn);
			r->full = ln.function_is_full;
			b->prev_line = UINT32_MAX;
		}
		if (ln.line && (ln.line != b->prev_line || ln.discriminator != b->prev_disc)) {
			r = row(b, TALLY_ROW_LOCATION);
			if (!r)
				return -ENOMEM;
			r->text = file ? file : "???";
			r->len = strlen(r->text);
			r->line = ln.line;
			r->discriminator = ln.discriminator;
		}
	}
	if (b->l->o.source && file && ln.line && source_rows(b, file, ln.line))
		return -ENOMEM;
	if (fn)
		b->prev_function = fn;
	if (ln.line)
		b->prev_line = ln.line;
	b->prev_disc = ln.discriminator;
	return 0;
}

/* objdump -C's spelling of a symbol name: a C++ name in full, with its parameters, and
 * what follows an '@' (a version, "@plt") kept. */
static const char *demangled(struct tally_lister *l, const char *name)
{
	const char *at;
	char *head, *full;
	const char *r = name;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return name;
	at = strchr(name, '@');
	head = at ? strndup(name, (size_t)(at - name)) : NULL;
	full = tly_demangle_full(head ? head : name);
	if (full) {
		size_t n = strlen(full), tail = at ? strlen(at) : 0;
		char *joined = malloc(n + tail + 1);

		if (joined) {
			memcpy(joined, full, n);
			memcpy(joined + n, at ? at : "", tail + 1);
			r = intern(l, joined) ? intern(l, joined) : name;
			free(joined);
		}
	}
	free(head);
	free(full);
	return r;
}

/* The name of a code address: objdump's for a file (its symbols and PLT entries, GOT
 * slots by their relocations); for the kernel the session's (kallsyms), else the
 * file's own (data objects). */
static struct tally_row_name name_of(struct build *b, uint64_t addr)
{
	struct tally_row_name n = { NULL, 0 };
	const struct tally_symbol *sym;
	uint64_t dso_addr, start;
	const char *name;

	if (!tally_dso__is_kernel(b->d->dso) &&
	    (name = tally_code__target_symbol(b->d->code, addr, b->x->start, &start))) {
		n.sym = demangled(b->l, name);
		n.off = (int64_t)(addr - start);
		n.above = start > addr;
		return n;
	}
	if (tally_dso__is_kernel(b->d->dso))
		dso_addr = addr + (uint64_t)b->d->kaslr;
	else
		dso_addr = tally_code__addr_to_offset(b->d->code, addr);
	sym = tally_session__dso_symbol(b->l->s, b->d->dso, dso_addr);
	if (sym && sym->name && dso_addr >= sym->start && dso_addr - sym->start < (sym->size ? sym->size : 1)) {
		n.sym = sym->name;
		n.off = (int64_t)(dso_addr - sym->start);
		return n;
	}
	name = tally_code__symbol(b->d->code, addr, &start);
	if (name) {
		n.sym = name;
		n.off = (int64_t)(addr - start);
		n.above = start > addr;
	}
	return n;
}

static int insn_rows(struct build *b, const uint8_t *code, size_t len)
{
	struct tally_listing *x = b->x;
	size_t at = 0;

	while (at < len) {
		uint64_t addr = x->start + at;
		struct tally_row *r;
		uint64_t sstart;
		const char *other;

		/* another symbol of the file starting inside the function: objdump heads it */
		if (at && (other = tally_code__symbol(b->d->code, addr, &sstart)) && sstart == addr) {
			r = row(b, TALLY_ROW_SYMBOL);
			if (!r)
				return -ENOMEM;
			r->text = other;
			r->len = strlen(other);
			r->insn.addr = addr;
		}
		if ((b->l->o.lines || b->l->o.source) && line_rows(b, addr))
			return -ENOMEM;
		r = row(b, TALLY_ROW_INSN);
		if (!r)
			return -ENOMEM;
		at += tally_disasm__one(b->d->dis, code + at, len - at, addr, &r->insn);
		r->offset = addr - x->start;
		if (r->insn.has_target && r->insn.target >= x->start && r->insn.target < x->end &&
		    (x->name || b->sym->name) && tally_dso__is_kernel(b->d->dso)) {
			/* inside the function: objdump names it after the function */
			r->target.sym = x->name ? x->name : b->sym->name;
			r->target.off = (int64_t)(r->insn.target - x->start) + (x->name ? x->name_off : 0);
			r->target.above = r->target.off < 0;
		} else if (r->insn.has_target) {
			r->target = name_of(b, r->insn.target);
		}
		if (r->insn.has_pc_ref)
			r->pc_ref = name_of(b, r->insn.pc_ref);
		x->nr_insns++;
	}
	return 0;
}

/* kallsyms has no sizes: a kernel function reaches up to the next symbol, padding
 * included; perf drops the nops at its end. */
static void drop_trailing_nops(struct tally_listing *x)
{
	while (x->nr_rows && x->rows[x->nr_rows - 1].kind == TALLY_ROW_INSN &&
	       x->rows[x->nr_rows - 1].insn.kind == TALLY_INSN_NOP && x->nr_insns > 1) {
		x->nr_rows--;
		x->nr_insns--;
	}
	while (x->nr_rows && x->rows[x->nr_rows - 1].kind != TALLY_ROW_INSN)
		x->nr_rows--;
}

/* Where sym's code is, as an address of d's code: -errno with why when it is not. */
static int code_start(struct tally_lister *l, struct dso_slot *d, const struct tally_symbol *sym,
		      uint64_t *start, char *why, size_t why_len)
{
	if (!tally_dso__is_kernel(d->dso)) {
		*start = tally_code__offset_to_addr(d->code, sym->start);
		return 0;
	}
	if (!l->vmlinux) {
		*start = sym->start;	/* kcore: the running kernel's addresses */
		return 0;
	}
	/* a vmlinux is linked elsewhere than the kernel runs (KASLR): the same symbol
	 * in both gives the distance */
	if (!d->kaslr_known) {
		uint64_t link;

		if (!sym->name || tally_code__symbol_addr(d->code, sym->name, &link)) {
			snprintf(why, why_len, "%s has no symbol %s: is it the kernel the file was "
				 "recorded on?", l->vmlinux, sym->name ? sym->name : "(unnamed)");
			return -ENOENT;
		}
		d->kaslr = (int64_t)(sym->start - link);
		d->kaslr_known = true;
	}
	*start = sym->start - (uint64_t)d->kaslr;
	return 0;
}

int tally_lister__list(struct tally_lister *l, struct tally_dso *dso, const struct tally_symbol *sym,
		       struct tally_listing **out, char *why, size_t why_len)
{
	struct dso_slot *d = slot(l, dso);
	struct build b = { .l = l, .d = d, .sym = sym, .prev_line = UINT32_MAX };
	const uint8_t *code;
	uint64_t start;
	size_t got;
	int err;

	*out = NULL;
	if (why_len)
		why[0] = 0;
	if (!d)
		return -ENOMEM;
	if (d->err) {
		snprintf(why, why_len, "%s", d->why);
		return d->err;
	}
	if (!sym->size) {
		snprintf(why, why_len, "%s has no size", sym->name ? sym->name : "the symbol");
		return -ENODATA;
	}
	err = code_start(l, d, sym, &start, why, why_len);
	if (err)
		return err;
	got = tally_code__bytes(d->code, start, sym->size, &code);
	if (!got) {
		snprintf(why, why_len, "%s holds no code at %#llx", d->path,
			 (unsigned long long)start);
		return -ENODATA;
	}
	b.x = calloc(1, sizeof(*b.x));
	if (!b.x)
		return -ENOMEM;
	tally_lines__begin_listing(d->lines);	/* one listing: one run of objdump */
	b.x->start = start;
	b.x->end = start + got;		/* a file shorter than the symbol lists what it has */
	b.x->path = d->path;
	b.x->has_lines = d->lines != NULL;
	/* objdump -S reads the debuginfo's symbols, objdump without -S only the file's */
	b.x->name = d->lines && l->o.source ? tally_lines__symbol_name(d->lines, start) : NULL;
	if (!b.x->name) {
		uint64_t at;
		const char *n = tally_code__symbol(d->code, start, &at);

		if (n && (at == start || !l->o.source)) {
			b.x->name = n;
			b.x->name_off = (int64_t)(start - at);
		}
	}
	b.x->name = demangled(l, b.x->name);	/* objdump -C */
	b.x->section = tally_code__section(d->code, start);
	if (!b.x->section)
		b.x->section = ".text";
	/* the code buffer is the code object's: copy it, rows look names up in the file */
	{
		uint8_t *copy = malloc(got);

		if (!copy) {
			tally_listing__delete(b.x);
			return -ENOMEM;
		}
		memcpy(copy, code, got);
		err = insn_rows(&b, copy, got);
		free(copy);
		free(b.shown);
	}
	if (err) {
		tally_listing__delete(b.x);
		return err;
	}
	if (tally_dso__is_kernel(dso) && !l->vmlinux)
		drop_trailing_nops(b.x);
	*out = b.x;
	return 0;
}
