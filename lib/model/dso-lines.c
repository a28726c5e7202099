/*
 * Source lines of addresses a session resolved (see tally_dso_lines in tally/srcline.h),
 * for exporters that name a frame's file and line and the functions inlined at it
 * (pprof's lines, a flame graph's inlined frames).
 *
 * A resolved address is in its dso's address space (the file offset, for ELF files);
 * DWARF speaks ELF virtual addresses, so each dso's loadable segments are read once
 * to translate. Dsos without DWARF (most distribution libraries), the kernel and JIT
 * code are remembered as such after the first try: a lookup there costs one array read.
 * Answers are kept per address (samples repeat their addresses; a DWARF lookup that
 * moves to another function walks its unit's tree), their function names copied into a
 * pool so they stay valid until __delete.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include <tally/session.h>
#include <tally/srcline.h>
#include "internal/strpool.h"
#include "internal/symbols.h"
#include "internal/util.h"

struct seg {
	uint64_t offset, vaddr, filesz;
};

/* a function of the ELF symbol table, for binutils' answer without DWARF */
struct fsym {
	uint64_t start, size;
	const char *file;	/* the STT_FILE before a local symbol (in the pool); NULL: a
				 * global one, or none */
	const char *name;
};

struct dso_state {
	bool tried, symtab_tried;
	struct tally_lines *lines;	/* NULL: no lines for this dso */
	struct seg *segs;
	size_t nr_segs;
	char *path;		/* the file the segments came from */
	struct fsym *fsyms;	/* by start */
	size_t nr_fsyms;
};

/* a remembered answer: lines[first .. first + n) */
struct answer {
	uint64_t off;		/* dso address looked up (a return address minus one) */
	uint32_t dso;		/* tally_dso__index + 1; 0: empty slot */
	uint32_t first;
	uint32_t n;
	bool no_row;		/* a unit covers off, without a row for it */
};

struct tally_dso_lines {
	struct tally_session *s;
	struct dso_state *dsos;		/* by tally_dso__index */
	size_t nr_dsos;
	struct answer *answers;		/* open addressing on (dso, off) */
	size_t nr_answers, cap_answers;	/* cap: a power of two */
	struct tally_line *lines;
	size_t nr_lines, cap_lines;
	struct tly_strpool names;
	/* perf's names of functions (find_a2l): a C++ name demangled as perf does, keyed
	 * by the mangled name's address (open addressing, a power of two) */
	struct perf_name { const char *from, *name; } *pnames;
	size_t nr_pnames, cap_pnames;
};

int tally_dso_lines__new(struct tally_dso_lines **out, struct tally_session *s)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->s = s;
	return 0;
}

void tally_dso_lines__delete(struct tally_dso_lines *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nr_dsos; i++) {
		tally_lines__delete(l->dsos[i].lines);
		free(l->dsos[i].segs);
		free(l->dsos[i].path);
		free(l->dsos[i].fsyms);
	}
	free(l->dsos);
	free(l->answers);
	free(l->lines);
	free(l->pnames);
	tly_strpool__exit(&l->names);
	free(l);
}

