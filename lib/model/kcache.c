/*
 * The symbol table caches (see internal/kcache.h for what they are and when they may
 * answer): a header with the key, an index of blocks, an ELF file's segments, then the
 * symbols sorted by address in blocks of KC_BLOCK: each block its fixed-size records
 * (start, size, name offset), then its names, then NULs up to a multiple of 8 bytes.
 *
 * They are read with pread(), not mapped: a lookup in a kallsyms table reads the one
 * block it lands in, once. (A mapping would be paged in 64 KiB at a time around every
 * touch, fault-around, and a report's scattered kernel addresses would make most of a
 * 6 MB table resident.) struct tally_symbol values are made per block read, so the
 * pointers handed out stay put. An ELF table is read whole, a chunk of blocks at a time,
 * keeping the symbols and their names but not the records (a quarter of the memory);
 * chunks of 32 KiB, so that the buffer adds little to a small table's peak.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/kcache.h"
#include "internal/util.h"

#define KC_MAGIC "TLYKSYM\0"
/* 4: the names of C++ lambdas in const member functions (tly_demangle) changed; a
 * cache holds names as demangled when it was written, so a naming change bumps this */
#define KC_VERSION 4
#define KC_BLOCK 64	/* symbols per block */

struct kc_header {
	char magic[8];
	uint32_t version, head_len;
	char id[256];
	uint64_t nr, nr_blocks, nr_segs;
	uint64_t lo, hi;		/* covered addresses: [lo, hi) */
	char head[TLY_KCACHE_HEAD];
};

struct kc_index {
	uint64_t first;			/* the block's first start */
	uint64_t off, len;		/* where the block is in the file */
};

struct kc_rec {
	uint64_t start, size, name;	/* name: offset in the block's names */
};

struct kc_seg {
	uint64_t offset, vaddr, filesz;	/* an ELF file's PT_LOAD segment */
};

_Static_assert(sizeof(struct kc_header) % 8 == 0, "the index follows the header aligned");

struct kc_block {
	struct tally_symbol *syms;	/* its symbols, names in data */
	size_t nr;
	char *data;
};

struct tly_kcache {
	int fd;
	struct kc_header h;
	struct kc_index *index;
	struct kc_block *blocks;	/* per index entry, read on first find */
	size_t last;			/* the block found last: samples repeat */
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

static size_t block_nr(size_t nr, size_t b)
{
	return nr - b * KC_BLOCK < KC_BLOCK ? nr - b * KC_BLOCK : KC_BLOCK;
}

int tly_kcache__write(const char *path, const struct tly_kcache_key *key,
		      const struct tly_symtab *t, bool whole)
{
	struct kc_header h = { .version = KC_VERSION };
	char tmp[PATH_MAX], dir[PATH_MAX], *slash;
	size_t nr = t->nr, nblocks, at;
	struct kc_index *index = NULL;
	struct tly_buf body = { 0 };
	int fd, err = 0;

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
	nblocks = (nr + KC_BLOCK - 1) / KC_BLOCK;
	h.nr = nr;
	h.nr_blocks = nblocks;
	h.nr_segs = t->nr_segs;
	_Static_assert(sizeof(*t->segs) == sizeof(struct kc_seg), "segments as they are");
	index = calloc(nblocks, sizeof(*index));
	if (!index)
		return -ENOMEM;
	at = sizeof(h) + nblocks * sizeof(*index) + t->nr_segs * sizeof(struct kc_seg);
	for (size_t b = 0; b < nblocks && !err; b++) {
		const struct tally_symbol *sy = t->syms + b * KC_BLOCK;
		size_t n = block_nr(nr, b), names = 0, before = body.len;

		for (size_t i = 0; i < n && !err; i++) {
			struct kc_rec r = { .start = sy[i].start, .size = sy[i].size, .name = names };

			names += strlen(sy[i].name) + 1;
			err = tly_buf__append(&body, &r, sizeof(r));
		}
		for (size_t i = 0; i < n && !err; i++)
			err = tly_buf__append(&body, sy[i].name, strlen(sy[i].name) + 1);
		/* NULs up to 8 bytes: the next block's records are read in place */
		while (!err && body.len % 8)
			err = tly_buf__append(&body, "", 1);
		index[b] = (struct kc_index){ .first = sy[0].start, .off = at + before,
					      .len = body.len - before };
	}
	if (err)
		goto out;

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
		err = tly_write_all(fd, index, nblocks * sizeof(*index));
	if (!err && t->nr_segs)
		err = tly_write_all(fd, t->segs, t->nr_segs * sizeof(struct kc_seg));
	if (!err)
		err = tly_write_all(fd, body.data, body.len);
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
	free(index);
	tly_buf__exit(&body);
	return err;
}

/* ---- reading ----------------------------------------------------------------- */

/* pread() all of LEN bytes at OFF: 0, or -EBADF when the file is shorter. */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EBADF;
		done += (size_t)r;
	}
	return 0;
}

/* The cache at PATH opened (*fdp) once its header (*h) and index (*indexp, malloc'd)
 * are checked: 0, or as tly_kcache__open. */
