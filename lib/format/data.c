/*
 * The perf.data reader. The whole input is mapped (regular files) or read into
 * memory once (standard input), and records are delivered in place: nothing is
 * copied except what comes out of the zstd decompressor and what the ordering queue
 * must keep across a COMPRESSED record. Every length and offset is checked against
 * the input; damage is reported with its offset in the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <tally/data.h>
#include "internal/data.h"
#include "internal/reader.h"
#include "internal/util.h"

int tly_data_fail(struct tally_data_error *err, uint64_t off, int ret, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->offset = off;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* ---- open ---------------------------------------------------------------- */

/* The kernel maps a whole large folio of the page cache into a mapping at the first
 * touch of any of its pages when the folio lies inside the VMA (a file THP as one 2 MiB
 * entry; this machine's 6.18 kernel fault-around too, 2 MiB at a time): the walk over the
 * file would hold up to two such folios resident however often release_behind gives
 * pages back, and giving back part of a 2 MiB entry drops all of it. VMAs of 256 KiB or
 * more (every other one VM_NOHUGEPAGE, so the kernel does not merge them again; at most
 * 1024 of them) keep each fault to its fault-around window. */
static void split_map(void *map, size_t size)
{
	size_t w = 256u << 10;

	while (size / w > 1024)
		w *= 2;
	for (size_t o = w; o < size; o += 2 * w)
		madvise((char *)map + o, w < size - o ? w : size - o, MADV_NOHUGEPAGE);
}

static int open_buffer(struct tally_data *d, struct tally_data_error *err)
{
	uint64_t magic, hsize;
	int ret;

	if (d->size == 0)
		return tly_data_fail(err, 0, -ENODATA, "zero-sized data, nothing to do");
	if (d->size < 16)
		return tly_data_fail(err, 0, -EINVAL,
				     "too small for a perf.data header (%zu bytes)", d->size);
	memcpy(&magic, d->buf, 8);
	memcpy(&hsize, d->buf + 8, 8);
	if (magic == __builtin_bswap64(TALLY_PERF_MAGIC2) ||
	    magic == __builtin_bswap64(TALLY_PERF_MAGIC1))
		return tly_data_fail(err, 0, -EPROTONOSUPPORT,
				     "foreign-endian perf.data is not supported");
	if (magic != TALLY_PERF_MAGIC2 && magic != TALLY_PERF_MAGIC1)
		return tly_data_fail(err, 0, -EINVAL, "not a perf.data file (bad magic)");
	if (hsize == sizeof(struct tally_pipe_header)) {
		d->pipe = true;
		d->data_off = 16;
		d->data_end = d->size;
		ret = tly_data_scan_pipe(d, err);
	} else {
		ret = tly_data_open_file_mode(d, err);
	}
	if (ret)
		return ret;
	return tly_data_finish_events(d, err);
}

static struct tally_data *data_new(const char *path)
{
	struct tally_data *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->stream_fd = -1;
	d->path = strdup(path ? path : "(memory)");
	if (!d->path) {
		free(d);
		return NULL;
	}
	return d;
}

int tally_data__open_mem(struct tally_data **out, const void *buf, size_t len,
			 struct tally_data_error *err)
{
	struct tally_data *d = data_new(NULL);
	int ret;

