/*
 * perf.data writer: file and pipe modes, header features, zstd compression
 * (see include/tally/writer.h). Host-description and tracing-data feature builders
 * live in writer-features.c and writer-tracing.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <tally/writer.h>
#include "internal/util.h"
#include "internal/writer.h"

#define OUT_BUF_SIZE	(256 * 1024)
#define COMP_CHUNK	(60 * 1024)	/* input per COMPRESSED record: output must fit u16 */
#define COMP_MAX_OUT	(65535 - 8)
#define DEFAULT_COMP_MMAP_LEN 528384

/* The attr size the file states and writes, in the attr section, in EVENT_DESC and in
 * pipe HEADER_ATTRs alike: perf 6.1's 128 bytes (newer kernel headers have 136, which
 * 6.1 cannot read), or this header's own size if it is smaller. A stated size other
 * than the bytes written would shift every id after the first attr. */
#define FILE_ATTR_SIZE \
	(sizeof(struct perf_event_attr) < TALLY_ATTR_SIZE_MAX_COMPAT ? \
	 sizeof(struct perf_event_attr) : (size_t)TALLY_ATTR_SIZE_MAX_COMPAT)

struct wevent {
	struct perf_event_attr attr;	/* attr.size is always FILE_ATTR_SIZE */
	char *name;
	uint64_t *ids;
	size_t nr_ids;
};

struct wgroup {
	char *name;
	int leader, nr;
};

struct wfeat {
	void *data;
	size_t len;
	bool set;
};

struct tally_writer {
	int fd;
	bool own_fd;
	bool pipe;
	char *path;
	struct tally_writer_opts opts;

	struct wevent *ev;
	size_t nr_ev;
	struct wgroup *groups;
	size_t nr_groups;
	struct wfeat feat[TALLY_FEAT_MAX];
	struct tly_buf buildids;

	bool started, finished;
	int error;			/* first write error, sticky */

	uint64_t data_offset;		/* file mode */
	uint64_t committed;		/* bytes of whole records in the data section on disk */
	uint64_t data_bytes;		/* uncompressed record bytes given to write() */
	uint64_t out_bytes;

	unsigned char *obuf;		/* whole (possibly compressed) records to write */
	size_t olen;
	struct tly_aio *aio;		/* opts.aio: the AIO blocks (NULL: write(2)) */
	uint64_t aio_off;		/* the file offset of the next AIO block */

	ZSTD_CCtx *zc;
	unsigned char *cin;		/* pending uncompressed records */
	size_t cin_len;
	unsigned char *cout;
	uint64_t comp_in, comp_out;
};

/* ---- low-level output -------------------------------------------------------- */

/* Length of the whole records at the start of P covering at most N bytes. */
static size_t whole_records(const unsigned char *p, size_t total, size_t n)
{
	size_t off = 0;

	while (off + sizeof(struct perf_event_header) <= total) {
		struct perf_event_header h;

		memcpy(&h, p + off, sizeof(h));
		if (!h.size || off + h.size > n)
			break;
		off += h.size;
	}
	return off;
}

/* Write all of P (whole records when DATA). On failure remember the error and, for
 * data, how many whole records made it to the file. */
static int out_write(struct tally_writer *w, const void *p, size_t n, bool data)
{
	size_t done = 0;

	if (w->error)
		return w->error;
	while (done < n) {
		ssize_t r = write(w->fd, (const char *)p + done, n - done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {	/* a non-blocking pipe: wait for room */
				struct pollfd pfd = { w->fd, POLLOUT, 0 };

				if (poll(&pfd, 1, -1) >= 0 || errno == EINTR)
					continue;
			}
			w->error = -errno;
			break;
		}
		if (r == 0) {
			w->error = -EIO;
			break;
		}
		done += (size_t)r;
	}
	w->out_bytes += done;
	if (data)
		w->committed += w->error ? whole_records(p, n, done) : n;
	return w->error;
}

/* Bytes of AIO blocks done: on disk, in order. */
static int aio_account(struct tally_writer *w, int err, uint64_t done)
{
	w->out_bytes += done;
	w->committed += done;
	if (err && !w->error)
		w->error = err;
	return w->error;
}

