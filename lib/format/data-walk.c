/*
 * The perf.data reader's walk over the records (lib/format/data.c opens the file): the
 * id hash that maps a record to its event, zstd-compressed chunks, and the queue that
 * delivers records in time order.
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

/* ---- id hash ------------------------------------------------------------- */

int tly_data_id_add(struct tally_data *d, uint64_t id, int idx)
{
	if ((d->id_nr + 1) * 2 > d->id_cap) {
		size_t ncap = d->id_cap ? d->id_cap * 2 : 64;
		uint64_t *k = calloc(ncap, sizeof(*k));
		int *v = malloc(ncap * sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return -ENOMEM;
		}
		for (size_t i = 0; i < ncap; i++)
			v[i] = -1;
		for (size_t i = 0; i < d->id_cap; i++) {
			if (d->id_vals[i] < 0)
				continue;
			size_t s = id_slot(d->id_keys[i], ncap);
			while (v[s] >= 0)
				s = (s + 1) & (ncap - 1);
			k[s] = d->id_keys[i];
			v[s] = d->id_vals[i];
		}
		free(d->id_keys);
		free(d->id_vals);
		d->id_keys = k;
		d->id_vals = v;
		d->id_cap = ncap;
	}
	size_t s = id_slot(id, d->id_cap);
	while (d->id_vals[s] >= 0) {
		if (d->id_keys[s] == id) {
			d->id_vals[s] = idx;
			return 0;
		}
		s = (s + 1) & (d->id_cap - 1);
	}
	d->id_keys[s] = id;
	d->id_vals[s] = idx;
	d->id_nr++;
	return 0;
}

/* ---- walking ------------------------------------------------------------- */

struct walk {
	struct tally_data *d;
	unsigned flags;
	tally_record_fn fn;
	void *arg;
	struct tally_data_error *err;
};

static void chunk_put(struct chunk *c)
{
	if (c && --c->refs == 0)
		free(c);
}

void tly_data_queue_drop(struct tally_data *d)
{
	for (size_t i = 0; i < d->q_nr; i++)
		chunk_put(d->q[i].chunk);
	d->q_nr = 0;
}

static int record_time(const struct tally_data *d, int evidx,
		       const struct perf_event_header *hdr, uint64_t *t)
{
	const struct tally_sample_layout *l;

	if (evidx < 0 || hdr->type >= 64)
		return -ENOENT;
	l = &d->events[evidx].layout;
	if (!(l->sample_type & PERF_SAMPLE_TIME))
		return -ENOENT;
	if (hdr->type == PERF_RECORD_SAMPLE) {
		size_t off = sizeof(*hdr) + 8 * (!!(l->sample_type & PERF_SAMPLE_IDENTIFIER) +
						 !!(l->sample_type & PERF_SAMPLE_IP) +
						 !!(l->sample_type & PERF_SAMPLE_TID));
		if (off + 8 > hdr->size)
			return -EINVAL;
		memcpy(t, (const uint8_t *)hdr + off, 8);
		return 0;
	}
	struct tally_sample_id sid;
	if (tally_sample_id__parse(l, hdr, &sid) || !sid.has_time)
		return -ENOENT;
	*t = sid.time;
	return 0;
}

/* End of the run of records in time order that starts at i. */
static size_t run_end(const struct qent *q, size_t i, size_t n)
{
	while (++i < n && q[i - 1].time <= q[i].time)
		;
	return i;
}

/*
 * Sort the queue by time, records of equal time in the order they came:
 * a stable natural merge sort. A round is a few runs already in order (one per ring
 * buffer, after what the previous round left), so this is a pass or two of merging,
 * and no pass at all when one CPU wrote the round.
 */
