/*
 * The kallsyms cache (see internal/kcache.h for what it is and when it may answer):
 * a header with the key, then the symbols sorted by address as fixed-size records
 * (start, size, name offset), then their names. It is read by mapping the file: a
 * lookup is a binary search over the records, and only the records and names it
 * touches are ever paged in. struct tally_symbol values are made for the symbols
 * found, once each, so the pointers handed out stay put.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/kcache.h"
#include "internal/util.h"

#define KC_MAGIC "TLYKSYM\0"
#define KC_VERSION 2

struct kc_header {
	char magic[8];
	uint32_t version, head_len;
	char id[256];
	uint64_t nr, pool_len, nr_segs;
	uint64_t lo, hi;		/* covered addresses: [lo, hi) */
	char head[TLY_KCACHE_HEAD];
};

struct kc_rec {
	uint64_t start, size, name;	/* name: offset in the names */
};

struct kc_seg {
	uint64_t offset, vaddr, filesz;	/* an ELF file's PT_LOAD segment */
};

_Static_assert(sizeof(struct kc_header) % 8 == 0, "records follow the header aligned");

#define SLAB 256

struct kc_slab {
	struct kc_slab *next;
	struct tally_symbol s[SLAB];
};

struct tly_kcache {
	void *base;
	size_t len;
	const struct kc_header *h;
	const struct kc_rec *recs;
	const struct kc_seg *segs;
	const char *pool;
	struct tally_symbol **made;	/* per record, made on first find */
	struct kc_slab *slabs;
	size_t slab_used;
	size_t last;			/* the record found last: samples repeat */
};

int tly_kcache__boot_id(char *buf, size_t len)
{
	ssize_t n = tly_read_file_str("/proc/sys/kernel/random/boot_id", buf, len);

	if (n < 0)
		return (int)n;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return n ? 0 : -ENODATA;
}

int tly_kcache__key_proc(struct tly_kcache_key *key, const char *path, const char *bid,
			 const char *boot_id)
{
	int fd;
	ssize_t r;
	const char *nl;

	memset(key, 0, sizeof(*key));
	if (!bid || !bid[0] || !boot_id || !boot_id[0])
		return -EINVAL;
	if ((size_t)snprintf(key->id, sizeof(key->id), "proc kernel %s boot %s", bid, boot_id) >=
	    sizeof(key->id))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		r = read(fd, key->head, sizeof(key->head));
	while (r < 0 && errno == EINTR);
	close(fd);
	if (r < 0)
		return -errno;
	/* the whole lines of the first read (the kernel fills a page with whole lines) */
	nl = memrchr(key->head, '\n', (size_t)r);
	if (!nl)
		return -ENODATA;
	key->head_len = (uint32_t)(nl + 1 - key->head);
	memset(key->head + key->head_len, 0, sizeof(key->head) - key->head_len);
	return 0;
}

