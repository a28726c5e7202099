/*
 * Interned strings (tally/hist.h): the library's string pool (lib/strpool.c) behind the
 * public type, so that equal comms and dso names are one pointer and rows compare and
 * hash by address.
 */
#include <stdlib.h>

#include "internal/analysis.h"

uint64_t tly_str_hash(const char *s)
{
	uint64_t x = 1469598103934665603ull;

	while (*s)
		x = (x ^ (unsigned char)*s++) * 1099511628211ull;
	return x;
}

const char *tally_strpool__intern(struct tally_strpool *p, const char *s)
{
	int64_t id = tly_strpool__intern(&p->ids, s);

	return id < 0 ? NULL : tly_strpool__str(&p->ids, (uint32_t)id);
}

struct tally_strpool *tally_strpool__new(void)
{
	return calloc(1, sizeof(struct tally_strpool));
}

void tally_strpool__delete(struct tally_strpool *p)
{
	if (!p)
		return;
	tly_strpool__exit(&p->ids);
	free(p);
}