static int open_cache(const char *path, const struct tly_kcache_key *key, int *fdp,
		      struct kc_header *h, struct kc_index **indexp, struct kc_seg **segsp)
{
	struct kc_index *index = NULL;
	struct kc_seg *segs = NULL;
	struct stat st;
	uint64_t size, at;
	int fd, err;

	fd = tly_open_regular(path);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -EBADF;
	if (fstat(fd, &st) || (st.st_uid != geteuid() && st.st_uid != 0) ||
	    (st.st_mode & 022) || (size_t)st.st_size < sizeof(*h)) {
		close(fd);
		return -EBADF;	/* another user's (who could write any names in it), or cut */
	}
	size = (uint64_t)st.st_size;
	err = read_at(fd, h, sizeof(*h), 0);
	if (err)
		goto fail;
	err = -EBADF;
	if (memcmp(h->magic, KC_MAGIC, sizeof(h->magic)) || h->version != KC_VERSION ||
	    h->head_len > TLY_KCACHE_HEAD || h->id[sizeof(h->id) - 1])
		goto fail;
	if (!key_equal(h, key)) {
		err = -ESTALE;
		goto fail;
	}
	/* sizes that fit the file, blocks in order inside it and covering every record */
	if (!h->nr || h->nr_blocks != (h->nr + KC_BLOCK - 1) / KC_BLOCK ||
	    h->nr_blocks > size / sizeof(*index) || h->nr_segs > size / sizeof(*segs) ||
	    h->lo > h->hi)
		goto fail;
	at = sizeof(*h) + h->nr_blocks * sizeof(*index) + h->nr_segs * sizeof(*segs);
	if (at > size)
		goto fail;
	index = malloc((size_t)h->nr_blocks * sizeof(*index));
	segs = calloc(h->nr_segs ? (size_t)h->nr_segs : 1, sizeof(*segs));
	if (!index || !segs) {
		err = -ENOMEM;
		goto fail;
	}
	err = read_at(fd, index, (size_t)h->nr_blocks * sizeof(*index), sizeof(*h));
	if (!err && h->nr_segs)
		err = read_at(fd, segs, (size_t)h->nr_segs * sizeof(*segs),
			      sizeof(*h) + h->nr_blocks * sizeof(*index));
	if (err)
		goto fail;
	err = -EBADF;
	for (uint64_t b = 0; b < h->nr_blocks; b++) {
		uint64_t n = block_nr((size_t)h->nr, (size_t)b);

		if (index[b].off != at || index[b].len > size - at || index[b].len % 8 ||
		    index[b].len <= n * sizeof(struct kc_rec) ||
		    (b && index[b].first < index[b - 1].first))
			goto fail;
		at += index[b].len;
	}
	if (at != size)
		goto fail;
	*fdp = fd;
	*indexp = index;
	if (segsp)
		*segsp = segs;
	else
		free(segs);
	return 0;
fail:
	free(index);
	free(segs);
	close(fd);
	return err;
}

/* Block b's records and names checked and made into symbols (names in data). */
static int parse_block(const struct kc_index *ix, size_t n, char *data, struct tally_symbol *syms)
{
	const struct kc_rec *r = (const struct kc_rec *)data;
	const char *names = data + n * sizeof(*r);
	size_t nlen = (size_t)ix->len - n * sizeof(*r);

	if (data[ix->len - 1])
		return -EBADF;	/* the last name ends the block */
	for (size_t i = 0; i < n; i++) {
		if (r[i].name >= nlen || (i && r[i].start < r[i - 1].start))
			return -EBADF;
		syms[i] = (struct tally_symbol){ .start = r[i].start, .size = r[i].size,
						 .name = names + r[i].name };
	}
	return 0;
}