	*out = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	if (!d)
		return -ENOMEM;
	d->buf = buf;
	d->size = len;
	ret = open_buffer(d, err);
	if (ret) {
		tally_data__delete(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* A pipe: read its header records (up to the first SAMPLE, or its end) now; the rest is
 * read while walking, so a long `record -o - | report -i -` never sits in memory whole.
 * Returns 1 when the stream goes on (fd stays open for the walk), 0 at its end. */
static int read_prefix(int fd, uint8_t **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0, pos = 16;
	uint8_t *b = malloc(cap);
	bool eof = false;

	if (!b)
		return -ENOMEM;
	for (;;) {
		uint64_t hsize = 16;
		if (n >= 16)
			memcpy(&hsize, b + 8, 8);
		/* walk the complete records we have (a file-mode layout is read whole) */
		while (hsize == 16 && pos + 8 <= n) {
			struct perf_event_header h;
			uint64_t sz;
			memcpy(&h, b + pos, 8);
			if (h.size < 8 || stream_size(b + pos, &h, n - pos, &sz))
				goto done;	/* damage: the walk reports it */
			if (h.type == PERF_RECORD_SAMPLE)
				goto done;
			if (sz > n - pos)
				break;
			pos += sz;
		}
		if (eof)
			goto done;
		if (n == cap) {
			uint8_t *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(b);
			return e;
		}
		if (r == 0)
			eof = true;
		n += (size_t)r;
	}
done:
	*buf = b;
	*len = n;
	return eof ? 0 : 1;
}

int tally_data__open(struct tally_data **out, const char *path,
		     const struct tally_data_open_opts *opts, struct tally_data_error *err)
{
	struct tally_data *d;
	struct stat st;
	int fd = -1, ret;

	*out = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	if (!path)
		path = "perf.data";
	d = data_new(path);
	if (!d)
		return -ENOMEM;
	bool is_stdin = !strcmp(path, "-");
	/* standard input redirected from a file is mapped like the file itself */
	if (is_stdin && (fstat(STDIN_FILENO, &st) || !S_ISREG(st.st_mode) ||
			 lseek(STDIN_FILENO, 0, SEEK_CUR) != 0)) {
		ret = read_prefix(STDIN_FILENO, &d->owned, &d->size);
		if (ret < 0) {
			tly_data_fail(err, 0, ret, "reading standard input: %s", strerror(-ret));
			goto out;
		}
		if (ret == 1 && (d->stream_fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)) < 0) {
			ret = -errno;
			tly_data_fail(err, 0, ret, "standard input: %s", strerror(errno));
			goto out;
		}
		d->buf = d->owned;
	} else {
		fd = is_stdin ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0) : open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			tly_data_fail(err, 0, ret, "%s", strerror(errno));
			goto out;
		}
		if (fstat(fd, &st)) {
			ret = -errno;
			tly_data_fail(err, 0, ret, "%s", strerror(errno));
			goto out;
		}
		if (S_ISFIFO(st.st_mode)) {
			ret = read_prefix(fd, &d->owned, &d->size);
			if (ret < 0) {
				tly_data_fail(err, 0, ret, "%s", strerror(-ret));
				goto out;
			}
			if (ret == 1) {
				d->stream_fd = fd;
				fd = -1;
			}
			d->buf = d->owned;
		} else {
			if (!S_ISREG(st.st_mode)) {
				ret = tly_data_fail(err, 0, -EINVAL, "not a regular file");
				goto out;
			}
			if (!is_stdin && !(opts && opts->force) && st.st_uid != geteuid() &&
			    st.st_uid != 0) {
				ret = tly_data_fail(err, 0, -EPERM,
						    "file not owned by the current user or "
						    "root (use -f to read it anyway)");
				goto out;
			}
			d->size = (size_t)st.st_size;
			if (d->size) {
				d->map = mmap(NULL, d->size, PROT_READ, MAP_PRIVATE, fd, 0);
				if (d->map == MAP_FAILED) {
					d->map = NULL;
					ret = -errno;
					tly_data_fail(err, 0, ret, "mmap: %s", strerror(errno));
					goto out;
				}
				madvise(d->map, d->size, MADV_SEQUENTIAL);
				split_map(d->map, d->size);
				d->buf = d->map;
			}
		}
	}
	ret = open_buffer(d, err);
	if (!ret && d->stream_fd >= 0 && !d->pipe) {
		ret = tly_data_fail(err, 0, -EINVAL,
				    "a stream must be in pipe mode (perf record -o -)");
	}
out:
	if (fd >= 0)
		close(fd);
	if (ret) {
		tally_data__delete(d);
		return ret;
	}
	*out = d;
	return 0;
}

