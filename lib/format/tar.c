/*
 * tar archives (POSIX.1-2001: ustar headers, pax 'x' headers for long names), through
 * libbz2 when asked: the format of `perf archive`'s perf.data.tar.bz2. Entries are
 * owned by root (uid/gid 0): unpacked by root they are root's, by anyone else theirs,
 * and either way the build-id cache takes them as trusted owners (buildid-cache.h).
 */
#include <bzlib.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/tar.h"
#include "internal/util.h"

#define BLOCK 512
#define RECORD (20 * BLOCK)

struct tly_tar {
	int fd;
	bool bzip2;
	bz_stream bz;
	bool bz_open;
	uint64_t written;	/* uncompressed bytes */
	int err;
	char out[65536];
};


/* Compress and write LEN bytes (FINISH: end the stream). */
static int put(struct tly_tar *t, const void *buf, size_t len, bool finish)
{
	int ret;

	if (t->err)
		return t->err;
	if (!t->bzip2) {
		t->err = tly_write_all(t->fd, buf, len);
		return t->err;
	}
	t->bz.next_in = (char *)buf;
	t->bz.avail_in = (unsigned)len;
	do {
		t->bz.next_out = t->out;
		t->bz.avail_out = sizeof(t->out);
		ret = BZ2_bzCompress(&t->bz, finish ? BZ_FINISH : BZ_RUN);
		if (ret != BZ_RUN_OK && ret != BZ_FINISH_OK && ret != BZ_STREAM_END) {
			t->err = -EIO;
			return t->err;
		}
		t->err = tly_write_all(t->fd, t->out, sizeof(t->out) - t->bz.avail_out);
		if (t->err)
			return t->err;
	} while (t->bz.avail_in || (finish && ret != BZ_STREAM_END));
	return 0;
}

static int put_data(struct tly_tar *t, const void *buf, size_t len)
{
	int err = put(t, buf, len, false);

	if (!err)
		t->written += len;
	return err;
}

static int pad(struct tly_tar *t)
{
	static const char zero[BLOCK];
	size_t rest = (size_t)(t->written % BLOCK);

	return rest ? put_data(t, zero, BLOCK - rest) : 0;
}

int tly_tar__open(struct tly_tar **out, int fd, bool bzip2)
{
	struct tly_tar *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->fd = fd;
	t->bzip2 = bzip2;
	if (bzip2) {
		/* block size 9 (900k), as bzip2 and tar -j use */
		if (BZ2_bzCompressInit(&t->bz, 9, 0, 0) != BZ_OK) {
			free(t);
			return -ENOMEM;
		}
		t->bz_open = true;
	}
	*out = t;
	return 0;
}

void tly_tar__delete(struct tly_tar *t)
{
	if (!t)
		return;
	if (t->bz_open)
		BZ2_bzCompressEnd(&t->bz);
	free(t);
}

/* LEN-1 octal digits and a NUL (values too big for them were refused earlier). */
static void octal(char *field, size_t len, uint64_t v)
{
	field[len - 1] = 0;
	for (size_t i = len - 1; i-- > 0; v >>= 3)
		field[i] = (char)('0' + (v & 7));
}

/* One header block. NAME/LINK already fit (the caller made a pax header otherwise). */
static int header(struct tly_tar *t, const char *name, char type, mode_t mode, uint64_t size,
		  time_t mtime, const char *link)
{
	char h[BLOCK];
	unsigned sum = 0;
	size_t n = strlen(name), split = 0;

	memset(h, 0, sizeof(h));
	if (n > 100) {
		/* ustar: prefix (155) '/' name (100) */
		for (size_t i = n - 1; i > 0; i--) {
			if (name[i] == '/' && n - i - 1 <= 100 && i <= 155) {
				split = i;
				break;
			}
		}
		memcpy(h + 345, name, split);
		memcpy(h, name + split + 1, n - split - 1);
	} else {
		memcpy(h, name, n);
	}
	octal(h + 100, 8, mode & 07777);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, size);
	octal(h + 136, 12, (uint64_t)(mtime > 0 ? mtime : 0));
	memset(h + 148, ' ', 8);
	h[156] = type;
	if (link)
		memcpy(h + 157, link, strlen(link));
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memcpy(h + 265, "root", 4);
	memcpy(h + 297, "root", 4);
	for (size_t i = 0; i < sizeof(h); i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	return put_data(t, h, sizeof(h));
}

