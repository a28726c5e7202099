/*
 * A compressed .debug_info read unit by unit (lib/model/dwinfo.c; used by srcline.c).
 *
 * libdw decompresses a compressed .debug_info whole and then reads the header of every
 * unit up to the ones asked about: for glibc's debuginfo that is 5.7 MB resident (and
 * 4,000 units interned) when a profile's inlined frames need some thirty of its units.
 * Here libdw gets a .debug_info that holds only the units asked for, appended in the
 * order they are first needed: the units of the addresses looked up (found through
 * .debug_aranges, read here) and, to tell whether the file has line tables at all, the
 * units from the first to the first with one. The section is inflated once up front
 * (the unit boundaries, its adler32 checked, and a restart point every 256 KiB), and
 * again from the nearest restart point for each unit fetched; once fetching has
 * inflated as much as the whole section, the units not yet in come in one pass.
 *
 * A compressed .debug_abbrev and .debug_line are read so too, at their own offsets
 * (restart points every 128 KiB): libdw gets them whole in size, in memory reserved
 * but filled only by the pages of the tables of the units fetched (a unit's
 * abbreviations; its line table, found through its unit DIE's DW_AT_stmt_list); both
 * whole where that DIE cannot be read here. Pages never filled cost nothing: for
 * glibc's 1 MB and 1.3 MB, some 30 units' tables. Fills that have inflated a section's
 * size bring in the rest at once.
 *
 * Offsets change (a unit's DIEs sit at other offsets than in the file), so this is
 * only done where nothing refers into .debug_info by offset but a unit's own
 * references and .debug_aranges: no DW_FORM_ref_addr, ref_sig8, ref_sup or GNU_ref_alt
 * form, no DW_FORM_indirect, no imported unit, no .debug_types and no
 * .gnu_debugaltlink; 32-bit DWARF 2-5 compile or partial units only; zlib-compressed
 * (SHF_COMPRESSED); aranges of distinct addresses that do not overlap, each naming the
 * start of a unit. Anything else is left to libdw as it is.
 */
#ifndef TALLY_INTERNAL_DWINFO_H
#define TALLY_INTERNAL_DWINFO_H

#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

struct tly_dwinfo;

/* Before dwarf_begin_elf(E) (E read from FD, its debug sections not yet decompressed
 * by libelf): take over E's .debug_info, and its .debug_abbrev and .debug_line where
 * they are zlib-compressed, if .debug_info qualifies (see above). *out is NULL when it
 * does not (E's sections are then left as they were). Its first unit is already in.
 * 0 or -errno (-ENOMEM, -EINVAL; E is then not fit for libdw). */
int tly_dwinfo__prepare(struct tly_dwinfo **out, Elf *e, int fd);
/* The DIE offset, as libdw sees it, of the unit whose arange holds ADDR (-ENOENT: none,
 * or it could not be read). */
int tly_dwinfo__addr_unit(struct tly_dwinfo *d, uint64_t addr, uint64_t *die_off);
/* The same of the Nth unit in file order (-ENOENT past the last). */
int tly_dwinfo__unit(struct tly_dwinfo *d, size_t n, uint64_t *die_off);
void tly_dwinfo__delete(struct tly_dwinfo *d);

#endif
