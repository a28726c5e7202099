/*
 * DWARF unwinding of user stacks copied into samples (perf record --call-graph dwarf:
 * PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER), with elfutils libdw's CFI reader
 * (.eh_frame of the binary, .debug_frame of it or of its separate debuginfo).
 *
 * The walk follows what perf 6.1 (built with libunwind, as Debian's is) reports, so
 * that chains end where perf's end: the first address is the sampled user ip, each
 * caller's is its return address minus one (the call instruction, as perf prints it);
 * when a return address lies outside the copied stack (perf's window ends one word
 * short of the copy) the last entry is that of a caller at 0, i.e. UINT64_MAX, as perf
 * prints it; the walk stops when a register must be read from outside the copy, when
 * the address has
 * no mapped binary, at an undefined return address or frame pointer (the outermost
 * frame, e.g. _start), at a return address of 0, and when a step leaves the ip and the
 * stack pointer where they were (a cycle). Code without CFI in a binary that has CFI
 * elsewhere is stepped over as a PLT stub or by the frame pointer, as libunwind does.
 *
 * An unwinder keeps, across samples, each binary's opened CFI and the rules found per
 * code address, so a profile's few hot addresses are looked up once. Addresses are
 * mapped to binaries by the caller (tally_unwind_find_fn), so the unwinder knows no
 * session; tally_session__resolve_chain (session.h) uses it for dwarf samples.
 */
#ifndef TALLY_UNWIND_H
#define TALLY_UNWIND_H

#include <tally/api.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_unwinder;

/* The register sets a sample's user registers can be in. */
enum tally_unwind_arch {
	TALLY_UNWIND_X86_64,	/* perf_event's PERF_REG_X86_* numbering */
	TALLY_UNWIND_ARM64,	/* PERF_REG_ARM64_*: x0..x30, sp, pc */
};

/* Where an address is: in which binary, at which file offset. */
struct tally_unwind_module {
	const void *key;	/* the binary's identity (the same key, the same files) */
	uint64_t offset;	/* the address's offset in the file (map's pgoff applied) */
};

/* Find the binary mapped at ADDR: 0 and *m filled, or -ENOENT (no binary: the walk
 * stops there). */
typedef int (*tally_unwind_find_fn)(void *arg, uint64_t addr, struct tally_unwind_module *m);
/* The files of binary KEY (asked once per key): the ELF file into path, its separate
 * debuginfo into debug ("" when none). 0, or -ENOENT when the binary cannot be read
 * (the walk stops at its addresses). */
typedef int (*tally_unwind_files_fn)(void *arg, const void *key, char *path, size_t len,
				     char *debug, size_t dlen);

/* A sample's user state, as recorded. */
struct tally_unwind_input {
	enum tally_unwind_arch arch;
	uint64_t regs_mask;		/* the attr's sample_regs_user */
	const uint64_t *regs;		/* popcount(regs_mask) values, in bit order */
	const void *stack;		/* the copy of the stack from the user sp up */
	uint64_t stack_size;		/* bytes of it that are valid (dyn_size) */
};

/* An unwinder calling FIND and FILES with ARG. NULL on ENOMEM. */
TALLY_API struct tally_unwinder *tally_unwinder__new(tally_unwind_find_fn find,
						     tally_unwind_files_fn files, void *arg);
TALLY_API void tally_unwinder__delete(struct tally_unwinder *u);

/* Forget every binary and rule (their files may have changed: a new session). */
TALLY_API void tally_unwinder__flush(struct tally_unwinder *u);

/* Unwind IN into ips (callee first), at most max entries: *nr gets how many. The first
 * is the sampled ip; callers' are return addresses minus one. Returns 0 (also for a
 * chain that ends early, even with no entry: registers without ip/sp), -EINVAL for an
 * architecture or register set it cannot read. Never reads outside IN's arrays,
 * whatever they hold. */
TALLY_API int tally_unwinder__unwind(struct tally_unwinder *u, const struct tally_unwind_input *in,
				     uint64_t *ips, size_t max, size_t *nr);

/* Cache statistics since creation: rule lookups answered from the per-address cache
 * and those that went to the CFI. */
TALLY_API void tally_unwinder__stats(const struct tally_unwinder *u, uint64_t *hits,
				     uint64_t *misses);

#ifdef __cplusplus
}
#endif
#endif
