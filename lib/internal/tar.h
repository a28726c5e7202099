/*
 * A tar writer (POSIX ustar, with pax extended headers for names and link targets too
 * long for ustar), optionally through bzip2: what `perf archive` makes with GNU tar, so
 * that tar, and anything else that reads tar, unpacks it.
 */
#ifndef TALLY_INTERNAL_TAR_H
#define TALLY_INTERNAL_TAR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct tly_tar;

/* Write to FD (not closed by the writer), bzip2-compressed when BZIP2. 0 or -errno. */
int tly_tar__open(struct tly_tar **out, int fd, bool bzip2);
/* A directory NAME ("a/b", no trailing slash needed). */
int tly_tar__add_dir(struct tly_tar *t, const char *name, mode_t mode, time_t mtime);
/* A symbolic link NAME -> TARGET. */
int tly_tar__add_symlink(struct tly_tar *t, const char *name, const char *target, time_t mtime);
/* A regular file NAME with the contents of the open FD (SIZE bytes from offset 0). A
 * file that turns out shorter than SIZE is an error (-EIO): the archive would lie. */
int tly_tar__add_file(struct tly_tar *t, const char *name, int fd, uint64_t size, mode_t mode,
		      time_t mtime);
/* The end-of-archive blocks, padding to tar's 10 KiB record, the compressor flushed.
 * 0 or the first error of any call. */
int tly_tar__finish(struct tly_tar *t);
void tly_tar__delete(struct tly_tar *t);

#endif
