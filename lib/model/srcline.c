/*
 * Source lines through libdw (see tally/srcline.h).
 *
 * A listing asks about every instruction of a function in address order, so the last
 * compilation unit's line table and the last function's inline tree are kept: one
 * dwarf_getscopes per function, not per instruction (it walks the unit's DIE tree).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include <tally/srcline.h>
#include "internal/symbols.h"

/* A function or inlined instance with its address ranges, innermost last. */
struct scope {
	uint64_t lo, hi;
	unsigned depth;
	char *name;
	bool full;
};

struct tally_lines {
	int fd;
	Dwarf *dw;
	/* the unit of the last lookup */
	Dwarf_Die cu;
	bool have_cu;
	uint64_t cu_lo, cu_hi;		/* an address range known to be in it */
	Dwarf_Lines *lines;
	size_t nlines;
	/* the function of the last lookup: its ranges and inlined instances */
	struct scope *scopes;
	size_t nr_scopes, cap_scopes;
	char **paths;			/* file names joined to their compilation dir */
	size_t nr_paths;
	/* the DWARF file's ELF symbols that start functions, by address then table order */
	struct elf_func {
		uint64_t addr, size;
		uint32_t idx;
		bool typed, func;
		uint8_t bind;		/* 0 local, 1 weak, 2 global */
		const char *name;	/* in the ELF's string table (lives with dw) */
	} *funcs;
	size_t nr_funcs;
	bool funcs_loaded;
};

static int open_dwarf(struct tally_lines *l, const char *path)
{
	struct stat st;

	l->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (l->fd < 0)
		return -errno;
	if (fstat(l->fd, &st) || !S_ISREG(st.st_mode)) {
		close(l->fd);
		l->fd = -1;
		return -ENOENT;
	}
	l->dw = dwarf_begin(l->fd, DWARF_C_READ);
	if (l->dw) {
		/* a debuginfo file may carry only symbols: line tables are what we need */
		Dwarf_Off off = 0, next;
		size_t hsize;
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		while (dwarf_nextcu(l->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			if (dwarf_offdie(l->dw, off + hsize, &cu) &&
			    dwarf_getsrclines(&cu, &lines, &n) == 0 && n)
				return 0;
			off = next;
		}
		dwarf_end(l->dw);
		l->dw = NULL;
	}
	close(l->fd);
	l->fd = -1;
	return -ENODATA;
}

int tally_lines__open(struct tally_lines **out, const char *path, const char *debug_path)
{
	struct tally_lines *l = calloc(1, sizeof(*l));
	int err = -ENODATA;

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->fd = -1;
	if (debug_path && debug_path[0])
		err = open_dwarf(l, debug_path);
	if (err && path)
		err = open_dwarf(l, path);
	if (err) {
		free(l);
		return err;
	}
	*out = l;
	return 0;
}

static void clear_scopes(struct tally_lines *l)
{
	for (size_t i = 0; i < l->nr_scopes; i++)
		free(l->scopes[i].name);
	l->nr_scopes = 0;
}

void tally_lines__delete(struct tally_lines *l)
{
	if (!l)
		return;
	clear_scopes(l);
	free(l->scopes);
	for (size_t i = 0; i < l->nr_paths; i++)
		free(l->paths[i]);
	free(l->paths);
	free(l->funcs);
	if (l->dw)
		dwarf_end(l->dw);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

/* The unit holding addr, with its line table. */
static int find_cu(struct tally_lines *l, uint64_t addr)
{
	Dwarf_Die cu;

	if (l->have_cu && addr >= l->cu_lo && addr < l->cu_hi)
		return 0;
	if (!dwarf_addrdie(l->dw, addr, &cu))
		return -ENOENT;
	if (dwarf_getsrclines(&cu, &l->lines, &l->nlines) || !l->nlines)
		return -ENOENT;
	l->cu = cu;
	l->have_cu = true;
	/* the unit's range around addr, so the next lookups skip dwarf_addrdie */
	l->cu_lo = l->cu_hi = addr;
	{
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(&cu, off, &base, &lo, &hi)) > 0) {
			if (addr >= lo && addr < hi) {
				l->cu_lo = lo;
				l->cu_hi = hi;
				break;
			}
		}
	}
	if (l->cu_hi == l->cu_lo)
		l->cu_hi = l->cu_lo + 1;
	return 0;
}

