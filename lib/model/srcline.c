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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include <tally/srcline.h>
#include "internal/dwinfo.h"
#include "internal/lineprog.h"
#include "internal/symbols.h"
#include "internal/util.h"

/* A function or inlined instance with its address ranges, innermost last. */
struct scope {
	uint64_t lo, hi;
	unsigned depth;
	bool named;		/* name, full and mangled are set (see scope_named: a function's
				 * inlined instances are many, the ones an address asks about few) */
	char *name;
	bool full;
	const char *mangled;	/* full: the linkage name name is the demangled text of */
	bool linkage;		/* bfd's is_linkage: the name is final (see bfd_name) */
	uint64_t first_lo;	/* bfd's first arange's start */
	uint64_t off;		/* its DIE */
	const char *call_file;	/* an inlined instance: where it is called (NULL: unknown) */
	unsigned call_line;
};

/* What binutils decided for a function without a linkage name during one run of
 * objdump (one listing): the name it printed the first time, and the one it keeps. */
struct named {
	uint64_t off;
	char *first, *keep;	/* keep NULL: the DWARF name */
	bool first_full, keep_full;	/* demangled C++ names with their parameters */
	const char *raw;	/* the ELF symbol's name, as the symbol table has it */
};

struct tally_lines {
	int fd;
	Elf *elf;		/* dw's (dwarf_end leaves it open) */
	struct tly_dwinfo *info;	/* its .debug_info unit by unit (NULL: libdw's whole) */
	Dwarf *dw;
	/* the unit of the last lookup */
	Dwarf_Die cu;
	bool have_cu;
	uint64_t cu_lo, cu_hi;		/* an address range known to be in it */
	Dwarf_Lines *lines;
	size_t nlines;
	/* per row of lines: binutils names it after file entry 0 (see row_file); NULL
	 * when no row of the unit is one */
	bool *file0;
	/* file0 of every unit looked into (the frames of a call chain go from unit to
	 * unit, and finding file0 walks the unit's line program) */
	struct unit_rows {
		Dwarf_Off unit;
		bool *file0;
	} *unit_rows;
	size_t nr_unit_rows;
	/* the function of the last lookup: its ranges and inlined instances */
	struct scope *scopes;
	size_t nr_scopes, cap_scopes;
	/* the scopes of functions looked up before it (not in a listing): a call chain's
	 * frames go from function to function, and a function's tree is a walk of all
	 * its DIEs */
	struct scope_set {
		struct scope *v;
		size_t nr, cap;
	} kept[16];
	size_t nr_kept, next_out;
	/* every concrete function of the units looked into, by address: finding the
	 * function around an address is a binary search, not a walk of its unit */
	struct func_range {
		uint64_t lo, hi;
		Dwarf_Off die;
	} *fr;
	size_t nr_fr, cap_fr;
	bool fr_sorted;
	Dwarf_Off *units;		/* the units indexed so far */
	size_t nr_units, cap_units;
	char **paths;			/* file names joined to their compilation dir */
	size_t nr_paths;
	/* the DWARF file's ELF symbols that start functions, by address then table order */
	struct elf_func {
		uint64_t addr, size;
		uint32_t idx;
		bool typed;		/* not STT_NOTYPE */
		bool func;		/* STT_FUNC: bfd's BSF_FUNCTION (not an IFUNC) */
		uint8_t bind;		/* 0 local, 1 weak, 2 global */
		const char *name;	/* in the ELF's string table (lives with dw) */
	} *funcs;
	size_t nr_funcs;
	bool funcs_loaded;
	/* the file's allocated sections: a symbol names only code of its own section */
	struct { uint64_t lo, hi; } *secs;
	size_t nr_secs;
	struct named *named;		/* this listing's (tally_lines__begin_listing) */
	size_t nr_named;
	bool listing;			/* names as one run of objdump gives them */
};

/* Sections libdw would decompress at dwarf_begin that no line, inline or function
 * lookup reads: location lists and macros (in glibc's debuginfo, a seventh of it). */
static bool unused_section(const char *name)
{
	static const char *const unused[] = {
		".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo",
	};

	for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++)
		if (!strcmp(name, unused[i]))
			return true;
	return false;
}