/* The PT_LOAD segments of the ELF file at path. */
static int read_segs(struct dso_state *d, const char *path)
{
	int fd = tly_open_regular(path), err = -ENOENT;
	size_t n = 0;
	Elf *e;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0 && n) {
		d->segs = calloc(n, sizeof(*d->segs));
		err = d->segs ? 0 : -ENOMEM;
		for (size_t i = 0; d->segs && i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
				d->segs[d->nr_segs++] = (struct seg){ ph.p_offset, ph.p_vaddr,
								      ph.p_filesz };
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

static void open_dso(struct tally_dso_lines *l, struct dso_state *d, struct tally_dso *dso)
{
	char path[4096], debug[4096];
	const char *name = tally_dso__name(dso);

	d->tried = true;
	/* the kernel (no vmlinux here), JIT code and anonymous memory have no files */
	if (tally_dso__is_kernel(dso) || tally_dso__is_jit(dso) || name[0] == '[' ||
	    !strncmp(name, "//", 2))
		return;
	if (tally_session__dso_files(l->s, dso, path, sizeof(path), debug, sizeof(debug)))
		return;
	if (read_segs(d, path))
		return;
	d->path = strdup(path);
	if (tally_lines__open(&d->lines, path, debug[0] ? debug : NULL))
		d->lines = NULL;	/* the segments stay: the symbol table may answer */
}

static struct dso_state *state(struct tally_dso_lines *l, struct tally_dso *dso)
{
	size_t i = tally_dso__index(dso);

	if (i >= l->nr_dsos) {
		size_t n = i + 64;
		struct dso_state *v = realloc(l->dsos, n * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + l->nr_dsos, 0, (n - l->nr_dsos) * sizeof(*v));
		l->dsos = v;
		l->nr_dsos = n;
	}
	if (!l->dsos[i].tried)
		open_dso(l, &l->dsos[i], dso);
	return &l->dsos[i];
}

static size_t answer_slot(const struct tally_dso_lines *l, uint32_t dso, uint64_t off)
{
	uint64_t h = (off ^ ((uint64_t)dso << 40)) * 0x9e3779b97f4a7c15ull;
	size_t mask = l->cap_answers - 1, i;

	for (i = (size_t)(h >> 20) & mask; l->answers[i].dso; i = (i + 1) & mask)
		if (l->answers[i].dso == dso && l->answers[i].off == off)
			break;
	return i;
}

static int grow_answers(struct tally_dso_lines *l)
{
	struct answer *old = l->answers;
	size_t n = l->cap_answers;

	l->cap_answers = n ? n * 2 : 4096;
	l->answers = calloc(l->cap_answers, sizeof(*l->answers));
	if (!l->answers) {
		l->answers = old;
		l->cap_answers = n;
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (old[i].dso)
			l->answers[answer_slot(l, old[i].dso, old[i].off)] = old[i];
	free(old);
	return 0;
}

/* The DWARF's answer for off in d, kept at *a. */
static int look_up(struct tally_dso_lines *l, struct dso_state *d, uint64_t off,
		   struct answer *a)
{
	struct tally_line ln[64];
	int n = 0;

	for (size_t i = 0; i < d->nr_segs; i++) {
		const struct seg *s = &d->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			n = tally_lines__find_inline(d->lines, off - s->offset + s->vaddr, ln,
						     TLY_ARRAY_SIZE(ln));
			break;
		}
	}
	a->first = (uint32_t)l->nr_lines;
	a->n = 0;
	a->no_row = n == -ENODATA;
	for (int i = 0; i < n; i++) {
		if (l->nr_lines == l->cap_lines) {
			size_t cap = l->cap_lines ? l->cap_lines * 2 : 1024;
			struct tally_line *v = realloc(l->lines, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			l->lines = v;
			l->cap_lines = cap;
		}
		/* file names live as long as d->lines; function names only until the next
		 * lookup there: they go into the pool */
		if (ln[i].function) {
			int64_t id = tly_strpool__intern(&l->names, ln[i].function);

			if (id < 0)
				return -ENOMEM;
			ln[i].function = tly_strpool__str(&l->names, (uint32_t)id);
		}
		l->lines[l->nr_lines++] = ln[i];
		a->n++;
	}
	return 0;
}

/* The kept answer for loc (looked up on first use) in *out; NULL when loc's dso has no
 * lines. 0 or -ENOMEM. The answer is valid until the next lookup. */
static int answer_of(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
		     bool return_addr, const struct answer **out)
{
	struct dso_state *d;
	struct answer *a;
	uint64_t off;
	uint32_t key;

	*out = NULL;
	if (!loc->dso || !loc->map)
		return 0;
	d = state(l, loc->dso);
	if (!d)
		return -ENOMEM;
	if (!d->lines)
		return 0;
	/* a caller's frame holds the return address: the call is the byte before it */
	off = loc->dso_addr - (return_addr && loc->dso_addr ? 1 : 0);
	key = tally_dso__index(loc->dso) + 1;
	if ((l->nr_answers + 1) * 2 > l->cap_answers && grow_answers(l))
		return -ENOMEM;
	a = &l->answers[answer_slot(l, key, off)];
	if (!a->dso) {
		if (look_up(l, d, off, a))
			return -ENOMEM;
		a->dso = key;
		a->off = off;
		l->nr_answers++;
	}
	*out = a;
	return 0;
}

int tally_dso_lines__find(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
			  bool return_addr, struct tally_line *out, size_t max)
{
	const struct answer *a;
	size_t n;

	if (!max)
		return 0;
	if (answer_of(l, loc, return_addr, &a))
		return -ENOMEM;
	n = a ? (a->n < max ? a->n : max) : 0;
	if (n)	/* no line yet: l->lines may still be NULL */
		memcpy(out, l->lines + a->first, n * sizeof(*out));
	return (int)n;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The functions of d's ELF symbol table, with the file each local one came from. */
static int load_symtab(struct tally_dso_lines *l, struct dso_state *d)
{
	int fd, err = 0;
	Elf_Scn *scn = NULL;
	Elf *e;

	d->symtab_tried = true;
	if (!d->path)
		return 0;
	fd = tly_open_regular(d->path);
	if (fd < 0)
		return 0;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && !err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *file = NULL;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = data ? sh.sh_size / sh.sh_entsize : 0;
		free(d->fsyms);
		d->fsyms = calloc(n ? n : 1, sizeof(*d->fsyms));
		d->nr_fsyms = 0;
		if (!d->fsyms) {
			err = -ENOMEM;
			break;
		}
		for (size_t i = 0; i < n && !err; i++) {
			GElf_Sym sym;
			const char *name;
			int64_t id;

			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (GELF_ST_TYPE(sym.st_info) == STT_FILE) {
				file = NULL;
				if (name && *name) {
					id = tly_strpool__intern(&l->names, name);
					if (id < 0)
						err = -ENOMEM;
					else
						file = tly_strpool__str(&l->names, (uint32_t)id);
				}
				continue;
			}
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
			    !name)
				continue;
			id = tly_strpool__intern(&l->names, name);
			if (id < 0) {
				err = -ENOMEM;
				break;
			}
			d->fsyms[d->nr_fsyms++] = (struct fsym){
				.start = sym.st_value, .size = sym.st_size,
				.file = GELF_ST_BIND(sym.st_info) == STB_LOCAL ? file : NULL,
				.name = tly_strpool__str(&l->names, (uint32_t)id),
			};
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	if (!err && d->nr_fsyms)
		qsort(d->fsyms, d->nr_fsyms, sizeof(*d->fsyms), fsym_cmp);
	return err;
}

int tally_dso_lines__find_symtab(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
				 struct tally_line *out)
{
	struct dso_state *d;
	uint64_t vaddr = 0;
	size_t lo = 0, hi;
	bool mapped = false;

	if (!loc->dso || !loc->map)
		return 0;
	d = state(l, loc->dso);
	if (!d)
		return -ENOMEM;
	if (!d->symtab_tried && load_symtab(l, d))
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_segs && !mapped; i++) {
		const struct seg *s = &d->segs[i];

		if (loc->dso_addr >= s->offset && loc->dso_addr - s->offset < s->filesz) {
			vaddr = loc->dso_addr - s->offset + s->vaddr;
			mapped = true;
		}
	}
	if (!mapped || !d->nr_fsyms)
		return 0;
	/* the last function starting at or before vaddr, and containing it */
	hi = d->nr_fsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->fsyms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	for (size_t i = lo; i-- > 0 && d->fsyms[i].start == d->fsyms[lo - 1].start;) {
		const struct fsym *f = &d->fsyms[i];

		if (vaddr - f->start < f->size || (!f->size && vaddr == f->start)) {
			*out = (struct tally_line){ .file = f->file, .function = f->name };
			return 1;
		}
	}
	return 0;
}

int tally_dso_lines__text(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
			  bool full_path, char *buf, size_t len, size_t *file_len)
{
	struct tally_line ln;
	const struct answer *a;
	const char *file;
	int n;

	*file_len = 0;
	if (answer_of(l, loc, false, &a))
		return -ENOMEM;
	n = a && a->n ? 1 : 0;
	if (n) {
		ln = l->lines[a->first];
	} else if (a && a->no_row) {
		n = snprintf(buf, len, ":0");
		return n > 0 && (size_t)n < len ? n : 0;
	}
	if (n == 0 || !ln.file || !ln.line) {
		n = tally_dso_lines__find_symtab(l, loc, &ln);
		if (n <= 0)
			return n;
	}
	file = ln.file ? ln.file : "??";
	if (!full_path && strrchr(file, '/'))
		file = strrchr(file, '/') + 1;
	n = snprintf(buf, len, "%s:%u", file, ln.line);
	if (n < 0 || (size_t)n >= len)
		return 0;
	*file_len = ln.file ? strlen(file) : 0;
	return n;
}

static size_t pname_slot(const struct perf_name *v, size_t cap, const char *from)
{
	size_t i = (size_t)(((uintptr_t)from * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);

	while (v[i].from && v[i].from != from)
		i = (i + 1) & (cap - 1);
	return i;
}

/* perf's name for the function addr2line names from (a mangled C++ name: demangled
 * without parameters or clone suffixes, as symbol names are); NULL on ENOMEM. */
static const char *perf_name(struct tally_dso_lines *l, const char *from)
{
	struct perf_name *p;
	char *d;
	int64_t id;

	if (from[0] != '_' || from[1] != 'Z')
		return from;
	if ((l->nr_pnames + 1) * 2 > l->cap_pnames) {
		size_t cap = l->cap_pnames ? l->cap_pnames * 2 : 256;
		struct perf_name *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t i = 0; i < l->cap_pnames; i++)
			if (l->pnames[i].from)
				v[pname_slot(v, cap, l->pnames[i].from)] = l->pnames[i];
		free(l->pnames);
		l->pnames = v;
		l->cap_pnames = cap;
	}
	p = &l->pnames[pname_slot(l->pnames, l->cap_pnames, from)];
	if (p->from)
		return p->name;
	d = tly_demangle(from);
	id = tly_strpool__intern(&l->names, d ? d : from);
	free(d);
	if (id < 0)
		return NULL;
	p->from = from;
	p->name = tly_strpool__str(&l->names, (uint32_t)id);
	l->nr_pnames++;
	return p->name;
}

/* The entries' functions as perf names them. */
static int perf_names(struct tally_dso_lines *l, struct tally_line *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *from = v[i].mangled ? v[i].mangled : v[i].function;

		if (!from)
			continue;
		v[i].function = perf_name(l, from);
		if (!v[i].function)
			return -ENOMEM;
		v[i].function_is_full = false;
	}
	return (int)n;
}

int tally_dso_lines__find_a2l(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
			      bool return_addr, struct tally_line *out, size_t max)
{
	struct tally_addr_loc at = *loc;
	const struct answer *a;
	struct tally_line sym;
	size_t n;
	int ret;

	if (!max)
		return 0;
	if (answer_of(l, loc, return_addr, &a))
		return -ENOMEM;
	if (!a)
		return 0;	/* no line tables: perf does not ask addr2line */
	n = a->n < max ? a->n : max;
	if (n) {
		memcpy(out, l->lines + a->first, n * sizeof(*out));
		if (out[0].function)
			return perf_names(l, out, n);
	}
	/* the function binutils names from the symbol table */
	if (return_addr && at.dso_addr)
		at.dso_addr--;
	ret = tally_dso_lines__find_symtab(l, &at, &sym);
	if (ret < 0)
		return ret;
	if (n) {
		out[0].function = ret > 0 ? sym.function : NULL;
		return perf_names(l, out, n);
	}
	if (!ret)
		return 0;	/* "??" at "??:0": perf takes it for no answer */
	/* the file of a unit without a row is "" (":0"), else a local symbol's STT_FILE
	 * or "??" */
	out[0] = (struct tally_line){ .file = a->no_row ? "" : sym.file ? sym.file : "??",
				      .function = sym.function };
	return perf_names(l, out, 1);
}
