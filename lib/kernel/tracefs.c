/*
 * tracefs (include/tally/tracefs.h): the one place that finds, and when needed mounts,
 * the directory describing the kernel's tracepoints. The event parser, `list`, the
 * TRACING_DATA writer and probes all go through it, so they agree on where tracefs is
 * and on why it cannot be used.
 *
 * perf mounts tracefs itself when nothing has; so does tally (through the sys seam), so
 * that a fresh boot where neither tracefs nor debugfs is mounted still has tracepoints
 * and the answer does not depend on which tool ran first.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tally/tracefs.h>

#include "internal/sys.h"
#include "internal/util.h"

static const char *const subdirs[] = { "kernel/tracing", "kernel/debug/tracing" };

/* Is @dir a tracefs with events/? 0, -EACCES (there, not ours to read) or -ENOENT. */
static int has_events(const char *dir)
{
	char ev[PATH_MAX];
	struct stat st;

	if (snprintf(ev, sizeof(ev), "%s/events", dir) >= (int)sizeof(ev))
		return -ENAMETOOLONG;
	if (!stat(ev, &st) && S_ISDIR(st.st_mode))
		return 0;
	return errno == EACCES || errno == EPERM ? -EACCES : -ENOENT;
}

/* A tracefs mounted somewhere else (perf looks in the mount table too). */
static bool from_mount_table(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char line[4096], dir[PATH_MAX], type[64];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %4095s %63s", dir, type) != 2 || strcmp(type, "tracefs") ||
		    strchr(dir, '\\') || has_events(dir))
			continue;
		found = (size_t)snprintf(buf, len, "%s", dir) < len;
	}
	fclose(f);
	return found;
}

/* Mounted already? 0, -EACCES (buf names the unreadable one) or -ENOENT. */
static int lookup(const char *root, bool real, char *buf, size_t len)
{
	int denied = -1;

	for (int i = 0; i < (int)TLY_ARRAY_SIZE(subdirs); i++) {
		int err;

		snprintf(buf, len, "%s/%s", root, subdirs[i]);
		err = has_events(buf);
		if (!err)
			return 0;
		if (err == -EACCES && denied < 0)
			denied = i;
	}
	if (real && from_mount_table(buf, len))
		return 0;
	/* tracefs is there but mode 700 (the default): say so, not "not mounted" */
	snprintf(buf, len, "%s/%s", root, subdirs[denied < 0 ? 0 : denied]);
	return denied < 0 ? -ENOENT : -EACCES;
}

int tally_tracefs__find(const char *sysfs_root, char *buf, size_t len)
{
	const char *root = sysfs_root ? sysfs_root : "/sys";
	bool real = !strcmp(root, "/sys");
	int err = lookup(root, real, buf, len);

	if (err != -ENOENT)
		return err;
	/* a test's copy of sysfs is mounted on only by a simulated kernel */
	if (!real && tly_sys() == &tly_sys_real)
		return -ENOENT;
	snprintf(buf, len, "%s/%s", root, subdirs[0]);
	err = tly_sys__mount("nodev", buf, "tracefs");
	if (err && err != -EBUSY)
		return err == -ENOSYS ? -ENOENT : err;
	err = lookup(root, real, buf, len);
	return err;
}

const char *tally_tracefs__strerror(int err, const char *dir, char *buf, size_t len)
{
	switch (err) {
	case 0:
		snprintf(buf, len, "tracefs is mounted on %s", dir);
		break;
	case -EACCES:
		snprintf(buf, len, "%s is readable by root only (tracefs permissions, not "
			 "perf_event_paranoid); run as root or remount tracefs with mode=755", dir);
		break;
	case -EPERM:
		snprintf(buf, len, "tracefs is not mounted and mounting it on %s needs root "
			 "(CAP_SYS_ADMIN); run as root once, or mount -t tracefs nodev %s", dir, dir);
		break;
	case -ENODEV:
		snprintf(buf, len, "this kernel has no tracefs (built without CONFIG_TRACING): "
			 "tracepoints are not available");
		break;
	case -ENOENT:
		snprintf(buf, len, "tracefs is not mounted (tried %s and the debugfs tracing "
			 "directory; mount -t tracefs nodev %s)", dir, dir);
		break;
	default:
		snprintf(buf, len, "tracefs is not mounted and mounting it on %s failed: %s",
			 dir, strerror(-err));
		break;
	}
	return buf;
}

int tally_tracepoint__for_each(const char *sysfs_root, const char *sys_glob, const char *ev_glob,
			       int (*cb)(const char *sys, const char *name, uint64_t id, void *arg),
			       void *arg)
{
	char tdir[PATH_MAX - 512], path[PATH_MAX];
	char **sys = NULL;
	size_t nsys = 0;
	int err;

	err = tally_tracefs__find(sysfs_root, tdir, sizeof(tdir));
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/events", tdir);
	err = tly_dir_list(path, sys_glob ? sys_glob : "*", true, &sys, &nsys);
	if (err)
		return err;
	for (size_t i = 0; i < nsys && !err; i++) {
		char **evs = NULL;
		size_t nev = 0;

		snprintf(path, sizeof(path), "%s/events/%s", tdir, sys[i]);
		if (tly_dir_list(path, ev_glob ? ev_glob : "*", true, &evs, &nev))
			continue;
		for (size_t j = 0; j < nev && !err; j++) {
			uint64_t id;

			snprintf(path, sizeof(path), "%s/events/%s/%s/id", tdir, sys[i], evs[j]);
			if (tly_read_file_u64(path, &id))
				continue;
			err = cb(sys[i], evs[j], id, arg);
		}
		tly_strv_free(evs, nev);
	}
	tly_strv_free(sys, nsys);
	return err;
}