void tally_data__delete(struct tally_data *d)
{
	if (!d)
		return;
	tly_data_queue_drop(d);
	for (size_t i = 0; i < d->nr_events; i++) {
		free(d->events[i].name);
		free(d->events[i].ids);
	}
	free(d->events);
	free(d->id_keys);
	free(d->id_vals);
	free(d->q);
	free(d->q_tmp);
	free(d->carry);
	if (d->zstd)
		ZSTD_freeDStream(d->zstd);
	if (d->map)
		munmap(d->map, d->size);
	if (d->stream_fd >= 0)
		close(d->stream_fd);
	free(d->owned);
	free(d->path);
	free(d);
}

/* ---- accessors ----------------------------------------------------------- */

bool tally_data__is_pipe(const struct tally_data *d)
{
	return d->pipe;
}

size_t tally_data__nr_events(const struct tally_data *d)
{
	return d->nr_events;
}

const struct tally_data_event *tally_data__event(const struct tally_data *d, size_t idx)
{
	return idx < d->nr_events ? &d->events[idx] : NULL;
}

int tally_data__event_of_id(const struct tally_data *d, uint64_t id)
{
	return id_find(d, id);
}

int tally_data__event_of(const struct tally_data *d, const struct perf_event_header *hdr)
{
	uint64_t id;
	int idx;

	if (!d->nr_events || hdr->type >= 64)
		return -1;
	if (d->nr_events == 1)
		return 0;
	if (tally_record__peek_id(&d->events[0].layout, hdr, &id) == 0) {
		idx = id_find(d, id);
		if (idx >= 0)
			return idx;
	}
	/* Records without an id are decoded with the first event, as perf does. */
	return hdr->type == PERF_RECORD_SAMPLE ? -1 : 0;
}

bool tally_data__has_feature(const struct tally_data *d, enum tally_feature feat)
{
	return feat > 0 && feat < TALLY_FEAT_MAX && d->feats[feat].present;
}

int tally_data__feature(const struct tally_data *d, enum tally_feature feat,
			const void **buf, size_t *len)
{
	if (!tally_data__has_feature(d, feat))
		return -ENOENT;
	*buf = d->feats[feat].buf;
	*len = d->feats[feat].len;
	return 0;
}

const char *tally_data__feature_string(const struct tally_data *d, enum tally_feature feat)
{
	return feat > 0 && feat < TALLY_FEAT_MAX ? d->feat_str[feat] : NULL;
}

int tally_data__feature_strings(const struct tally_data *d, enum tally_feature feat,
				char ***out, size_t *nr)
{
	const unsigned char *buf, *p, *end;
	const void *raw;
	size_t len, room;
	uint32_t n;
	char **v, *text;

	*out = NULL;
	*nr = 0;
	if (tally_data__feature(d, feat, &raw, &len))
		return -ENOENT;
	buf = raw;
	if (len < 4)
		return -EINVAL;
	memcpy(&n, buf, 4);
	if (n > len / 4)
		return -EINVAL;
	/* room: the pointers, and the payload's bytes bound the strings and their NULs */
	room = (n + 1) * sizeof(char *) + len + n;
	v = malloc(room);
	if (!v)
		return -ENOMEM;
	text = (char *)(v + n + 1);
	p = buf + 4;
	end = buf + len;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l;
		size_t sl;

		if (end - p < 4) {
			free(v);
			return -EINVAL;
		}
		memcpy(&l, p, 4);
		p += 4;
		if (l > (size_t)(end - p)) {
			free(v);
			return -EINVAL;
		}
		sl = strnlen((const char *)p, l);
		memcpy(text, p, sl);
		text[sl] = 0;
		v[i] = text;
		text += sl + 1;
		p += l;
	}
	v[n] = NULL;
	*out = v;
	*nr = n;
	return 0;
}

const struct tally_file_header *tally_data__header(const struct tally_data *d)
{
	return &d->hdr;
}

uint64_t tally_data__file_size(const struct tally_data *d)
{
	return d->size;
}

const char *tally_data__path(const struct tally_data *d)
{
	return d->path;
}

uint64_t tally_data__truncated(const struct tally_data *d)
{
	return d->truncated;
}

uint64_t tally_data__nr_unknown_records(const struct tally_data *d)
{
	return d->nr_unknown;
}

uint64_t tally_data__nr_consumed_records(const struct tally_data *d)
{
	return d ? d->nr_consumed : 0;
}