/* Decompress the compressed debug sections one at a time, before libdw would all of
 * them at once, and give back each one's compressed bytes (the file mapping's pages)
 * as soon as it is done: the peak holds one section's compressed bytes, not the
 * file's. The sections no lookup reads become SHT_NOBITS, which libdw skips.
 * .debug_info only when INFO (tly_dwinfo reads it unit by unit otherwise; the
 * sections it has taken are no longer compressed for libelf). */
static void decompress_sections(Elf *e, bool info)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, size;
	char *base = elf_rawfile(e, &size);
	long page = sysconf(_SC_PAGESIZE);

	if (!base || page <= 0 || elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		uintptr_t lo, hi;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_COMPRESSED) ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)) || strncmp(name, ".debug_", 7) ||
		    (!info && !strcmp(name, ".debug_info")))
			continue;
		if (unused_section(name)) {
			sh.sh_type = SHT_NOBITS;
			gelf_update_shdr(scn, &sh);
			continue;
		}
		if (elf_compress(scn, 0, 0) < 0 || sh.sh_offset > size ||
		    sh.sh_size > size - sh.sh_offset)
			continue;
		/* the whole pages of the compressed bytes (libelf reads them no more) */
		lo = ((uintptr_t)base + sh.sh_offset + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
		hi = ((uintptr_t)base + sh.sh_offset + sh.sh_size) & ~((uintptr_t)page - 1);
		if (hi > lo)
			madvise((void *)lo, hi - lo, MADV_DONTNEED);
	}
}

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
	elf_version(EV_CURRENT);
	l->elf = elf_begin(l->fd, ELF_C_READ_MMAP, NULL);
	if (l->elf && elf_kind(l->elf) == ELF_K_ELF) {
		/* tly_dwinfo first: the sections it takes stay compressed */
		if (tly_dwinfo__prepare(&l->info, l->elf, l->fd) == 0) {
			decompress_sections(l->elf, !l->info);
			l->dw = dwarf_begin_elf(l->elf, DWARF_C_READ, NULL);
		}
	}
	if (l->dw) {
		/* a debuginfo file may carry only symbols: line tables are what we need */
		Dwarf_Off off = 0, next;
		size_t hsize;
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;
		uint64_t die;

		for (size_t i = 0; l->info && tly_dwinfo__unit(l->info, i, &die) == 0; i++)
			if (dwarf_offdie(l->dw, die, &cu) && dwarf_getsrclines(&cu, &lines, &n) == 0 &&
			    n)
				return 0;
		while (!l->info && dwarf_nextcu(l->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			if (dwarf_offdie(l->dw, off + hsize, &cu) &&
			    dwarf_getsrclines(&cu, &lines, &n) == 0 && n)
				return 0;
			off = next;
		}
		dwarf_end(l->dw);
		l->dw = NULL;
	}
	tly_dwinfo__delete(l->info);
	l->info = NULL;
	if (l->elf)
		elf_end(l->elf);
	l->elf = NULL;
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

static void forget_names(struct tally_lines *l)
{
	for (size_t i = 0; i < l->nr_named; i++) {
		free(l->named[i].first);
		free(l->named[i].keep);
	}
	l->nr_named = 0;
}

static void free_set(struct scope_set *set)
{
	for (size_t i = 0; i < set->nr; i++)
		free(set->v[i].name);
	free(set->v);
}

void tally_lines__delete(struct tally_lines *l)
{
	if (!l)
		return;
	clear_scopes(l);
	free(l->scopes);
	for (size_t i = 0; i < l->nr_kept; i++)
		free_set(&l->kept[i]);
	for (size_t i = 0; i < l->nr_paths; i++)
		free(l->paths[i]);
	free(l->paths);
	free(l->funcs);
	free(l->secs);
	for (size_t i = 0; i < l->nr_unit_rows; i++)
		free(l->unit_rows[i].file0);
	free(l->unit_rows);
	forget_names(l);
	free(l->named);
	free(l->fr);
	free(l->units);
	if (l->dw)
		dwarf_end(l->dw);
	tly_dwinfo__delete(l->info);
	if (l->elf)
		elf_end(l->elf);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

/* The .debug_line section of the file the DWARF came from (libdw has decompressed it). */
static const Elf_Data *debug_line(struct tally_lines *l)
{
	Elf *e = dwarf_getelf(l->dw);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (!e || elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(e, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".debug_line"))
			return sh.sh_flags & SHF_COMPRESSED ? NULL : elf_getdata(scn, NULL);
	}
	return NULL;
}

/* Which rows of the unit (l->cu, l->lines) binutils 2.40 names after file entry 0: in
 * a DWARF 5 table whose entries 0 and 1 differ, the rows a sequence emits before its
 * first DW_LNS_set_file (the file register's default, 1, is read as entry 0 there).
 * NULL: none, or the program could not be walked (every row then keeps its file). */
static bool *file0_rows(struct tally_lines *l)
{
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Half version;
	Dwarf_Die cudie;
	Dwarf_Attribute attr;
	Dwarf_Word off;
	const Elf_Data *data;
	const char *f0, *f1;
	struct tly_seq_defaults d;
	const struct tly_seq_default *seq = NULL;
	bool *v, any = false;
	Dwarf_Addr prev = 0;

	if (!dwarf_cu_die(l->cu.cu, &cudie, &version, NULL, NULL, NULL, NULL, NULL) ||
	    version < 5 || dwarf_getsrcfiles(&l->cu, &files, &nfiles) || nfiles < 2 ||
	    !(f0 = dwarf_filesrc(files, 0, NULL, NULL)) ||
	    !(f1 = dwarf_filesrc(files, 1, NULL, NULL)) || !strcmp(f0, f1) ||
	    !dwarf_attr(&l->cu, DW_AT_stmt_list, &attr) || dwarf_formudata(&attr, &off) ||
	    !(data = debug_line(l)) || !data->d_buf ||
	    tly_lineprog__defaults(data->d_buf, data->d_size, off, &d))
		return NULL;
	v = calloc(l->nlines, sizeof(*v));
	for (size_t i = 0, nth = 0; v && i < l->nlines; i++) {
		Dwarf_Line *row = dwarf_onesrcline(l->lines, i);
		Dwarf_Addr a;
		bool end = false;

		if (!row || dwarf_lineaddr(row, &a) || dwarf_lineendsequence(row, &end))
			break;
		if (end)
			continue;
		/* libdw keeps the table's order among the rows of one address */
		nth = i && a == prev ? nth + 1 : 0;
		prev = a;
		if ((seq = tly_seq_defaults__find(&d, a)) && tly_seq_default__is_default(seq, a, nth))
			any = v[i] = true;
	}
	tly_seq_defaults__exit(&d);
	if (!any) {
		free(v);
		v = NULL;
	}
	return v;
}

/* file0_rows of the unit l->cu, worked out once per unit. */
static bool *unit_file0(struct tally_lines *l)
{
	Dwarf_Off unit = dwarf_dieoffset(&l->cu);
	struct unit_rows *v;

	for (size_t i = 0; i < l->nr_unit_rows; i++)
		if (l->unit_rows[i].unit == unit)
			return l->unit_rows[i].file0;
	if (l->nr_unit_rows % 64 == 0) {
		v = realloc(l->unit_rows, (l->nr_unit_rows + 64) * sizeof(*v));
		if (!v)
			return NULL;	/* no memory: every row keeps its file */
		l->unit_rows = v;
	}
	l->unit_rows[l->nr_unit_rows] = (struct unit_rows){ .unit = unit, .file0 = file0_rows(l) };
	return l->unit_rows[l->nr_unit_rows++].file0;
}

/* The unit holding addr, with its line table. */
static int find_cu(struct tally_lines *l, uint64_t addr)
{
	Dwarf_Die cu;

	if (l->have_cu && addr >= l->cu_lo && addr < l->cu_hi)
		return 0;
	if (l->info) {
		uint64_t die;

		if (tly_dwinfo__addr_unit(l->info, addr, &die) || !dwarf_offdie(l->dw, die, &cu))
			return -ENOENT;
	} else if (!dwarf_addrdie(l->dw, addr, &cu)) {
		return -ENOENT;
	}
	if (dwarf_getsrclines(&cu, &l->lines, &l->nlines) || !l->nlines)
		return -ENOENT;
	l->cu = cu;
	l->have_cu = true;
	l->file0 = unit_file0(l);
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
static Dwarf_Line *find_row(struct tally_lines *l, uint64_t addr, size_t *idx)
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
	*idx = lo - 1;
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

/* The file of row i as binutils 2.40 names it (see file0_rows). */
static const char *row_file(struct tally_lines *l, Dwarf_Line *row, size_t i)
{
	Dwarf_Files *files;
	size_t idx;

	if (l->file0 && l->file0[i] && dwarf_line_file(row, &files, &idx) == 0 && idx == 1) {
		const char *f0 = dwarf_filesrc(files, 0, NULL, NULL);

		if (f0)
			return f0;
	}
	return dwarf_linesrc(row, NULL, NULL);
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
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		if (l->nr_secs % 16 == 0) {
			void *v = realloc(l->secs, (l->nr_secs + 16) * sizeof(*l->secs));

			if (!v)
				break;
			l->secs = v;
		}
		l->secs[l->nr_secs].lo = sh.sh_addr;
		l->secs[l->nr_secs++].hi = sh.sh_addr + sh.sh_size;
	}
	scn = NULL;
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
			/* (bfd leaves out size-0 hidden local labels: annobin's markers) */
			if ((type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) ||
			    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
			    (!sym.st_size && type == STT_NOTYPE &&
			     GELF_ST_BIND(sym.st_info) == STB_LOCAL &&
			     GELF_ST_VISIBILITY(sym.st_other) == STV_HIDDEN))
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			l->funcs[l->nr_funcs++] = (struct elf_func){
				.addr = sym.st_value, .size = sym.st_size, .idx = (uint32_t)i,
				.typed = type != STT_NOTYPE, .func = type == STT_FUNC, .name = name,
				.bind = GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 2 :
					GELF_ST_BIND(sym.st_info) == STB_WEAK ? 1 : 0,
			};
		}
		qsort(l->funcs, l->nr_funcs, sizeof(*l->funcs), func_cmp);
		return;
	}
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