/* The last row at the greatest address <= addr; NULL in a gap between sequences.
 * libdw sorts rows by address, keeping the table's order among equal addresses and
 * putting an end of sequence before the rows that start there. */
static Dwarf_Line *find_row(struct tally_lines *l, uint64_t addr)
{
	size_t lo = 0, hi = l->nlines;
	Dwarf_Line *row;
	Dwarf_Addr a;
	bool end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		row = dwarf_onesrcline(l->lines, mid);
		if (row && dwarf_lineaddr(row, &a) == 0 && a <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	row = dwarf_onesrcline(l->lines, lo - 1);
	if (!row || dwarf_lineendsequence(row, &end) || end)
		return NULL;
	return row;
}

/* libdw names a file relative to the unit's compilation directory; binutils joins the
 * two (so a DWARF 5 table whose directory 0 repeats a relative compilation directory
 * gives "./malloc/./malloc/malloc.c", and objdump shows that). Kept in l->paths. */
static const char *full_path(struct tally_lines *l, const char *name)
{
	Dwarf_Attribute attr;
	const char *dir;
	size_t dn, nn;
	char *p;

	if (!name || name[0] == '/' || !dwarf_attr(&l->cu, DW_AT_comp_dir, &attr) ||
	    !(dir = dwarf_formstring(&attr)) || !dir[0])
		return name;
	dn = strlen(dir);
	nn = strlen(name);
	for (size_t i = 0; i < l->nr_paths; i++)
		if (!strncmp(l->paths[i], dir, dn) && l->paths[i][dn] == '/' &&
		    !strcmp(l->paths[i] + dn + 1, name))
			return l->paths[i];
	if (l->nr_paths % 64 == 0) {
		char **v = realloc(l->paths, (l->nr_paths + 64) * sizeof(*v));

		if (!v)
			return name;
		l->paths = v;
	}
	p = malloc(dn + nn + 2);
	if (!p)
		return name;
	memcpy(p, dir, dn);
	p[dn] = '/';
	memcpy(p + dn + 1, name, nn + 1);
	l->paths[l->nr_paths++] = p;
	return p;
}

static int func_cmp(const void *x, const void *y)
{
	const struct elf_func *a = x, *b = y;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The symbol table of the file the DWARF came from (a debuginfo file has the full one). */
static void load_funcs(struct tally_lines *l)
{
	Elf *e = dwarf_getelf(l->dw);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	l->funcs_loaded = true;
	while (e && (scn = elf_nextscn(e, scn))) {
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = data ? sh.sh_size / sh.sh_entsize : 0;
		l->funcs = calloc(n ? n : 1, sizeof(*l->funcs));
		if (!l->funcs)
			return;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			int type;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) ||
			    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || !sym.st_size)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			l->funcs[l->nr_funcs++] = (struct elf_func){
				.addr = sym.st_value, .size = sym.st_size, .idx = (uint32_t)i,
				.typed = type != STT_NOTYPE, .func = type != STT_NOTYPE, .name = name,
				.bind = GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 2 :
					GELF_ST_BIND(sym.st_info) == STB_WEAK ? 1 : 0,
			};
		}
		qsort(l->funcs, l->nr_funcs, sizeof(*l->funcs), func_cmp);
		return;
	}
}

/* The start of a DIE's first address range. */
static int first_low(Dwarf_Die *die, Dwarf_Addr *low)
{
	Dwarf_Addr base, hi;

	if (dwarf_lowpc(die, low) == 0)
		return 0;
	return dwarf_ranges(die, 0, &base, low, &hi) > 0 ? 0 : -1;
}

/* The first of the ELF symbols at addr (NULL: none) and how many there are. */
static const struct elf_func *funcs_at(struct tally_lines *l, uint64_t addr, size_t *nr)
{
	size_t lo = 0, hi, n = 0;

	if (!l->funcs_loaded)
		load_funcs(l);
	hi = l->nr_funcs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->funcs[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + n < l->nr_funcs && l->funcs[lo + n].addr == addr)
		n++;
	*nr = n;
	return n ? &l->funcs[lo] : NULL;
}

