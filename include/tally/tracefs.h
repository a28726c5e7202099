/*
 * tracefs: where the kernel's tracepoints are described (events/SYS/NAME/id and
 * format). Event strings, `list`, TRACING_DATA and probes all find it through here.
 *
 * Like perf, tally mounts tracefs itself when it is not mounted yet (a fresh boot
 * often has neither /sys/kernel/tracing nor the debugfs copy mounted), so whichever
 * tool runs first does not decide whether tracepoints work.
 */
#ifndef TALLY_TRACEFS_H
#define TALLY_TRACEFS_H

#include <tally/api.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tracefs directory (the one holding events/) for @sysfs_root (NULL = "/sys"):
 * ROOT/kernel/tracing, else ROOT/kernel/debug/tracing, else (real root only) any
 * tracefs in the mount table. When none is mounted, tracefs is mounted on
 * ROOT/kernel/tracing as perf does; a test's sysfs copy is only mounted on by a
 * simulated kernel, never for real. Returns 0 and the directory in @buf, or -errno:
 * -EACCES when it is mounted but not readable (@buf names it), otherwise why it
 * could not be mounted (-EPERM without CAP_SYS_ADMIN, -ENODEV when the kernel has no
 * tracefs, -ENOENT when there is no mount point); @buf then names the mount point. */
TALLY_API int tally_tracefs__find(const char *sysfs_root, char *buf, size_t len);

/* One sentence saying why tracefs at @dir cannot be used, for @err from
 * tally_tracefs__find, with what to do about it. Returns @buf. */
TALLY_API const char *tally_tracefs__strerror(int err, const char *dir, char *buf, size_t len);

/* Call @cb for each tracepoint whose subsystem and name match the globs (NULL = all),
 * sorted by subsystem then name. Stops at and returns the first nonzero @cb result;
 * -errno from tally_tracefs__find when tracefs cannot be used. */
TALLY_API int tally_tracepoint__for_each(const char *sysfs_root, const char *sys_glob,
					 const char *ev_glob, int (*cb)(const char *sys,
					 const char *name, uint64_t id, void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif
