/*
 * The perf ring buffer reader (see include/tally/ring.h).
 *
 * Positions are the kernel's free-running u64 byte counters; the offset in the data
 * area is pos & mask. Three positions matter: tail (what the kernel may overwrite up
 * to, = data_tail), rd (how far tally_ring__read got) and head (data_head, loaded
 * with acquire semantics each time we look for more).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tally/ring.h>
#include "internal/sys.h"

#define RING_MAX_RECORD 65536	/* header.size is a u16 */

struct tally_ring {
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	size_t data_size;
	uint64_t mask;
	size_t mmap_size;	/* 0 when wrapping caller memory */
	int fd;
	bool writable;
	uint64_t tail, rd, head;
	struct tally_ring_stats st;
	unsigned char *copy;	/* RING_MAX_RECORD bytes for wrapped records */
};

static uint64_t load_head(const struct tally_ring *r)
{
	return __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
}

static int ring_init(struct tally_ring *r, void *base, size_t data_offset, size_t data_size)
{
	if (!data_size || (data_size & (data_size - 1)))
		return -EINVAL;
	r->meta = base;
	if (r->meta->data_size && (r->meta->data_size != data_size ||
				   r->meta->data_offset != data_offset))
		return -EINVAL;
	r->data = (unsigned char *)base + data_offset;
	r->data_size = data_size;
	r->mask = data_size - 1;
	r->copy = malloc(RING_MAX_RECORD);
	if (!r->copy)
		return -ENOMEM;
	r->tail = r->rd = r->head = __atomic_load_n(&r->meta->data_tail, __ATOMIC_RELAXED);
	return 0;
}

int tally_ring__mmap(struct tally_ring **out, int fd, size_t data_pages, bool writable)
{
	long page = sysconf(_SC_PAGESIZE);
	struct tally_ring *r;
	size_t len;
	void *base;
	int err = 0;

	*out = NULL;
	if (!data_pages || (data_pages & (data_pages - 1)) || page <= 0)
		return -EINVAL;
	if (__builtin_mul_overflow(data_pages + 1, (size_t)page, &len))
		return -EOVERFLOW;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	base = tly_sys__mmap(len, PROT_READ | (writable ? PROT_WRITE : 0), fd, 0, &err);
	if (base == MAP_FAILED) {
		free(r);
		return err ? err : -ENOMEM;
	}
	r->mmap_size = len;
	r->fd = fd;
	r->writable = writable;
	err = ring_init(r, base, (size_t)page, len - (size_t)page);
	if (err) {
		tally_ring__delete(r);
		return err;
	}
	*out = r;
	return 0;
}

int tally_ring__wrap(struct tally_ring **out, void *base, size_t data_offset, size_t data_size)
{
	struct tally_ring *r;
	int err;

	*out = NULL;
	if (!base)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = -1;
	r->writable = true;
	err = ring_init(r, base, data_offset, data_size);
	if (err) {
		tally_ring__delete(r);
		return err;
	}
	*out = r;
	return 0;
}

void tally_ring__delete(struct tally_ring *r)
{
	if (!r)
		return;
	if (r->mmap_size && r->meta)
		tly_sys__munmap(r->meta, r->mmap_size);
	free(r->copy);
	free(r);
}

struct perf_event_mmap_page *tally_ring__meta(const struct tally_ring *r)
{
	return r->meta;
}

int tally_ring__fd(const struct tally_ring *r)
{
	return r->fd;
}

size_t tally_ring__data_size(const struct tally_ring *r)
{
	return r->data_size;
}

size_t tally_ring__mmap_size(const struct tally_ring *r)
{
	return r->mmap_size ? r->mmap_size : r->data_size + (size_t)((unsigned char *)r->data -
								     (unsigned char *)r->meta);
}

size_t tally_ring__avail(struct tally_ring *r)
{
	r->head = load_head(r);
	return (size_t)(r->head - r->rd);
}

/* Copy LEN bytes starting at ring position POS into DST, handling the wrap. */
static void ring_copy(const struct tally_ring *r, uint64_t pos, void *dst, size_t len)
{
	size_t off = (size_t)(pos & r->mask);
	size_t first = r->data_size - off;

	if (first >= len) {
		memcpy(dst, r->data + off, len);
	} else {
		memcpy(dst, r->data + off, first);
		memcpy((unsigned char *)dst + first, r->data, len - first);
	}
}

static void count_record(struct tally_ring *r, const struct perf_event_header *h)
{
	const uint64_t *u = (const uint64_t *)(h + 1);

	r->st.records++;
	r->st.bytes += h->size;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		r->st.samples++;
		break;
	case PERF_RECORD_LOST:		/* u64 id; u64 lost; */
		r->st.lost_records++;
		if (h->size >= sizeof(*h) + 16)
			r->st.lost += u[1];
		break;
	case PERF_RECORD_LOST_SAMPLES:	/* u64 lost; */
		if (h->size >= sizeof(*h) + 8)
			r->st.lost_samples += u[0];
		break;
	case PERF_RECORD_THROTTLE:
		r->st.throttle++;
		break;
	case PERF_RECORD_UNTHROTTLE:
		r->st.unthrottle++;
		break;
	default:
		break;
	}
}

int tally_ring__read(struct tally_ring *r, const struct perf_event_header **rec)
{
	struct perf_event_header h;
	uint64_t avail;
	size_t off;

	*rec = NULL;
	avail = r->head - r->rd;
	if (avail < sizeof(h)) {
		r->head = load_head(r);
		avail = r->head - r->rd;
		if (avail < sizeof(h))
			return 0;
	}
	if (avail > r->data_size) {
		/* Only a read-only (overwrite) ring gets here: the kernel lapped us and the
		 * bytes at rd are gone. Nothing before head can be framed: start over there. */
		r->st.overwritten += avail;
		r->rd = r->tail = r->head;
		return 0;
	}
	off = (size_t)(r->rd & r->mask);
	if (off + sizeof(h) <= r->data_size)
		memcpy(&h, r->data + off, sizeof(h));
	else
		ring_copy(r, r->rd, &h, sizeof(h));
	if (h.size < sizeof(h) || h.size > r->data_size)
		return -EBADMSG;
	if (h.size > avail) {
		/* Announced but not all published yet: look again, else leave it for later. */
		r->head = load_head(r);
		avail = r->head - r->rd;
		if (h.size > avail)
			return 0;
	}
	if (off + h.size <= r->data_size) {
		*rec = (const struct perf_event_header *)(r->data + off);
	} else {
		ring_copy(r, r->rd, r->copy, h.size);
		*rec = (const struct perf_event_header *)r->copy;
		r->st.wraps++;
	}
	r->rd += h.size;
	count_record(r, *rec);
	return 1;
}

size_t tally_ring__span(const struct tally_ring *r, const void **p1, size_t *len1,
			const void **p2, size_t *len2)
{
	size_t total = (size_t)(r->rd - r->tail);
	size_t off = (size_t)(r->tail & r->mask);
	size_t first = r->data_size - off;

	*p1 = r->data + off;
	*p2 = r->data;
	if (first >= total) {
		*len1 = total;
		*len2 = 0;
	} else {
		*len1 = first;
		*len2 = total - first;
	}
	return total;
}

void tally_ring__consume(struct tally_ring *r)
{
	r->tail = r->rd;
	if (r->writable)
		__atomic_store_n(&r->meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

void tally_ring__skip_all(struct tally_ring *r)
{
	r->head = load_head(r);
	r->rd = r->head;
	tally_ring__consume(r);
}

void tally_ring__stats(const struct tally_ring *r, struct tally_ring_stats *st)
{
	*st = r->st;
}