/* " dev D ino I size S mtime T" of the regular file at PATH appended to key->id. */
static int key_add_file(struct tly_kcache_key *key, const char *path)
{
	size_t at = strlen(key->id);
	struct stat st;
	int n;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	n = snprintf(key->id + at, sizeof(key->id) - at, " dev %llu ino %llu size %lld mtime %lld.%09ld",
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	return n < 0 || (size_t)n >= sizeof(key->id) - at ? -ENAMETOOLONG : 0;
}

int tly_kcache__key_file(struct tly_kcache_key *key, const char *path, const char *debug)
{
	int err;

	memset(key, 0, sizeof(*key));
	strcpy(key->id, "file");
	err = key_add_file(key, path);
	if (!err && debug) {
		strcat(key->id, " debug");
		err = key_add_file(key, debug);
	}
	return err;
}

static bool key_equal(const struct kc_header *h, const struct tly_kcache_key *key)
{
	return !memcmp(h->id, key->id, sizeof(h->id)) && h->head_len == key->head_len &&
	       !memcmp(h->head, key->head, key->head_len);
}

/* ---- writing ----------------------------------------------------------------- */

int tly_kcache__write(const char *path, const struct tly_kcache_key *key,
		      const struct tly_symtab *t, bool whole)
{
	struct kc_header h = { .version = KC_VERSION };
	char tmp[PATH_MAX], dir[PATH_MAX];
	size_t nr = t->nr, pool = 0;
	struct kc_rec *recs = NULL;
	char *names = NULL, *slash;
	int fd, err;

	if (!t->nr)
		return -ENODATA;
	if (whole) {
		h.lo = 0;
		h.hi = UINT64_MAX;
	} else {
		/* the kernel image's symbols: up to the last one below any tagged symbol
		 * and not above the highest untagged one; that last one itself reaches up
		 * to the next symbol, which may come and go, so it is left out */
		nr = 0;
		while (nr < t->nr && t->syms[nr].start <= t->core_max &&
		       t->syms[nr].start < t->tagged_min)
			nr++;
		if (nr < 2)
			return -ENODATA;
		h.lo = t->syms[0].start;
		h.hi = t->syms[nr - 1].start;
		nr--;
	}
	memcpy(h.magic, KC_MAGIC, sizeof(h.magic));
	memcpy(h.id, key->id, sizeof(h.id));
	h.head_len = key->head_len;
	memcpy(h.head, key->head, sizeof(h.head));
	recs = malloc(nr * sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		recs[i].start = t->syms[i].start;
		recs[i].size = t->syms[i].size;
		recs[i].name = pool;
		pool += strlen(t->syms[i].name) + 1;
	}
	names = malloc(pool);
	if (!names) {
		free(recs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		size_t n = strlen(t->syms[i].name) + 1;

		memcpy(names + recs[i].name, t->syms[i].name, n);
	}
	h.nr = nr;
	h.pool_len = pool;
	h.nr_segs = t->nr_segs;
	_Static_assert(sizeof(*t->segs) == sizeof(struct kc_seg), "segments as they are");

	if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		err = tly_mkdir_p(dir, 0755);
		if (err)
			goto out;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = tly_write_all(fd, &h, sizeof(h));
	if (!err)
		err = tly_write_all(fd, recs, nr * sizeof(*recs));
	if (!err && t->nr_segs)
		err = tly_write_all(fd, t->segs, t->nr_segs * sizeof(struct kc_seg));
	if (!err)
		err = tly_write_all(fd, names, pool);
	if (!err && fchmod(fd, 0600))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	/* in place at once: a reader sees the old cache or the new one, never half */
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	free(recs);
	free(names);
	return err;
}

/* ---- reading ----------------------------------------------------------------- */

/* The cache at PATH mapped (*base, *len) once checked: 0, or as tly_kcache__open. */
static int map_cache(const char *path, const struct tly_kcache_key *key, void **basep,
		     size_t *lenp)
{
	struct stat st;
	const struct kc_header *h;
	uint64_t need, recs;
	void *base;
	int fd;

	fd = tly_open_regular(path);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EBADF;
	if (fstat(fd, &st) || (st.st_uid != geteuid() && st.st_uid != 0) ||
	    (st.st_mode & 022) || (size_t)st.st_size < sizeof(*h)) {
		close(fd);
		return -EBADF;	/* another user's (who could write any names in it), or cut */
	}
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return -errno;
	h = base;
	if (memcmp(h->magic, KC_MAGIC, sizeof(h->magic)) || h->version != KC_VERSION ||
	    h->head_len > TLY_KCACHE_HEAD || h->id[sizeof(h->id) - 1]) {
		munmap(base, (size_t)st.st_size);
		return -EBADF;
	}
	if (!key_equal(h, key)) {
		munmap(base, (size_t)st.st_size);
		return -ESTALE;
	}
	/* the size the header promises, and names that end inside the file */
	need = sizeof(*h);
	recs = (uint64_t)st.st_size;	/* no more records or segments than bytes */
	if (h->nr > recs || h->nr_segs > recs || !h->nr || !h->pool_len ||
	    h->pool_len > recs ||
	    need + h->nr * sizeof(struct kc_rec) + h->nr_segs * sizeof(struct kc_seg) +
			    h->pool_len != (uint64_t)st.st_size ||
	    ((const char *)base)[st.st_size - 1] || h->lo > h->hi) {
		munmap(base, (size_t)st.st_size);
		return -EBADF;
	}
	*basep = base;
	*lenp = (size_t)st.st_size;
	return 0;
}

int tly_kcache__open(struct tly_kcache **out, const char *path, const struct tly_kcache_key *key)
{
	struct tly_kcache *c;
	const struct kc_header *h;
	size_t len;
	void *base;
	int err;

	*out = NULL;
	err = map_cache(path, key, &base, &len);
	if (err)
		return err;
	h = base;
	c = calloc(1, sizeof(*c));
	if (c)
		c->made = calloc((size_t)h->nr, sizeof(*c->made));
	if (!c || !c->made) {
		free(c);
		munmap(base, len);
		return -ENOMEM;
	}
	c->base = base;
	c->len = len;
	c->h = h;
	c->recs = (const struct kc_rec *)((const char *)base + sizeof(*h));
	c->segs = (const struct kc_seg *)(c->recs + h->nr);
	c->pool = (const char *)(c->segs + h->nr_segs);
	c->slab_used = SLAB;
	*out = c;
	return 0;
}

void tly_kcache__delete(struct tly_kcache *c)
{
	if (!c)
		return;
	for (struct kc_slab *s = c->slabs, *n; s; s = n) {
		n = s->next;
		free(s);
	}
	free(c->made);
	munmap(c->base, c->len);
	free(c);
}

bool tly_kcache__covers(const struct tly_kcache *c, uint64_t addr)
{
	return c && addr >= c->h->lo && addr < c->h->hi;
}

size_t tly_kcache__nr(const struct tly_kcache *c)
{
	return c ? (size_t)c->h->nr : 0;
}

static const struct tally_symbol *made(struct tly_kcache *c, size_t i)
{
	const struct kc_rec *r = &c->recs[i];
	struct tally_symbol *s;

	if (c->made[i])
		return c->made[i];
	if (r->name >= c->h->pool_len)
		return NULL;	/* damaged: no name rather than another one */
	if (c->slab_used == SLAB) {
		struct kc_slab *sl = malloc(sizeof(*sl));

		if (!sl)
			return NULL;
		sl->next = c->slabs;
		c->slabs = sl;
		c->slab_used = 0;
	}
	s = &c->slabs->s[c->slab_used++];
	*s = (struct tally_symbol){ .start = r->start, .size = r->size, .name = c->pool + r->name };
	c->made[i] = s;
	return s;
}

const struct tally_symbol *tly_kcache__find(struct tly_kcache *c, uint64_t addr)
{
	size_t lo = 0, hi = (size_t)c->h->nr;
	const struct kc_rec *r;

	if (!tly_kcache__covers(c, addr))
		return NULL;
	r = &c->recs[c->last];
	if (addr - r->start < r->size)
		return made(c, c->last);
	/* the last record starting at or below addr: kallsyms symbols reach up to the
	 * next one, so it is the only one that can hold addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->recs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	r = &c->recs[lo - 1];
	if (addr - r->start >= r->size)
		return NULL;
	c->last = lo - 1;
	return made(c, lo - 1);
}

int tly_kcache__load(struct tly_symtab *t, const char *path, const struct tly_kcache_key *key)
{
	const struct kc_header *h;
	const struct kc_rec *r;
	const char *pool;
	size_t len;
	void *base;
	int err = map_cache(path, key, &base, &len);

	if (err)
		return err;
	h = base;
	r = (const struct kc_rec *)((const char *)base + sizeof(*h));
	pool = (const char *)(r + h->nr) + h->nr_segs * sizeof(struct kc_seg);
	if (h->lo || h->hi != UINT64_MAX) {
		munmap(base, len);
		return -EBADF;	/* a table of the kernel image only is no file's whole table */
	}
	memset(t, 0, sizeof(*t));
	t->syms = malloc((size_t)h->nr * sizeof(*t->syms));
	t->segs = calloc(h->nr_segs ? (size_t)h->nr_segs : 1, sizeof(*t->segs));
	if (!t->syms || !t->segs) {
		free(t->syms);
		free(t->segs);
		memset(t, 0, sizeof(*t));
		munmap(base, len);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->nr; i++) {
		if (r[i].name >= h->pool_len) {
			free(t->syms);
			free(t->segs);
			memset(t, 0, sizeof(*t));
			munmap(base, len);
			return -EBADF;
		}
		t->syms[i] = (struct tally_symbol){ .start = r[i].start, .size = r[i].size,
						    .name = pool + r[i].name };
	}
	memcpy(t->segs, r + h->nr, (size_t)h->nr_segs * sizeof(struct kc_seg));
	t->nr = t->cap = (size_t)h->nr;
	t->nr_segs = (size_t)h->nr_segs;
	t->map = base;
	t->map_len = len;
	t->tagged_min = UINT64_MAX;
	return 0;
}