static int queue_sort(struct tally_data *d)
{
	struct qent *src = d->q, *dst;
	size_t n = d->q_nr;

	if (run_end(src, 0, n) == n)
		return 0;
	if (!d->q_tmp) {
		d->q_tmp = malloc(d->q_cap * sizeof(*d->q_tmp));
		if (!d->q_tmp)
			return -ENOMEM;
	}
	dst = d->q_tmp;
	for (;;) {
		size_t i = 0, runs = 0;

		while (i < n) {
			size_t a = run_end(src, i, n), b = a < n ? run_end(src, a, n) : n;
			size_t x = i, y = a, o = i;

			while (x < a && y < b)
				dst[o++] = src[y].time < src[x].time ? src[y++] : src[x++];
			while (x < a)
				dst[o++] = src[x++];
			while (y < b)
				dst[o++] = src[y++];
			i = b;
			runs++;
		}
		struct qent *t = src;
		src = dst;
		dst = t;
		if (runs == 1)
			break;
	}
	if (src != d->q) {	/* the sorted queue is in the other array: swap them */
		d->q_tmp = d->q;
		d->q = src;
	}
	return 0;
}

/* Deliver queued records with time <= limit, in time order. */
static int queue_flush(struct walk *w, uint64_t limit)
{
	struct tally_data *d = w->d;
	size_t n = 0;
	int ret = 0;

	if (!d->q_nr)
		return 0;
	ret = queue_sort(d);
	if (ret)
		return ret;
	while (n < d->q_nr && d->q[n].time <= limit) {
		struct qent *e = &d->q[n++];
		struct tally_record_ctx ctx = { .evidx = e->evidx, .file_offset = e->off,
						.compressed = e->chunk && e->chunk->decompressed };
		ret = w->fn(w->arg, e->hdr, &ctx);
		if (ret)
			break;
	}
	for (size_t i = 0; i < n; i++)
		chunk_put(d->q[i].chunk);
	memmove(d->q, d->q + n, (d->q_nr - n) * sizeof(*d->q));
	d->q_nr -= n;
	return ret;
}

static int deliver(struct walk *w, const struct perf_event_header *hdr, uint64_t off,
		   struct chunk *chunk, bool consumed);
static int deliver_aligned(struct walk *w, const uint8_t *rec, uint64_t off, bool consumed);

static int decompress(struct walk *w, const uint8_t *rec, const struct perf_event_header *hdr,
		      uint64_t off)
{
	struct tally_data *d = w->d;
	const uint8_t *src = rec + sizeof(*hdr);
	size_t srclen = hdr->size - sizeof(*hdr);
	struct chunk *c;
	size_t cap;
	int ret = 0;

	if (hdr->type == TALLY_RECORD_COMPRESSED2) {
		uint64_t dsz;
		if (srclen < 8)
			return tly_data_fail(w->err, off, -EINVAL, "COMPRESSED2 record too small");
		memcpy(&dsz, src, 8);
		if (dsz > srclen - 8)
			return tly_data_fail(w->err, off, -EINVAL, "COMPRESSED2 data_size %" PRIu64
					     " exceeds the record", dsz);
		src += 8;
		srclen = dsz;
	}
	if (!d->zstd) {
		d->zstd = ZSTD_createDStream();
		if (!d->zstd)
			return -ENOMEM;
		ZSTD_initDStream(d->zstd);
	}
	cap = d->carry_len + srclen * 8 + 4096;
	c = malloc(sizeof(*c) + cap);
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->decompressed = true;
	if (d->carry_len)
		memcpy(c->data, d->carry, d->carry_len);
	c->len = d->carry_len;
	ZSTD_inBuffer in = { src, srclen, 0 };
	for (;;) {
		if (c->len == cap) {
			struct chunk *nc = realloc(c, sizeof(*c) + cap * 2);
			if (!nc) {
				free(c);
				return -ENOMEM;
			}
			c = nc;
			cap *= 2;
		}
		ZSTD_outBuffer o = { c->data, cap, c->len };
		size_t r = ZSTD_decompressStream(d->zstd, &o, &in);
		if (ZSTD_isError(r)) {
			free(c);
			return tly_data_fail(w->err, off, -EINVAL, "zstd: %s",
					     ZSTD_getErrorName(r));
		}
		c->len = o.pos;
		/* done when the input is used up and the decoder had room to spare (a full
		 * output buffer may mean it holds more) */
		if (in.pos == in.size && o.pos < o.size)
			break;
	}
	/* Walk the records that are complete; keep an incomplete tail for the next. */
	size_t pos = 0;
	uint64_t base = d->decomp_off - d->carry_len;
	while (pos + sizeof(struct perf_event_header) <= c->len) {
		struct perf_event_header h;
		memcpy(&h, c->data + pos, sizeof(h));
		if (h.size < sizeof(h)) {
			chunk_put(c);
			return tly_data_fail(w->err, base + pos, -EINVAL,
					     "record of size %u in compressed data", h.size);
		}
		if (h.size > c->len - pos)
			break;
		if (pos % 8)
			ret = deliver_aligned(w, c->data + pos, base + pos, false);
		else
			ret = deliver(w, (const void *)(c->data + pos), base + pos, c, false);
		if (ret)
			break;
		pos += h.size;
	}
	d->decomp_off = base + c->len;
	d->carry_len = 0;
	if (!ret && pos < c->len) {
		uint8_t *nb = realloc(d->carry, c->len - pos);
		if (!nb) {
			chunk_put(c);
			return -ENOMEM;
		}
		d->carry = nb;
		memcpy(d->carry, c->data + pos, c->len - pos);
		d->carry_len = c->len - pos;
	}
	chunk_put(c);
	return ret;
}