static bool fits_ustar(const char *name)
{
	size_t n = strlen(name);

	if (n <= 100)
		return true;
	for (size_t i = n - 1; i > 0; i--)
		if (name[i] == '/' && n - i - 1 <= 100 && i <= 155)
			return true;
	return false;
}

/* A pax record "LEN key=value\n", LEN counting itself. */
static size_t pax_record(char *buf, size_t cap, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, len = body + 1;

	while ((size_t)snprintf(NULL, 0, "%zu", len) + body != len)
		len++;
	return (size_t)snprintf(buf, cap, "%zu %s=%s\n", len, key, value);
}

/* Name and link as the entry's header can hold them, with a pax header first when
 * they do not fit. */
static int entry(struct tly_tar *t, const char *name, char type, mode_t mode, uint64_t size,
		 time_t mtime, const char *link)
{
	char pax[2 * 4096 + 64], short_name[101];
	size_t len = 0;
	int err;

	if (t->err)
		return t->err;
	if (!fits_ustar(name))
		len += pax_record(pax + len, sizeof(pax) - len, "path", name);
	if (link && strlen(link) > 100)
		len += pax_record(pax + len, sizeof(pax) - len, "linkpath", link);
	if (len >= sizeof(pax))
		return t->err = -ENAMETOOLONG;
	if (len) {
		err = header(t, "PaxHeaders/entry", 'x', 0644, len, mtime, NULL);
		if (!err)
			err = put_data(t, pax, len);
		if (!err)
			err = pad(t);
		if (err)
			return err;
	}
	if (!fits_ustar(name)) {
		snprintf(short_name, sizeof(short_name), "%.100s", name);
		name = short_name;
	}
	return header(t, name, type, mode, size, mtime, link && strlen(link) > 100 ? NULL : link);
}

int tly_tar__add_dir(struct tly_tar *t, const char *name, mode_t mode, time_t mtime)
{
	char buf[4096 + 2];

	snprintf(buf, sizeof(buf), "%s%s", name, name[0] && name[strlen(name) - 1] == '/' ? "" : "/");
	return entry(t, buf, '5', mode, 0, mtime, NULL);
}

int tly_tar__add_symlink(struct tly_tar *t, const char *name, const char *target, time_t mtime)
{
	return entry(t, name, '2', 0777, 0, mtime, target);
}

int tly_tar__add_file(struct tly_tar *t, const char *name, int fd, uint64_t size, mode_t mode,
		      time_t mtime)
{
	char buf[65536];
	uint64_t done = 0;
	int err;

	if (size >= (1ULL << 33))
		return t->err = -EFBIG;	/* 11 octal digits: 8 GiB */
	err = entry(t, name, '0', mode, size, mtime, NULL);

	while (!err && done < size) {
		size_t want = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
		ssize_t r = pread(fd, buf, want, (off_t)done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = t->err = r < 0 ? -errno : -EIO;
			break;
		}
		err = put_data(t, buf, (size_t)r);
		done += (uint64_t)r;
	}
	return err ? err : pad(t);
}

int tly_tar__finish(struct tly_tar *t)
{
	static const char zero[BLOCK];
	int err = put_data(t, zero, BLOCK);

	if (!err)
		err = put_data(t, zero, BLOCK);
	while (!err && t->written % RECORD)
		err = put_data(t, zero, BLOCK);
	if (!err && t->bzip2)
		err = put(t, NULL, 0, true);
	return err;
}