/* binutils names a function without a linkage name after the ELF symbol that starts
 * where it starts: of several, a function over a label, then the smallest, then (as
 * seen on glibc's aliases) the first by name. */
static const char *elf_name_at(struct tally_lines *l, uint64_t addr)
{
	size_t n;
	const struct elf_func *f = funcs_at(l, addr, &n), *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!best || (f[i].func != best->func ? f[i].func :
			      f[i].size != best->size ? f[i].size < best->size :
			      strcmp(f[i].name, best->name) < 0))
			best = &f[i];
	}
	return best ? best->name : NULL;
}

const char *tally_lines__symbol_name(struct tally_lines *l, uint64_t addr)
{
	size_t n;
	const struct elf_func *f = funcs_at(l, addr, &n), *best = NULL;

	/* objdump's order of symbols at one address: functions, then global before weak
	 * before local, larger before smaller, then by name */
	for (size_t i = 0; i < n; i++) {
		if (!best || (f[i].func != best->func ? f[i].func :
			      f[i].bind != best->bind ? f[i].bind > best->bind :
			      f[i].size != best->size ? f[i].size > best->size :
			      strcmp(f[i].name, best->name) < 0))
			best = &f[i];
	}
	return best ? best->name : NULL;
}

/* objdump's name for a function DIE: the demangled linkage name when it has one (with
 * its parameters), else its name (which gets "()"). Inlined instances name their
 * abstract origin. */
static char *scope_name(struct tally_lines *l, Dwarf_Die *die, bool *full)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	Dwarf_Addr low;

	*full = false;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) {
		name = dwarf_formstring(&attr);
		if (name) {
			char *d = tly_demangle_full(name);

			if (d) {
				*full = true;
				return d;
			}
		}
	}
	/* (not for an out-of-line copy of an inlined function, a clone: binutils keeps
	 * the abstract function's name, "update_active" for update_active.constprop.0) */
	if (dwarf_tag(die) == DW_TAG_subprogram && !dwarf_hasattr(die, DW_AT_abstract_origin) &&
	    first_low(die, &low) == 0 && (name = elf_name_at(l, low)))
		return strdup(name);
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name ? strdup(name) : NULL;
}

static int add_scope(struct tally_lines *l, Dwarf_Die *die, unsigned depth)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	bool full;
	char *name = scope_name(l, die, &full);

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (l->nr_scopes == l->cap_scopes) {
			size_t cap = l->cap_scopes ? l->cap_scopes * 2 : 16;
			struct scope *v = realloc(l->scopes, cap * sizeof(*v));

			if (!v) {
				free(name);
				return -ENOMEM;
			}
			l->scopes = v;
			l->cap_scopes = cap;
		}
		l->scopes[l->nr_scopes++] = (struct scope){
			.lo = lo, .hi = hi, .depth = depth, .name = name ? strdup(name) : NULL,
			.full = full,
		};
	}
	free(name);
	return 0;
}

/* Inlined instances anywhere below die (lexical blocks included). */
static int add_inlines(struct tally_lines *l, Dwarf_Die *die, unsigned depth)
{
	Dwarf_Die child;

	if (dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child), err = 0;

		if (tag == DW_TAG_inlined_subroutine) {
			err = add_scope(l, &child, depth + 1);
			if (!err)
				err = add_inlines(l, &child, depth + 1);
		} else if (tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
			   tag == DW_TAG_catch_block) {
			err = add_inlines(l, &child, depth);
		}
		if (err)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* Load the subprogram around addr (if it is not the one loaded). */
static void load_function(struct tally_lines *l, uint64_t addr)
{
	Dwarf_Die *scopes = NULL;
	int n;

	for (size_t i = 0; i < l->nr_scopes; i++)
		if (l->scopes[i].depth == 0 && addr >= l->scopes[i].lo && addr < l->scopes[i].hi)
			return;
	clear_scopes(l);
	/* the outermost function around addr: its subprogram, or an inlined instance
	 * when the subprogram's ranges leave addr out (code gcc moved ahead of it) */
	n = dwarf_getscopes(&l->cu, addr, &scopes);
	for (int i = n - 1; i >= 0; i--) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			if (add_scope(l, &scopes[i], 0) || add_inlines(l, &scopes[i], 0))
				clear_scopes(l);
			break;
		}
	}
	free(scopes);
}

