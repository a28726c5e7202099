/*
 * Interned strings: each distinct string stored once and named by a small id (0, 1, ...
 * in the order they came), for tables that hold many repeats (a flame graph's frame
 * names, pprof's string table). Texts live in 64 KiB blocks until __exit.
 */
#ifndef TALLY_INTERNAL_STRPOOL_H
#define TALLY_INTERNAL_STRPOOL_H

#include <stddef.h>
#include <stdint.h>

struct tly_strpool {
	char **names;		/* by id */
	uint32_t nr, cap;
	uint32_t *slots;	/* id + 1, by hash; 0 empty */
	uint32_t nr_slots;	/* power of two */
	char *block;		/* the block being filled */
	size_t block_used, block_size;
	char **blocks;
	size_t nr_blocks;
};

/* The id of s (added if new), or -ENOMEM. A zeroed pool is an empty one. */
int64_t tly_strpool__intern(struct tly_strpool *p, const char *s);
void tly_strpool__exit(struct tly_strpool *p);

static inline const char *tly_strpool__str(const struct tly_strpool *p, uint32_t id)
{
	return p->names[id];
}

#endif
