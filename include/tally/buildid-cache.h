/*
 * The build-id cache: copies of the binaries (and the kernel's symbol table) a profile
 * needs, kept under their build-ids so that a report still names functions after the
 * program was rebuilt, or on another machine. The layout is perf 6.1's ~/.debug, so
 * perf and tally share one cache:
 *
 *   DIR/.build-id/ab/cdef...            symlink -> ../../PATH/abcdef...
 *   DIR/PATH/abcdef.../elf              the binary (PATH is its real path)
 *   DIR/PATH/abcdef.../debug            its debug file, when /usr/lib/debug has one
 *   DIR/PATH/abcdef.../probes           perf probe's SDT cache (left empty: see below)
 *   DIR/[kernel.kallsyms]/abcdef.../kallsyms   a copy of /proc/kallsyms
 *   DIR/[vdso]/abcdef.../vdso           the vdso image
 *   DIR/[kernel.kcore]/abcdef.../YYYYmmddHHMMSShh/{kcore,kallsyms,modules}
 *
 * DIR is, in order: the directory given, $PERF_BUILDID_DIR (perf sets it for the
 * commands it runs, `tally --buildid-dir` sets it too), perf's config `buildid.dir`,
 * $HOME/.debug.
 *
 * Nothing found in a cache is trusted blindly: a copy is used only when it is a
 * regular file owned by the caller or root, and an ELF copy only when it is whole (its
 * headers, sections and segments fit in the file) and carries the build-id asked for.
 * What is wrong with a damaged entry comes back as a sentence for the user.
 *
 * Files are copied, not hard-linked as perf does (a binary rewritten in place, as cp
 * does, would change a hard-linked copy with it), except system files (root's, under
 * /usr, /lib, /bin, /sbin, /opt, writable by no one else), which package managers
 * replace by rename: those are linked, as perf links them, when the cache is on the
 * same file system.
 */
#ifndef TALLY_BUILDID_CACHE_H
#define TALLY_BUILDID_CACHE_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/buildid.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_buildid_cache;

/* The cache directory in force when none is given (see above) into BUF. 0 or
 * -ENAMETOOLONG. */
TALLY_API int tally_buildid_cache__default_dir(char *buf, size_t len);

/* A cache in DIR (NULL: the default). Nothing is created until something is added.
 * 0 or -ENOMEM. */
TALLY_API int tally_buildid_cache__new(struct tally_buildid_cache **out, const char *dir);
TALLY_API void tally_buildid_cache__delete(struct tally_buildid_cache *c);
TALLY_API const char *tally_buildid_cache__dir(const struct tally_buildid_cache *c);

/* What one entry directory holds. */
enum tally_buildid_kind {
	TALLY_BUILDID_ELF,	/* "elf" */
	TALLY_BUILDID_DEBUG,	/* "debug" */
	TALLY_BUILDID_KALLSYMS,	/* "kallsyms" */
	TALLY_BUILDID_VDSO,	/* "vdso" */
};

/* ---- adding ---- */

/* Cache the ELF file at PATH under ID (NULL: the file's own id; -ENODATA when it has
 * none): its elf copy, its debug file from /usr/lib/debug/.build-id when there is one,
 * an empty probes file when the binary has no SDT notes, and the .build-id link. An
 * entry already there is kept. -ESTALE when the file's id is not ID (it changed since it
 * was recorded: nothing is cached), -ENOENT when it is gone, or another -errno. */
TALLY_API int tally_buildid_cache__add_file(struct tally_buildid_cache *c, const char *path,
					    const struct tally_build_id *id);
/* Cache a kallsyms file (SRC; NULL: /proc/kallsyms) as the one of the kernel with ID.
 * -EPERM when its addresses are all zero (kptr_restrict): such a copy would be of no
 * use. */
TALLY_API int tally_buildid_cache__add_kallsyms(struct tally_buildid_cache *c,
						const struct tally_build_id *id, const char *src);
/* Cache a vdso image under ID (as perf does, for files recorded where it ran). */
TALLY_API int tally_buildid_cache__add_vdso(struct tally_buildid_cache *c,
					    const struct tally_build_id *id, const void *image,
					    size_t len);
