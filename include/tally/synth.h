/*
 * Synthesized side-band records: what the kernel would have reported had we been
 * watching from the start. For targets that already run (-p, -t, -a) readers need
 * COMM, FORK and MMAP2 records built from /proc; for kernel samples they need the
 * kernel map ("[kernel.kallsyms]_text", from /proc/kallsyms) and module maps (from
 * /proc/modules).
 *
 * Every record is passed to a callback, already carrying a zeroed sample_id trailer of
 * ID_HDR_SIZE bytes (what perf writes for records it synthesizes: readers of files with
 * sample_id_all parse a trailer at the end of every non-sample record, and an id of 0
 * means "the first event").
 */
#ifndef TALLY_SYNTH_H
#define TALLY_SYNTH_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Receives each record; return 0 to go on, nonzero (e.g. -errno) to stop. */
typedef int (*tally_synth_fn)(void *arg, const struct perf_event_header *rec);

/* Size of the sample_id trailer for ATTR (0 unless attr->sample_id_all). */
TALLY_API size_t tally_synth__id_hdr_size(const struct perf_event_attr *attr);

struct tally_synth_opts {
	size_t id_hdr_size;	/* trailer bytes appended to every record */
	bool data_maps;		/* also readable non-executable maps (perf record -d) */
	const char *proc;	/* procfs root; NULL: "/proc" (tests point elsewhere) */
	bool no_maps;		/* threads only, no MMAP2 (perf record --synth=task) */
	bool namespaces;	/* a NAMESPACES record for every thread, after its FORK (or
				 * after its COMM without forks), as perf record --namespaces */
	bool build_ids;		/* maps of ELF files (and the kernel's, the vdso's, modules')
				 * as MMAP2 with the file's build-id in place of its device and
				 * inode (PERF_RECORD_MISC_MMAP_BUILD_ID), as perf record
				 * --buildid-mmap; a file without one keeps device and inode */
};

/* COMM for every thread of process PID, then MMAP2 for its executable maps (perf
 * record -p). Returns 0, -ESRCH when the process is gone, or the callback's nonzero
 * value. */
TALLY_API int tally_synth__process(pid_t pid, const struct tally_synth_opts *opts,
				   tally_synth_fn fn, void *arg);
/* The same for only thread TID (COMM) of its process (maps of the whole process). */
TALLY_API int tally_synth__thread(pid_t tid, const struct tally_synth_opts *opts, tally_synth_fn fn,
				  void *arg);
/* One COMM record for PID/TID named COMM (e.g. a forked workload before its exec), and
 * its NAMESPACES with opts->namespaces. */
TALLY_API int tally_synth__comm(pid_t pid, pid_t tid, const char *comm,
				const struct tally_synth_opts *opts, tally_synth_fn fn, void *arg);
/* Every process in /proc (tally record -a): for each thread a FORK (misc FORK_EXEC; the
 * main thread's parent is the parent process) and then its COMM, as perf synthesizes
 * them, then the maps. Processes that vanish are skipped. */
TALLY_API int tally_synth__all(const struct tally_synth_opts *opts, tally_synth_fn fn, void *arg);

/* MMAP (pid -1, misc KERNEL) "[kernel.kallsyms]_text" from _text to _etext (MMAP2 with
 * the running kernel's build-id with opts->build_ids). Returns
 * -ENOENT when /proc/kallsyms hides addresses (kptr_restrict) or lacks the symbols. */
TALLY_API int tally_synth__kernel_map(const struct tally_synth_opts *opts, tally_synth_fn fn,
				      void *arg);
/* One MMAP (pid -1, misc KERNEL; MMAP2 with its build-id with opts->build_ids, when the
 * .ko has one) per loaded module, named by its .ko path under
 * /lib/modules/`uname -r` when found, else "[name]". 0 when /proc/modules is absent. */
TALLY_API int tally_synth__modules(const struct tally_synth_opts *opts, tally_synth_fn fn,
				   void *arg);

/* One CGROUP record {u64 id; char path[]} per cgroup under MOUNT (the perf_event
 * controller's hierarchy), the root "/" first, then each directory before the ones in
 * it, in directory order, as perf record --all-cgroups synthesizes them. The id is the
 * kernel's (the directory's file handle, what PERF_SAMPLE_CGROUP carries). Directories
 * that vanish meanwhile are skipped. 0, -errno (MOUNT unreadable) or the callback's. */
TALLY_API int tally_synth__cgroups(const char *mount, const struct tally_synth_opts *opts,
				   tally_synth_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
