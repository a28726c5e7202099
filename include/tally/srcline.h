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
int tally_lines__open(struct tally_lines **out, const char *path, const char *debug_path);
void tally_lines__delete(struct tally_lines *l);

struct tally_line {
	const char *file;	/* as the line table names it, compilation dir joined when
				 * the name is relative; valid until tally_lines__delete */
	unsigned line;		/* 0: the compiler gave no line */
	unsigned discriminator;
	const char *function;	/* innermost function (an inlined one too), NULL if none */
	bool function_is_full;	/* function is a demangled C++ name with its parameters
				 * (objdump prints it as is, a C name gets "()") */
};

/* The row for ELF virtual address addr. 0, or -ENOENT when no line table covers it. */
int tally_lines__find(struct tally_lines *l, uint64_t addr, struct tally_line *out);

/* The function binutils names from the symbol table for code no compilation unit
 * covers (crtstuff's __do_global_dtors_aux, _init: objdump -l prints its "name():"
 * line), as bfd's find_function picks it; NULL when no symbol holds addr. Lives as
 * long as l. */
const char *tally_lines__symtab_function(struct tally_lines *l, uint64_t addr);

/* Start a listing: from now on find names a C++ function without a linkage name as
 * one run of objdump does (after the ELF symbol around the address the first time it
 * is asked about, see srcline.c's bfd_name), and forgets what the last listing asked.
 * Without a listing it gets the ELF symbol's name when one starts where the function
 * does, else its DW_AT_name. */
void tally_lines__begin_listing(struct tally_lines *l);

/* The name objdump gives the function starting at addr, from the symbol table of the
 * file the DWARF came from (a debuginfo file has the full one): of several symbols
 * there, a function before a label, global before weak before local, the larger, then
 * the first by name. NULL when no symbol starts there. Lives as long as l. */
const char *tally_lines__symbol_name(struct tally_lines *l, uint64_t addr);

/* Source files read once each and split into lines. */
struct tally_sources;

int tally_sources__new(struct tally_sources **out);
void tally_sources__delete(struct tally_sources *s);
/* How many lines path has (0: unreadable or empty). Reads the file on first use. */
unsigned tally_sources__nr_lines(struct tally_sources *s, const char *path);
/* Line n (from 1) of path, without its newline: 0 with the text and its length, or -ENOENT when the
 * file cannot be read, -ERANGE past its end. */
int tally_sources__line(struct tally_sources *s, const char *path, unsigned n, const char **text,
			size_t *len);

#ifdef __cplusplus
}
#endif
#endif
