/*
 * Inside the probe finder (lib/model/probe-finder.c, probe-dwarf.c): the target's
 * symbols, segments and DWARF, shared by the ELF and the DWARF halves.
 */
#ifndef TALLY_INTERNAL_PROBE_H
#define TALLY_INTERNAL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include <tally/probe.h>
#include <tally/srcline.h>

#include "internal/util.h"

struct tly_probe_sym {
	uint64_t addr, size;
	char *name;
	bool func;		/* STT_FUNC / STT_GNU_IFUNC (kallsyms: t/T/w/W) */
	bool defined;
};

struct tally_probe_finder {
	bool kernel;
	char *path;		/* realpath of the binary */
	int fd, dfd;
	Elf *elf, *delf;	/* the binary, its separate debuginfo */
	Dwarf *dw;		/* NULL without DWARF */
	unsigned machine;	/* e_machine: register names */
	bool is64;
	GElf_Phdr *segs;	/* PT_LOAD */
	size_t nr_segs;
	struct tly_probe_sym *syms;	/* by address */
	size_t nr_syms, cap_syms;
	struct tally_sources *src;	/* source text, for lazy patterns and -L */
	bool no_inlines;		/* functions only out of line (--no-inlines) */
	Dwarf_CFI *eh_cfi;		/* the binary's .eh_frame, read once (ours to end) */
	bool eh_cfi_read;
	/* kernel */
	char *kallsyms, *module;
	uint64_t text_addr;
};

int tly_probe_err(char *err, size_t len, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int tly_probe_vaddr_to_offset(const struct tally_probe_finder *f, uint64_t vaddr, uint64_t *off);
int tly_probe_offset_to_vaddr(const struct tally_probe_finder *f, uint64_t off, uint64_t *vaddr);
/* The defined symbol covering addr (functions only when funcs_only), or NULL. */
const struct tly_probe_sym *tly_probe_sym_at(const struct tally_probe_finder *f, uint64_t addr,
					     bool funcs_only);
/* NAME=EXPR[:TYPE] of a raw argument, appended to b. */
int tly_probe_raw_arg(const struct tally_probe_arg *a, struct tly_buf *b);
/* The name perf gives an argument with field accesses (p->next->y: "y", arr[1]: "arr");
 * "" when expr is a plain variable. */
void tly_probe_field_name(const char *expr, char *buf, size_t len);

/* probe-dwarf.c: DWARF helpers shared with probe-vars.c */
bool tly_probe_die_type(Dwarf_Die *die, Dwarf_Die *type);
/* The type under typedefs and qualifiers; false for void. */
bool tly_probe_strip_type(Dwarf_Die *type, Dwarf_Die *out);
bool tly_probe_die_entry(Dwarf_Die *die, uint64_t *entry);
unsigned tly_probe_die_decl_line(Dwarf_Die *die);
/* The kernel's fetch name of a DWARF register ("%di"), NULL when it has none. */
const char *tly_probe_reg_name(const struct tally_probe_finder *f, unsigned reg);
/* The concrete function containing addr, its name, and its DIE in *out (may be NULL). */
const char *tly_probe_function_at(Dwarf_Die *cu, uint64_t addr, Dwarf_Die *out);
/* The binary's .eh_frame call-frame information (NULL without), read on first use. */
Dwarf_CFI *tly_probe_eh_cfi(struct tally_probe_finder *f);
/* probe-vars.c: the fetch arguments of spec at addr, appended to e->args. */
int tly_probe_resolve_args(struct tally_probe_finder *f, Dwarf_Die *cu, uint64_t addr,
			   const struct tally_probe_spec *spec, struct tally_probe_event *e,
			   char *err, size_t errlen);

int tly_probe_find_dwarf(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			 struct tally_probe_event **out, size_t *nr, char *err, size_t errlen,
			 char *note, size_t notelen);
int tly_probe_find_address(struct tally_probe_finder *f, const struct tally_probe_spec *spec,
			   struct tally_probe_event **out, size_t *nr, char *err, size_t errlen);

#endif
