/*
 * The session: threads, maps and dsos built from a stream of records, and the
 * address -> symbol lookup that report, script and top share.
 *
 * Feed it every record in order (tally_session__process); it tracks COMM (incl.
 * exec), FORK, EXIT, MMAP/MMAP2 (user, kernel, modules, vdso, anonymous, JIT maps),
 * KSYMBOL, and resolves a (pid, tid, cpumode, ip) to thread, map, dso and symbol.
 * Symbols come from elfutils (.symtab/.dynsym, separate debuginfo by build-id,
 * ~/.debug), /proc/kallsyms for the kernel and /tmp/perf-PID.map for JITs; each dso's
 * table is loaded lazily, once, and searched by binary search.
 */
#ifndef TALLY_SESSION_H
#define TALLY_SESSION_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include <tally/buildid.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_session;
struct tally_sample;
struct tally_frames;
struct tally_thread;
struct tally_map;
struct tally_dso;
struct tally_line;

struct tally_symbol {
	uint64_t start;		/* in the dso's address space, as dso_addr below: the file
				 * offset for ELF files (perf's map_ip), absolute for the
				 * kernel, modules and JIT maps */
	uint64_t size;
	const char *name;
};

/* Where an address landed. Any pointer may be NULL ([unknown]). */
struct tally_addr_loc {
	struct tally_thread *thread;
	struct tally_map *map;
	struct tally_dso *dso;
	const struct tally_symbol *sym;
	uint64_t addr;		/* the ip looked up */
	uint64_t dso_addr;	/* ip in the dso's address space: ip - map start + pgoff for
				 * files (what perf prints), ip for the kernel and JIT maps;
				 * sym+off is dso_addr - sym->start */
	uint8_t cpumode;	/* PERF_RECORD_MISC_USER / KERNEL / GUEST_* / HYPERVISOR */
	/* Frames of an address where the DWARF names inlined functions, as
	 * tally_session__resolve_chain gives them (tally_session__set_inline): one per
	 * function, innermost first, all with the same addr, map, dso and sym (the symbol
	 * holding the address). Zero in every other frame and lookup. */
	const char *inlined;	/* the inlined function this frame is (perf prints
				 * "NAME (inlined)"); NULL: the frame of sym itself */
	const struct tally_line *line;	/* the frame's source line (tally/srcline.h): in
				 * the innermost function the address's, in each other one
				 * the call of the next inner; NULL: not an expanded frame
				 * (tally_dso_lines__text knows its line) */
	/* A caller unwound from a --call-graph dwarf sample's copy of the user stack
	 * (tally_session__resolve_chain): addr is its return address minus one already,
	 * inside the call, as perf 6.1 gives it. False in every other frame and lookup: a
	 * recorded chain's callers hold the return address itself. */
	bool unwound;
};

struct tally_session_opts {
	const char *kallsyms;	/* default "/proc/kallsyms" */
	const char *symfs;	/* prefix for dso paths (perf --symfs), or NULL */
	const char *buildid_dir;/* the build-id cache; NULL: the default (buildid-cache.h) */
	bool no_symbols;	/* resolve maps/dsos only */
	bool no_demangle;	/* C++ symbols keep their linkage names ("_Z4tmplILi7EEll",
				 * perf --no-demangle); tables are then read from the
				 * binaries, never from a symbol table cache */
};

/* Kernel symbols: opts->kallsyms if set; else, when the file's BUILD_ID list (see
 * __add_build_ids) names the recording kernel, perf's build-id cache copy of its kallsyms
 * ($buildid_dir/[kernel.kallsyms]/<id>/kallsyms) or /proc/kallsyms if this machine runs
 * that kernel, and none otherwise (as perf); /proc/kallsyms for files without a
 * build-id. Unless opts->no_symbols, they load on a thread of their own from the first
 * __add_build_ids or __process call; the first kernel lookup parses what is left of the
 * file alongside that thread and then joins it (__delete joins it too). */
TALLY_API int tally_session__new(struct tally_session **out, const struct tally_session_opts *opts);
TALLY_API void tally_session__delete(struct tally_session *s);

/* Feed one side-band record (non-SAMPLE records; others are ignored). HEADER_BUILD_ID
 * records (perf inject -b in pipe mode) give dsos their build-ids.
 */
TALLY_API int tally_session__process(struct tally_session *s, const struct perf_event_header *hdr);

/* Give dsos the build-ids of a BUILD_ID header feature (tally_data__feature(d,
 * TALLY_FEAT_BUILD_ID, …)); call before processing records. Each entry makes its dso
 * (as perf does: they come first in the dso order). 0 or -errno. */
