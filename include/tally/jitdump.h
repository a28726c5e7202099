/*
 * jitdump files: what JIT runtimes (Node --perf-prof, Java agents, Python 3.12's perf
 * support) write about the code they generate, so that samples in it can be named
 * (tools/perf/Documentation/jitdump-specification.txt). A runtime writes jit-PID.dump
 * and maps it executable once; the recording holds that map as a marker. perf inject
 * --jit (tally inject --jit) then writes one small ELF file per jitted function and
 * replaces the marker with MMAP2 records of those files.
 *
 * The reader takes either byte order (the magic tells) and checks every record's size
 * against the file; a file cut short ends at its last whole record.
 */
#ifndef TALLY_JITDUMP_H
#define TALLY_JITDUMP_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tally/buildid.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tally_jit_record_type {
	TALLY_JIT_CODE_LOAD = 0,
	TALLY_JIT_CODE_MOVE = 1,
	TALLY_JIT_CODE_DEBUG_INFO = 2,
	TALLY_JIT_CODE_CLOSE = 3,
	TALLY_JIT_CODE_UNWINDING_INFO = 4,
};

/* Header flag: timestamps are the architecture's counter (x86 TSC), to be converted with
 * the recording's TIME_CONV, rather than CLOCK_MONOTONIC. */
#define TALLY_JITDUMP_FLAGS_ARCH_TIMESTAMP (1ULL << 0)

/* File offset (and address, in the ELF files written below) of a jitted function's
 * code: the ELF header and one program header, rounded up to 16, as perf's. The
 * MMAP2 records of jitted code carry it as their pgoff. */
#define TALLY_JIT_ELF_TEXT_OFFSET 0x80

struct tally_jitdump;

/* One record. Fields not of its type are zero; pointers point into the reader's copy
 * of the file (valid until the next call or __delete). */
struct tally_jit_record {
	uint32_t type;		/* enum tally_jit_record_type; others are passed on too */
	uint64_t timestamp;
	uint32_t pid, tid;	/* LOAD, MOVE */
	uint64_t vma;		/* LOAD, MOVE */
	uint64_t code_addr;	/* LOAD: where the code is; MOVE: where it now is;
				 * DEBUG_INFO: the function's address */
	uint64_t old_code_addr;	/* MOVE */
	uint64_t code_size;	/* LOAD, MOVE */
	uint64_t code_index;	/* LOAD, MOVE: the function's unique index */
	const char *name;	/* LOAD: the function's name */
	const void *code;	/* LOAD: code_size bytes */
	uint64_t nr_entries;	/* DEBUG_INFO: line entries in entries */
	const void *entries;	/* DEBUG_INFO: {u64 addr; u32 line, discrim; char file[]}[] */
	size_t entries_size;
};

/* Open and check the header of a jitdump file. 0, -ENOENT, -EINVAL (not a jitdump, or
 * a version this reader does not know), -ENOMEM. */
TALLY_API int tally_jitdump__open(struct tally_jitdump **out, const char *path);
TALLY_API void tally_jitdump__delete(struct tally_jitdump *j);
/* The header: the runtime's pid, its ELF machine (e_machine), its flags. */
TALLY_API uint32_t tally_jitdump__pid(const struct tally_jitdump *j);
TALLY_API uint32_t tally_jitdump__elf_mach(const struct tally_jitdump *j);
TALLY_API uint64_t tally_jitdump__flags(const struct tally_jitdump *j);
/* The next record into *R: 1, 0 at the end, -EINVAL for a record that does not fit its
 * size (the rest of the file is not read). */
TALLY_API int tally_jitdump__next(struct tally_jitdump *j, struct tally_jit_record *r);

/* Is MMAP_NAME (an mmap's file name) the marker of a jitdump for process PID: a file
 * named jit-PID.dump (PID 0: any, as for maps synthesized system-wide)? */
TALLY_API bool tally_jitdump__is_marker(const char *mmap_name, pid_t pid);

/* Write the ELF file for a JIT_CODE_LOAD record at PATH (replaced if it exists): a
 * shared object for MACHINE whose one loadable segment holds the code at
 * TALLY_JIT_ELF_TEXT_OFFSET, a .symtab naming it, and a build-id note. The id is
 * derived from the code, its address and its name, so writing the same function again
 * gives the same file; it goes to ID (may be NULL). 0 or -errno. */
TALLY_API int tally_jitdump__write_elf(const char *path, const struct tally_jit_record *load,
				       uint16_t machine, struct tally_build_id *id);

#ifdef __cplusplus
}
#endif
#endif