/* Every AIO block done, and the file position after them for write(2). */
static int aio_sync(struct tally_writer *w)
{
	uint64_t done = 0;
	int err;

	if (!w->aio)
		return w->error;
	err = tly_aio__wait(w->aio, &done);
	if (aio_account(w, err, done))
		return w->error;
	if (lseek(w->fd, (off_t)w->aio_off, SEEK_SET) < 0)
		w->error = -errno;
	return w->error;
}

static int obuf_flush(struct tally_writer *w)
{
	uint64_t done = 0;
	int err;

	if (!w->olen)
		return w->error;
	if (w->aio && !w->error) {
		err = tly_aio__write(w->aio, &w->obuf, w->olen, w->aio_off, &done);
		w->aio_off += w->olen;
		w->olen = 0;
		return aio_account(w, err, done);
	}
	err = out_write(w, w->obuf, w->olen, true);
	w->olen = 0;
	return err;
}

/* Queue whole records for output. */
static int obuf_add(struct tally_writer *w, const void *p, size_t n)
{
	int err;

	if (w->olen + n > OUT_BUF_SIZE) {
		err = obuf_flush(w);
		if (err)
			return err;
	}
	if (n > OUT_BUF_SIZE) {
		if (aio_sync(w))
			return w->error;
		w->aio_off += n;
		return out_write(w, p, n, true);
	}
	memcpy(w->obuf + w->olen, p, n);
	w->olen += n;
	return 0;
}

/* ---- compression ------------------------------------------------------------- */

/* Compress P into one or more COMPRESSED records (a frame per record). */
static int compress_out(struct tally_writer *w, const unsigned char *p, size_t n)
{
	while (n) {
		size_t take = n, r;
		struct perf_event_header h;

		for (;;) {
			r = ZSTD_compress2(w->zc, w->cout + sizeof(h), COMP_MAX_OUT, p, take);
			if (!ZSTD_isError(r))
				break;
			if (ZSTD_getErrorCode(r) != ZSTD_error_dstSize_tooSmall || take < 1024)
				return w->error = -EIO;
			take /= 2;	/* incompressible: split (readers join records across chunks) */
		}
		h.type = TALLY_RECORD_COMPRESSED;
		h.misc = 0;
		h.size = (uint16_t)(sizeof(h) + r);
		memcpy(w->cout, &h, sizeof(h));
		w->comp_in += take;
		w->comp_out += sizeof(h) + r;
		if (obuf_add(w, w->cout, sizeof(h) + r))
			return w->error;
		p += take;
		n -= take;
	}
	return 0;
}

static int compress_flush(struct tally_writer *w)
{
	int err;

	if (!w->cin_len)
		return w->error;
	err = compress_out(w, w->cin, w->cin_len);
	w->cin_len = 0;
	return err;
}

/* ---- open / delete ----------------------------------------------------------- */

static int writer_new(struct tally_writer **out, int fd, bool own, const char *path,
		      const struct tally_writer_opts *opts)
{
	struct tally_writer *w = calloc(1, sizeof(*w));
	struct stat st;

	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->own_fd = own;
	if (opts)
		w->opts = *opts;
	if (w->opts.compress_level < 0 || w->opts.compress_level > ZSTD_maxCLevel()) {
		free(w);
		return -EINVAL;
	}
	w->pipe = w->opts.pipe;
	if (!w->pipe && (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
			 lseek(fd, 0, SEEK_CUR) < 0))
		w->pipe = true;
	if (path && !(w->path = strdup(path)))
		goto nomem;
	w->obuf = malloc(OUT_BUF_SIZE);
	if (!w->obuf)
		goto nomem;
	if (w->opts.aio && !w->pipe) {
		int err = tly_aio__new(&w->aio, fd, w->opts.aio, OUT_BUF_SIZE);

		if (err) {
			w->own_fd = false;
			tally_writer__delete(w);
			return err;
		}
	}
	if (w->opts.compress_level) {
		w->zc = ZSTD_createCCtx();
		w->cin = malloc(COMP_CHUNK);
		w->cout = malloc(65536);
		if (!w->zc || !w->cin || !w->cout)
			goto nomem;
		if (ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel,
							w->opts.compress_level)))
			goto nomem;
		if (!w->opts.comp_mmap_len)
			w->opts.comp_mmap_len = DEFAULT_COMP_MMAP_LEN;
	}
	*out = w;
	return 0;
nomem:
	w->own_fd = false;
	tally_writer__delete(w);
	return -ENOMEM;
}

