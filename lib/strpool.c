/*
 * Interned strings (see internal/strpool.h): open addressing on the text's hash, the
 * texts packed into blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal/strpool.h"

static uint64_t hash_str(const char *s, size_t *len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const char *p = s;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	*len = (size_t)(p - s);
	return h ^ (h >> 29);
}

static char *pool_copy(struct tly_strpool *p, const char *s, size_t len)
{
	char *d;

	if (p->block_used + len + 1 > p->block_size) {
		size_t size = len + 1 > 65536 ? len + 1 : 65536;
		char **b = realloc(p->blocks, (p->nr_blocks + 1) * sizeof(*b));

		if (!b)
			return NULL;
		p->blocks = b;
		p->block = malloc(size);
		if (!p->block)
			return NULL;
		p->blocks[p->nr_blocks++] = p->block;
		p->block_used = 0;
		p->block_size = size;
	}
	d = p->block + p->block_used;
	memcpy(d, s, len + 1);
	p->block_used += len + 1;
	return d;
}

static int pool_grow(struct tly_strpool *p)
{
	uint32_t n = p->nr_slots ? p->nr_slots * 2 : 1024;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 0; id < p->nr; id++) {
		size_t len;
		uint32_t i = (uint32_t)hash_str(p->names[id], &len) & (n - 1);

		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = id + 1;
	}
	free(p->slots);
	p->slots = slots;
	p->nr_slots = n;
	return 0;
}

int64_t tly_strpool__intern(struct tly_strpool *p, const char *s)
{
	size_t len;
	uint64_t h;
	uint32_t i;

	if ((p->nr + 1) * 2 > p->nr_slots && pool_grow(p))
		return -ENOMEM;
	h = hash_str(s, &len);
	for (i = (uint32_t)h & (p->nr_slots - 1); p->slots[i]; i = (i + 1) & (p->nr_slots - 1))
		if (!strcmp(p->names[p->slots[i] - 1], s))
			return p->slots[i] - 1;
	if (p->nr == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 1024;
		char **v = realloc(p->names, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->names = v;
		p->cap = cap;
	}
	p->names[p->nr] = pool_copy(p, s, len);
	if (!p->names[p->nr])
		return -ENOMEM;
	p->slots[i] = p->nr + 1;
	return p->nr++;
}

void tly_strpool__exit(struct tly_strpool *p)
{
	for (size_t i = 0; i < p->nr_blocks; i++)
		free(p->blocks[i]);
	free(p->blocks);
	free(p->names);
	free(p->slots);
}
