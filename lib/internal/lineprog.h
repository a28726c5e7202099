/*
 * The rows of a DWARF line-number program that come before each sequence's first
 * DW_LNS_set_file, for the file name binutils 2.40 gives them (lib/model/lineprog.c;
 * used by srcline.c).
 */
#ifndef TALLY_INTERNAL_LINEPROG_H
#define TALLY_INTERNAL_LINEPROG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One sequence: its addresses, and where its first set_file comes: at set_file_addr,
 * after nr_at of the rows at that address (end rows aside). Without a set_file
 * (set_file false) every row of it keeps the default file. */
struct tly_seq_default {
	uint64_t start, end;
	uint64_t set_file_addr;
	size_t nr_at;
	bool set_file;
};

struct tly_seq_defaults {
	struct tly_seq_default *seqs;	/* by start address */
	size_t nr;
};

/* Walk the program at offset off of a .debug_line section (section, size bytes).
 * 0, -EINVAL (damaged or unsupported: VLIW max_ops, versions outside 2..5), -ENOMEM. */
int tly_lineprog__defaults(const void *section, size_t size, uint64_t off,
			   struct tly_seq_defaults *out);
/* The sequence whose addresses hold addr, NULL if none. */
const struct tly_seq_default *tly_seq_defaults__find(const struct tly_seq_defaults *d,
						      uint64_t addr);
/* Whether the nth (from 0) row of the sequence at addr (end rows aside) comes before
 * its first set_file. */
bool tly_seq_default__is_default(const struct tly_seq_default *s, uint64_t addr, size_t nth);
void tly_seq_defaults__exit(struct tly_seq_defaults *d);

#endif