/* The ELF symbol binutils (bfd's _bfd_elf_find_function) takes for offset: of the
 * symbols starting nearest below or at it, in symbol-table order, a later one replaces
 * the one kept when the kept one ends before offset and the later is larger, or when
 * both reach offset and the later is a function (STT_FUNC) where the kept one is not,
 * or is typed where the kept one is a label, or is smaller. (glibc's
 * pthread_mutex_lock: ___pthread_mutex_lock, the first of its aliases.) NULL when no
 * symbol starts at or below offset. */
static const struct elf_func *elf_func_for(struct tally_lines *l, uint64_t offset)
{
	size_t lo = 0, hi, n;
	const struct elf_func *f, *best = NULL;

	if (!l->funcs_loaded)
		load_funcs(l);
	hi = l->nr_funcs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->funcs[mid].addr <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	for (size_t i = 0; i < l->nr_secs; i++) {
		if (offset >= l->secs[i].lo && offset < l->secs[i].hi &&
		    l->funcs[lo - 1].addr < l->secs[i].lo)
			return NULL;	/* the nearest symbol is another section's */
	}
	f = funcs_at(l, l->funcs[lo - 1].addr, &n);
	for (size_t i = 0; i < n; i++) {
		uint64_t size = f[i].size ? f[i].size : 1, best_size;	/* bfd: at least 1 */
		bool reaches = offset - f[i].addr < size;

		if (!best) {
			best = &f[i];
			continue;
		}
		best_size = best->size ? best->size : 1;
		if (offset - best->addr >= best_size ? size > best_size :
		    reaches && (f[i].func != best->func ? f[i].func :
				f[i].typed != best->typed ? f[i].typed : size < best_size))
			best = &f[i];
	}
	return best;
}

