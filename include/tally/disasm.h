/*
 * Machine code and its disassembly, for annotate: the bytes of a binary by address
 * (an ELF file, or the running kernel through /proc/kcore), and instructions decoded
 * one at a time by capstone, in AT&T or Intel syntax, with what a listing needs to
 * draw them: where a jump or call goes, which instructions return, which memory
 * operand is relative to the instruction pointer.
 *
 * Nothing here runs objdump: capstone is a library, so a listing costs no process and
 * no text parsing, and capstone's spelling is what the listing shows (docs/annotate.md
 * lists where it differs from objdump's).
 */
#ifndef TALLY_DISASM_H
#define TALLY_DISASM_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- machine code ------------------------------------------------------------ */

struct tally_code;

/* Open an ELF file (executable, shared object, vmlinux, or /proc/kcore, which is an
 * ELF core file whose PT_LOAD segments are the kernel's memory). 0, or -errno: -ENOENT
 * no such file, -EACCES not readable, -ENOEXEC not ELF, -ENOTSUP a machine capstone
 * does not handle here. */
TALLY_API int tally_code__open(struct tally_code **out, const char *path);
/* The same for an ELF image in memory (a vdso), copied: 0, -ENOEXEC, -ENOMEM. */
TALLY_API int tally_code__open_mem(struct tally_code **out, const void *image, size_t len);
TALLY_API void tally_code__delete(struct tally_code *c);
/* The file's build-id (its GNU build-id note): bytes at *id, 0 when it has none. */
TALLY_API size_t tally_code__build_id(const struct tally_code *c, const uint8_t **id);

/* Up to len bytes at ELF virtual address addr (the addresses objdump prints): a
 * pointer into the file's loadable contents and how many bytes are there (fewer than len
 * at the end of a segment); 0 when addr is in no segment with file contents. */
TALLY_API size_t tally_code__bytes(struct tally_code *c, uint64_t addr, size_t len,
				   const uint8_t **bytes);
/* A file offset (what session symbols of ELF files are: perf's map addresses) as ELF
 * virtual address, through the PT_LOAD segments; the offset itself without them. */
TALLY_API uint64_t tally_code__offset_to_addr(const struct tally_code *c, uint64_t offset);
/* The reverse: an ELF virtual address as file offset (the address itself outside every
 * segment). */
TALLY_API uint64_t tally_code__addr_to_offset(const struct tally_code *c, uint64_t addr);
/* Name of the section holding addr (".text", ".plt.sec", ...), or NULL (kcore has none). */
TALLY_API const char *tally_code__section(const struct tally_code *c, uint64_t addr);
/* The symbol of the file (functions and data objects, .symtab or else .dynsym, whose
 * names carry their version as objdump prints them: "name@@VERSION") that holds addr, or
 * the nearest one below it in the same section (or, with none below, the first above:
 * then start > addr): its name and start. NULL when there is none. objdump names branch
 * targets and memory operands this way. */
TALLY_API const char *tally_code__symbol(const struct tally_code *c, uint64_t addr,
					 uint64_t *start);
/* The name objdump gives a branch target or memory operand at addr, in code being
 * disassembled at cur: the nearest symbol at or below it in any section (with none
 * below, the first symbol: then start > addr), PLT entries named as objdump names them
 * ("free@plt", "*ABS*+0x9f1c0@plt") included; unless that symbol is in cur's section,
 * an address a dynamic relocation names (a GOT slot) gets that relocation's symbol
 * with its version
 * ("__errno_location@GLIBC_2.2.5", start == addr for another file's symbol, else the
 * symbol's value: "<_nl_msg_cat_cntr@@GLIBC_2.2.5-0x1e90>"). NULL when the file has no
 * symbols. */
TALLY_API const char *tally_code__target_symbol(const struct tally_code *c, uint64_t addr,
						uint64_t cur, uint64_t *start);
/* Add the .symtab of another ELF file, a separate debuginfo file of this one (objdump -S
 * reads its symbols too): they replace the dynamic symbols of a file without a .symtab.
 * 0, -ENOENT (it has no .symtab), -ENOEXEC, -ENOMEM, or the open's -errno. */
TALLY_API int tally_code__add_symbols(struct tally_code *c, const char *path);
/* The address of the file's symbol called name (functions and objects; a dynamic
 * symbol's version, "@@VERSION", need not be given): 0, or -ENOENT.
 * A vmlinux is linked at other addresses than the running kernel's (KASLR): the same
 * name in kallsyms gives the distance. */
TALLY_API int tally_code__symbol_addr(const struct tally_code *c, const char *name, uint64_t *addr);
/* True for a 64-bit ELF file. */
TALLY_API bool tally_code__is_64bit(const struct tally_code *c);
/* The ELF e_machine (EM_X86_64, EM_386, EM_AARCH64). */
TALLY_API unsigned tally_code__machine(const struct tally_code *c);

/* ---- instructions ------------------------------------------------------------ */

struct tally_disasm;

enum tally_disasm_syntax {
	TALLY_DISASM_ATT,	/* x86 AT&T (objdump's and perf's default) */
	TALLY_DISASM_INTEL,	/* x86 Intel (-M intel) */
};

enum tally_insn_kind {
	TALLY_INSN_OTHER,
	TALLY_INSN_JUMP,	/* conditional or not; target below when direct */
	TALLY_INSN_CALL,
	TALLY_INSN_RET,
	TALLY_INSN_NOP,
	TALLY_INSN_INVALID,	/* bytes capstone does not decode: one byte, ".byte 0xNN" */
};

struct tally_insn {
	uint64_t addr;
	uint32_t size;
	uint8_t bytes[16];		/* the first min(size, 16) bytes */
	enum tally_insn_kind kind;
	bool has_target;		/* a direct jump or call: target is its destination */
	uint64_t target;
	bool has_pc_ref;		/* a memory operand relative to the instruction pointer */
	uint64_t pc_ref;		/* the address it refers to */
	char mnemonic[32];		/* capstone's spelling */
	char operands[160];
};

/* A decoder for e_machine (EM_X86_64, EM_386, EM_AARCH64) in the given syntax (Intel
 * and AT&T matter on x86 only). 0, -ENOTSUP for another machine, -ELIBACC when the
 * capstone library (opened on the first call) cannot be loaded, -ENOMEM. */
TALLY_API int tally_disasm__new(struct tally_disasm **out, unsigned e_machine, bool is_64bit,
				enum tally_disasm_syntax syntax);
TALLY_API void tally_disasm__delete(struct tally_disasm *d);
/* Decode the instruction at code[0 .. len) placed at addr. Returns its size (>= 1);
 * bytes that are no instruction decode as one TALLY_INSN_INVALID byte. 0 when len is 0. */
TALLY_API size_t tally_disasm__one(struct tally_disasm *d, const uint8_t *code, size_t len,
				   uint64_t addr, struct tally_insn *insn);

/* perf's -M/--disassembler-style words: "att" (also "att-mnemonic") and "intel"
 * ("intel-mnemonic"); 0, or -EINVAL for another. */
TALLY_API int tally_disasm_syntax_parse(const char *s, enum tally_disasm_syntax *syntax);

#ifdef __cplusplus
}
#endif
#endif
