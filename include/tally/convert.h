/*
 * Profile exchange: a perf.data's samples written in formats other tools read, as
 * perf data convert does.
 *
 *  - perf 6.1's JSON (`perf data convert --to-json`): the file's headers, then every
 *    sample with its time, pid, tid, cpu, comm and resolved call chain, in perf's
 *    layout, byte for byte.
 *  - pprof (profile.proto, gzipped): the format Go's pprof, Pyroscope, Parca, Grafana
 *    and Google Cloud Profiler read. Two values per event (its sample count and its
 *    period, in nanoseconds for clock events), a location per address with its mapping,
 *    functions and source lines (the functions inlined there as further lines of the one
 *    location), pid/tid/comm/cpu labels, and each mapping's build-id so a server can
 *    symbolize what could not be here. Encoded with protobuf-c.
 *
 * Both take samples already resolved by a session (the caller walks the file: the
 * side-band records into the session, each sample's call chain resolved), so they see
 * exactly what report and script see.
 */
#ifndef TALLY_CONVERT_H
#define TALLY_CONVERT_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tally/data.h>
#include <tally/record.h>
#include <tally/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One sample of the file, resolved. */
struct tally_convert_sample {
	int evidx;				/* its event (tally_data__event) */
	const struct tally_sample *smp;		/* as parsed from the record */
	const struct tally_thread *thread;	/* its thread: comm */
	uint64_t period;			/* tally_sample__period */
	/* its call chain resolved, callee first, PERF_CONTEXT_* markers left out; the
	 * sampled ip alone when the sample has no call chain. With chain, pprof takes
	 * each frame after the first for a return address and gives its location the
	 * address before it (in the call), but for the callers marked unwound (already
	 * so, tally_session__resolve_chain) */
	const struct tally_addr_loc *frames;
	size_t nr_frames;
	/* the call chain as recorded, each address resolved alone: no user frames
	 * unwound from a --call-graph dwarf sample's stack copy, no inlined functions.
	 * What perf 6.1's JSON lists (a dwarf sample's recorded chain is its kernel part:
	 * empty for a sample in user space). NULL: the same as frames. */
	const struct tally_addr_loc *recorded;
	size_t nr_recorded;
	bool chain;				/* frames came from a call chain */
	bool chain_damaged;			/* the chain held a PERF_CONTEXT_* marker of
						 * unknown meaning, left out: perf report drops
						 * such samples, perf's JSON lists the rest */
};

/* ---- perf's JSON -------------------------------------------------------------------- */

/* s as a JSON string on fp, quotes included (NULL as ""): '"' and '\\' escaped, \b \f
 * \n \r \t by their short forms, other control characters as \u00XX, everything else
 * (UTF-8 included) as it is. With TALLY_JSON_HTML '<', '>' and '&' too are written as
 * \u00XX, so the text can sit in an HTML <script> element ("</script>" cannot end it).
 * The one escaper of the library and the command. 0, or -EIO when fp is in error. */
#define TALLY_JSON_HTML 1u
TALLY_API int tally_json_string(FILE *fp, const char *s, unsigned flags);

struct tally_json_export;

struct tally_json_export_opts {
	/* "captured-on": the input's modification time (seconds since the epoch), as
	 * perf prints it; negative leaves the key out */
	int64_t captured_on;
};

/* Start the document on fp: the version and the headers of d (what its features say;
 * a pipe stream's offsets are 0). 0, -ENOMEM, -EIO. */
TALLY_API int tally_json_export__new(struct tally_json_export **out, FILE *fp,
				     const struct tally_data *d,
				     const struct tally_json_export_opts *opts);
/* One sample, as perf prints it: its recorded chain (s->recorded, else s->frames).
 * 0 or -EIO (fp failed). */
TALLY_API int tally_json_export__sample(struct tally_json_export *x,
					const struct tally_convert_sample *s);
/* Close the document. 0 or -EIO (fp failed at some point). */
TALLY_API int tally_json_export__finish(struct tally_json_export *x);
TALLY_API uint64_t tally_json_export__nr_samples(const struct tally_json_export *x);
TALLY_API void tally_json_export__delete(struct tally_json_export *x);

/* ---- pprof -------------------------------------------------------------------------- */

struct tally_pprof;

struct tally_pprof_opts {
	/* labels for every sample ("host", "service", ...): keys[i] = values[i] */
	const char *const *label_keys;
	const char *const *label_values;
	size_t nr_labels;
	/* the end of the recording (ns since the epoch, e.g. the file's mtime); the
	 * profile's time is this minus the samples' time span. 0: no time. */
	int64_t end_ns;
	bool no_lines;		/* no source lines or inline frames (function names only) */
};

/* A profile of d's events; s is the session the samples are resolved by (its dsos'
 * files give source lines; it must outlive the tally_pprof). 0 or -ENOMEM. */
TALLY_API int tally_pprof__new(struct tally_pprof **out, const struct tally_data *d,
			       struct tally_session *s, const struct tally_pprof_opts *opts);
TALLY_API void tally_pprof__delete(struct tally_pprof *p);
/* Add a sample (samples alike in event, locations and labels are summed). 0 or
 * -ENOMEM. */
TALLY_API int tally_pprof__add(struct tally_pprof *p, const struct tally_convert_sample *s);
/* Write the profile, gzipped, to fp. 0, -ENOMEM, -EIO (fp failed). */
TALLY_API int tally_pprof__write(struct tally_pprof *p, FILE *fp);
/* How many distinct samples, locations, functions and mappings it holds so far. */
TALLY_API void tally_pprof__counts(const struct tally_pprof *p, size_t *samples, size_t *locations,
				   size_t *functions, size_t *mappings);

#ifdef __cplusplus
}
#endif
#endif