static const char *elf_name_for(struct tally_lines *l, uint64_t offset)
{
	const struct elf_func *f = elf_func_for(l, offset);

	return f ? f->name : NULL;
}

const char *tally_lines__symbol_name(struct tally_lines *l, uint64_t addr)
{
	size_t n;
	const struct elf_func *f = funcs_at(l, addr, &n), *best = NULL;

	/* objdump's order of symbols at one address: functions (STT_FUNC; an IFUNC is
	 * none: glibc's strcspn_ifunc before strcspn), then global before weak before
	 * local, larger before smaller, then by name */
	for (size_t i = 0; i < n; i++) {
		if (!f[i].size)
			continue;
		if (!best || (f[i].func != best->func ? f[i].func :
			      f[i].bind != best->bind ? f[i].bind > best->bind :
			      f[i].size != best->size ? f[i].size > best->size :
			      strcmp(f[i].name, best->name) < 0))
			best = &f[i];
	}
	return best ? best->name : NULL;
}

/* Whether binutils reads the unit's DW_AT_names as linkage names (bfd's mangle_style
 * is none for these languages). */
static bool plain_names(struct tally_lines *l)
{
	switch (dwarf_srclang(&l->cu)) {
	case DW_LANG_C89: case DW_LANG_C: case DW_LANG_Cobol74: case DW_LANG_Cobol85:
	case DW_LANG_Fortran77: case DW_LANG_Pascal83: case DW_LANG_PLI: case DW_LANG_C99:
	case DW_LANG_UPC: case DW_LANG_C11: case DW_LANG_Mips_Assembler:
	case 0x8765 /* DW_LANG_Upc */: case 0x8101 /* DW_LANG_HP_Basic91 */:
	case 0x8106 /* DW_LANG_HP_IMacro */: case 0x8107 /* DW_LANG_HP_Assembler */:
		return true;
	default:
		return false;
	}
}