/* Give back the pages of the mapped file that the walk has left behind (nothing queued
 * points there any more): a file-backed private mapping re-reads them if touched
 * again, so this only lowers the peak RSS on big files. */
static void release_behind(struct tally_data *d, uint64_t off)
{
	const long page = 4096;
	for (size_t i = 0; i < d->q_nr; i++) {
		if (!d->q[i].chunk) {
			uint64_t o = (uint64_t)((const uint8_t *)d->q[i].hdr - d->buf);
			if (o < off)
				off = o;
		}
	}
	off &= ~(uint64_t)(page - 1);
	if (!d->map || off < d->released + (256u << 10))
		return;
	madvise((uint8_t *)d->map + d->released, off - d->released, MADV_DONTNEED);
	d->released = off;
}

/* Counts inside records the reader hands out must fit the record: callers may trust
 * them. Samples are checked against their event's layout for the same reason. */
static int check_record(const struct tally_data *d, const struct perf_event_header *hdr,
			int idx, uint64_t off, struct tally_data_error *err)
{
	const uint8_t *p = (const uint8_t *)(hdr + 1);
	size_t len = hdr->size - sizeof(*hdr);
	uint64_t nr;
	uint16_t type, n16, lsz;

	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		if (idx >= 0 && tally_sample__check(&d->events[idx].layout, hdr))
			return tly_data_fail(err, off, -EINVAL,
					     "SAMPLE of %u bytes is shorter than its "
					     "fields say (event %d)", hdr->size, idx);
		return 0;
	case TALLY_RECORD_THREAD_MAP:
		if (len < 8)
			return tly_data_fail(err, off, -EINVAL, "THREAD_MAP record too small");
		memcpy(&nr, p, 8);
		if (nr > (len - 8) / 24)
			return tly_data_fail(err, off, -EINVAL,
					     "THREAD_MAP with %" PRIu64 " entries does not "
					     "fit in %u bytes", nr, hdr->size);
		return 0;
	case TALLY_RECORD_CPU_MAP:
		if (len < 4)
			return tly_data_fail(err, off, -EINVAL, "CPU_MAP record too small");
		memcpy(&type, p, 2);
		memcpy(&n16, p + 2, 2);
		if (type == 0 && n16 > (len - 4) / 2)	/* cpus: u16 cpu[nr] */
			return tly_data_fail(err, off, -EINVAL,
					     "CPU_MAP with %u cpus does not fit in %u "
					     "bytes", n16, hdr->size);
		if (type == 2) {			/* range: u8 any_cpu, pad; u16 start, end */
			uint16_t r[2];
			if (len < 8)
				return tly_data_fail(err, off, -EINVAL,
						     "CPU_MAP range record too small");
			memcpy(r, p + 4, 4);
			if (p[2] > 1 || r[0] > r[1])
				return tly_data_fail(err, off, -EINVAL,
						     "CPU_MAP range %u-%u (any_cpu %u) is "
						     "not a cpu range", r[0], r[1], p[2]);
		}
		if (type == 1) {			/* mask: u16 long_size; mask[nr] */
			if (len < 6)
				return tly_data_fail(err, off, -EINVAL,
						     "CPU_MAP mask record too small");
			memcpy(&lsz, p + 4, 2);
			if ((lsz != 4 && lsz != 8) || (size_t)n16 * lsz > len - 6)
				return tly_data_fail(err, off, -EINVAL,
						     "CPU_MAP mask of %u x %u bytes does not "
						     "fit in %u bytes", n16, lsz, hdr->size);
		}
		return 0;
	default:
		return 0;
	}
}