int tally_writer__open(struct tally_writer **out, const char *path,
		       const struct tally_writer_opts *opts)
{
	struct tally_writer_opts o = opts ? *opts : (struct tally_writer_opts){0};
	struct stat st;
	int fd, err;

	*out = NULL;
	if (!path)
		return -EINVAL;
	if (!strcmp(path, "-")) {
		o.pipe = true;
		return writer_new(out, STDOUT_FILENO, false, path, &o);
	}
	if (!o.pipe && !o.no_backup && !stat(path, &st) && S_ISREG(st.st_mode) && st.st_size) {
		char old[PATH_MAX];

		if (snprintf(old, sizeof(old), "%s.old", path) >= (int)sizeof(old))
			return -ENAMETOOLONG;
		if (rename(path, old))
			return -errno;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = writer_new(out, fd, true, path, &o);
	if (err)
		close(fd);
	return err;
}

int tally_writer__open_fd(struct tally_writer **out, int fd,
			  const struct tally_writer_opts *opts)
{
	*out = NULL;
	if (fd < 0)
		return -EBADF;
	return writer_new(out, fd, false, NULL, opts);
}

void tally_writer__delete(struct tally_writer *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->nr_ev; i++) {
		free(w->ev[i].name);
		free(w->ev[i].ids);
	}
	free(w->ev);
	for (i = 0; i < w->nr_groups; i++)
		free(w->groups[i].name);
	free(w->groups);
	for (i = 0; i < TALLY_FEAT_MAX; i++)
		free(w->feat[i].data);
	tly_buf__exit(&w->buildids);
	tly_aio__delete(w->aio);	/* waits for the blocks in flight */
	free(w->obuf);
	free(w->cin);
	free(w->cout);
	ZSTD_freeCCtx(w->zc);
	if (w->own_fd)
		close(w->fd);
	free(w->path);
	free(w);
}

bool tally_writer__is_pipe(const struct tally_writer *w)
{
	return w->pipe;
}

const char *tally_writer__path(const struct tally_writer *w)
{
	return w->path;
}

/* ---- events ------------------------------------------------------------------ */

