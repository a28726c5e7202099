/*
 * Symbol tables inside libtally: one per dso, loaded once, sorted once, searched by
 * binary search. Names live in one string pool per table.
 */
#ifndef TALLY_INTERNAL_SYMBOLS_H
#define TALLY_INTERNAL_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tally/session.h>

struct tly_symtab {
	struct tally_symbol *syms;
	size_t nr, cap;
	char *pool;
	size_t pool_len, pool_cap;
	/* ELF PT_LOAD segments, to turn a file offset into the address symbols use */
	struct { uint64_t offset, vaddr, filesz; } *segs;
	size_t nr_segs;
	/* per-symbol binding used while choosing among aliases (freed after sorting) */
	uint8_t *bind;
	size_t last;	/* index of the last symbol found: samples repeat addresses */
	/* a large table's index (tly_symtab__find makes it once the table has been
	 * searched often; add and finish drop it): bucket b holds the first symbol starting
	 * at or above index_base + (b << index_shift), index[index_nr] is nr */
	uint32_t *index;
	size_t index_nr;
	uint64_t index_base;
	unsigned index_shift;
	uint32_t searches;	/* without the index so far */
	bool index_tried;
	/* kallsyms only (tly_kload): the highest address of a symbol of the kernel image
	 * (no "[module]" tag) and the lowest of a tagged one (UINT64_MAX: none) */
	uint64_t core_max, tagged_min;
	/* a table read from a symbol table cache (internal/kcache.h): the names live in
	 * this block of it (malloc'd) */
	void *blob;
	bool raw_names;	/* set before loading: no demangling (perf --no-demangle) */
};

void tly_symtab__exit(struct tly_symtab *t);
/* Append a symbol (name copied to the pool). bind: 2 global, 1 weak, 0 local. */
int tly_symtab__add(struct tly_symtab *t, uint64_t start, uint64_t size, const char *name,
		    size_t len, int bind);
/* Sort, pick one symbol per address, give zero-size symbols the room up to the next. */
void tly_symtab__finish(struct tly_symtab *t);
const struct tally_symbol *tly_symtab__find(struct tly_symtab *t, uint64_t addr);
/* File offset -> ELF address through the PT_LOAD segments (identity without them). */
uint64_t tly_symtab__offset_to_addr(const struct tly_symtab *t, uint64_t off);

/* Loaders: 0, or -errno (nothing loaded). */
int tly_symtab__load_elf(struct tly_symtab *t, const char *path, const char *debug_path);
/* Whether the ELF file at PATH (may be NULL: false) has a .symtab section. */
bool tly_elf__has_symtab(const char *path);
int tly_symtab__load_elf_mem(struct tly_symtab *t, const void *buf, size_t len);
/* kallsyms: -EPERM when every address is 0 (kptr_restrict), -ENODATA with no symbol
 * lines at all. */
int tly_symtab__load_kallsyms(struct tly_symtab *t, const char *path);

/*
 * kallsyms loaded by several threads at once: tly_kload__new opens path for table t
 * (chunk: bytes per chunk, 0 for the default), any number of threads call
 * tly_kload__work (each returns when no chunk is left to claim; the first to come does
 * all of it if it is alone), and once every one of them has returned, tly_kload__end
 * finishes t (keep) or releases it (!keep) and frees the loader. Nothing but the
 * workers touches t in between. Results are tly_symtab__load_kallsyms's.
 */
struct tly_kload;
int tly_kload__new(struct tly_kload **k, struct tly_symtab *t, const char *path,
		   uint64_t chunk);
void tly_kload__work(struct tly_kload *k);
int tly_kload__end(struct tly_kload *k, bool keep);
/* The workers stop at their next read (the load ends with -ECANCELED). */
void tly_kload__cancel(struct tly_kload *k);
int tly_symtab__load_perfmap(struct tly_symtab *t, const char *path);
/* A C++ symbol name demangled with its parameter list (malloc'd), or NULL when name is
 * not a mangled C++ name or the C++ runtime's demangler is not there. */
char *tly_demangle_full(const char *name);
/* The name perf 6.1 shows for a C++ symbol: demangled without parameters and clone
 * suffixes (thunks keep their target's parameters); malloc'd, or NULL when name is not
 * a mangled C++ name. */
char *tly_demangle(const char *name);

#endif
