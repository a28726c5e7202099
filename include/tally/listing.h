/*
 * Listings of functions: the instructions of a symbol of the session (capstone, see
 * tally/disasm.h) with the source lines and line-table locations between them, in the
 * order objdump -d -l -S lays them out, since that is what perf annotate shows:
 *
 *   a function row where the innermost function changes (inlined code too), a location
 *   row (file:line, discriminator) where the line-table row changes, the source lines
 *   objdump -S prints there (the new line, after up to five lines of context the first
 *   time a file is shown, or the lines skipped since the last one printed), and the
 *   instruction.
 *
 * Kernel functions come from the running kernel's memory (/proc/kcore, when this machine
 * runs the kernel the file was recorded on) or from a vmlinux; user functions from the
 * binary the session read their symbols from, source lines from its DWARF.
 */
#ifndef TALLY_LISTING_H
#define TALLY_LISTING_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/disasm.h>
#include <tally/session.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_lister;

struct tally_lister_opts {
	enum tally_disasm_syntax syntax;
	bool source;		/* source lines between the instructions (objdump -S) */
	bool lines;		/* function and location rows (objdump -l) */
	const char *vmlinux;	/* kernel code (and lines) from this file, not /proc/kcore */
	const char *kcore;	/* default "/proc/kcore" */
};

/* A lister for symbols of s: binaries, DWARF and source files opened once and shared
 * by the listings it makes. 0 or -ENOMEM. */
TALLY_API int tally_lister__new(struct tally_lister **out, struct tally_session *s,
				const struct tally_lister_opts *opts);
TALLY_API void tally_lister__delete(struct tally_lister *l);

enum tally_row_kind {
	TALLY_ROW_FUNCTION,	/* text: the function's name; full: a demangled C++ name with
				 * its parameters (objdump prints a C name with "()") */
	TALLY_ROW_LOCATION,	/* text: the file; line, discriminator (0: none) */
	TALLY_ROW_SOURCE,	/* text, len: the source line (no newline); line: its number */
	TALLY_ROW_SYMBOL,	/* another symbol starts inside the function: text, insn.addr */
	TALLY_ROW_INSN,		/* insn, offset and the names below */
};

/* A name for an address: symbol + offset (objdump's "<name+0x10>"). */
struct tally_row_name {
	const char *sym;	/* NULL: no symbol holds the address */
	int64_t off;		/* address - symbol start, modulo 2^64 */
	bool above;		/* the symbol starts above the address (objdump: "-0x…",
				 * else "+0x…" even past 2^63: vdso code reaching below 0) */
};

struct tally_row {
	enum tally_row_kind kind;
	const char *text;
	size_t len;
	unsigned line, discriminator;
	bool full;
	uint64_t offset;		/* INSN: from the function's start */
	struct tally_insn insn;		/* INSN (and SYMBOL: its address) */
	struct tally_row_name target;	/* INSN with insn.has_target */
	struct tally_row_name pc_ref;	/* INSN with insn.has_pc_ref */
};

struct tally_listing {
	uint64_t start, end;		/* the function's addresses as the code has them:
					 * ELF virtual addresses, kernel addresses for kcore */
	const char *section;		/* ".text" … (".text" when the code has no sections) */
	const char *name;		/* objdump's name for start: one of the function's
					 * aliases, or (without source lines, when objdump reads
					 * no debuginfo symbols) the nearest symbol below it, at
					 * name_off before start; NULL when the files have none */
	int64_t name_off;
	const char *path;		/* the file the code came from */
	bool has_lines;			/* it (or its debuginfo) has DWARF line tables */
	struct tally_row *rows;
	size_t nr_rows;
	size_t nr_insns;
};

/* List symbol sym of dso d (from the session the lister was made with). 0 and *out, or
 * -errno with a sentence in why (the file missing, another kernel, /proc/kcore not
 * readable, a machine capstone does not handle, ...). The listing's strings live as long
 * as the lister. */
TALLY_API int tally_lister__list(struct tally_lister *l, struct tally_dso *d,
				 const struct tally_symbol *sym, struct tally_listing **out,
				 char *why, size_t why_len);
TALLY_API void tally_listing__delete(struct tally_listing *x);

#ifdef __cplusplus
}
#endif
#endif
