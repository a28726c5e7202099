/*
 * Shared inside the perf.data writer (lib/writer*.c): feature payload helpers.
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

#endif