int tally_writer__add_event(struct tally_writer *w, const struct perf_event_attr *attr,
			    const char *name, const uint64_t *ids, size_t nr_ids)
{
	struct wevent *ev;
	int err;

	if (w->started)
		return -EBUSY;
	ev = realloc(w->ev, (w->nr_ev + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	w->ev = ev;
	ev = &w->ev[w->nr_ev];
	memset(ev, 0, sizeof(*ev));
	/* the caller's attr may be older (smaller) or newer than ours: its known part */
	memcpy(&ev->attr, attr, attr->size && attr->size < FILE_ATTR_SIZE ? attr->size
									  : FILE_ATTR_SIZE);
	ev->attr.size = FILE_ATTR_SIZE;
	if (name && !(ev->name = strdup(name)))
		return -ENOMEM;
	w->nr_ev++;
	err = tally_writer__add_event_ids(w, (int)w->nr_ev - 1, ids, nr_ids);
	if (err) {
		w->nr_ev--;
		free(ev->name);
		return err;
	}
	return (int)w->nr_ev - 1;
}

int tally_writer__add_event_ids(struct tally_writer *w, int idx, const uint64_t *ids,
				size_t nr_ids)
{
	struct wevent *ev;
	uint64_t *n;

	if (idx < 0 || (size_t)idx >= w->nr_ev)
		return -EINVAL;
	if (w->started)
		return -EBUSY;
	if (!nr_ids)
		return 0;
	ev = &w->ev[idx];
	n = realloc(ev->ids, (ev->nr_ids + nr_ids) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memcpy(n + ev->nr_ids, ids, nr_ids * sizeof(*n));
	ev->ids = n;
	ev->nr_ids += nr_ids;
	return 0;
}

size_t tally_writer__nr_events(const struct tally_writer *w)
{
	return w->nr_ev;
}

int tly_writer__event(const struct tally_writer *w, size_t idx,
		      const struct perf_event_attr **attr, const char **name)
{
	if (idx >= w->nr_ev)
		return -EINVAL;
	*attr = &w->ev[idx].attr;
	*name = w->ev[idx].name;
	return 0;
}

int tally_writer__add_group(struct tally_writer *w, const char *name, int leader,
			    int nr_members)
{
	struct wgroup *g;

	if (leader < 0 || nr_members < 1)
		return -EINVAL;
	g = realloc(w->groups, (w->nr_groups + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	w->groups = g;
	g = &w->groups[w->nr_groups];
	g->leader = leader;
	g->nr = nr_members;
	g->name = NULL;
	if (name && !(g->name = strdup(name)))
		return -ENOMEM;
	w->nr_groups++;
	return 0;
}

/* ---- features ---------------------------------------------------------------- */

int tally_writer__set_feature(struct tally_writer *w, enum tally_feature feat,
			      const void *payload, size_t len)
{
	void *copy = NULL;

	if (feat <= 0 || feat >= TALLY_FEAT_MAX || (len && !payload))
		return -EINVAL;
	if (len) {
		copy = malloc(len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, payload, len);
	}
	free(w->feat[feat].data);
	w->feat[feat].data = copy;
	w->feat[feat].len = len;
	w->feat[feat].set = true;
	return 0;
}

void tally_writer__clear_feature(struct tally_writer *w, enum tally_feature feat)
{
	if (feat <= 0 || feat >= TALLY_FEAT_MAX)
		return;
	free(w->feat[feat].data);
	memset(&w->feat[feat], 0, sizeof(w->feat[feat]));
}

bool tally_writer__has_feature(const struct tally_writer *w, enum tally_feature feat)
{
	return feat > 0 && feat < TALLY_FEAT_MAX && w->feat[feat].set;
}

const void *tally_writer__feature(const struct tally_writer *w, enum tally_feature feat,
				  size_t *len)
{
	*len = 0;
	if (!tally_writer__has_feature(w, feat))
		return NULL;
	*len = w->feat[feat].len;
	return w->feat[feat].data;
}

int tly_feat__string(struct tly_buf *b, const char *s)
{
	size_t n = strlen(s) + 1;
	uint32_t len = (uint32_t)((n + TALLY_NAME_ALIGN - 1) / TALLY_NAME_ALIGN * TALLY_NAME_ALIGN);
	int err;

	err = tly_buf__append(b, &len, sizeof(len));
	if (!err)
		err = tly_buf__reserve(b, len);
	if (err)
		return err;
	memset(b->data + b->len, 0, len);
	memcpy(b->data + b->len, s, n);
	b->len += len;
	return 0;
}

int tly_feat__u32(struct tly_buf *b, uint32_t v)
{
	return tly_buf__append(b, &v, sizeof(v));
}

int tly_feat__u64(struct tly_buf *b, uint64_t v)
{
	return tly_buf__append(b, &v, sizeof(v));
}

int tally_writer__set_feature_string(struct tally_writer *w, enum tally_feature feat,
				     const char *s)
{
	struct tly_buf b = {0};
	int err = tly_feat__string(&b, s ? s : "");

	if (!err)
		err = tally_writer__set_feature(w, feat, b.data, b.len);
	tly_buf__exit(&b);
	return err;
}

int tally_writer__set_feature_strings(struct tally_writer *w, enum tally_feature feat,
				      const char *const *strs, size_t nr)
{
	struct tly_buf b = {0};
	int err = tly_feat__u32(&b, (uint32_t)nr);
	size_t i;

	for (i = 0; !err && i < nr; i++)
		err = tly_feat__string(&b, strs[i] ? strs[i] : "");
	if (!err)
		err = tally_writer__set_feature(w, feat, b.data, b.len);
	tly_buf__exit(&b);
	return err;
}

int tally_writer__set_cmdline(struct tally_writer *w, int argc, char *const argv[])
{
	/* perf stores the command line as one string list: the binary, then the args. */
	char exe[PATH_MAX];
	const char **v;
	ssize_t n;
	int err, i;

	if (argc < 0)
		return -EINVAL;
	v = calloc((size_t)argc + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		v[0] = exe;
	} else {
		v[0] = argc ? argv[0] : "tally";
	}
	for (i = 1; i < argc; i++)
		v[i] = argv[i];
	err = tally_writer__set_feature_strings(w, TALLY_FEAT_CMDLINE, v,
						argc ? (size_t)argc : 1);
	free(v);
	return err;
}

int tally_writer__set_sample_time(struct tally_writer *w, uint64_t first, uint64_t last)
{
	uint64_t v[2] = { first, last };

	return tally_writer__set_feature(w, TALLY_FEAT_SAMPLE_TIME, v, sizeof(v));
}

int tally_writer__add_build_id(struct tally_writer *w, pid_t pid, const uint8_t *id,
			       size_t id_len, const char *filename, bool kernel)
{
	/* struct build_id_event { perf_event_header; pid_t pid; u8 build_id[24];
	 * char filename[] (NAME_ALIGN padded) }; build_id[20] holds the size when
	 * misc has PERF_RECORD_MISC_BUILD_ID_SIZE. */
	struct perf_event_header h;
	uint8_t bid[24] = {0};
	size_t flen = strlen(filename) + 1;
	size_t fpad = (flen + TALLY_NAME_ALIGN - 1) / TALLY_NAME_ALIGN * TALLY_NAME_ALIGN;
	int32_t p = pid;
	int err;

	if (id_len > 20 || sizeof(h) + 4 + 24 + fpad > UINT16_MAX)
		return -EINVAL;
	memcpy(bid, id, id_len);
	bid[20] = (uint8_t)id_len;
	h.type = 0;
	h.misc = (kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) |
		 (1 << 15) /* PERF_RECORD_MISC_BUILD_ID_SIZE */;
	h.size = (uint16_t)(sizeof(h) + 4 + 24 + fpad);
	err = tly_buf__append(&w->buildids, &h, sizeof(h));
	if (!err)
		err = tly_buf__append(&w->buildids, &p, sizeof(p));
	if (!err)
		err = tly_buf__append(&w->buildids, bid, sizeof(bid));
	if (!err)
		err = tly_buf__reserve(&w->buildids, fpad);
	if (err)
		return err;
	memset(w->buildids.data + w->buildids.len, 0, fpad);
	memcpy(w->buildids.data + w->buildids.len, filename, flen);
	w->buildids.len += fpad;
	return tally_writer__set_feature(w, TALLY_FEAT_BUILD_ID, w->buildids.data,
					 w->buildids.len);
}

/* Features derived from the events: EVENT_DESC, GROUP_DESC, COMPRESSED. */
static int derived_features(struct tally_writer *w)
{
	struct tly_buf b = {0};
	size_t i;
	int err;

	err = tly_feat__u32(&b, (uint32_t)w->nr_ev);
	if (!err)
		err = tly_feat__u32(&b, (uint32_t)FILE_ATTR_SIZE);
	for (i = 0; !err && i < w->nr_ev; i++) {
		err = tly_buf__append(&b, &w->ev[i].attr, FILE_ATTR_SIZE);
		if (!err)
			err = tly_feat__u32(&b, (uint32_t)w->ev[i].nr_ids);
		if (!err)
			err = tly_feat__string(&b, w->ev[i].name ? w->ev[i].name : "");
		if (!err && w->ev[i].nr_ids)
			err = tly_buf__append(&b, w->ev[i].ids, w->ev[i].nr_ids * sizeof(uint64_t));
	}
	if (!err && w->nr_ev)
		err = tally_writer__set_feature(w, TALLY_FEAT_EVENT_DESC, b.data, b.len);
	b.len = 0;
	if (!err && w->nr_groups) {
		err = tly_feat__u32(&b, (uint32_t)w->nr_groups);
		for (i = 0; !err && i < w->nr_groups; i++) {
			err = tly_feat__string(&b, w->groups[i].name ? w->groups[i].name
									 : "{anon_group}");
			if (!err)
				err = tly_feat__u32(&b, (uint32_t)w->groups[i].leader);
			if (!err)
				err = tly_feat__u32(&b, (uint32_t)w->groups[i].nr);
		}
		if (!err)
			err = tally_writer__set_feature(w, TALLY_FEAT_GROUP_DESC, b.data, b.len);
	}
	if (!err && w->zc) {
		uint32_t c[5] = { 0, 1 /* zstd */, (uint32_t)w->opts.compress_level,
				  w->comp_out ? (uint32_t)(w->comp_in / w->comp_out) : 0,
				  w->opts.comp_mmap_len };

		err = tally_writer__set_feature(w, TALLY_FEAT_COMPRESSED, c, sizeof(c));
	}
	tly_buf__exit(&b);
	return err;
}

/* ---- start / write / finish -------------------------------------------------- */

static void fill_header(const struct tally_writer *w, struct tally_file_header *fh,
			uint64_t data_size, bool features)
{
	size_t i;

	memset(fh, 0, sizeof(*fh));
	fh->magic = TALLY_PERF_MAGIC2;
	fh->size = sizeof(*fh);
	fh->attr_size = FILE_ATTR_SIZE + sizeof(struct tally_file_section);
	fh->attrs.offset = w->data_offset - w->nr_ev * fh->attr_size;
	fh->attrs.size = w->nr_ev * fh->attr_size;
	fh->data.offset = w->data_offset;
	fh->data.size = data_size;
	for (i = 1; features && i < TALLY_FEAT_MAX; i++)
		if (w->feat[i].set)
			fh->adds_features[i / 64] |= 1ULL << (i % 64);
}

static int start_file(struct tally_writer *w)
{
	struct tally_file_header fh;
	uint64_t ids_off = sizeof(fh);
	size_t i;
	int err;

	if (lseek(w->fd, 0, SEEK_SET) < 0 || ftruncate(w->fd, 0))
		return w->error = -errno;
	for (i = 0; i < w->nr_ev; i++)
		ids_off += w->ev[i].nr_ids * sizeof(uint64_t);
	w->data_offset = ids_off + w->nr_ev * (FILE_ATTR_SIZE + sizeof(struct tally_file_section));
	fill_header(w, &fh, 0, false);
	err = out_write(w, &fh, sizeof(fh), false);
	for (i = 0; !err && i < w->nr_ev; i++)
		if (w->ev[i].nr_ids)
			err = out_write(w, w->ev[i].ids, w->ev[i].nr_ids * sizeof(uint64_t), false);
	ids_off = sizeof(fh);
	for (i = 0; !err && i < w->nr_ev; i++) {
		struct tally_file_section s = { ids_off, w->ev[i].nr_ids * sizeof(uint64_t) };

		if (!s.size)
			s.offset = 0;
		err = out_write(w, &w->ev[i].attr, FILE_ATTR_SIZE, false);
		if (!err)
			err = out_write(w, &s, sizeof(s), false);
		ids_off += w->ev[i].nr_ids * sizeof(uint64_t);
	}
	w->aio_off = w->data_offset;
	return err;
}

/* A user record: header + payload, written straight to the output (pipe preamble). */
static int put_record(struct tally_writer *w, uint32_t type, const void *a, size_t alen,
		      const void *b, size_t blen)
{
	struct perf_event_header h;
	int err;

	if (sizeof(h) + alen + blen > UINT16_MAX)
		return -E2BIG;
	h.type = type;
	h.misc = 0;
	h.size = (uint16_t)(sizeof(h) + alen + blen);
	err = out_write(w, &h, sizeof(h), false);
	if (!err && alen)
		err = out_write(w, a, alen, false);
	if (!err && blen)
		err = out_write(w, b, blen, false);
	return err;
}

static int start_pipe(struct tally_writer *w)
{
	struct tally_pipe_header ph = { TALLY_PERF_MAGIC2, sizeof(ph) };
	size_t i;
	int err;

	err = out_write(w, &ph, sizeof(ph), false);
	for (i = 0; !err && i < w->nr_ev; i++)
		err = put_record(w, TALLY_RECORD_HEADER_ATTR, &w->ev[i].attr, FILE_ATTR_SIZE,
				 w->ev[i].ids, w->ev[i].nr_ids * sizeof(uint64_t));
	for (i = 1; !err && i < TALLY_FEAT_LAST_6_1; i++) {
		uint64_t id = i;

		if (!w->feat[i].set || i == TALLY_FEAT_TRACING_DATA || i == TALLY_FEAT_BUILD_ID)
			continue;
		if (sizeof(struct perf_event_header) + 8 + w->feat[i].len > UINT16_MAX)
			continue;	/* too big for a record: leave it out */
		err = put_record(w, TALLY_RECORD_HEADER_FEATURE, &id, sizeof(id),
				 w->feat[i].data, w->feat[i].len);
	}
	if (!err) {
		uint64_t id = TALLY_FEAT_LAST_6_1;

		err = put_record(w, TALLY_RECORD_HEADER_FEATURE, &id, sizeof(id), NULL, 0);
	}
	if (!err && w->feat[TALLY_FEAT_TRACING_DATA].set) {
		/* perf_record_header_tracing_data {header; u32 size; (pad)} (16 bytes),
		 * then the tracing data padded to 8 bytes; size = padded length. */
		static const char zero[8];
		size_t len = w->feat[TALLY_FEAT_TRACING_DATA].len;
		size_t pad = (8 - len % 8) % 8;
		uint32_t sz = (uint32_t)(len + pad);

		err = put_record(w, TALLY_RECORD_HEADER_TRACING_DATA, &sz, sizeof(sz), zero, 4);
		if (!err)
			err = out_write(w, w->feat[TALLY_FEAT_TRACING_DATA].data, len, false);
		if (!err && pad)
			err = out_write(w, zero, pad, false);
	}
	return err;
}

int tally_writer__start(struct tally_writer *w)
{
	int err;

	if (w->started)
		return -EBUSY;
	if (!w->nr_ev)
		return -EINVAL;
	w->started = true;
	if (w->pipe) {
		err = derived_features(w);
		return err ? err : start_pipe(w);
	}
	return start_file(w);
}

int tally_writer__write(struct tally_writer *w, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	if (!w->started || w->finished)
		return -EINVAL;
	if (w->error)
		return w->error;
	w->data_bytes += len;
	if (!w->zc)
		return obuf_add(w, p, len);
	if (w->cin_len + len > COMP_CHUNK && compress_flush(w))
		return w->error;
	if (len > COMP_CHUNK)
		return compress_out(w, p, len);
	memcpy(w->cin + w->cin_len, p, len);
	w->cin_len += len;
	return 0;
}

int tally_writer__flush(struct tally_writer *w)
{
	if (!w->started)
		return -EINVAL;
	if (w->zc && compress_flush(w))
		return w->error;
	if (obuf_flush(w))
		return w->error;
	return aio_sync(w);
}

/* After a write error: keep exactly the whole records on disk, describe them. */
static int salvage(struct tally_writer *w)
{
	struct tally_file_header fh;

	aio_sync(w);	/* what is in flight lands, or counts as lost */
	if (ftruncate(w->fd, (off_t)(w->data_offset + w->committed)) == 0) {
		fill_header(w, &fh, w->committed, false);
		if (pwrite(w->fd, &fh, sizeof(fh), 0) != (ssize_t)sizeof(fh)) {
			/* Could not even fix the header: it still says data size 0. */
		}
	}
	return w->error;
}

int tally_writer__finish(struct tally_writer *w)
{
	struct tally_file_section *table;
	struct tally_file_header fh;
	uint64_t off;
	size_t i, nr = 0;
	int err;

	if (!w->started || w->finished)
		return -EINVAL;
	w->finished = true;
	err = tally_writer__flush(w);
	if (w->pipe)
		return err;
	if (err)
		return salvage(w);
	err = derived_features(w);
	table = err ? NULL : calloc(TALLY_FEAT_MAX, sizeof(*table));
	if (!table) {
		/* Out of memory: keep the complete data, described, without features. */
		w->error = err ? err : -ENOMEM;
		return salvage(w);
	}
	for (i = 1; i < TALLY_FEAT_MAX; i++)
		nr += w->feat[i].set;
	off = w->data_offset + w->committed + nr * sizeof(*table);
	for (i = 1, nr = 0; i < TALLY_FEAT_MAX; i++) {
		if (!w->feat[i].set)
			continue;
		table[nr].offset = off;
		table[nr].size = w->feat[i].len;
		off += w->feat[i].len;
		nr++;
	}
	err = out_write(w, table, nr * sizeof(*table), false);
	free(table);
	for (i = 1; !err && i < TALLY_FEAT_MAX; i++)
		if (w->feat[i].set && w->feat[i].len)
			err = out_write(w, w->feat[i].data, w->feat[i].len, false);
	if (err) {
		/* Features did not fit: the data is complete, keep it without features. */
		return salvage(w);
	}
	fill_header(w, &fh, w->committed, true);
	if (pwrite(w->fd, &fh, sizeof(fh), 0) != (ssize_t)sizeof(fh))
		return w->error = errno ? -errno : -EIO;
	return 0;
}

uint64_t tally_writer__data_bytes(const struct tally_writer *w)
{
	return w->data_bytes;
}

uint64_t tally_writer__output_bytes(const struct tally_writer *w)
{
	return w->out_bytes;
}

uint64_t tally_writer__data_offset(const struct tally_writer *w)
{
	return w->pipe ? 0 : w->data_offset;
}
