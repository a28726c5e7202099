/*
 * The perf.data reader's insides, shared by lib/format/data.c (open, accessors),
 * data-header.c (events, header sections, pipe header records) and data-walk.c (the
 * id hash, decompression, the ordering queue).
 */
#ifndef TALLY_INTERNAL_READER_H
#define TALLY_INTERNAL_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>

#include <tally/data.h>

struct feat {
	const uint8_t *buf;
	size_t len;
	bool present;
};

/* A buffer of decompressed records; queued records keep it alive. */
struct chunk {
	size_t refs;
	size_t len;
	bool decompressed;	/* else: a copy of one misaligned record */
	uint8_t data[] __attribute__((aligned(8)));
};

struct qent {
	uint64_t time;
	const struct perf_event_header *hdr;
	struct chunk *chunk;
	uint64_t off;
	int evidx;
};

struct tally_data {
	const uint8_t *buf;
	size_t size;
	void *map;		/* munmap on delete */
	uint8_t *owned;		/* free on delete (stdin) */
	bool pipe;
	char *path;
	struct tally_file_header hdr;
	uint64_t data_off, data_end;	/* data section within buf */

	struct tally_data_event *events;
	size_t nr_events;
	struct feat feats[TALLY_FEAT_MAX];
	const char *feat_str[TALLY_FEAT_MAX];	/* decoded string features */

	/* id -> event index, open addressing */
	uint64_t *id_keys;
	int *id_vals;
	size_t id_cap, id_nr;

	/* how to find the id of a record: layout of the first event */
	bool same_id_pos;

	ZSTD_DStream *zstd;
	uint8_t *carry;		/* incomplete record at the end of a decompressed chunk */
	size_t carry_len;
	uint64_t decomp_off;

	struct qent *q;
	size_t q_nr, q_cap;
	struct qent *q_tmp;	/* merge space for queue_sort, q_cap entries */
	uint64_t max_time, flush_limit;

	uint64_t truncated;
	uint64_t nr_unknown;
	uint64_t nr_consumed;	/* records taken in by the reader, not handed out */
	uint64_t released;	/* file pages before this offset were given back */
	int stream_fd;		/* pipe still being read (buf holds its start), or -1 */
	bool stream_used;	/* a stream can be walked once */
};

/* Fill err (when non-NULL) with the offset and message; returns ret. */
int tly_data_fail(struct tally_data_error *err, uint64_t off, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- id hash (data-walk.c): sample id -> event index ---- */

int tly_data_id_add(struct tally_data *d, uint64_t id, int idx);

static inline size_t id_slot(uint64_t id, size_t cap)
{
	id *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(id >> 17) & (cap - 1);
}

static inline int id_find(const struct tally_data *d, uint64_t id)
{
	if (!d->id_cap)
		return -1;
	size_t s = id_slot(id, d->id_cap);
	while (d->id_vals[s] >= 0) {
		if (d->id_keys[s] == id)
			return d->id_vals[s];
		s = (s + 1) & (d->id_cap - 1);
	}
	return -1;
}

/* ---- the header (data-header.c) ---- */

/* Size on the stream of a record: some user records carry data after header.size. */
static inline int stream_size(const uint8_t *rec, const struct perf_event_header *hdr, size_t avail,
		       uint64_t *sz)
{
	*sz = hdr->size;
	if (hdr->type == TALLY_RECORD_HEADER_TRACING_DATA && hdr->size >= 12 && avail >= 12) {
		uint32_t extra;
		memcpy(&extra, rec + 8, 4);
		*sz += extra;
	} else if (hdr->type == TALLY_RECORD_AUXTRACE && hdr->size >= 16 && avail >= 16) {
		uint64_t extra;
		memcpy(&extra, rec + 8, 8);
		if (extra > UINT64_MAX / 2)
			return -EINVAL;
		*sz += extra;
	}
	return 0;
}

/* A file's header sections: attrs and their ids, the features. */
int tly_data_open_file_mode(struct tally_data *d, struct tally_data_error *err);
/* A pipe stream's header records, consumed up front. */
int tly_data_scan_pipe(struct tally_data *d, struct tally_data_error *err);
/* After either: names, sample layouts and the id lookup of the events. */
int tly_data_finish_events(struct tally_data *d, struct tally_data_error *err);

/* ---- walking (data-walk.c) ---- */

/* Free the ordering queue and the chunks its records keep alive. */
void tly_data_queue_drop(struct tally_data *d);

#endif