/* objdump's name for a function DIE: the demangled linkage name when it has one (with
 * its parameters), a linkage name that is no C++ name as it is, else its DW_AT_name
 * (which gets "()"), final (*linkage) in a language without mangling; in another, bfd
 * looks at the ELF symbols the first time (bfd_name). Inlined instances name their
 * abstract origin. */
static char *scope_name(struct tally_lines *l, Dwarf_Die *die, bool *full, bool *linkage,
			const char **mangled)
{
	Dwarf_Attribute attr;
	const char *name = NULL;

	*full = false;
	*mangled = NULL;
	*linkage = true;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) {
		name = dwarf_formstring(&attr);
		if (name) {
			char *d = tly_demangle_full(name);

			if (d) {
				*full = true;
				*mangled = name;
				return d;
			}
			/* a C function renamed in assembly (glibc's __GI_ aliases): binutils
			 * takes the linkage name as it is, and looks for no symbol */
			return strdup(name);
		}
	}
	/* binutils takes the DW_AT_name of a language without mangling (C, assembler, ...)
	 * as it is (an out-of-line copy of an inlined function, a clone, keeps the abstract
	 * function's name: "update_active" for update_active.constprop.0) */
	*linkage = plain_names(l);
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name ? strdup(name) : NULL;
}

/* bfd's first arange of a DIE: its first non-empty range, grown by the later ranges
 * that adjoin it. */
static uint64_t bfd_first_low(Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi, flo = 0, fhi = 0;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (flo == fhi) {
			flo = lo;
			fhi = hi;
		} else if (lo == fhi) {
			fhi = hi;
		} else if (hi == flo) {
			flo = lo;
		}
	}
	return flo;
}

/* An inlined instance's DW_AT_call_file and DW_AT_call_line: the line that calls it. */
static void call_site(struct tally_lines *l, Dwarf_Die *die, const char **file,
		      unsigned *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word w;
	Dwarf_Files *files;
	size_t nfiles;

	*file = NULL;
	*line = 0;
	if (dwarf_tag(die) != DW_TAG_inlined_subroutine)
		return;
	if (dwarf_attr(die, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &w) == 0)
		*line = (unsigned)w;
	if (dwarf_attr(die, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &w) == 0 &&
	    dwarf_getsrcfiles(&l->cu, &files, &nfiles) == 0 && w < nfiles)
		*file = full_path(l, dwarf_filesrc(files, w, NULL, NULL));
}