/* perf buildid-cache -k: copy a kcore directory's kcore (the segments holding kernel
 * and module text), kallsyms and modules into [kernel.kcore]/ID/YYYYmmddHHMMSShh,
 * where ID is the kernel's id from ROOT/sys/kernel/notes, ROOT being the parent of
 * KCORE's directory. Nothing is copied when an entry with the same kallsyms and modules
 * exists, unless FORCE. The entry's directory goes to DIR_OUT (may be NULL). 0 or
 * -errno (-EINVAL: the file is not named kcore, or is not an ELF core file). */
TALLY_API int tally_buildid_cache__add_kcore(struct tally_buildid_cache *c, const char *kcore,
					     bool force, char *dir_out, size_t len);

/* ---- removing ---- */

/* Remove the entry of ID: its link and its directory. -ENOENT when not cached. */
TALLY_API int tally_buildid_cache__remove(struct tally_buildid_cache *c,
					  const struct tally_build_id *id);
/* Remove every entry cached for PATH (all its build-ids). Returns how many, or -errno
 * (-ENOENT: none cached). */
TALLY_API int tally_buildid_cache__purge(struct tally_buildid_cache *c, const char *path);
/* Remove every entry of the cache. Returns how many, or -errno. */
TALLY_API int tally_buildid_cache__purge_all(struct tally_buildid_cache *c);

/* ---- listing ---- */

struct tally_buildid_cache_entry {
	struct tally_build_id id;
	const char *hex;	/* the id as its link names it */
	const char *name;	/* the cached file's original path ("[kernel.kallsyms]"
				 * for the kernel) from the link, or NULL when the link
				 * cannot be read */
	bool dangling;		/* the link points at nothing */
};
/* Call FN for every .build-id link, in the order of their ids' hex (perf's). A nonzero
 * return of FN stops the walk and is returned. 0, or -errno when the cache cannot be
 * read (an absent cache is empty: 0). */
typedef int (*tally_buildid_cache_fn)(void *arg, const struct tally_buildid_cache_entry *e);
TALLY_API int tally_buildid_cache__for_each(struct tally_buildid_cache *c,
					    tally_buildid_cache_fn fn, void *arg);
/* perf's test of a listed entry: its original file (or the running kernel, for
 * [kernel.kallsyms]) still has this id. */
TALLY_API bool tally_buildid_cache__entry_current(const struct tally_buildid_cache_entry *e);
/* Whether ID has a .build-id link (dangling or not). */
TALLY_API bool tally_buildid_cache__has(struct tally_buildid_cache *c,
					const struct tally_build_id *id);

/* ---- finding ---- */

/* The cached file of KIND for ID, checked as said above, into PATH (LEN bytes). NAME
 * (may be NULL) is the file's original path, used when the .build-id link is missing or
 * dangling. 0 when found; -ENOENT when the cache has nothing for ID; -EBADF when what
 * it has is damaged or not to be trusted, with WHY (may be NULL) saying what (a dangling
 * link, a truncated copy, another id, another owner). A dangling link with a good entry
 * still found by NAME returns 0 and says so in WHY, for a warning. */
TALLY_API int tally_buildid_cache__find(struct tally_buildid_cache *c,
					const struct tally_build_id *id, const char *name,
					enum tally_buildid_kind kind, char *path, size_t len,
					char *why, size_t why_len);

/* ---- archiving ---- */

/* perf archive: a bzip2-compressed tar, written to FD, of the entries of IDS as paths
 * relative to the cache directory: each one's .build-id link and its entry directory
 * with what it holds. Unpacked into another machine's cache (tar xf FILE -C ~/.debug)
 * it gives perf and tally there what reports of the recording need. An id the cache
 * lacks, or whose entry fails the checks of __find, is left out and passed to SKIPPED
 * (may be NULL) with the reason. ARCHIVED (may be NULL) gets how many went in. 0 or
 * -errno (a write error). */
typedef void (*tally_buildid_skip_fn)(void *arg, const struct tally_build_id *id,
				      const char *why);
TALLY_API int tally_buildid_cache__archive(struct tally_buildid_cache *c,
					   const struct tally_build_id *ids, size_t nr, int fd,
					   tally_buildid_skip_fn skipped, void *arg,
					   size_t *archived);

#ifdef __cplusplus
}
#endif
#endif