TALLY_API int tally_session__add_build_ids(struct tally_session *s, const void *buf, size_t len);

/* Why kernel addresses went without symbols, once a kernel lookup wanted them: a
 * sentence for the user (another kernel's file with no kallsyms copy at hand, addresses
 * hidden by kptr_restrict, an unreadable --kallsyms file); NULL when kernel symbols were
 * there or never needed. */
TALLY_API const char *tally_session__kernel_symbols_problem(const struct tally_session *s);
/* When kernel symbols were wanted and the build-id cache's copy of the recording
 * kernel's kallsyms failed its checks (buildid-cache.h) but this machine runs that
 * kernel, so /proc/kallsyms served: a sentence saying what is wrong with the copy.
 * NULL otherwise. */
TALLY_API const char *tally_session__kernel_symbols_note(const struct tally_session *s);

/* The thread for pid/tid, created if new. A thread with no COMM yet is named ":TID"
 * like perf; tid 0 is "swapper". */
TALLY_API struct tally_thread *tally_session__thread(struct tally_session *s, pid_t pid, pid_t tid);

/* Resolve an address. cpumode is the sample's header.misc & PERF_RECORD_MISC_CPUMODE_MASK
 * (for callchain entries, the PERF_CONTEXT_* marker in force). Returns 0, and fills
 * *loc even when parts stay unknown (-ENOMEM: the thread could not be made).
 *
 * Lookups go through a cache of recently resolved addresses that lives in the session:
 * samples repeat the same few ips and return addresses. tally_session__process empties
 * only what a record may change (a process's MMAP, COMM, FORK or EXIT its addresses; a
 * kernel MMAP, KSYMBOL, BPF_EVENT or TEXT_POKE the kernel's; a record of unknown meaning
 * everything), so answers are always what an uncached lookup would give. */
TALLY_API int tally_session__resolve(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
				     uint64_t ip, struct tally_addr_loc *loc);
/* Where an address is, without its symbol: *loc as tally_session__resolve fills it
 * (thread, map, dso, dso_addr; the dso's symbols loaded as resolving loads them) but
 * with loc->sym NULL, and not through the cache. For a caller that keeps what it makes
 * of a frame by dso and dso_addr, the same in every process mapping the dso: for a dso
 * that is not the kernel's, tally_session__dso_symbol(s, loc->dso, loc->dso_addr) is
 * the symbol resolving gives, and never changes. 0, or -ENOMEM (no thread). */
TALLY_API int tally_session__locate(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
				    uint64_t ip, struct tally_addr_loc *loc);

/* What kind of code a resolved frame is, for views that tell them apart (a flame
 * graph's colours). */
enum tally_frame_kind {
	TALLY_FRAME_USER,	/* user-space code of a binary or library */
	TALLY_FRAME_KERNEL,	/* the kernel or a module (also a guest's kernel) */
	TALLY_FRAME_INLINED,	/* a function inlined where the next frame's function runs:
				 * no call of its own, the same address as that frame */
	TALLY_FRAME_JIT,	/* JIT-compiled code (tally_dso__is_jit) */
	TALLY_FRAME_NR_KINDS
};

/* The kind of a resolved address: kernel by its cpumode or dso, JIT by its dso, else
 * user. (Frames for inlined functions say so where they are made.) */
TALLY_API enum tally_frame_kind tally_addr_loc__kind(const struct tally_addr_loc *loc);

/* perf's level letter for a cpumode: '.' user, 'k' kernel, 'g' guest kernel, 'u' guest
 * user, 'H' hypervisor. */
TALLY_API char tally_cpumode_level(uint8_t cpumode);

/* Mark the dso that IP falls in as hit by a sample (perf's build_id__mark_dso_hit);
 * returns it when this is its first hit (perf inject -b adds its build-id then), NULL
 * otherwise or when IP is in no dso. Resolves like __resolve, so a session without
 * no_symbols loads the dso's symbols. */
TALLY_API struct tally_dso *tally_session__mark_hit(struct tally_session *s, pid_t pid, pid_t tid,
						    uint8_t cpumode, uint64_t ip);

struct tally_data;
struct tally_data_error;
/* Read every record of D in time order (the rest of a pipe stream): side-band into S,
 * each sample marking the dso it hit (perf's build_id__mark_dso_hit pass, behind
 * buildid-list -H and archive). Best with a no_symbols session. Returns what
 * tally_data__for_each returns. */
