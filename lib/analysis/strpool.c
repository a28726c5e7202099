/*
 * Interned strings (tally/hist.h): an open-addressing set of copies, so that equal
 * comms and dso names are one pointer and rows compare and hash by address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal/analysis.h"

uint64_t tly_str_hash(const char *s)
{
	uint64_t x = 1469598103934665603ull;

	while (*s)
		x = (x ^ (unsigned char)*s++) * 1099511628211ull;
	return x;
}

static int grow(struct tally_strpool *p)
{
	size_t cap = p->cap ? p->cap * 2 : 64, i;
	char **n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t j = 0; j < p->cap; j++) {
		if (!p->v[j])
			continue;
		for (i = tly_str_hash(p->v[j]) & (cap - 1); n[i]; i = (i + 1) & (cap - 1))
			;
		n[i] = p->v[j];
	}
	free(p->v);
	p->v = n;
	p->cap = cap;
	return 0;
}

const char *tally_strpool__intern(struct tally_strpool *p, const char *s)
{
	size_t i;

	if (p->nr * 2 >= p->cap && grow(p))
		return NULL;
	for (i = tly_str_hash(s) & (p->cap - 1); p->v[i]; i = (i + 1) & (p->cap - 1))
		if (!strcmp(p->v[i], s))
			return p->v[i];
	p->v[i] = strdup(s);
	if (!p->v[i])
		return NULL;
	p->nr++;
	return p->v[i];
}

void tly_strpool__exit(struct tally_strpool *p)
{
	for (size_t i = 0; i < p->cap; i++)
		free(p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

struct tally_strpool *tally_strpool__new(void)
{
	return calloc(1, sizeof(struct tally_strpool));
}

void tally_strpool__delete(struct tally_strpool *p)
{
	if (!p)
		return;
	tly_strpool__exit(p);
	free(p);
}
