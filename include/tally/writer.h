/*
 * Writing perf.data: regular files and pipe streams that perf 6.1 reads as its own.
 *
 * Life of a writer:
 *   tally_writer__open / __open_fd       file or pipe mode, optional zstd compression
 *   tally_writer__add_event (+ groups)    the events (attrs, names, sample ids)
 *   tally_writer__set_* features          any time before finish (pipe mode: before start)
 *   tally_writer__start                   the part of the file before the records
 *   tally_writer__write ...               whole records (kernel or user types)
 *   tally_writer__finish                  features + final header: the file is complete
 *   tally_writer__delete
 *
 * File mode layout (perf's): [header][ids][attrs][data][feature table][feature payloads].
 * The header is written first with data.size 0 and rewritten by finish(), so a file
 * whose writer was killed says "data size 0" (perf: "not properly terminated?") rather
 * than passing for complete. When a write fails (ENOSPC, EFBIG, EIO…) the writer stops
 * accepting records; finish() then cuts the file after the last complete record,
 * rewrites the header to describe exactly those records (no features), and returns
 * the original error so the caller can say what happened.
 *
 * Pipe mode: a 16-byte header, HEADER_ATTR records, HEADER_FEATURE records for the
 * features set before start(), the end marker perf 6.1 expects (feat_id 32), then
 * HEADER_TRACING_DATA if tracing data was set, then the records.
 *
 * Compression (compress_level > 0): records are gathered and written as zstd
 * COMPRESSED (81) records, and the COMPRESSED feature is set (required by readers).
 *
 * Attrs are written with attr.size <= 128 (what perf 6.1 accepts).
 */
#ifndef TALLY_WRITER_H
#define TALLY_WRITER_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include <tally/format.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_writer;

struct tally_writer_opts {
	bool pipe;		/* pipe-mode stream (implied for "-" and for non-seekable fds) */
	int compress_level;	/* 0: off; 1..22: zstd level */
	uint32_t comp_mmap_len;	/* COMPRESSED feature's mmap_len (readers' decompression
				 * buffer); 0: 528384 */
	bool no_backup;		/* file mode: do not rename an existing PATH to PATH.old */
	unsigned aio;		/* file mode: records go out through this many POSIX AIO
				 * blocks (1..4) in flight at once (perf record --aio);
				 * 0: write(2); above 4: open fails with -EINVAL. The
				 * file is the same byte for byte; ignored in pipe mode */
};

/* Open PATH for writing; "-" writes to standard output (pipe mode). In file mode an
 * existing non-empty PATH is renamed to PATH.old (like perf) unless opts->no_backup.
 * OPTS may be NULL. Returns 0 or -errno. */
TALLY_API int tally_writer__open(struct tally_writer **out, const char *path,
				 const struct tally_writer_opts *opts);
/* Write to an open FD, which the writer does not close. A non-seekable FD forces pipe
 * mode. */
TALLY_API int tally_writer__open_fd(struct tally_writer **out, int fd,
				    const struct tally_writer_opts *opts);
/* Free. A file not finished is left as it is (header data.size 0). NULL-safe. */
TALLY_API void tally_writer__delete(struct tally_writer *w);

TALLY_API bool tally_writer__is_pipe(const struct tally_writer *w);
/* The path given to open ("-" for stdout, NULL for open_fd). */
TALLY_API const char *tally_writer__path(const struct tally_writer *w);

/* ---- events (before start) ---- */

/* Add an event: ATTR is stored with attr.size clamped to 128; NAME (may be NULL)
 * goes into EVENT_DESC; IDS are the kernel sample ids (PERF_EVENT_IOC_ID) of its fds.
 * Returns the event's index (>= 0) or -errno. */
TALLY_API int tally_writer__add_event(struct tally_writer *w, const struct perf_event_attr *attr,
				      const char *name, const uint64_t *ids, size_t nr_ids);
/* Append more ids to event IDX. */
TALLY_API int tally_writer__add_event_ids(struct tally_writer *w, int idx, const uint64_t *ids,
					  size_t nr_ids);
