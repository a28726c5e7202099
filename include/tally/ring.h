/*
 * The mmap'd perf ring buffer, read from user space.
 *
 * The kernel appends records at data_head; we read from data_tail and hand space
 * back by advancing data_tail. data_head is loaded with acquire semantics (so the
 * record bytes it covers are visible before we read them) and data_tail is stored
 * with release semantics (so the kernel cannot overwrite bytes we are still reading).
 *
 * Reading is in two steps so that a recorder can both look at each record and copy
 * the raw bytes out in bulk:
 *   tally_ring__read()     walks the records from the tail: records that wrap the end
 *                          of the buffer are copied into a private buffer so the caller
 *                          always sees one contiguous record;
 *   tally_ring__span()     the raw bytes read so far but not yet consumed (at most two
 *                          pieces when they wrap the end), for writing them out as is;
 *   tally_ring__consume()  gives the bytes read so far back to the kernel.
 * LOST, LOST_SAMPLES, THROTTLE and SAMPLE records seen by tally_ring__read() are
 * counted in the ring's statistics.
 */
#ifndef TALLY_RING_H
#define TALLY_RING_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_ring;

/* Counts of what tally_ring__read() has delivered since the ring was made. */
struct tally_ring_stats {
	uint64_t records;	/* all records */
	uint64_t bytes;		/* their total size */
	uint64_t samples;	/* PERF_RECORD_SAMPLE */
	uint64_t lost;		/* sum of PERF_RECORD_LOST.lost (records dropped: ring full) */
	uint64_t lost_records;	/* number of PERF_RECORD_LOST records */
	uint64_t lost_samples;	/* sum of PERF_RECORD_LOST_SAMPLES.lost */
	uint64_t throttle;	/* PERF_RECORD_THROTTLE */
	uint64_t unthrottle;	/* PERF_RECORD_UNTHROTTLE */
	uint64_t wraps;		/* records that wrapped the end and were copied out */
	uint64_t overwritten;	/* bytes the kernel overwrote before we read them
				 * (read-only rings only) */
};

/* Map the ring of perf event FD: one metadata page plus DATA_PAGES pages (a power of
 * two). With WRITABLE false the ring is mapped read-only: the kernel then never waits
 * for us and overwrites the oldest data (overwrite mode); when it has lapped the reader,
 * the reader skips to data_head and counts the bytes in stats.overwritten. Normally
 * pass true.
 * Returns 0 or -errno (-EPERM typically means the mlock limit refused the buffer). */
TALLY_API int tally_ring__mmap(struct tally_ring **out, int fd, size_t data_pages, bool writable);

/* Read a ring laid out like a perf mmap that the caller owns: BASE is the metadata
 * page (struct perf_event_mmap_page), the data area is DATA_SIZE bytes (a power of
 * two) at BASE + DATA_OFFSET. The ring never unmaps or frees BASE. Used for tests and
 * for rings mapped elsewhere. If the metadata page carries data_offset/data_size
 * (kernel 4.1+), those must agree with the arguments. */
TALLY_API int tally_ring__wrap(struct tally_ring **out, void *base, size_t data_offset,
			       size_t data_size);

/* Unmap (if tally_ring__mmap made it) and free. NULL-safe. */
TALLY_API void tally_ring__delete(struct tally_ring *r);

/* The metadata page (time conversion, data_head/data_tail, ...). */
TALLY_API struct perf_event_mmap_page *tally_ring__meta(const struct tally_ring *r);
/* The fd given to tally_ring__mmap, or -1. */
TALLY_API int tally_ring__fd(const struct tally_ring *r);
/* Size of the data area in bytes, and of the whole mapping (metadata page included). */
TALLY_API size_t tally_ring__data_size(const struct tally_ring *r);
TALLY_API size_t tally_ring__mmap_size(const struct tally_ring *r);

/* Bytes the kernel has published beyond our read position (loads data_head). */
TALLY_API size_t tally_ring__avail(struct tally_ring *r);

/* Next complete record, or none. Returns 1 and sets *rec (valid until the next call to
 * tally_ring__read or tally_ring__consume), 0 when no complete record is available
 * (a record announced larger than what was published is left for later), or
 * -EBADMSG when the ring holds a record header that cannot be right (size < 8 or
 * larger than the ring); the reader then stops and the caller should reset the ring
 * (tally_ring__skip_all). */
TALLY_API int tally_ring__read(struct tally_ring *r, const struct perf_event_header **rec);

/* The bytes read by tally_ring__read but not consumed yet, as one or two pieces (the
 * second is empty unless they wrap the end of the buffer). Returns the total. */
TALLY_API size_t tally_ring__span(const struct tally_ring *r, const void **p1, size_t *len1,
				  const void **p2, size_t *len2);

/* Hand the bytes read so far back to the kernel (release store of data_tail). */
TALLY_API void tally_ring__consume(struct tally_ring *r);

/* Drop everything published so far without reading it (after -EBADMSG). */
TALLY_API void tally_ring__skip_all(struct tally_ring *r);

/* Statistics of records delivered by tally_ring__read. */
TALLY_API void tally_ring__stats(const struct tally_ring *r, struct tally_ring_stats *st);

#ifdef __cplusplus
}
#endif
#endif
