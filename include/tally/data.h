/*
 * Reading perf.data: regular files and pipe streams, written by perf (any version
 * whose layout we can read) or by tally.
 *
 * Open a file, look at its events and header features, then walk its records with a
 * callback. The reader decompresses COMPRESSED (81) and COMPRESSED2 (83) records,
 * consumes pipe-mode HEADER_ATTR/HEADER_FEATURE/TRACING_DATA records itself, finds
 * each record's event by sample id, and (when asked) delivers records sorted by time
 * within FINISHED_ROUND windows, as perf does. Every length and offset is checked
 * against the file; damage is reported with its file offset.
 */
#ifndef TALLY_DATA_H
#define TALLY_DATA_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include <tally/format.h>
#include <tally/record.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_data;

/* Where and why reading failed, for "file offset 0x…: …" messages. */
struct tally_data_error {
	uint64_t offset;
	char msg[256];
};

/* One event (attr) of the file. */
struct tally_data_event {
	struct perf_event_attr attr;	/* fields beyond 128 bytes are dropped */
	uint32_t disk_attr_size;	/* attr.size as stored (e.g. 136 from a newer perf) */
	uint64_t config3;		/* from a 136-byte attr, else 0 */
	char *name;			/* EVENT_DESC name, or derived from type/config */
	uint64_t *ids;
	size_t nr_ids;
	struct tally_sample_layout layout;
	int leader;			/* GROUP_DESC: index of the leader, or own index */
	int nr_members;
};

struct tally_data_open_opts {
	bool force;		/* skip the "not owned by current user" check */
};

/* Open PATH ("-" is standard input). A regular file (also one redirected to standard
 * input) is mapped. A pipe or FIFO is read up to its first SAMPLE here (its attrs and
 * features come first); the rest is read during the walk, which a stream allows once.
 * On failure returns a negative errno and fills *err (which may be NULL). */
TALLY_API int tally_data__open(struct tally_data **out, const char *path,
			       const struct tally_data_open_opts *opts,
			       struct tally_data_error *err);
TALLY_API void tally_data__delete(struct tally_data *d);
/* Read perf.data (file or pipe layout) from a memory buffer, which must stay valid and
 * unchanged until tally_data__delete (nothing is copied). For fuzzers and tests. */
TALLY_API int tally_data__open_mem(struct tally_data **out, const void *buf, size_t len,
				   struct tally_data_error *err);
/* The path given to open ("-" for standard input, "(memory)" for open_mem). */
TALLY_API const char *tally_data__path(const struct tally_data *d);

TALLY_API bool tally_data__is_pipe(const struct tally_data *d);
TALLY_API size_t tally_data__nr_events(const struct tally_data *d);
TALLY_API const struct tally_data_event *tally_data__event(const struct tally_data *d, size_t idx);
/* Index of the event a record belongs to (by id), or -1. With one event it is always 0;
 * a non-sample record that carries no id is given event 0 (perf decodes its trailer
 * with the first event too); user records (type >= 64) get -1. */
TALLY_API int tally_data__event_of(const struct tally_data *d, const struct perf_event_header *hdr);
/* Index of the event with sample id ID, or -1. */
TALLY_API int tally_data__event_of_id(const struct tally_data *d, uint64_t id);

/* Raw payload of header feature FEAT (enum tally_feature) if present. */
TALLY_API bool tally_data__has_feature(const struct tally_data *d, enum tally_feature feat);
TALLY_API int tally_data__feature(const struct tally_data *d, enum tally_feature feat,
				  const void **buf, size_t *len);
/* A string feature (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID) or NULL. */
TALLY_API const char *tally_data__feature_string(const struct tally_data *d,
						 enum tally_feature feat);

/* A string-list feature (CMDLINE: the recording's command line), decoded: *out is one
 * malloc'd block holding *nr pointers and the strings (free(*out) releases all), NULL
 * terminated. 0, -ENOENT (no such feature), -EINVAL (damaged), -ENOMEM. */
TALLY_API int tally_data__feature_strings(const struct tally_data *d, enum tally_feature feat,
					  char ***out, size_t *nr);

/* The file header (file mode; zeroed in pipe mode) and file size. */
TALLY_API const struct tally_file_header *tally_data__header(const struct tally_data *d);
TALLY_API uint64_t tally_data__file_size(const struct tally_data *d);

/* Called for each record. evidx is the record's event (-1 if none can be found).
 * file_offset is the record's position in the file (or in the decompressed stream,
 * for records that came out of a COMPRESSED record: then `compressed` is true).
 * Return 0 to go on, nonzero to stop (tally_data__for_each returns that value). */
struct tally_record_ctx {
	int evidx;
	uint64_t file_offset;
	bool compressed;
};
typedef int (*tally_record_fn)(void *arg, const struct perf_event_header *hdr,
			       const struct tally_record_ctx *ctx);

enum {
	TALLY_DATA_ORDERED = 1 << 0,	/* sort by time within FINISHED_ROUND windows */
	TALLY_DATA_RAW = 1 << 1,	/* also deliver records the reader consumes itself
					 * (HEADER_ATTR, HEADER_FEATURE, COMPRESSED, …) */
};

/* Walk all records. Returns 0 at the end of the data, the callback's nonzero value,
 * or -errno with *err filled (damage). A file cut short is not an error: reading stops
 * at the last complete record and tally_data__truncated() says how much is missing.
 * Records are 8-byte aligned and valid until the callback returns. Before a SAMPLE is
 * handed over it has been checked against its event's layout (tally_sample__check: a
 * sample that does not fit its fields is damage), so tally_sample__parse() on it
 * succeeds.
 * TALLY_DATA_ORDERED follows perf: at each FINISHED_ROUND the records up to the newest
 * time of the previous round are delivered in time order; records without a time
 * and user records (type >= 64) go out at once. A pipe stream: -ESPIPE the 2nd time. */
TALLY_API int tally_data__for_each(struct tally_data *d, unsigned flags, tally_record_fn fn,
				   void *arg, struct tally_data_error *err);

/* After for_each: bytes missing at the end of a file cut short (0 if complete), and
 * counts of records skipped because their type was unknown. */
TALLY_API uint64_t tally_data__truncated(const struct tally_data *d);
TALLY_API uint64_t tally_data__nr_unknown_records(const struct tally_data *d);
/* After for_each without TALLY_DATA_RAW: how many records the reader took in itself
 * and did not hand to the callback (HEADER_ATTR, HEADER_FEATURE, HEADER_TRACING_DATA of
 * a pipe, COMPRESSED); with the records handed out, the count perf calls its events. */
TALLY_API uint64_t tally_data__nr_consumed_records(const struct tally_data *d);

#ifdef __cplusplus
}
#endif
#endif
