/*
 * What the commands that read a perf.data share: opening it with one clear error
 * message, its session (and the build-id commands' variant), the warnings about
 * missing symbols, perf's default --max-stack, and lists of names from the command
 * line. Resolving samples is the session's (tally/session.h).
 */
#ifndef TALLY_CLI_REPORT_COMMON_H
#define TALLY_CLI_REPORT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/cpumap.h>
#include <tally/data.h>
#include <tally/hist.h>
#include <tally/record.h>
#include <tally/session.h>

/* Open PATH (or "-" for a pipe); prints the error itself. 0 or nonzero exit status. */
int report_open(struct tally_data **d, const char *path, bool force);

/* Open the session for D with what the file knows: the dsos' build-ids and the
 * recording kernel's (BUILD_ID feature), which decides where kernel symbols come from
 * (see tally_session__new). 0 or -errno. */
int report_session_new(struct tally_session **s, struct tally_data *d,
		       const struct tally_session_opts *opts);
/* For the build-id commands: open PATH (the error printed) and a session that keeps
 * maps and dsos but no symbols, given the file's BUILD_ID list (a damaged list is
 * warned about; what could be read is kept). WITH_HITS NULL: nothing more. Else perf
 * buildid-list's rule: hits are wanted as *WITH_HITS says, always for a file without a
 * list, never for a file with AUX area data (too long to decode); the records are read
 * (samples marking the dsos they hit) when hits are wanted or the file is a pipe
 * (its build-ids are records); *WITH_HITS gets the decision. 0, or 1 with nothing left
 * open. */
int report_buildid_session(struct tally_data **d, struct tally_session **s, const char *path,
			   bool force, bool *with_hits);

/* After a walk of input's records (tally_data__for_each's ret and error): the error
 * in one line (1), or 0 and a warning per damage the reader stepped over (a file cut
 * short, records of unknown type). done: what was made of the records before a cut
 * ("printed", "reported"). */
int report_walk_end(struct tally_data *d, const char *input, int ret,
		    const struct tally_data_error *derr, const char *done);

/* What a pass over a file's records counted for perf's warnings about lost data. */
struct lost_counts {
	uint64_t nr_records;	/* every record, those the reader took in itself too */
	uint64_t nr_lost_records;	/* PERF_RECORD_LOST: chunks the kernel dropped */
	uint64_t nr_samples;
	uint64_t lost_samples;	/* the sum of PERF_RECORD_LOST_SAMPLES' counts */
};

/* The count of samples a PERF_RECORD_LOST_SAMPLES record says were lost (0 for any
 * other record, or one too short to say). */
uint64_t record_lost_samples(const struct perf_event_header *hdr);

/* perf's warnings after a pass, on stderr: "lost N chunks" for LOST records (unless
 * chunks is false: --show-lost-events printed them), and the share of samples lost when
 * over 5%. */
void report_warn_lost(const struct lost_counts *c, bool chunks);

/* After the records: if kernel addresses went without symbols, say why (one warning),
 * and the same for each binary whose symbols were wanted and not found (its file gone
 * or rebuilt, and no usable copy in the build-id cache; at most 10 named). */
void report_kernel_symbols_note(struct tally_session *s);

/* perf's default --max-stack: kernel.perf_event_max_stack (127 when unreadable). */
unsigned sysctl_max_stack(void);

/* Split "a,b,c" into a NULL-terminated array (free with strlist_free). NULL on ENOMEM. */
char **strlist_parse(const char *s, size_t *nr);
void strlist_free(char **l);
size_t strlist_len(char *const *l);
bool strlist_has(char *const *l, const char *s);

/* report and script --header, --header-only: the perf.data header as perf's
 * "# key : value" lines, ending with "# ========" (report-header.c). */
void report_print_header(struct tally_data *d, const char *input);

/* The sample filters report and script share, as their options fill them: -c/--comms,
 * -d/--dsos, -S/--symbols, --pid, --tid (comma lists), -C/--cpu. */
struct sample_filter_opts {
	char **comms, **dsos, **syms, **pids, **tids;
	struct tally_cpumap *cpus;
};
/* o as the library's sample filter (it points into o; its pid arrays are its own:
 * sample_filter_free). 0 or -ENOMEM. */
int sample_filter_make(const struct sample_filter_opts *o, struct tally_hist_filter *f);
void sample_filter_free(struct tally_hist_filter *f);
void sample_filter_opts__exit(struct sample_filter_opts *o);
/* --time START,STOP (seconds, perf's "sec.usec"; either side may be empty) into
 * nanoseconds, 0 for no bound. 0, or -1 after saying what is wrong. */
int parse_time_span(const char *s, uint64_t *start, uint64_t *end);

/* The socket of each cpu the file's CPU_TOPOLOGY names (*nr of them, from NRCPUS's
 * available cpus): a malloc'd array, NULL when the file has no (readable) topology. */
int32_t *report_cpu_sockets(struct tally_data *d, size_t *nr);

/* A regex option (report -p, --ignore-callees of report and top): perf's extended
 * regex, checked while parsing so a bad one is a usage error. 0, or -1 after saying
 * what is wrong. */
int cli_check_regex(const char *opt, const char *arg);

/* --switch-on / --switch-off / --show-on-off-events (perf's evswitch): samples count
 * only after a sample of the on event (from the start without one) and until a sample
 * of the off event; the on and off samples themselves only with show. */
struct evswitch {
	int on, off;		/* event indexes, -1: none */
	bool discarding, show;
};

/* The three options of an options table (CLI_OPTS) whose fields on, off (strings) and
 * show (bool) a struct evswitch is made from. */
#define OPT_EVSWITCH(on, off, show) \
	OPT_STRING(0, "switch-on", on, "event", \
		   "Consider events after the occurrence of this event"), \
	OPT_STRING(0, "switch-off", off, "event", \
		   "Stop considering events after the occurrence of this event"), \
	OPT_BOOL(0, "show-on-off-events", show, \
		 "Show the on/off switch events, used with --switch-on and --switch-off")

/* The events named in d (perf's event names); 0, or 1 when one is not there (error
 * printed). */
int evswitch_init(struct evswitch *sw, struct tally_data *d, const char *on, const char *off,
		  bool show);
/* The same for events found otherwise (tally top's): indexes, -1 for none. */
void evswitch_set(struct evswitch *sw, int on, int off, bool show);
/* Is this sample of event evidx left out? (Call once per sample, in order.) */
bool evswitch_discard(struct evswitch *sw, int evidx);

#endif