TALLY_API int tally_session__read_hits(struct tally_session *s, struct tally_data *d,
				       struct tally_data_error *err);

/*
 * A sample's call chain, resolved: one frame per address, callee (the sampled ip)
 * first, PERF_CONTEXT_* markers turned into each frame's cpumode, through the same
 * cache. This is where frames the recorded chain lacks will come in (user frames
 * unwound from a --call-graph dwarf sample's stack, inlined functions at an address):
 * callers just walk the frames. A tally_frames is a buffer reused from sample to
 * sample; its frames stay valid until the next resolve_chain into it.
 */
TALLY_API struct tally_frames *tally_frames__new(void);
TALLY_API void tally_frames__delete(struct tally_frames *f);
TALLY_API size_t tally_frames__nr(const struct tally_frames *f);
/* Frame i (0: the callee), or NULL past the end. loc->thread is the sample's thread. */
TALLY_API const struct tally_addr_loc *tally_frames__get(const struct tally_frames *f, size_t i);
/* Resolve smp's PERF_SAMPLE_CALLCHAIN into f (no frames without one), at most max_stack
 * frames of it in the order the chain lists them, innermost first (UINT_MAX: all; 0:
 * none). 0; 1 when the chain holds an unknown PERF_CONTEXT_* marker (corrupt:
 * no frames, perf then skips the chain); -ENOMEM. */
TALLY_API int tally_session__resolve_chain(struct tally_session *s, const struct tally_sample *smp,
					   unsigned max_stack, struct tally_frames *f);

/* Which frames of resolve_chain get a frame for each function inlined at their address
 * (from the dso's DWARF, tally_dso_lines__find_a2l: the inlined functions innermost
 * first, then the function holding the address). Lookups are kept per address. */
enum tally_inline_mode {
	TALLY_INLINE_NONE,	/* one frame per address (the default) */
	TALLY_INLINE_UNWOUND,	/* perf 6.1's: only user frames unwound from a --call-graph
				 * dwarf sample's stack, looked up at the unwound address;
				 * as perf, a function the DWARF names otherwise than the
				 * frame's symbol (a GCC clone "f.constprop.0" is "f" there,
				 * an alias "__libc_start_main" is "__libc_start_main_impl")
				 * is an inlined frame of that name, and the symbol's frame
				 * is then left out */
	TALLY_INLINE_ALL,	/* every user frame (a recorded chain's callers looked up at
				 * their return address minus one, the call), and the
				 * function holding the code is always the symbol's frame */
};
TALLY_API void tally_session__set_inline(struct tally_session *s, enum tally_inline_mode mode);

/*
 * For caches a caller keeps of what it made from resolved addresses (formatted lines,
 * aggregated samples): the session's clock ticks at each record that may change a
 * resolution. Something made from addresses of process pid in cpumode at generation g
 * (tally_session__generation when it was made) is still what resolving them again
 * would give while g >= tally_session__valid_since(s, pid, cpumode). Kernel cpumodes
 * share one validity for all processes. Generations only grow.
 */
TALLY_API uint64_t tally_session__generation(struct tally_session *s);
TALLY_API uint64_t tally_session__valid_since(struct tally_session *s, pid_t pid, uint8_t cpumode);

TALLY_API const char *tally_thread__comm(const struct tally_thread *t);
TALLY_API pid_t tally_thread__pid(const struct tally_thread *t);
TALLY_API pid_t tally_thread__tid(const struct tally_thread *t);

/* Full path ("/usr/lib/x86_64-linux-gnu/libc.so.6", "[kernel.kallsyms]", "[vdso]") and
 * perf's short name (basename; kernel/vdso names unchanged). */
TALLY_API const char *tally_dso__name(const struct tally_dso *d);
TALLY_API const char *tally_dso__short_name(const struct tally_dso *d);
TALLY_API bool tally_dso__is_kernel(const struct tally_dso *d);
/* JIT-compiled code: a /tmp/perf-PID.map (anonymous memory of a process that wrote
 * one) or a function perf inject --jit made into an ELF file (jitted-PID-N.so). */
TALLY_API bool tally_dso__is_jit(const struct tally_dso *d);
/* The dso's place in the session's creation order (0 for the first dso made): a stable
 * order for ties (perf breaks them by the dso objects' addresses, which grow in the
 * same order). */
TALLY_API uint32_t tally_dso__index(const struct tally_dso *d);
/* Build-id bytes if known: the recording's (BUILD_ID feature, HEADER_BUILD_ID records,
 * MMAP2 build-ids), never one read from a file here. */