/* One record: consumed by the reader, decompressed, queued or handed over. */
static int deliver(struct walk *w, const struct perf_event_header *hdr, uint64_t off,
		   struct chunk *chunk, bool consumed)
{
	struct tally_data *d = w->d;
	int evidx;
	uint64_t t;

	if (consumed && !(w->flags & TALLY_DATA_RAW)) {
		d->nr_consumed++;
		return 0;
	}
	if (hdr->type == TALLY_RECORD_ID_INDEX && hdr->size >= 16) {
		uint64_t nr;
		memcpy(&nr, hdr + 1, 8);
		if (nr > (hdr->size - 16u) / 32)
			return tly_data_fail(w->err, off, -EINVAL, "ID_INDEX with %" PRIu64
					     " entries does not fit in %u bytes", nr, hdr->size);
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t e[2];
			memcpy(e, (const uint8_t *)hdr + 16 + i * 32, 16);
			if (e[1] < d->nr_events && id_find(d, e[0]) < 0) {
				int ret = tly_data_id_add(d, e[0], (int)e[1]);
				if (ret)
					return ret;
			}
		}
	}
	evidx = tally_data__event_of(d, hdr);
	if (!consumed) {
		int ret = check_record(d, hdr, evidx, off, w->err);
		if (ret)
			return ret;
	}
	if (!consumed && !tally_record__type_name(hdr->type)) {
		d->nr_unknown++;
		if (!(w->flags & TALLY_DATA_RAW))
			return 0;
	}
	if (w->flags & TALLY_DATA_ORDERED) {
		if (hdr->type == TALLY_RECORD_FINISHED_ROUND) {
			int ret = queue_flush(w, d->flush_limit);
			d->flush_limit = d->max_time;
			if (ret)
				return ret;
			if (!chunk)
				release_behind(d, off);
		} else if (!consumed && record_time(d, evidx, hdr, &t) == 0) {
			if (d->q_nr == d->q_cap) {
				size_t ncap = d->q_cap ? d->q_cap * 2 : 1024;
				struct qent *nq = realloc(d->q, ncap * sizeof(*nq));
				if (!nq)
					return -ENOMEM;
				d->q = nq;
				d->q_cap = ncap;
				free(d->q_tmp);	/* queue_sort allocates it again at the new size */
				d->q_tmp = NULL;
			}
			d->q[d->q_nr++] = (struct qent){ .time = t, .hdr = hdr,
							 .chunk = chunk, .off = off, .evidx = evidx };
			if (chunk)
				chunk->refs++;
			if (t > d->max_time)
				d->max_time = t;
			return 0;
		}
	}
	struct tally_record_ctx ctx = { .evidx = evidx, .file_offset = off,
					.compressed = chunk && chunk->decompressed };
	return w->fn(w->arg, hdr, &ctx);
}

/* Pipe streams hold unpadded records (HEADER_FEATURE, COMPRESSED), so the records after
 * them may sit at any address: hand out an 8-byte aligned copy instead. */
static int deliver_aligned(struct walk *w, const uint8_t *rec, uint64_t off, bool consumed)
{
	struct chunk *c;
	uint16_t size;
	int ret;

	if (((uintptr_t)rec & 7) == 0)
		return deliver(w, (const struct perf_event_header *)rec, off, NULL, consumed);
	memcpy(&size, rec + 6, 2);
	c = malloc(sizeof(*c) + size);
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->len = size;
	c->decompressed = false;
	memcpy(c->data, rec, size);
	ret = deliver(w, (const struct perf_event_header *)c->data, off, c, consumed);
	chunk_put(c);
	return ret;
}