TALLY_API size_t tally_writer__nr_events(const struct tally_writer *w);
/* Declare a group for GROUP_DESC: events LEADER..LEADER+NR_MEMBERS-1; NAME may be NULL. */
TALLY_API int tally_writer__add_group(struct tally_writer *w, const char *name, int leader,
				      int nr_members);

/* ---- header features ---- */

/* Set feature FEAT (enum tally_feature) to a raw payload (copied). A NULL/0 payload
 * sets a flag-only feature (e.g. TALLY_FEAT_STAT). Replaces an earlier value. */
TALLY_API int tally_writer__set_feature(struct tally_writer *w, enum tally_feature feat,
					const void *payload, size_t len);
TALLY_API void tally_writer__clear_feature(struct tally_writer *w, enum tally_feature feat);
TALLY_API bool tally_writer__has_feature(const struct tally_writer *w, enum tally_feature feat);
/* Get a feature's current payload (NULL/0 when unset). */
TALLY_API const void *tally_writer__feature(const struct tally_writer *w, enum tally_feature feat,
					    size_t *len);
/* A perf_header_string feature (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID). */
TALLY_API int tally_writer__set_feature_string(struct tally_writer *w, enum tally_feature feat,
					       const char *s);
/* A string-list feature (CMDLINE). */
TALLY_API int tally_writer__set_feature_strings(struct tally_writer *w, enum tally_feature feat,
						const char *const *strs, size_t nr);
/* CMDLINE from a program path and its arguments (perf stores argv[0] as the binary). */
TALLY_API int tally_writer__set_cmdline(struct tally_writer *w, int argc, char *const argv[]);
/* Describe this machine: HOSTNAME, OSRELEASE, VERSION (VERSION_STR), ARCH, NRCPUS,
 * CPUDESC, CPUID, TOTAL_MEM, CPU_TOPOLOGY, NUMA_TOPOLOGY, PMU_MAPPINGS. Features
 * whose source cannot be read are left out. Returns 0 or -ENOMEM. */
TALLY_API int tally_writer__set_host_features(struct tally_writer *w, const char *version_str);
/* SAMPLE_TIME: first and last sample timestamps (ns). */
TALLY_API int tally_writer__set_sample_time(struct tally_writer *w, uint64_t first, uint64_t last);
/* Add one entry to BUILD_ID: PID (-1 for the kernel / host), the build-id bytes
 * (<= 20), the file name; KERNEL marks the entry PERF_RECORD_MISC_KERNEL. */
TALLY_API int tally_writer__add_build_id(struct tally_writer *w, pid_t pid, const uint8_t *id,
					 size_t id_len, const char *filename, bool kernel);
/* TRACING_DATA for the tracepoint events added so far, from tracefs (found or mounted
 * by tally_tracefs__find): perf's "tracing0.6" layout. Returns 0 (also when there are
 * no tracepoint events) or -errno: tally_tracefs__find's errors (tally_tracefs__strerror
 * explains them), or the error reading a format file. */
TALLY_API int tally_writer__set_tracing_data(struct tally_writer *w);

/* ---- data ---- */

/* Write what comes before the records. Events must have been added. */
TALLY_API int tally_writer__start(struct tally_writer *w);
/* Write LEN bytes holding one or more whole records. Buffered. After a failed write
 * every later call returns the same error. */
TALLY_API int tally_writer__write(struct tally_writer *w, const void *buf, size_t len);
/* Push buffered (and compressed) records to the output. */
TALLY_API int tally_writer__flush(struct tally_writer *w);
/* Flush, write the features and the final header. Returns 0, or the first write
 * error (the file then holds the complete records written before it; see above). */
TALLY_API int tally_writer__finish(struct tally_writer *w);

/* Bytes of records given to tally_writer__write (before compression), and bytes
 * written to the output so far (header and features included after finish). */
TALLY_API uint64_t tally_writer__data_bytes(const struct tally_writer *w);
TALLY_API uint64_t tally_writer__output_bytes(const struct tally_writer *w);
/* Offset of the data section in the file (0 in pipe mode, known after start). */
TALLY_API uint64_t tally_writer__data_offset(const struct tally_writer *w);

#ifdef __cplusplus
}
#endif
#endif
