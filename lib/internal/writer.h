/*
 * Shared inside the perf.data writer (lib/writer*.c): feature payload helpers, the
 * AIO data path.
 */
#ifndef TALLY_INTERNAL_WRITER_H
#define TALLY_INTERNAL_WRITER_H

#include <stdint.h>
#include <linux/perf_event.h>

#include "internal/util.h"

struct tally_writer;

/* Append a perf_header_string (u32 len rounded up to 64, zero padded). */
int tly_feat__string(struct tly_buf *b, const char *s);
int tly_feat__u32(struct tly_buf *b, uint32_t v);
int tly_feat__u64(struct tly_buf *b, uint64_t v);

/* The attr and name of event IDX as the writer stores them. */
int tly_writer__event(const struct tally_writer *w, size_t idx,
		      const struct perf_event_attr **attr, const char **name);

/* POSIX AIO data writes (writer-aio.c): NR (1..TLY_AIO_MAX) blocks of SIZE-byte
 * buffers on FD. __write hands the filled *BUF (LEN bytes at file offset OFF) to a
 * block and gives back an idle buffer of the same size in *BUF, first waiting for the
 * oldest block when all are busy; __wait waits for all. Bytes of blocks finished, in
 * order and up to the first failure, are added to *DONE. 0 or the first -errno. */
#define TLY_AIO_MAX	4
struct tly_aio;
int tly_aio__new(struct tly_aio **out, int fd, unsigned nr, size_t size);
int tly_aio__write(struct tly_aio *a, unsigned char **buf, size_t len, uint64_t off,
		   uint64_t *done);
int tly_aio__wait(struct tly_aio *a, uint64_t *done);
void tly_aio__delete(struct tly_aio *a);

#endif