int tally_lines__find(struct tally_lines *l, uint64_t addr, struct tally_line *out)
{
	Dwarf_Line *row;
	int line = 0;
	unsigned disc = 0;
	const struct scope *best = NULL;

	memset(out, 0, sizeof(*out));
	if (find_cu(l, addr))
		return -ENOENT;
	row = find_row(l, addr);
	if (!row)
		return -ENOENT;
	out->file = full_path(l, dwarf_linesrc(row, NULL, NULL));
	dwarf_lineno(row, &line);
	dwarf_linediscriminator(row, &disc);
	out->line = line > 0 ? (unsigned)line : 0;
	out->discriminator = disc;
	load_function(l, addr);
	for (size_t i = 0; i < l->nr_scopes; i++) {
		const struct scope *s = &l->scopes[i];

		if (addr >= s->lo && addr < s->hi && (!best || s->depth >= best->depth))
			best = s;
	}
	if (best) {
		out->function = best->name;
		out->function_is_full = best->full;
	}
	return 0;
}

/* ---- source files ----------------------------------------------------------------- */

struct source_file {
	char *path;
	char *text;		/* NULL: unreadable */
	size_t len;
	size_t *starts;		/* offset of each line */
	unsigned nr;
	struct source_file *next;
};

struct tally_sources {
	struct source_file *files;
};

int tally_sources__new(struct tally_sources **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void tally_sources__delete(struct tally_sources *s)
{
	if (!s)
		return;
	for (struct source_file *f = s->files, *n; f; f = n) {
		n = f->next;
		free(f->path);
		free(f->text);
		free(f->starts);
		free(f);
	}
	free(s);
}

static void read_source(struct source_file *f)
{
	struct stat st;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	size_t cap = 0;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 28)) {
		close(fd);
		return;
	}
	f->text = malloc((size_t)st.st_size + 1);
	if (f->text) {
		while (f->len < (size_t)st.st_size) {
			ssize_t n = read(fd, f->text + f->len, (size_t)st.st_size - f->len);

			if (n <= 0)
				break;
			f->len += (size_t)n;
		}
		f->text[f->len] = 0;
	}
	close(fd);
	if (!f->text)
		return;
	for (size_t i = 0; i < f->len;) {
		char *nl = memchr(f->text + i, '\n', f->len - i);

		if (f->nr == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			size_t *v = realloc(f->starts, ncap * sizeof(*v));

			if (!v) {
				free(f->text);
				f->text = NULL;
				f->nr = 0;
				return;
			}
			f->starts = v;
			cap = ncap;
		}
		f->starts[f->nr++] = i;
		i = nl ? (size_t)(nl - f->text) + 1 : f->len;
	}
}

static struct source_file *source(struct tally_sources *s, const char *path)
{
	struct source_file *f;

	for (f = s->files; f; f = f->next)
		if (!strcmp(f->path, path))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	read_source(f);
	f->next = s->files;
	s->files = f;
	return f;
}

unsigned tally_sources__nr_lines(struct tally_sources *s, const char *path)
{
	struct source_file *f = source(s, path);

	return f && f->text ? f->nr : 0;
}

int tally_sources__line(struct tally_sources *s, const char *path, unsigned n, const char **text,
			size_t *len)
{
	struct source_file *f = source(s, path);
	size_t end;

	if (!f || !f->text)
		return -ENOENT;
	if (n == 0 || n > f->nr)
		return -ERANGE;
	end = n < f->nr ? f->starts[n] : f->len;
	*text = f->text + f->starts[n - 1];
	*len = end - f->starts[n - 1];
	if (*len && (*text)[*len - 1] == '\n')
		(*len)--;
	return 0;
}
