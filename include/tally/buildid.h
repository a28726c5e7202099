/*
 * Build-ids: the GNU build-id note (NT_GNU_BUILD_ID) that names one build of a binary.
 *
 * perf.data files name the binaries their samples hit by path and build-id (the
 * BUILD_ID header feature, HEADER_BUILD_ID records, MMAP2 records with
 * PERF_RECORD_MISC_MMAP_BUILD_ID). A reader checks the binary it finds against that id
 * before trusting its symbols; the build-id cache (buildid-cache.h) keeps the binaries
 * under their ids for when the file on disk changed or is gone.
 *
 * Ids are 1..20 bytes (sha1 ids have 20, md5 ids 16); perf prints them as lower-case
 * hex, two digits a byte.
 */
#ifndef TALLY_BUILDID_H
#define TALLY_BUILDID_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TALLY_BUILD_ID_SIZE 20
/* Room for the hex text of the longest id and its NUL. */
#define TALLY_BUILD_ID_HEX_SIZE (2 * TALLY_BUILD_ID_SIZE + 1)

struct tally_build_id {
	uint8_t data[TALLY_BUILD_ID_SIZE];
	size_t size;		/* 0: no id */
};

/* The build-id note of the ELF file at PATH: from its section headers, or from its
 * PT_NOTE segments when it has none. 0, -ENOENT (no such file, or not a regular file:
 * a FIFO or device is never opened for reading), -ENOEXEC (not ELF), -ENODATA (no
 * build-id note). */
TALLY_API int tally_build_id__from_elf(struct tally_build_id *id, const char *path);
/* The same, of an ELF image in memory (e.g. the vdso). */
TALLY_API int tally_build_id__from_elf_mem(struct tally_build_id *id, const void *buf, size_t len);
/* The GNU build-id in a raw notes blob as the kernel exports them (NOTES, normally
 * "/sys/kernel/notes"; "/sys/module/NAME/notes/.note.gnu.build-id" for a module).
 * 0, -ENOENT (unreadable), -ENODATA (no build-id note). */
TALLY_API int tally_build_id__from_notes(struct tally_build_id *id, const char *notes);
/* The running kernel's id (/sys/kernel/notes). */
TALLY_API int tally_build_id__running_kernel(struct tally_build_id *id);

/* Lower-case hex of ID into BUF (TALLY_BUILD_ID_HEX_SIZE bytes); returns BUF ("" for
 * an empty id). */
TALLY_API char *tally_build_id__hex(const struct tally_build_id *id, char *buf);
/* Parse LEN hex digits (an even number, 2..40) into ID. 0 or -EINVAL. */
TALLY_API int tally_build_id__parse(struct tally_build_id *id, const char *hex, size_t len);
/* Set ID from raw bytes (at most TALLY_BUILD_ID_SIZE are kept). */
TALLY_API void tally_build_id__set(struct tally_build_id *id, const uint8_t *data, size_t len);
TALLY_API bool tally_build_id__equal(const struct tally_build_id *a,
				     const struct tally_build_id *b);

/* This process's vdso image (the kernel maps the same one into every 64-bit process):
 * its address and size. 0 or -ENOENT (no vdso). */
TALLY_API int tally_vdso_image(const void **image, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
