/*
 * tally record's parts: options (cmd-record.c), events and fds (record-open.c), the
 * recording loop and the file (record-run.c), build-ids of hit DSOs (record-buildid.c).
 */
#ifndef TALLY_CLI_RECORD_H
#define TALLY_CLI_RECORD_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tally/event.h>
#include <tally/ring.h>
#include <tally/sampler.h>
#include <tally/writer.h>

#include "control.h"
#include "workload.h"

struct record_opts {
	struct tally_evlist *evlist;	/* -e events (NULL: the default event) */
	char **filters;			/* --filter of the first nr_filters evlist events (owned) */
	size_t nr_filters;
	size_t last_spec;		/* the first event of the last -e */
	uint64_t freq;			/* -F (default 4000) */
	bool freq_set, freq_max;
	uint64_t period;		/* -c */
	bool callchain, dwarf;
	uint32_t stack_size;		/* dwarf stack bytes (default 8192) */
	const char *pid_list, *tid_list, *cpu_list;
	bool system_wide, per_thread, no_inherit;
	size_t mmap_pages;		/* 0: default */
	bool switch_events, sample_addr, raw, sample_cpu, sample_time;
	bool all_user, all_kernel;	/* --all-user / --all-kernel: every event's mode */
	bool sample_period;		/* --period: PERIOD even at a fixed period */
	bool sample_identifier;		/* --sample-identifier */
	bool kernel_callchains, user_callchains;	/* one side of the chains only */
	bool running_time;		/* --running-time: enabled/running times in reads */
	bool transaction, phys_data, data_page_size, code_page_size, weight;	/* sample bits */
	bool dry_run;			/* --dry-run: parse, set up the events, stop */
	uint64_t user_regs, intr_regs;	/* --user-regs / --intr-regs masks (0: none) */
	bool strict_freq;		/* --strict-freq: -F above the maximum is an error */
	bool no_samples;		/* --no-samples: side-band only */
	const char *output;		/* NULL: perf.data, or stdout when it is a pipe */
	int comp_level;
	bool no_buildid, quiet;
	bool no_buildid_cache;		/* -N: BUILD_ID, but no copies in the cache */
	bool buildid_all;		/* --buildid-all: every dso, not only those hit */
	bool use_clockid;		/* -k */
	int clockid;
	uint64_t timeout_ms;
	/* --switch-output: a new file on SIGUSR2, past a size, or every so many seconds */
	bool switch_signal;
	uint64_t switch_size, switch_time;
	int switch_max_files;		/* --switch-max-files: keep this many (0: all) */
	bool timestamp_filename;	/* the output renamed to PATH.<timestamp> at the end */
	uint64_t max_size;		/* --max-size: stop past this many bytes (0: none) */
	/* -D/--delay: ms before enabling (-1: enabled only by --control), or ranges of ms
	 * after the start in which events are enabled */
	long delay_ms;
	const char *control;		/* --control fd:CTL[,ACK] | fifo:CTL[,ACK] */
	struct tally_evlist *switch_output_ev;	/* --switch-output-event (NULL: none) */
	const char *debuginfod;		/* --debuginfod URLS, or "system" (NULL: none) */
	unsigned aio;			/* --aio: POSIX AIO blocks writing the file (0: none) */
	struct record_range { uint64_t start, end; } *ranges;
	size_t nr_ranges;
	bool no_buildid_set, no_buildid_cache_set;	/* given on the command line */
	const char *uid;		/* -u: a user name or uid */
	char *uid_pids;			/* -u: its processes, as the -p list (malloc'd) */
	int realtime;			/* -r: SCHED_FIFO priority (0: none) */
	bool inherit_stat;		/* -s: per-thread counts (READ records at each exit) */
	bool no_buffering;		/* a wakeup for every record */
	uint64_t mmap_flush;		/* --mmap-flush: bytes a ring holds before a write */
	enum record_affinity { AFFINITY_SYS, AFFINITY_NODE, AFFINITY_CPU } affinity;
	bool group;			/* --group: every event in one group */
	unsigned synth;			/* --synth: RECORD_SYNTH_* of existing targets */
	bool namespaces;		/* --namespaces: NAMESPACES records (kernel, synthesized) */
	bool buildid_mmap;		/* --buildid-mmap: build-ids in MMAP2 records, no BUILD_ID */
	bool all_cgroups;		/* --all-cgroups: CGROUP records and samples' cgroup ids */
	/* -G: the cgroup of each evlist event (NULL: none), as perf's parse_cgroups: the
	 * n-th name given (over all -G) goes to the n-th event; one name alone, to all */
	const char **cgroups;
	size_t nr_cgroups;		/* names given so far (empty ones count) */
	size_t evlist_cap_cgroups;	/* room in .cgroups */
	/* accepted, with nothing for tally to change (docs/record.md) */
	bool no_bpf_event, timestamp_boundary;
	int nr_thread_synth;
	unsigned proc_map_timeout;
	const char *vmlinux;
	char **workload;		/* NULL when recording existing targets */
	int argc;
	char **argv;
};

#define RECORD_SYNTH_TASK	0x1	/* COMM (and FORK with -a) of existing threads */
#define RECORD_SYNTH_MMAP	0x2	/* their maps */
#define RECORD_SYNTH_CGROUP	0x4	/* CGROUP records of the cgroup tree */
#define RECORD_SYNTH_ALL	0x7

