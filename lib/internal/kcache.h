/*
 * The symbol table caches: a finished symbol table (kallsyms, or an ELF file's) written
 * once to a file and read back from it, so that a report does not parse 100k+ lines of
 * /proc/kallsyms (a page per read() system call) or of a build-id cache copy, or
 * demangle and sort an ELF file's symbols, every time it starts. Of a kallsyms table,
 * only the blocks of symbols a report looks up are ever read.
 *
 * A cache holds a key and answers for addresses below its limit only; anything else
 * is the caller's to look up in the text (tly_kcache__covers). Keys:
 *  - /proc/kallsyms: the running kernel's build-id, the boot id, and the text's first
 *    page as read now (which also tells whether kptr_restrict hides addresses). The
 *    kernel image's symbols do not change while that kernel runs, but modules, BPF
 *    programs and trampolines come and go: such a cache covers the kernel image's
 *    symbols only, up to the last one (the first address a module-area symbol could
 *    ever take lies above it).
 *  - a regular file (the build-id cache's kallsyms copy): its device, inode, size and
 *    modification time; it covers every address.
 * A cache whose key differs, or which is damaged or not the user's, is never used.
 */
#ifndef TALLY_INTERNAL_KCACHE_H
#define TALLY_INTERNAL_KCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "internal/symbols.h"

#define TLY_KCACHE_HEAD 4096

/* Where the session keeps them in the build-id cache: /proc/kallsyms's in the running
 * kernel's entry, an ELF file's in the file's entry, a kallsyms copy's beside it. An
 * archive of an entry (perf archive, tally archive: the whole directory) carries them
 * along; elsewhere their keys (this boot, these inodes) never match, so they are
 * never read there. */
#define TLY_KCACHE_PROC "tally-kallsyms.proc"
#define TLY_KCACHE_ELF "tally-symtab"
#define TLY_KCACHE_SUFFIX ".tally"

struct tly_kcache_key {
	char id[256];		/* what the table was made from */
	uint32_t head_len;	/* the first whole lines of /proc/kallsyms (0: none) */
	char head[TLY_KCACHE_HEAD];
};

/* The key of /proc/kallsyms (or a text at PATH that behaves like it, for tests) on the
 * running kernel of build-id hex BID and boot BOOT_ID. 0 or -errno. */
int tly_kcache__key_proc(struct tly_kcache_key *key, const char *path, const char *bid,
			 const char *boot_id);
/* The key of a regular file at PATH (and of its separate debug file DEBUG, or NULL).
 * 0 or -errno. */
int tly_kcache__key_file(struct tly_kcache_key *key, const char *path, const char *debug);
/* This boot's id (/proc/sys/kernel/random/boot_id) into BUF (at least 64 bytes). */
int tly_kcache__boot_id(char *buf, size_t len);

/* Writes finished table T (a kallsyms one, from tly_kload) to PATH under KEY,
 * atomically: all of it when WHOLE, else the kernel image's symbols only (see above).
 * 0, or -errno (nothing written; -ENODATA: nothing worth caching). */
int tly_kcache__write(const char *path, const struct tly_kcache_key *key,
		      const struct tly_symtab *t, bool whole);

struct tly_kcache;
/* The cache at PATH if its key is KEY and it is whole and the caller's (or root's).
 * 0, -ENOENT (none), -ESTALE (another key), -EBADF (damaged or foreign), -errno. */
int tly_kcache__open(struct tly_kcache **out, const char *path, const struct tly_kcache_key *key);
void tly_kcache__delete(struct tly_kcache *c);
/* Does the cache answer for ADDR (anything else: look it up in the text)? */
bool tly_kcache__covers(const struct tly_kcache *c, uint64_t addr);
/* The symbol at ADDR (< the limit), as tly_symtab__find on the whole table gives it;
 * the pointer lives as long as the cache. */
const struct tally_symbol *tly_kcache__find(struct tly_kcache *c, uint64_t addr);
size_t tly_kcache__nr(const struct tly_kcache *c);

/* A whole table written by tly_kcache__write(whole) read into T (empty before) as the
 * loader made it: symbols and ELF segments; names stay in a block T keeps until
 * released. 0, or as tly_kcache__open. */
int tly_kcache__load(struct tly_symtab *t, const char *path, const struct tly_kcache_key *key);

#endif
