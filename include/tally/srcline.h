/*
 * Source lines of machine code, from a binary's DWARF (or its separate debuginfo) through
 * elfutils libdw, and the text of source files, for listings that interleave the two
 * (annotate).
 *
 * An address finds its line-table row the way binutils does (the last row at the
 * greatest address not above it, in the same sequence), so a listing names the same
 * file, line and discriminator as objdump -l, and the innermost function around it,
 * inlined ones included.
 */
#ifndef TALLY_SRCLINE_H
#define TALLY_SRCLINE_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_lines;

/* DWARF of the binary at path, or of debug_path (its separate debuginfo) when that is
 * given and has line tables. 0, -ENOENT (no file), -ENODATA (no DWARF line tables in
 * either), -ENOMEM. */
TALLY_API int tally_lines__open(struct tally_lines **out, const char *path, const char *debug_path);
TALLY_API void tally_lines__delete(struct tally_lines *l);

struct tally_line {
	const char *file;	/* as the line table names it, compilation dir joined when
				 * the name is relative; valid until tally_lines__delete */
	unsigned line;		/* 0: the compiler gave no line */
	unsigned discriminator;
	const char *function;	/* innermost function (an inlined one too), NULL if none;
				 * valid until the next lookup in the same tally_lines */
	bool function_is_full;	/* function is a demangled C++ name with its parameters
				 * (objdump prints it as is, a C name gets "()") */
	const char *mangled;	/* function_is_full: the linkage (or ELF symbol) name it
				 * is the demangled text of, as addr2line -f prints it;
				 * valid until tally_lines__delete. NULL otherwise */
};

/* The row for ELF virtual address addr. 0, -ENOENT when no unit covers it, or -ENODATA
 * when a unit does but its line table has no row for it (binutils then prints ":?"). */
TALLY_API int tally_lines__find(struct tally_lines *l, uint64_t addr, struct tally_line *out);

/* The function binutils names from the symbol table for code no compilation unit
 * covers (crtstuff's __do_global_dtors_aux, _init: objdump -l prints its "name():"
 * line), as bfd's find_function picks it; NULL when no symbol holds addr. Lives as
 * long as l. */
TALLY_API const char *tally_lines__symtab_function(struct tally_lines *l, uint64_t addr);

/* Start a listing: from now on find names a C++ function without a linkage name as
 * one run of objdump does (after the ELF symbol around the address the first time it
 * is asked about, see srcline.c's bfd_name), and forgets what the last listing asked.
 * Without a listing it gets the ELF symbol's name when one starts where the function
 * does, else its DW_AT_name. */
TALLY_API void tally_lines__begin_listing(struct tally_lines *l);

/* The row for addr and the functions inlined there, innermost first: out[0] is what
 * __find gives (the innermost function, inlined or not, and the line-table row), and
 * each out[i] after it names the function that out[i-1]'s was inlined into, with the
 * line of that call (DW_AT_call_file/DW_AT_call_line; file NULL and line 0 when the
 * DWARF does not say). The last entry is the function the code belongs to. Returns how
 * many entries were filled (at most max), or as tally_lines__find -ENOENT / -ENODATA.
 * Function names are valid until the next lookup in l, file names until __delete. */
TALLY_API int tally_lines__find_inline(struct tally_lines *l, uint64_t addr, struct tally_line *out,
				       size_t max);

/* The name objdump gives the function starting at addr, from the symbol table of the
 * file the DWARF came from (a debuginfo file has the full one): of several symbols
 * there, a function before a label, global before weak before local, the larger, then
 * the first by name. NULL when no symbol starts there. Lives as long as l. */
TALLY_API const char *tally_lines__symbol_name(struct tally_lines *l, uint64_t addr);

/* Source lines of the addresses a session resolves, for exporters (pprof's lines, a
 * flame graph's inlined frames): each dso's DWARF is opened on its first lookup, from the
 * files the session reads its symbols from (tally_session__dso_files: the binary, its
 * separate debuginfo, the build-id cache), and kept. The kernel, JIT code and dsos
 * without line tables give no lines. */
struct tally_session;
struct tally_addr_loc;
struct tally_dso_lines;

TALLY_API int tally_dso_lines__new(struct tally_dso_lines **out, struct tally_session *s);
TALLY_API void tally_dso_lines__delete(struct tally_dso_lines *l);
/* The lines at loc (resolved by the session), innermost first as
 * tally_lines__find_inline gives them. return_addr: loc->addr is a return address (a
 * caller's frame in a call chain), so the call before it is looked up. Returns how
 * many entries were filled (0: no lines known), or -ENOMEM. Answers are kept per
 * address; their names stay valid until __delete. */
TALLY_API int tally_dso_lines__find(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
				    bool return_addr, struct tally_line *out, size_t max);

/* What perf 6.1 reads from addr2line -i -f about loc (its inline frames): the entries
 * of __find with their functions named as perf names them (a C++ name demangled
 * without parameters, as tally_symbol names are; function_is_full false), the
 * innermost named from the symbol table where the DWARF names no function; where no row covers the address, one entry naming the symbol table's
 * function with file "" (a unit covers it without a row), a local symbol's STT_FILE or
 * "??", and line 0. 0 when addr2line would not know the function either (perf takes
 * that answer for none), or the dso has no line tables (perf does not ask); -ENOMEM. */
TALLY_API int tally_dso_lines__find_a2l(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
			      bool return_addr, struct tally_line *out, size_t max);

/* What binutils' addr2line says of an address its DWARF has no row for (or of a dso
 * without DWARF): the ELF symbol table's function around it, named in out->function,
 * out->file the file a local function's STT_FILE symbol names (NULL for a global one:
 * addr2line prints "??"), out->line 0. perf prints that answer ("hot.c:0", "??:0").
 * Returns 1, 0 when no function of the symbol table holds the address (addr2line
 * fails), or -ENOMEM. */
TALLY_API int tally_dso_lines__find_symtab(struct tally_dso_lines *l,
					   const struct tally_addr_loc *loc,
					   struct tally_line *out);

/* perf's source line of loc (perf report's srcline, perf script's -F srcline): the
 * DWARF's "file:line", ":0" where a unit covers the address with no row for it (an
 * assembler unit: binutils prints ":?"), else the symbol table's "file:0" or "??:0"
 * as above; the file's
 * base name unless full_path. Writes it to buf and returns its length, 0 when neither
 * knows the address (or buf is too small), -ENOMEM. *file_len: how long its file part
 * is (0 for "??"). */
TALLY_API int tally_dso_lines__text(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
				    bool full_path, char *buf, size_t len, size_t *file_len);

/* Source files read once each and split into lines. */
struct tally_sources;

TALLY_API int tally_sources__new(struct tally_sources **out);
TALLY_API void tally_sources__delete(struct tally_sources *s);
/* How many lines path has (0: unreadable or empty). Reads the file on first use. */
TALLY_API unsigned tally_sources__nr_lines(struct tally_sources *s, const char *path);
/* Line n (from 1) of path, without its newline: 0 with the text and its length, or -ENOENT when the
 * file cannot be read, -ERANGE past its end. */
TALLY_API int tally_sources__line(struct tally_sources *s, const char *path, unsigned n,
				  const char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