TALLY_API size_t tally_dso__build_id(const struct tally_dso *d, const uint8_t **id);
TALLY_API const struct tally_build_id *tally_dso__bid(const struct tally_dso *d);
/* The name the recording gives: a kernel module's path (name is "[mod]"), else
 * tally_dso__name. */
TALLY_API const char *tally_dso__long_name(const struct tally_dso *d);
/* Why the dso went without symbols once a lookup wanted them, as a sentence naming
 * it: the file is gone or is another build and the build-id cache has no usable copy
 * (saying what is wrong with a damaged one), or a damaged cache entry was passed over.
 * NULL when there is nothing to say. Symbols load on the first lookup in the dso, so
 * ask after resolving. */
TALLY_API const char *tally_dso__problem(const struct tally_dso *d);
/* Mark a dso as hit by a sample (for BUILD_ID) / iterate dsos in the order they were
 * made (perf's order of its dso list: BUILD_ID entries first, then as maps came). */
TALLY_API void tally_dso__set_hit(struct tally_dso *d);
TALLY_API bool tally_dso__hit(const struct tally_dso *d);
typedef int (*tally_dso_fn)(void *arg, struct tally_dso *d);
TALLY_API int tally_session__for_each_dso(struct tally_session *s, tally_dso_fn fn, void *arg);

/* The files the session reads a dso's symbols from, for tools that read its code
 * (annotate): the binary (under --symfs, at its path, or in the build-id cache, checked
 * against the recorded build-id) into path, and its separate debuginfo into debug (""
 * when there is none); for [vdso], perf's copy in the build-id cache. 0, or -ENOENT when
 * no matching copy is at hand, or for dsos that are no ELF file (the kernel, JIT maps,
 * anonymous memory). */
TALLY_API int tally_session__dso_files(struct tally_session *s, struct tally_dso *d, char *path,
				       size_t len, char *debug, size_t dlen);
/* The symbol of dso d holding dso_addr (the dso's address space, as in tally_addr_loc),
 * loading the dso's symbols if no lookup did yet; NULL when none does. */
TALLY_API const struct tally_symbol *tally_session__dso_symbol(struct tally_session *s,
							       struct tally_dso *d,
							       uint64_t dso_addr);
/* Does this machine run the kernel the file was recorded on (the BUILD_ID list's
 * [kernel.kallsyms] against /sys/kernel/notes)? 1 yes, 0 no, -ENOENT when either
 * build-id is unknown. */
TALLY_API int tally_session__runs_recording_kernel(const struct tally_session *s);

TALLY_API uint64_t tally_map__start(const struct tally_map *m);
TALLY_API uint64_t tally_map__end(const struct tally_map *m);
TALLY_API uint64_t tally_map__pgoff(const struct tally_map *m);

/* A user map as its MMAP/MMAP2 record gave it (perf report --mmaps): the range (as
 * later maps that overlap it cut it), the file offset (0 for [vdso], as perf), the
 * inode (0 from MMAP records and MMAP2 records carrying a build-id), PROT_* and MAP_*
 * bits (MMAP records: PROT_EXEC unless a data map, no flags), the dso, and perf's
 * name of the file: the dso's, but a data map of anonymous memory keeps the record's
 * ("//anon"; executable ones are the dso /tmp/perf-PID.map). Kernel maps have none
 * (all zero). The name lives as long as the session. */
struct tally_map_desc {
	uint64_t start, end, pgoff, ino;
	uint32_t prot, flags;
	const struct tally_dso *dso;
	const char *name;
};
TALLY_API void tally_map__describe(const struct tally_map *m, struct tally_map_desc *d);

/* The parent's tid as the thread's FORK record gave it; -1 for threads that came
 * without one (synthesized, or first seen in a sample). */
TALLY_API pid_t tally_thread__ppid(const struct tally_thread *t);
/* The maps of the thread's process, by address. fn's nonzero return stops the walk
 * and is returned. */
typedef int (*tally_map_fn)(void *arg, const struct tally_map *m);
TALLY_API int tally_thread__for_each_map(const struct tally_thread *t, tally_map_fn fn, void *arg);
/* Every thread the records named so far, the newest of each tid (a tid reused after a
 * thread went away names the new one), in no particular order; fn's nonzero return
 * stops the walk and is returned. */
typedef int (*tally_thread_fn)(void *arg, struct tally_thread *t);
TALLY_API int tally_session__for_each_thread(struct tally_session *s, tally_thread_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