void record_opts__init(struct record_opts *o);
void record_opts__exit(struct record_opts *o);
/* Parse one -e argument; prints the parse error. 0 or -1. */
int record_opts__add_event(struct record_opts *o, const char *str);
/* Parse one --switch-output-event argument, the same way. 0 or -1. */
int record_opts__add_switch_event(struct record_opts *o, const char *str);
/* --filter: for the events of the last -e (tracepoints). 0, or -1 after the error. */
int record_opts__add_filter(struct record_opts *o, const char *filter);
/* -G NAME[,NAME...]: for the events defined so far. 0 or -1 (message printed). */
int record_opts__add_cgroups(struct record_opts *o, const char *names);
/* --exclude-perf: "common_pid != <tally's pid>" joins the filters of the last -e's
 * tracepoints (perf's words when they are not tracepoints). 0 or -1. */
int record_opts__exclude_perf(struct record_opts *o);

struct record_event {
	struct perf_event_attr attr;
	char *name;
	int leader, nr_members;
	char *group_name;
	bool tracepoint;
	const char *filter;	/* --filter: the tracepoint filter set on its fds */
	bool tracking;		/* -D: the dummy event that records the side-band */
	int cgroup_fd;		/* -G: the cgroup it counts in (-1: none) */
};

struct buildid_tracker;
struct record_debuginfod;
struct tally_buildid_cache;
struct tally_build_id;

struct record {
	struct record_opts *o;
	struct record_event *ev;
	size_t nr_ev;
	struct tally_cpumap *cpus;	/* CPUs to open on ({-1} for per-thread) */
	struct tally_threadmap *threads;	/* threads to open on ({-1} for -a) */
	struct tally_sampler *sampler;	/* the fds and their rings */
	size_t mmap_pages;
	struct workload wl;
	bool have_wl;
	bool wl_target;			/* the events follow the command (not -a, -p, -t, -u) */
	int out_fd;			/* pipe mode: the saved stdout */
	struct tally_writer *w;
	const char *path;
	size_t id_hdr_size;
	int time_off;			/* offset of the time field in samples, -1 unknown */
	uint64_t first_time, last_time;
	uint64_t samples, wakeups, lost, lost_samples, lost_records, throttled;
	struct buildid_tracker *bt;
	bool fell_back;			/* cycles -> cpu-clock */
	/* --switch-output / --timestamp-filename */
	char **segments;		/* the last --switch-max-files names, oldest first */
	size_t nr_segments;
	char *dumped;			/* the name the output got at the end */
	/* -D: the next change of the enable schedule (an index into 2 * nr_ranges) */
	uint64_t t0_ms;
	size_t sched;
	bool stop_wl;			/* --max-size or -D's last range ended the recording */
	size_t flush;			/* --mmap-flush: a ring is written from this many bytes */
	cpu_set_t *ring_cpus;		/* --affinity: the reader's CPUs for each ring */
	int affine_ring;		/* the ring whose CPUs the reader runs on (-1: none) */
	struct cli_control ctl;		/* --control */
	/* --switch-output-event: its events, opened on their own CPUs and threads */
	struct tally_sampler *sb;
	struct tally_cpumap *sb_cpus;
	struct tally_threadmap *sb_threads;
	struct record_debuginfod *debuginfod;	/* --debuginfod's client (NULL: none) */
};

/* Build the events' attrs from the options (record-open.c). 0 or -1 (message printed). */
int record__setup_events(struct record *r);
/* Open every fd and map the rings. 0 or -1 (message printed). */
int record__open(struct record *r);
void record__close(struct record *r);

/* Everything: returns the exit status (record-run.c). */
int record__run(struct record *r, struct record_opts *o, volatile sig_atomic_t *child_exited);

/* --control: run the commands waiting on the control descriptor (record-control.c).
 * 1 after 'stop' (the recording ends), 0, or -1 when the descriptor is closed. */
int record__control(struct record *r);

/* --switch-output-event (record-sideband.c): open its events (0, or -1 after the
 * message; nothing without the option), the rings to poll, whether records came since
 * the last call (their occurrences: the file is to be cut), close. */
int record_sideband__open(struct record *r);
size_t record_sideband__nr_rings(const struct record *r);
int record_sideband__fd(const struct record *r, size_t i);
bool record_sideband__hit(struct record *r);
void record_sideband__close(struct record *r);

/* --debuginfod (record-debuginfod.c): a client for URLS ("system": DEBUGINFOD_URLS;
 * NULL: none, *out NULL); 0 or -1 after the message. Fetch ID's debug file into the
 * cache entry of ID (NAME: the binary) unless it has one (D NULL: nothing). Delete says
 * what was fetched unless QUIET. */
int record_debuginfod__new(struct record_debuginfod **out, const char *urls);
void record_debuginfod__fetch(struct record_debuginfod *d, struct tally_buildid_cache *c,
			      const struct tally_build_id *id, const char *name);
void record_debuginfod__delete(struct record_debuginfod *d, bool quiet);

/* Build-ids of DSOs hit by samples (record-buildid.c). */
int buildid_tracker__new(struct buildid_tracker **out, const struct record *r);
void buildid_tracker__delete(struct buildid_tracker *bt);
/* Look at one record (side-band or sample) as it is written. */
void buildid_tracker__record(struct buildid_tracker *bt, const struct perf_event_header *h);
/* Add BUILD_ID entries for hit DSOs (all with --buildid-all) to the writer and, unless
 * -N, copy them into the build-id cache. */
int buildid_tracker__write(struct buildid_tracker *bt, struct tally_writer *w,
			   const struct record_opts *o);

#endif