/* Whether scope_name takes die's name as final: a linkage name, or a language without
 * mangling. */
static bool scope_linkage(struct tally_lines *l, Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	if ((dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	     dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) && dwarf_formstring(&attr))
		return true;
	return plain_names(l);
}

static int add_scope(struct tally_lines *l, Dwarf_Die *die, unsigned depth)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	bool linkage = scope_linkage(l, die);
	uint64_t first_lo = linkage ? 0 : bfd_first_low(die), dieoff = dwarf_dieoffset(die);
	const char *call_file;
	unsigned call_line;

	call_site(l, die, &call_file, &call_line);

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (l->nr_scopes == l->cap_scopes) {
			size_t cap = l->cap_scopes ? l->cap_scopes * 2 : 16;
			struct scope *v = realloc(l->scopes, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			l->scopes = v;
			l->cap_scopes = cap;
		}
		l->scopes[l->nr_scopes++] = (struct scope){
			.lo = lo, .hi = hi, .depth = depth, .linkage = linkage,
			.first_lo = first_lo, .off = dieoff,
			.call_file = call_file, .call_line = call_line,
		};
	}
	return 0;
}

/* s with its name (demangled the first time it is asked for). */
static const struct scope *scope_named(struct tally_lines *l, struct scope *s)
{
	Dwarf_Die die;
	bool linkage;

	if (!s->named) {
		s->named = true;
		if (dwarf_offdie(l->dw, s->off, &die))
			s->name = scope_name(l, &die, &s->full, &linkage, &s->mangled);
	}
	return s;
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

/* Index the concrete functions below die (a unit, namespace or class: C++ nests
 * functions in them) by their address ranges. */
static int index_functions(struct tally_lines *l, Dwarf_Die *die, unsigned level)
{
	Dwarf_Die child;

	if (level > 16 || dwarf_child(die, &child) != 0)
		return 0;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram: {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (l->nr_fr == l->cap_fr) {
					size_t cap = l->cap_fr ? l->cap_fr * 2 : 256;
					struct func_range *v = realloc(l->fr, cap * sizeof(*v));

					if (!v)
						return -ENOMEM;
					l->fr = v;
					l->cap_fr = cap;
				}
				l->fr[l->nr_fr++] = (struct func_range){ lo, hi, dwarf_dieoffset(&child) };
				l->fr_sorted = false;
			}
			break;
		}
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			if (index_functions(l, &child, level + 1))
				return -ENOMEM;
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int range_cmp(const void *x, const void *y)
{
	const struct func_range *a = x, *b = y;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The concrete subprogram of the current unit whose ranges hold addr. */
static bool find_subprogram(struct tally_lines *l, uint64_t addr, Dwarf_Die *out)
{
	Dwarf_Off unit = dwarf_dieoffset(&l->cu);
	size_t i, lo = 0, hi;
	bool indexed = false;

	for (i = 0; i < l->nr_units && !indexed; i++)
		indexed = l->units[i] == unit;
	if (!indexed) {
		if (l->nr_units == l->cap_units) {
			size_t cap = l->cap_units ? l->cap_units * 2 : 64;
			Dwarf_Off *v = realloc(l->units, cap * sizeof(*v));

			if (!v)
				return false;
			l->units = v;
			l->cap_units = cap;
		}
		l->units[l->nr_units++] = unit;
		if (index_functions(l, &l->cu, 0))
			return false;
	}
	if (!l->fr_sorted) {
		qsort(l->fr, l->nr_fr, sizeof(*l->fr), range_cmp);
		l->fr_sorted = true;
	}
	/* the last range starting at or before addr, and those before it that still
	 * reach it (a function's ranges may enclose a nested one's) */
	hi = l->nr_fr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->fr[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i-- > 0 && lo - i <= 8;)
		if (addr < l->fr[i].hi)
			return dwarf_offdie(l->dw, l->fr[i].die, out) != NULL;
	return false;
}

/* Load the subprogram around addr (if it is not the one loaded). */
static bool set_holds(const struct scope *v, size_t nr, uint64_t addr)
{
	for (size_t i = 0; i < nr; i++)
		if (v[i].depth == 0 && addr >= v[i].lo && addr < v[i].hi)
			return true;
	return false;
}

/* Make the function around addr the loaded one if it is a kept one (true); else keep
 * the loaded one (evicting the oldest kept) and leave none loaded. */
static bool swap_function(struct tally_lines *l, uint64_t addr)
{
	struct scope_set cur = { l->scopes, l->nr_scopes, l->cap_scopes }, *slot = NULL;
	const size_t n = sizeof(l->kept) / sizeof(l->kept[0]);

	for (size_t i = 0; i < l->nr_kept && !slot; i++)
		if (set_holds(l->kept[i].v, l->kept[i].nr, addr))
			slot = &l->kept[i];
	if (!slot && !l->nr_scopes)
		return false;
	if (!slot) {
		if (l->nr_kept < n) {
			slot = &l->kept[l->nr_kept++];
		} else {
			slot = &l->kept[l->next_out];
			l->next_out = (l->next_out + 1) % n;
			free_set(slot);
			*slot = (struct scope_set){ 0 };
		}
	}
	l->scopes = slot->v;
	l->nr_scopes = slot->nr;
	l->cap_scopes = slot->cap;
	*slot = cur;
	return l->nr_scopes != 0;
}

static void load_function(struct tally_lines *l, uint64_t addr)
{
	Dwarf_Die *scopes = NULL, sub;
	int n;

	if (set_holds(l->scopes, l->nr_scopes, addr))
		return;
	/* (a listing names functions as one run of objdump: in the order it meets them) */
	if (!l->listing && swap_function(l, addr))
		return;
	clear_scopes(l);
	/* assembler units may have several subprograms over the same code (glibc's
	 * memmove and memcpy entry points): all of them, binutils names the last */
	if (dwarf_srclang(&l->cu) == DW_LANG_Mips_Assembler) {
		Dwarf_Die child;
		Dwarf_Addr lo, hi;

		if (dwarf_child(&l->cu, &child) == 0) {
			do {
				if (dwarf_tag(&child) == DW_TAG_subprogram &&
				    dwarf_lowpc(&child, &lo) == 0 && dwarf_highpc(&child, &hi) == 0 &&
				    addr >= lo && addr < hi && add_scope(l, &child, 0)) {
					clear_scopes(l);
					break;
				}
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		if (l->nr_scopes)
			return;
	}
	/* the concrete function with its inlined instances nested as they are: the tree
	 * names the functions inlined at addr and where each was called */
	if (find_subprogram(l, addr, &sub)) {
		if (add_scope(l, &sub, 0) || add_inlines(l, &sub, 0))
			clear_scopes(l);
		return;
	}
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

const char *tally_lines__symtab_function(struct tally_lines *l, uint64_t addr)
{
	return elf_name_for(l, addr);
}

void tally_lines__begin_listing(struct tally_lines *l)
{
	if (!l)
		return;
	forget_names(l);
	l->listing = true;
}

/* An ELF symbol's name as objdump -C prints it. */
static char *symbol_text(const char *name, bool *full)
{
	char *d = name[0] == '_' && name[1] == 'Z' ? tly_demangle_full(name) : NULL;

	*full = d != NULL;
	return d ? d : strdup(name);
}

/* bfd's name for a function without a linkage name, in a language with mangling (C++'s
 * main, a static function's inlined instance): the first time objdump asks about it,
 * the ELF symbol around the address; the function keeps that name when the symbol
 * starts where its first range does, else it is its DW_AT_name from then on. (So
 * objdump prints "main()" on the first address of an inlined static function, and
 * its name the next time.) Outside a listing only the name kept: no state. */
static void bfd_name(struct tally_lines *l, const struct scope *s, uint64_t addr,
		     struct tally_line *out)
{
	const struct elf_func *f;
	struct named *n;

	for (size_t i = 0; i < l->nr_named; i++) {
		if (l->named[i].off == s->off) {
			if (l->named[i].keep) {
				out->function = l->named[i].keep;
				out->function_is_full = l->named[i].keep_full;
				out->mangled = out->function_is_full ? l->named[i].raw : NULL;
			}
			return;
		}
	}
	f = elf_func_for(l, l->listing ? addr : s->first_lo);
	if (!f || (!l->listing && f->addr != s->first_lo))
		return;
	if (l->nr_named % 16 == 0) {
		struct named *v = realloc(l->named, (l->nr_named + 16) * sizeof(*v));

		if (!v)
			return;
		l->named = v;
	}
	n = &l->named[l->nr_named];
	n->off = s->off;
	n->first = symbol_text(f->name, &n->first_full);
	n->raw = f->name;
	n->keep = f->addr == s->first_lo ? symbol_text(f->name, &n->keep_full) : NULL;
	if (!n->first || (f->addr == s->first_lo && !n->keep)) {
		free(n->first);
		free(n->keep);
		return;
	}
	l->nr_named++;
	out->function = n->first;
	out->function_is_full = n->first_full;
	out->mangled = n->first_full ? n->raw : NULL;
}

int tally_lines__find(struct tally_lines *l, uint64_t addr, struct tally_line *out)
{
	Dwarf_Line *row;
	size_t ri = 0;
	int line = 0;
	unsigned disc = 0;
	struct scope *best = NULL;

	memset(out, 0, sizeof(*out));
	if (find_cu(l, addr))
		return -ENOENT;
	row = find_row(l, addr, &ri);
	if (!row)
		return -ENODATA;
	out->file = full_path(l, row_file(l, row, ri));
	dwarf_lineno(row, &line);
	dwarf_linediscriminator(row, &disc);
	out->line = line > 0 ? (unsigned)line : 0;
	out->discriminator = disc;
	load_function(l, addr);
	/* binutils' choice: the function whose range around addr is the smallest, of
	 * equal ones the later in the DWARF (scopes are in DIE order) */
	for (size_t i = 0; i < l->nr_scopes; i++) {
		struct scope *s = &l->scopes[i];

		if (addr >= s->lo && addr < s->hi &&
		    (!best || s->hi - s->lo <= best->hi - best->lo))
			best = s;
	}
	if (best) {
		scope_named(l, best);
		out->function = best->name;
		out->function_is_full = best->full;
		out->mangled = best->full ? best->mangled : NULL;
		if (!best->linkage)
			bfd_name(l, best, addr, out);
	} else {
		/* no DWARF function here: binutils names the ELF symbol around it */
		out->function = elf_name_for(l, addr);
	}
	return 0;
}

int tally_lines__find_inline(struct tally_lines *l, uint64_t addr, struct tally_line *out,
			     size_t max)
{
	const struct scope *chain[64];
	size_t nr = 0, n;
	int err;

	if (!max)
		return 0;
	err = tally_lines__find(l, addr, &out[0]);
	if (err)
		return err;
	/* the scopes around addr, one per depth, outermost first (the tree is nested:
	 * an inlined instance's range lies in its caller's) */
	for (unsigned depth = 0; nr < TLY_ARRAY_SIZE(chain); depth++) {
		const struct scope *found = NULL;

		for (size_t i = 0; i < l->nr_scopes && !found; i++) {
			struct scope *s = &l->scopes[i];

			if (s->depth == depth && addr >= s->lo && addr < s->hi)
				found = scope_named(l, s);
		}
		if (!found)
			break;
		/* a function inlined into its own out-of-line copy (glibc's
		 * _IO_doallocbuf, __libc_read) is two frames, as binutils' addr2line -i
		 * and perf 6.1 show it */
		chain[nr++] = found;
	}
	/* out[0] is the innermost function's own row; each further entry is the line in
	 * the function around it that the previous one was inlined at */
	for (n = 1; n < max && n < nr; n++) {
		const struct scope *callee = chain[nr - n], *caller = chain[nr - n - 1];

		out[n] = (struct tally_line){
			.file = callee->call_file, .line = callee->call_line,
			.function = caller->name, .function_is_full = caller->full,
			.mangled = caller->full ? caller->mangled : NULL,
		};
	}
	return (int)n;
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