int tly_kcache__open(struct tly_kcache **out, const char *path, const struct tly_kcache_key *key)
{
	struct tly_kcache *c = calloc(1, sizeof(*c));
	int err;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	err = open_cache(path, key, &c->fd, &c->h, &c->index, NULL);
	if (!err && !(c->blocks = calloc((size_t)c->h.nr_blocks, sizeof(*c->blocks)))) {
		free(c->index);
		close(c->fd);
		err = -ENOMEM;
	}
	if (err) {
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

void tly_kcache__delete(struct tly_kcache *c)
{
	if (!c)
		return;
	for (size_t b = 0; b < c->h.nr_blocks; b++) {
		free(c->blocks[b].syms);
		free(c->blocks[b].data);
	}
	free(c->blocks);
	free(c->index);
	close(c->fd);
	free(c);
}

bool tly_kcache__covers(const struct tly_kcache *c, uint64_t addr)
{
	return c && addr >= c->h.lo && addr < c->h.hi;
}

size_t tly_kcache__nr(const struct tly_kcache *c)
{
	return c ? (size_t)c->h.nr : 0;
}

/* Block b read in (NULL: it cannot be, damaged or no memory: no symbol rather than
 * another one). */
static struct kc_block *block(struct tly_kcache *c, size_t b)
{
	struct kc_block *k = &c->blocks[b];
	size_t n = block_nr((size_t)c->h.nr, b);

	if (k->syms)
		return k;
	k->data = malloc((size_t)c->index[b].len);
	k->syms = malloc(n * sizeof(*k->syms));
	if (!k->data || !k->syms || read_at(c->fd, k->data, (size_t)c->index[b].len,
					    c->index[b].off) ||
	    parse_block(&c->index[b], n, k->data, k->syms)) {
		free(k->data);
		free(k->syms);
		k->data = NULL;
		k->syms = NULL;
		return NULL;
	}
	k->nr = n;
	return k;
}

const struct tally_symbol *tly_kcache__find(struct tly_kcache *c, uint64_t addr)
{
	size_t lo = 0, hi = (size_t)c->h.nr_blocks, b;
	struct kc_block *k;

	if (!tly_kcache__covers(c, addr))
		return NULL;
	/* the last block starting at or below addr: kallsyms symbols reach up to the next
	 * one, so the symbol holding addr, if any, is the last one there at or below it */
	if (c->last < hi && c->index[c->last].first <= addr &&
	    (c->last + 1 == hi || c->index[c->last + 1].first > addr)) {
		b = c->last;
	} else {
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (c->index[mid].first <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			return NULL;
		b = lo - 1;
	}
	k = block(c, b);
	if (!k)
		return NULL;
	c->last = b;
	lo = 0;
	hi = k->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - k->syms[lo - 1].start >= k->syms[lo - 1].size)
		return NULL;
	return &k->syms[lo - 1];
}

#define KC_CHUNK ((size_t)32 << 10)	/* bytes read at once by a whole-table load */

/* Blocks b .. e-1 in buf made into t's symbols from b's on, their names copied to names
 * (from offset *at on): the records are not kept, only what the symbols point to. */
static int take_blocks(const struct kc_header *h, const struct kc_index *index, size_t b,
		       size_t e, char *buf, struct tly_symtab *t, char *names, size_t *at)
{
	for (; b < e; b++) {
		size_t n = block_nr((size_t)h->nr, b), recs = n * sizeof(struct kc_rec);
		size_t nlen = (size_t)index[b].len - recs;
		struct tally_symbol *syms = t->syms + b * KC_BLOCK;
		int err;

		err = parse_block(&index[b], n, buf, syms);
		if (err)
			return err;
		memcpy(names + *at, buf + recs, nlen);
		for (size_t i = 0; i < n; i++)
			syms[i].name = names + *at + (syms[i].name - (buf + recs));
		*at += nlen;
		buf += index[b].len;
	}
	return 0;
}

/* Every block read, KC_CHUNK bytes at a time, into t's symbols and names (t->blob). */
static int load_blocks(int fd, const struct kc_header *h, const struct kc_index *index,
		       struct tly_symtab *t)
{
	size_t nb = (size_t)h->nr_blocks, total = 0, at = 0;
	char *buf = malloc(KC_CHUNK), *names;
	int err = 0;

	for (size_t b = 0; b < nb; b++)
		total += (size_t)index[b].len - block_nr((size_t)h->nr, b) * sizeof(struct kc_rec);
	names = malloc(total);
	t->syms = malloc((size_t)h->nr * sizeof(*t->syms));
	t->blob = names;
	if (!buf || !names || !t->syms)
		err = -ENOMEM;
	for (size_t b = 0, e; !err && b < nb; b = e) {
		size_t len = 0;
		char *big = NULL;

		for (e = b; e < nb && (e == b || len + index[e].len <= KC_CHUNK); e++)
			len += (size_t)index[e].len;
		if (len > KC_CHUNK && !(big = malloc(len))) {	/* one block above KC_CHUNK */
			err = -ENOMEM;
			break;
		}
		err = read_at(fd, big ? big : buf, len, index[b].off);
		if (!err)
			err = take_blocks(h, index, b, e, big ? big : buf, t, names, &at);
		free(big);
	}
	free(buf);
	return err;
}

int tly_kcache__load(struct tly_symtab *t, const char *path, const struct tly_kcache_key *key)
{
	struct kc_header h;
	struct kc_index *index = NULL;
	struct kc_seg *segs = NULL;
	int fd, err = open_cache(path, key, &fd, &h, &index, &segs);

	if (err)
		return err;
	err = -EBADF;
	memset(t, 0, sizeof(*t));
	if (h.lo || h.hi != UINT64_MAX)
		goto out;	/* a table of the kernel image only is no file's whole table */
	err = load_blocks(fd, &h, index, t);
	if (err)
		goto out;
	t->nr = t->cap = (size_t)h.nr;
	t->segs = (void *)segs;
	t->nr_segs = (size_t)h.nr_segs;
	segs = NULL;
	t->tagged_min = UINT64_MAX;
out:
	if (err) {
		free(t->syms);
		free(t->blob);
		memset(t, 0, sizeof(*t));
	}
	free(segs);
	free(index);
	close(fd);
	return err;
}