/* Read the stream into c until it holds cap bytes or the stream ends (*eof). */
static int fill_chunk(struct walk *w, struct chunk *c, size_t cap, uint64_t off, bool *eof)
{
	while (c->len < cap) {
		ssize_t r = read(w->d->stream_fd, c->data + c->len, cap - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return tly_data_fail(w->err, off + c->len, -errno, "reading the stream: %s",
					     strerror(errno));
		if (r == 0) {
			*eof = true;
			return 0;
		}
		c->len += (size_t)r;
	}
	return 0;
}

/* Deliver the whole records of c (off: where c starts in the stream); *pos ends at
 * the first byte not delivered, *need says how long a record cut by c's end is. */
static int walk_chunk(struct walk *w, struct chunk *c, uint64_t off, size_t *pos,
		      uint64_t *need)
{
	int ret = 0;

	*need = 0;
	while (!ret && *pos + 8 <= c->len) {
		const uint8_t *rec = c->data + *pos;
		struct perf_event_header h;
		uint64_t sz;
		memcpy(&h, rec, 8);
		if (h.size < 8)
			return tly_data_fail(w->err, off + *pos, -EINVAL,
					     "record of size %u (type %u): the "
					     "stream is damaged here", h.size, h.type);
		if (stream_size(rec, &h, c->len - *pos, &sz))
			return tly_data_fail(w->err, off + *pos, -EINVAL,
					     "record of type %u claims %" PRIu64
					     " bytes of data", h.type, sz);
		if (sz > c->len - *pos) {
			*need = sz;
			break;
		}
		bool consumed = h.type == TALLY_RECORD_HEADER_ATTR ||
				h.type == TALLY_RECORD_HEADER_FEATURE ||
				h.type == TALLY_RECORD_HEADER_TRACING_DATA;
		if (h.type == TALLY_RECORD_COMPRESSED || h.type == TALLY_RECORD_COMPRESSED2) {
			if (w->flags & TALLY_DATA_RAW)
				ret = deliver_aligned(w, rec, off + *pos, true);
			else
				w->d->nr_consumed++;
			if (!ret)
				ret = decompress(w, rec, &h, off + *pos);
		} else if ((uintptr_t)rec & 7) {
			ret = deliver_aligned(w, rec, off + *pos, consumed);
		} else {
			ret = deliver(w, (const struct perf_event_header *)rec, off + *pos, c,
				      consumed);
		}
		*pos += sz;
	}
	return ret;
}

/* The rest of a pipe: read in chunks; records are delivered from the chunk, which
 * queued records keep alive; a record cut by a chunk's end starts the next one. */
static int walk_stream(struct walk *w, const uint8_t *tail, size_t tail_len, uint64_t off)
{
	struct tally_data *d = w->d;
	const size_t chunk_size = 4u << 20;
	uint8_t *carry = NULL;
	size_t carry_len = tail_len;
	uint64_t need = 0;	/* size of the record the carry starts, once known */
	bool eof = false;
	int ret = 0;

	if (tail_len && !(carry = malloc(tail_len)))
		return -ENOMEM;
	if (tail_len)
		memcpy(carry, tail, tail_len);
	while (!eof && !ret) {
		size_t cap = chunk_size;
		if (need > (1u << 30)) {
			free(carry);
			return tly_data_fail(w->err, off, -EINVAL,
					     "record claims %" PRIu64 " bytes", need);
		}
		if (need > cap)
			cap = (size_t)need;
		struct chunk *c = malloc(sizeof(*c) + cap);
		if (!c) {
			free(carry);
			return -ENOMEM;
		}
		c->refs = 1;
		c->decompressed = false;
		if (carry_len)
			memcpy(c->data, carry, carry_len);
		c->len = carry_len;
		ret = fill_chunk(w, c, cap, off, &eof);
		size_t pos = 0;
		need = 0;
		if (!ret)
			ret = walk_chunk(w, c, off, &pos, &need);
		off += pos;
		carry_len = c->len - pos;
		if (!ret && carry_len) {
			uint8_t *nc = realloc(carry, carry_len);
			if (!nc) {
				chunk_put(c);
				free(carry);
				return -ENOMEM;
			}
			carry = nc;
			memcpy(carry, c->data + pos, carry_len);
		}
		chunk_put(c);
	}
	if (!ret && carry_len)
		d->truncated += need > carry_len ? need - carry_len : 8 - carry_len;
	free(carry);
	return ret;
}

int tally_data__for_each(struct tally_data *d, unsigned flags, tally_record_fn fn, void *arg,
			 struct tally_data_error *err)
{
	struct walk w = { d, flags, fn, arg, err };
	uint64_t off = d->data_off;
	int ret = 0;

	if (err)
		memset(err, 0, sizeof(*err));
	tly_data_queue_drop(d);
	d->carry_len = 0;
	d->decomp_off = 0;
	d->max_time = d->flush_limit = 0;
	d->released = d->data_off & ~(uint64_t)4095;
	d->nr_unknown = 0;
	d->nr_consumed = 0;
	if (d->zstd)
		ZSTD_initDStream(d->zstd);
	if (!d->pipe && d->hdr.data.offset + d->hdr.data.size > d->size)
		d->truncated = d->hdr.data.offset + d->hdr.data.size - d->size;
	else
		d->truncated = 0;

	if (d->stream_fd >= 0) {
		if (d->stream_used)
			return tly_data_fail(err, 0, -ESPIPE,
					     "a pipe stream can be read only once");
		d->stream_used = true;
	}
	while (off < d->data_end) {
		const uint8_t *rec = d->buf + off;
		struct perf_event_header h, *hdr = &h;
		uint64_t sz;
		bool consumed = false;

		if (d->data_end - off < sizeof(*hdr)) {
			if (d->stream_fd >= 0)
				break;	/* the rest comes from the stream */
			d->truncated += sizeof(*hdr) - (d->data_end - off);
			break;
		}
		memcpy(&h, rec, sizeof(h));
		if (hdr->size < sizeof(*hdr)) {
			ret = tly_data_fail(err, off, -EINVAL,
					    "record of size %u (type %u): the file is "
					    "damaged here", hdr->size, hdr->type);
			break;
		}
		if (stream_size(rec, hdr, d->data_end - off, &sz)) {
			ret = tly_data_fail(err, off, -EINVAL, "record of type %u claims %" PRIu64
					    " bytes of data", hdr->type, sz);
			break;
		}
		if (sz > d->data_end - off) {
			if (d->stream_fd >= 0)
				break;	/* the rest comes from the stream */
			if (d->pipe || d->data_end == d->size) {
				d->truncated += sz - (d->data_end - off);
				break;	/* the file ends here: cut short */
			}
			ret = tly_data_fail(err, off, -EINVAL,
					    "record of type %u and %" PRIu64 " bytes runs "
					    "past the end of the data section (0x%" PRIx64 ")", hdr->type, sz,
					    d->data_end);
			break;
		}
		switch (hdr->type) {
		case TALLY_RECORD_COMPRESSED:
		case TALLY_RECORD_COMPRESSED2:
			if (flags & TALLY_DATA_RAW)
				ret = deliver_aligned(&w, rec, off, true);
			else
				d->nr_consumed++;
			if (!ret)
				ret = decompress(&w, rec, hdr, off);
			break;
		case TALLY_RECORD_HEADER_ATTR:
		case TALLY_RECORD_HEADER_FEATURE:
		case TALLY_RECORD_HEADER_TRACING_DATA:
			consumed = d->pipe;
			/* fallthrough */
		default:
			ret = deliver_aligned(&w, rec, off, consumed);
			break;
		}
		if (ret)
			break;
		off += sz;
		if (off - d->released > (8u << 20))
			release_behind(d, off);
	}
	if (!ret && d->stream_fd >= 0)
		ret = walk_stream(&w, d->buf + off, d->data_end - off, off);
	if (!ret && (flags & TALLY_DATA_ORDERED))
		ret = queue_flush(&w, UINT64_MAX);
	tly_data_queue_drop(d);
	return ret;
}
