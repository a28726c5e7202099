/*
 * Small helpers shared inside libtally. Nothing here prints or exits.
 */
#ifndef TALLY_INTERNAL_UTIL_H
#define TALLY_INTERNAL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TLY_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Read a small text file (sysfs, procfs) into buf, NUL-terminated, trailing newline
 * stripped. Returns the length or -errno. */
ssize_t tly_read_file_str(const char *path, char *buf, size_t len);
/* Read a file holding one unsigned number (decimal or 0x hex). */
int tly_read_file_u64(const char *path, uint64_t *val);
/* Read a whole file into a malloc'd buffer (NUL-terminated); *len excludes the NUL. */
int tly_read_file_all(const char *path, char **buf, size_t *len);
/* The entry names of directory @path (no dot files), sorted: those matching the fnmatch
 * pattern @pat (NULL = all), only subdirectories when @dirs_only. 0 or -errno; free the
 * names with tly_strv_free. */
int tly_dir_list(const char *path, const char *pat, bool dirs_only, char ***names, size_t *nr);
void tly_strv_free(char **v, size_t n);

/* open(2) PATH read-only for a path that came from a file (perf.data, a cache):
 * only a regular file is opened (never blocks on a FIFO, never reads a device).
 * The fd, or -1 with errno set. */
int tly_open_regular(const char *path);

/* mkdir -p PATH (each missing directory with MODE). 0 or -errno. */
int tly_mkdir_p(const char *path, mode_t mode);

/* write(2) all LEN bytes (short writes and EINTR retried). 0 or -errno. */
int tly_write_all(int fd, const void *buf, size_t len);

/* Blocks from this size may get transparent huge pages (tly_huge_hint). */
#define TLY_HUGE_MIN ((size_t)2 << 20)

/* A hint for a block of N bytes at P (from malloc, calloc, realloc or mmap) that the
 * caller is about to fill: its pages may be backed by 2 MiB pages, one page fault
 * where there were 512 (a big report's arrays faulted in 4 KiB at a time spent a tenth
 * of its time in the kernel). Nothing for blocks under TLY_HUGE_MIN, whose RSS a huge
 * page would only add to; nothing where the kernel has no transparent huge pages or
 * refuses (the block stays as it was). */
void tly_huge_hint(void *p, size_t n);
/* malloc, calloc, realloc with tly_huge_hint (realloc's copy comes before the hint:
 * for blocks that grow twice at a time, the new half gets it) */
void *tly_malloc_big(size_t n);
void *tly_calloc_big(size_t nmemb, size_t size);
void *tly_realloc_big(void *p, size_t n);
/* *v, an array of *cap elements of elem bytes, made room for need of them (the
 * capacity doubled from *cap, or from first for an empty one) by tly_realloc_big.
 * 0 or -ENOMEM (*v and *cap as they were). */
int tly_grow_big(void **v, size_t *cap, size_t need, size_t elem, size_t first);

/* Overflow-checked size arithmetic: 0 on success, -EOVERFLOW otherwise. */
static inline int tly_mul_size(size_t a, size_t b, size_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -75 /* EOVERFLOW */ : 0;
}

/* Growable byte buffer. */
struct tly_buf {
	char *data;
	size_t len, cap;
};
int tly_buf__reserve(struct tly_buf *b, size_t extra);
int tly_buf__append(struct tly_buf *b, const void *data, size_t len);
int tly_buf__printf(struct tly_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tly_buf__exit(struct tly_buf *b);

#endif
