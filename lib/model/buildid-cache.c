/*
 * The build-id cache in perf 6.1's ~/.debug layout (see include/tally/buildid-cache.h):
 * adding copies and links, removing them, listing the links in perf's order, and
 * finding a copy again with every check a copy must pass before its symbols are used.
 *
 * A .build-id link is followed only inside the cache: its target must be "../../"
 * and a path without ".." in it, so neither removing nor finding ever reaches outside.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tally/buildid-cache.h>
#include <tally/perfconfig.h>
#include "internal/tar.h"
#include "internal/util.h"

struct tally_buildid_cache {
	char *dir;
};

#define KALLSYMS_DIR "[kernel.kallsyms]"
#define VDSO_DIR "[vdso]"
#define KCORE_DIR "[kernel.kcore]"

int tally_buildid_cache__default_dir(char *buf, size_t len)
{
	const char *env = getenv("PERF_BUILDID_DIR");
	const char *home = getenv("HOME");
	int n;

	if (!len)
		return -ENAMETOOLONG;
	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (tally_perf_config_get("buildid.dir", buf, len) == 0 && *buf)
		return 0;
	else if (home && *home)
		n = snprintf(buf, len, "%s/.debug", home);
	else
		n = snprintf(buf, len, ".debug");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int tally_buildid_cache__new(struct tally_buildid_cache **out, const char *dir)
{
	struct tally_buildid_cache *c = calloc(1, sizeof(*c));
	char buf[PATH_MAX];

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (!dir) {
		if (tally_buildid_cache__default_dir(buf, sizeof(buf))) {
			free(c);
			return -ENAMETOOLONG;
		}
		dir = buf;
	}
	c->dir = strdup(dir);
	if (!c->dir) {
		free(c);
		return -ENOMEM;
	}
	/* "dir/" and "dir" name the same cache; links are made relative to it */
	for (size_t n = strlen(c->dir); n > 1 && c->dir[n - 1] == '/'; n--)
		c->dir[n - 1] = 0;
	*out = c;
	return 0;
}

void tally_buildid_cache__delete(struct tally_buildid_cache *c)
{
	if (!c)
		return;
	free(c->dir);
	free(c);
}

const char *tally_buildid_cache__dir(const struct tally_buildid_cache *c)
{
	return c->dir;
}

/* ---- paths ----------------------------------------------------------------- */

static int pathf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static const char *kind_file(enum tally_buildid_kind kind)
{
	switch (kind) {
	case TALLY_BUILDID_DEBUG: return "debug";
	case TALLY_BUILDID_KALLSYMS: return "kallsyms";
	case TALLY_BUILDID_VDSO: return "vdso";
	default: return "elf";
	}
}

static int link_path(const struct tally_buildid_cache *c, const char *hex, char *buf, size_t len)
{
	return pathf(buf, len, "%s/.build-id/%.2s/%s", c->dir, hex, hex + 2);
}

/* The entry directory of ID for NAME: DIR/REALPATH/HEX, DIR/[kernel.kallsyms]/HEX,
 * DIR/[vdso]/HEX. NAME is used as it is when it cannot be resolved (a file gone). */
static int entry_dir(const struct tally_buildid_cache *c, const char *hex, const char *name,
		     enum tally_buildid_kind kind, char *buf, size_t len)
{
	char real[PATH_MAX];

	if (kind == TALLY_BUILDID_KALLSYMS || (name && !strcmp(name, KALLSYMS_DIR)))
		return pathf(buf, len, "%s/" KALLSYMS_DIR "/%s", c->dir, hex);
	if (kind == TALLY_BUILDID_VDSO || (name && !strcmp(name, VDSO_DIR)))
		return pathf(buf, len, "%s/" VDSO_DIR "/%s", c->dir, hex);
	if (!name || name[0] != '/')
		return -EINVAL;
	if (realpath(name, real))
		name = real;
	return pathf(buf, len, "%s%s/%s", c->dir, name, hex);
}

/* A link target that stays in the cache: "../../" then a path without "..". */
static bool target_inside(const char *t)
{
	if (strncmp(t, "../../", 6) || !t[6])
		return false;
	for (const char *p = t + 6; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
		if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2]))
			return false;
	return true;
}

/* ---- files ----------------------------------------------------------------- */

/* A temporary file beside DST, for writing DST atomically. */
static int temp_beside(const char *dst, char *tmp, size_t len, mode_t mode)
{
	int fd;

	if (pathf(tmp, len, "%s.XXXXXX", dst))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode)) {
		int err = -errno;

		close(fd);
		unlink(tmp);
		return err;
	}
	return fd;
}

/* Put the finished temporary file in place as DST; an existing DST is kept. */
static int publish(int fd, const char *tmp, const char *dst, int err)
{
	if (close(fd) && !err)
		err = -errno;
	if (!err && link(tmp, dst) && errno != EEXIST)
		err = -errno;
	unlink(tmp);
	return err;
}

/* Does the first line of a kallsyms text give a nonzero address? */
static bool kallsyms_has_addresses(const char *buf, size_t len)
{
	for (size_t i = 0; i < len && buf[i] != ' ' && buf[i] != '\n'; i++)
		if (buf[i] != '0')
			return true;
	return false;
}

enum copy_src {
	SRC_FILE,	/* a regular file */
	SRC_PROC,	/* a procfs text (not a regular file, no size) */
	SRC_KALLSYMS,	/* a kallsyms text, which must hold addresses */
};

/* Copy SRC to DST (kept when it exists). */
static int copy_file(const char *src, const char *dst, mode_t mode, enum copy_src how)
{
	char tmp[PATH_MAX], buf[65536];
	bool kallsyms = how == SRC_KALLSYMS, first = true;
	int in, out, err = 0;

	if (!access(dst, F_OK))
		return 0;
	in = how == SRC_FILE ? tly_open_regular(src) : open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return errno == EINVAL ? -EINVAL : -errno;
	out = temp_beside(dst, tmp, sizeof(tmp), mode);
	if (out < 0) {
		close(in);
		return out;
	}
	/* a regular file: in the kernel when it can (no copy through us) */
	while (how == SRC_FILE) {
		ssize_t r = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);

		if (r > 0)
			continue;
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			goto done;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
			err = -errno;
			goto done;
		}
		if (lseek(in, 0, SEEK_SET) || lseek(out, 0, SEEK_SET) || ftruncate(out, 0)) {
			err = -errno;
			goto done;
		}
		break;	/* not between these files: read and write */
	}
	for (;;) {
		ssize_t r = read(in, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		if (kallsyms && first && !kallsyms_has_addresses(buf, (size_t)r)) {
			err = -EPERM;
			break;
		}
		first = false;
		err = tly_write_all(out, buf, (size_t)r);
		if (err)
			break;
	}
	if (!err && first && kallsyms)
		err = -ENODATA;		/* nothing to copy */
done:
	close(in);
	return publish(out, tmp, dst, err);
}

/* A file a package manager installed: root's, written by no one else, under a system
 * prefix. Such files are replaced by rename, never rewritten in place, so a hard link to
 * one (perf links every file) stays the build it was. */
static bool system_file(const char *path)
{
	static const char *const prefixes[] = { "/usr/", "/lib/", "/lib32/", "/lib64/", "/bin/",
						"/sbin/", "/opt/" };
	struct stat st;

	if (stat(path, &st) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return false;
	for (size_t i = 0; i < TLY_ARRAY_SIZE(prefixes); i++)
		if (!strncmp(path, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* SRC (a real path) into DST: a hard link for a system file, else a copy. */
static int store_file(const char *src, const char *dst, mode_t mode)
{
	if (!access(dst, F_OK))
		return 0;
	if (system_file(src) && (!link(src, dst) || errno == EEXIST))
		return 0;
	return copy_file(src, dst, mode, SRC_FILE);
}

static int write_file(const char *dst, const void *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX];
	int fd;

	if (!access(dst, F_OK))
		return 0;
	fd = temp_beside(dst, tmp, sizeof(tmp), mode);
	if (fd < 0)
		return fd;
	return publish(fd, tmp, dst, tly_write_all(fd, data, len));
}

/* An empty probes file, as perf leaves for a binary without SDT notes. */
static void touch_probes(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	if (pathf(path, sizeof(path), "%s/probes", dir))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

static bool has_sdt_notes(const char *path)
{
	int fd = tly_open_regular(path);
	bool found = false;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && !elf_getshdrstrndx(e, &shstrndx)) {
		while (!found && (scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			const char *n;

			found = gelf_getshdr(scn, &sh) && (n = elf_strptr(e, shstrndx, sh.sh_name)) &&
				!strcmp(n, ".note.stapsdt");
		}
	}
	elf_end(e);
	close(fd);
	return found;
}

/* The .build-id link of HEX to ENTRY (a directory under c->dir). A dangling link in
 * the way is replaced; one to another live entry is left (perf does the same). */
static int make_link(const struct tally_buildid_cache *c, const char *hex, const char *entry)
{
	char link[PATH_MAX], target[PATH_MAX], dir[PATH_MAX];
	size_t dl = strlen(c->dir);
	struct stat st;
	int err;

	if (strncmp(entry, c->dir, dl) || entry[dl] != '/')
		return -EINVAL;
	if (link_path(c, hex, link, sizeof(link)) || pathf(target, sizeof(target), "../..%s", entry + dl) ||
	    pathf(dir, sizeof(dir), "%s/.build-id/%.2s", c->dir, hex))
		return -ENAMETOOLONG;
	err = tly_mkdir_p(dir, 0755);
	if (err)
		return err;
	if (!symlink(target, link))
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (!stat(link, &st))
		return 0;
	if (unlink(link) || symlink(target, link))
		return -errno;
	return 0;
}

/* ---- adding ---------------------------------------------------------------- */

int tally_buildid_cache__add_file(struct tally_buildid_cache *c, const char *path,
				  const struct tally_build_id *want)
{
	char real[PATH_MAX], hex[TALLY_BUILD_ID_HEX_SIZE], dir[PATH_MAX], dst[PATH_MAX];
	char debug[PATH_MAX], dreal[PATH_MAX];
	struct tally_build_id id;
	struct stat st;
	size_t n;
	int err;

	if (!realpath(path, real) || stat(real, &st))
		return -ENOENT;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	err = tally_build_id__from_elf(&id, real);
	if (err)
		return err;
	if (want && !tally_build_id__equal(&id, want))
		return -ESTALE;
	tally_build_id__hex(&id, hex);
	if (pathf(dir, sizeof(dir), "%s%s/%s", c->dir, real, hex) ||
	    pathf(dst, sizeof(dst), "%s/elf", dir))
		return -ENAMETOOLONG;
	err = tly_mkdir_p(dir, 0755);
	if (!err)
		err = store_file(real, dst, st.st_mode & 0777);
	if (err)
		return err;
	n = strlen(real);
	if (!(n > 3 && !strcmp(real + n - 3, ".ko")) &&
	    !pathf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2) &&
	    realpath(debug, dreal) && !access(dreal, R_OK) &&
	    !pathf(dst, sizeof(dst), "%s/debug", dir)) {
		err = store_file(dreal, dst, 0644);
		if (err)
			return err;
	}
	if (!has_sdt_notes(real))
		touch_probes(dir);
	return make_link(c, hex, dir);
}

int tally_buildid_cache__add_kallsyms(struct tally_buildid_cache *c,
				      const struct tally_build_id *id, const char *src)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE], dir[PATH_MAX], dst[PATH_MAX];
	int err;

	if (!id->size)
		return -EINVAL;
	tally_build_id__hex(id, hex);
	if (entry_dir(c, hex, KALLSYMS_DIR, TALLY_BUILDID_KALLSYMS, dir, sizeof(dir)) ||
	    pathf(dst, sizeof(dst), "%s/kallsyms", dir))
		return -ENAMETOOLONG;
	err = tly_mkdir_p(dir, 0755);
	if (!err)
		err = copy_file(src ? src : "/proc/kallsyms", dst, 0644, SRC_KALLSYMS);
	if (err) {
		rmdir(dir);	/* nothing in it: leave no half entry */
		return err;
	}
	return make_link(c, hex, dir);
}

int tally_buildid_cache__add_vdso(struct tally_buildid_cache *c,
				  const struct tally_build_id *id, const void *image, size_t len)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE], dir[PATH_MAX], dst[PATH_MAX];
	int err;

	if (!id->size || !image || !len)
		return -EINVAL;
	tally_build_id__hex(id, hex);
	if (entry_dir(c, hex, VDSO_DIR, TALLY_BUILDID_VDSO, dir, sizeof(dir)) ||
	    pathf(dst, sizeof(dst), "%s/vdso", dir))
		return -ENAMETOOLONG;
	err = tly_mkdir_p(dir, 0755);
	if (!err)
		err = write_file(dst, image, len, 0644);
	if (err)
		return err;
	touch_probes(dir);
	return make_link(c, hex, dir);
}

/* ---- removing -------------------------------------------------------------- */

static int rm_rf(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int err = 0;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) ? -errno : 0;
	d = opendir(path);
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char sub[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		err = pathf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (!err)
			err = rm_rf(sub);
	}
	closedir(d);
	if (!err && rmdir(path))
		err = -errno;
	return err;
}

/* The entry directory a link points at (inside the cache), into BUF. */
static int link_target_dir(const struct tally_buildid_cache *c, const char *hex, char *buf,
			   size_t len, char *target, size_t tlen)
{
	char link[PATH_MAX];
	ssize_t n;

	if (link_path(c, hex, link, sizeof(link)))
		return -ENAMETOOLONG;
	n = readlink(link, target, tlen - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (!target_inside(target))
		return -EXDEV;
	return pathf(buf, len, "%s%s", c->dir, target + 5);
}

int tally_buildid_cache__remove(struct tally_buildid_cache *c, const struct tally_build_id *id)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE], link[PATH_MAX], dir[PATH_MAX], target[PATH_MAX];
	struct stat st;
	int err;

	tally_build_id__hex(id, hex);
	if (!id->size || link_path(c, hex, link, sizeof(link)))
		return -EINVAL;
	if (lstat(link, &st))
		return -errno;
	if (!S_ISLNK(st.st_mode))	/* old style: the link is the copy itself */
		return unlink(link) ? -errno : 0;
	err = link_target_dir(c, hex, dir, sizeof(dir), target, sizeof(target));
	if (unlink(link))
		return -errno;
	if (err == -EXDEV)
		return 0;	/* a link out of the cache: only the link goes */
	return err ? err : rm_rf(dir);
}

static bool is_hex_name(const char *s, size_t min, size_t max)
{
	size_t n = strspn(s, "0123456789abcdefABCDEF");

	return !s[n] && n >= min && n <= max;
}

int tally_buildid_cache__purge(struct tally_buildid_cache *c, const char *path)
{
	char real[PATH_MAX], dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0, err = 0;

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	if (real[0] != '/' || pathf(dir, sizeof(dir), "%s%s", c->dir, real))
		return -EINVAL;
	d = opendir(dir);
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		struct tally_build_id id;
		char sub[PATH_MAX];

		if (!is_hex_name(de->d_name, 2, 2 * TALLY_BUILD_ID_SIZE) ||
		    tally_build_id__parse(&id, de->d_name, strlen(de->d_name)))
			continue;
		err = tally_buildid_cache__remove(c, &id);
		if (err == -ENOENT)
			err = 0;	/* no link: the directory alone */
		if (!err)
			err = pathf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (!err)
			err = rm_rf(sub);
		if (!err)
			n++;
	}
	closedir(d);
	rmdir(dir);	/* when empty */
	if (err)
		return err;
	return n ? n : -ENOENT;
}

/* ---- listing --------------------------------------------------------------- */

struct hexlist {
	char (*v)[TALLY_BUILD_ID_HEX_SIZE];
	size_t nr, cap;
};

static int hexlist_add(struct hexlist *l, const char *a, const char *b)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		void *v = realloc(l->v, cap * sizeof(*l->v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (strlen(a) + strlen(b) >= TALLY_BUILD_ID_HEX_SIZE)
		return 0;	/* not an id */
	memcpy(l->v[l->nr], a, strlen(a));
	memcpy(l->v[l->nr] + strlen(a), b, strlen(b) + 1);
	l->nr++;
	return 0;
}

static int hex_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Every HEX with a .build-id link, sorted. */
static int list_links(const struct tally_buildid_cache *c, struct hexlist *l)
{
	char top[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (pathf(top, sizeof(top), "%s/.build-id", c->dir))
		return -ENAMETOOLONG;
	d = opendir(top);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (!err && (de = readdir(d))) {
		char sub[PATH_MAX];
		struct dirent *le;
		DIR *ld;

		if (!is_hex_name(de->d_name, 2, 2) || pathf(sub, sizeof(sub), "%s/%s", top, de->d_name))
			continue;
		ld = opendir(sub);
		if (!ld)
			continue;
		while (!err && (le = readdir(ld)))
			if (is_hex_name(le->d_name, 2, 2 * TALLY_BUILD_ID_SIZE - 2) &&
			    !(strlen(le->d_name) & 1))
				err = hexlist_add(l, de->d_name, le->d_name);
		closedir(ld);
	}
	closedir(d);
	if (!err && l->nr)
		qsort(l->v, l->nr, sizeof(*l->v), hex_cmp);
	return err;
}

/* The original name from a link target "../..<path>/<hex>" ("../../[x]/<hex>" for the
 * kernel and the vdso): perf's origname. */
static bool origname(const char *target, char *buf, size_t len)
{
	const char *slash = strrchr(target, '/');
	size_t n;

	if (strncmp(target, "../..", 5) || !slash || slash <= target + 5)
		return false;
	target += 5;
	if (target[0] == '/' && target[1] == '[')
		target++;
	n = (size_t)(slash - target);
	if (n >= len)
		return false;
	memcpy(buf, target, n);
	buf[n] = 0;
	return true;
}

int tally_buildid_cache__for_each(struct tally_buildid_cache *c, tally_buildid_cache_fn fn,
				  void *arg)
{
	struct hexlist l = { 0 };
	int err = list_links(c, &l);

	for (size_t i = 0; !err && i < l.nr; i++) {
		struct tally_buildid_cache_entry e = { .hex = l.v[i] };
		char link[PATH_MAX], target[PATH_MAX], name[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (tally_build_id__parse(&e.id, l.v[i], strlen(l.v[i])) ||
		    link_path(c, l.v[i], link, sizeof(link)))
			continue;
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			if (origname(target, name, sizeof(name)))
				e.name = name;
		}
		e.dangling = stat(link, &st) != 0;
		err = fn(arg, &e);
	}
	free(l.v);
	return err;
}

bool tally_buildid_cache__entry_current(const struct tally_buildid_cache_entry *e)
{
	struct tally_build_id now;

	if (!e->name)
		return false;
	if (!strcmp(e->name, KALLSYMS_DIR))
		return !tally_build_id__running_kernel(&now) && tally_build_id__equal(&now, &e->id);
	if (e->name[0] != '/')
		return false;
	return !tally_build_id__from_elf(&now, e->name) && tally_build_id__equal(&now, &e->id);
}

static int purge_one(void *arg, const struct tally_buildid_cache_entry *e)
{
	struct tally_buildid_cache *c = arg;
	int err = tally_buildid_cache__remove(c, &e->id);

	return err && err != -ENOENT ? err : 0;
}

struct counter {
	int n;
};

static int count_one(void *arg, const struct tally_buildid_cache_entry *e)
{
	(void)e;
	((struct counter *)arg)->n++;
	return 0;
}

int tally_buildid_cache__purge_all(struct tally_buildid_cache *c)
{
	struct counter k = { 0 };
	int err = tally_buildid_cache__for_each(c, count_one, &k);

	if (!err)
		err = tally_buildid_cache__for_each(c, purge_one, c);
	return err ? err : k.n;
}

bool tally_buildid_cache__has(struct tally_buildid_cache *c, const struct tally_build_id *id)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE], link[PATH_MAX];
	struct stat st;

	tally_build_id__hex(id, hex);
	return id->size && !link_path(c, hex, link, sizeof(link)) && !lstat(link, &st);
}

/* ---- finding --------------------------------------------------------------- */

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* Is the ELF file whole? Its headers, sections and segments must all lie within its
 * SIZE bytes; a copy cut short fails this even when its build-id note survived. NEED
 * gets the size they ask for. */
static bool elf_whole(Elf *e, uint64_t size, uint64_t *need)
{
	GElf_Ehdr eh;
	size_t n;

	*need = 0;
	if (!gelf_getehdr(e, &eh))
		return false;
	*need = eh.e_ehsize;
	if (eh.e_phnum && eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize > *need)
		*need = eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize;
	if (eh.e_shoff && eh.e_shoff + (uint64_t)(eh.e_shnum ? eh.e_shnum : 1) * eh.e_shentsize > *need)
		*need = eh.e_shoff + (uint64_t)(eh.e_shnum ? eh.e_shnum : 1) * eh.e_shentsize;
	if (*need > size)
		return false;
	if (!elf_getphdrnum(e, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_offset + ph.p_filesz > *need)
				*need = ph.p_offset + ph.p_filesz;
		}
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    sh.sh_offset + sh.sh_size > *need)
			*need = sh.sh_offset + sh.sh_size;
	}
	return *need <= size;
}

static int check_elf(const char *path, const struct tally_build_id *want, char *why, size_t wl)
{
	char a[TALLY_BUILD_ID_HEX_SIZE], b[TALLY_BUILD_ID_HEX_SIZE];
	struct tally_build_id id;
	struct stat st;
	uint64_t need;
	int fd, ret = -EBADF;
	Elf *e;

	fd = tly_open_regular(path);
	if (fd < 0 || fstat(fd, &st)) {
		say(why, wl, "%s cannot be read: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EBADF;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		say(why, wl, "%s is not an ELF file (%lld bytes)", path, (long long)st.st_size);
	} else if (!elf_whole(e, (uint64_t)st.st_size, &need)) {
		say(why, wl, "%s is cut short: %lld bytes, its ELF headers need %llu", path,
		    (long long)st.st_size, (unsigned long long)need);
	} else {
		ret = 0;
	}
	elf_end(e);
	close(fd);
	if (ret)
		return ret;
	if (tally_build_id__from_elf(&id, path)) {
		say(why, wl, "%s has no build-id note (want %s)", path, tally_build_id__hex(want, b));
		return -EBADF;
	}
	if (!tally_build_id__equal(&id, want)) {
		say(why, wl, "%s has build-id %s, not %s (changed after it was cached)", path,
		    tally_build_id__hex(&id, a), tally_build_id__hex(want, b));
		return -EBADF;
	}
	return 0;
}

/* A kallsyms copy: not empty, ending with a whole line, with addresses. */
static int check_kallsyms(const char *path, char *why, size_t wl)
{
	char head[64], last;
	struct stat st;
	ssize_t n;
	int fd = tly_open_regular(path);

	if (fd < 0 || fstat(fd, &st)) {
		say(why, wl, "%s cannot be read: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EBADF;
	}
	n = st.st_size > 0 ? pread(fd, head, sizeof(head), 0) : 0;
	if (n > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
		n = -1;
	close(fd);
	if (n <= 0) {
		say(why, wl, "%s is empty", path);
		return -EBADF;
	}
	if (last != '\n') {
		say(why, wl, "%s is cut short (its last line is not whole)", path);
		return -EBADF;
	}
	if (!kallsyms_has_addresses(head, (size_t)n)) {
		say(why, wl, "%s lists only zero addresses (copied under kptr_restrict)", path);
		return -EBADF;
	}
	return 0;
}

static bool trusted_owner(const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == geteuid();
}

/* A copy owned by the caller or root is checked for what it is; one owned by someone
 * else may change under us, so an ELF copy is used only when its build-id proves it is
 * the one asked for (with a note for a warning), and a kallsyms copy, which has nothing
 * to prove itself with, not at all. */
static int check_file(const char *path, enum tally_buildid_kind kind,
		      const struct tally_build_id *id, char *why, size_t wl)
{
	struct stat st;
	int err;

	if (stat(path, &st))
		return -ENOENT;
	if (!S_ISREG(st.st_mode)) {
		say(why, wl, "%s is not a regular file", path);
		return -EBADF;
	}
	if (kind == TALLY_BUILDID_KALLSYMS) {
		if (!trusted_owner(&st)) {
			say(why, wl, "%s is owned by uid %u, neither you nor root: not used (chown "
			    "it if you trust it; tar as root keeps the archive's owners, "
			    "--no-same-owner does not)", path, (unsigned)st.st_uid);
			return -EBADF;
		}
		return check_kallsyms(path, why, wl);
	}
	err = check_elf(path, id, why, wl);
	if (!err && !trusted_owner(&st))
		say(why, wl, "%s is owned by uid %u, neither you nor root; used because its "
		    "build-id is the recording's", path, (unsigned)st.st_uid);
	return err;
}

int tally_buildid_cache__find(struct tally_buildid_cache *c, const struct tally_build_id *id,
			      const char *name, enum tally_buildid_kind kind, char *path,
			      size_t len, char *why, size_t wl)
{
	char hex[TALLY_BUILD_ID_HEX_SIZE], link[PATH_MAX], dir[PATH_MAX], target[PATH_MAX];
	char dangling[2 * PATH_MAX + 64] = "";
	struct stat st;
	int err;

	if (why && wl)
		why[0] = 0;
	if (!id->size)
		return -ENOENT;
	tally_build_id__hex(id, hex);
	if (link_path(c, hex, link, sizeof(link)))
		return -ENAMETOOLONG;
	if (!lstat(link, &st)) {
		if (S_ISREG(st.st_mode) && kind == TALLY_BUILDID_ELF) {
			/* perf's old layout: the link is the copy */
			if (pathf(path, len, "%s", link))
				return -ENAMETOOLONG;
			return check_file(path, kind, id, why, wl);
		}
		if (S_ISDIR(st.st_mode))	/* an entry made in place of the link */
			err = pathf(dir, sizeof(dir), "%s", link);
		else
			err = link_target_dir(c, hex, dir, sizeof(dir), target, sizeof(target));
		if (err == -EXDEV) {
			say(why, wl, "%s points outside the cache (to %s): not used", link, target);
			return -EBADF;
		}
		if (!err && stat(dir, &st)) {
			snprintf(dangling, sizeof(dangling), "%s is a dangling link (to %s)", link,
				 target);
		} else if (!err) {
			if (pathf(path, len, "%s/%s", dir, kind_file(kind)))
				return -ENAMETOOLONG;
			err = check_file(path, kind, id, why, wl);
			if (err != -ENOENT)
				return err;
		}
	}
	/* no link, a dangling one, or an entry without this kind: the entry of NAME */
	if (entry_dir(c, hex, name, kind, dir, sizeof(dir)) ||
	    pathf(path, len, "%s/%s", dir, kind_file(kind))) {
		if (dangling[0])
			say(why, wl, "%s", dangling);
		return dangling[0] ? -EBADF : -ENOENT;
	}
	err = check_file(path, kind, id, why, wl);
	if (err == -ENOENT && dangling[0]) {
		say(why, wl, "%s", dangling);
		return -EBADF;
	}
	if (!err && dangling[0])
		say(why, wl, "%s; found the copy by its path instead", dangling);
	return err;
}

/* ---- kcore ----------------------------------------------------------------- */

/* Kernel text [stext, etext) and the module area [mod_lo, mod_hi) from kallsyms and
 * modules ("name size refcount deps state 0xaddr"). */
struct kcore_ranges {
	uint64_t stext, etext, mod_lo, mod_hi;
};

static int kcore_ranges(const char *kallsyms, const char *modules, struct kcore_ranges *r)
{
	char line[1024];
	FILE *f = fopen(kallsyms, "re");

	memset(r, 0, sizeof(*r));
	r->mod_lo = UINT64_MAX;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[512];

		if (sscanf(line, "%llx %c %511s", &a, &type, name) != 3)
			continue;
		if (!strcmp(name, "_stext"))
			r->stext = a;
		else if (!strcmp(name, "_etext"))
			r->etext = a;
	}
	fclose(f);
	f = fopen(modules, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long size, addr;
		char name[256], deps[512], state[64];
		int refs;

		if (sscanf(line, "%255s %llu %d %511s %63s %llx", name, &size, &refs, deps, state,
			   &addr) != 6 || !addr)
			continue;
		if (addr < r->mod_lo)
			r->mod_lo = addr;
		if (addr + size > r->mod_hi)
			r->mod_hi = addr + size;
	}
	fclose(f);
	if (r->mod_lo == UINT64_MAX)
		r->mod_lo = r->mod_hi = 0;
	return r->stext && r->etext > r->stext ? 0 : -EINVAL;
}

static bool same_file(const char *a, const char *b)
{
	char *x = NULL, *y = NULL;
	size_t nx, ny;
	bool same = !tly_read_file_all(a, &x, &nx) && !tly_read_file_all(b, &y, &ny) &&
		    nx == ny && !memcmp(x, y, nx);

	free(x);
	free(y);
	return same;
}

/* An entry under TOP whose kallsyms and modules are FROM's: its name into OUT. */
static bool kcore_existing(const char *top, const char *from, char *out, size_t len)
{
	char fk[PATH_MAX], fm[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d = opendir(top);

	if (!d || pathf(fk, sizeof(fk), "%s/kallsyms", from) ||
	    pathf(fm, sizeof(fm), "%s/modules", from)) {
		if (d)
			closedir(d);
		return false;
	}
	while (!found && (de = readdir(d))) {
		char tk[PATH_MAX], tm[PATH_MAX];

		if (de->d_name[0] == '.' || pathf(tk, sizeof(tk), "%s/%s/kallsyms", top, de->d_name) ||
		    pathf(tm, sizeof(tm), "%s/%s/modules", top, de->d_name))
			continue;
		found = same_file(fk, tk) && same_file(fm, tm) &&
			!pathf(out, len, "%s/%s", top, de->d_name);
	}
	closedir(d);
	return found;
}

/* One piece of the copy: VADDR..+SIZE, from SRC_OFF in the source kcore. */
struct kpiece {
	uint64_t vaddr, size, src_off;
};

/* The part of segment PH inside [LO, HI) (page-aligned outward), if any. */
static bool clip(const GElf_Phdr *ph, uint64_t lo, uint64_t hi, uint64_t page, struct kpiece *p)
{
	uint64_t a, b;

	if (hi <= lo)
		return false;
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	a = ph->p_vaddr > lo ? ph->p_vaddr : lo;
	b = ph->p_vaddr + ph->p_filesz < hi ? ph->p_vaddr + ph->p_filesz : hi;
	if (a >= b)
		return false;
	*p = (struct kpiece){ a, b - a, ph->p_offset + (a - ph->p_vaddr) };
	return true;
}

/* A new ELF core file at DST holding what SRC's PT_LOAD segments have of kernel text
 * and of the module area (the ranges page-aligned), as perf's kcore copy: one program
 * header per piece, readable, writable and executable, the data page-aligned after the
 * headers. */
static int kcore_write(const char *src, const char *dst, const struct kcore_ranges *r)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), off;
	int in = tly_open_regular(src), out = -1, err = 0;
	struct kpiece keep[16];
	size_t n = 0, nph;
	GElf_Ehdr eh;
	Elf64_Ehdr h;
	Elf *e;

	if (in < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(in, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_type != ET_CORE ||
	    gelf_getclass(e) != ELFCLASS64 || elf_getphdrnum(e, &nph)) {
		err = -EINVAL;
		goto out;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < nph && n < TLY_ARRAY_SIZE(keep); i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (pass == 0 ? clip(&ph, r->stext, r->etext, page, &keep[n]) :
					clip(&ph, r->mod_lo, r->mod_hi, page, &keep[n]))
				n++;
		}
	}
	if (!n) {
		err = -EINVAL;	/* no segment holds the kernel's text */
		goto out;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (out < 0) {
		err = -errno;
		goto out;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.e_ident, eh.e_ident, EI_NIDENT);
	h.e_type = ET_CORE;
	h.e_machine = eh.e_machine;
	h.e_version = EV_CURRENT;
	h.e_phoff = sizeof(h);
	h.e_ehsize = sizeof(h);
	h.e_phentsize = sizeof(Elf64_Phdr);
	h.e_phnum = (Elf64_Half)n;
	err = tly_write_all(out, &h, sizeof(h));
	off = (sizeof(h) + n * sizeof(Elf64_Phdr) + page - 1) & ~(page - 1);
	for (size_t i = 0; !err && i < n; i++) {
		Elf64_Phdr p = {
			.p_type = PT_LOAD, .p_flags = PF_R | PF_W | PF_X, .p_offset = off,
			.p_vaddr = keep[i].vaddr, .p_filesz = keep[i].size,
			.p_memsz = keep[i].size, .p_align = page,
		};

		err = tly_write_all(out, &p, sizeof(p));
		keep[i].vaddr = off;	/* from here on: where its data goes */
		off += (keep[i].size + page - 1) & ~(page - 1);
	}
	for (size_t i = 0; !err && i < n; i++) {
		char buf[65536];
		uint64_t done = 0;

		while (!err && done < keep[i].size) {
			size_t want = keep[i].size - done < sizeof(buf) ?
				      (size_t)(keep[i].size - done) : sizeof(buf);
			ssize_t got = pread(in, buf, want, (off_t)(keep[i].src_off + done));

			if (got <= 0)
				err = got < 0 ? -errno : -EIO;
			else if (pwrite(out, buf, (size_t)got, (off_t)(keep[i].vaddr + done)) != got)
				err = -errno;
			else
				done += (uint64_t)got;
		}
	}
	if (close(out) && !err)
		err = -errno;
out:
	elf_end(e);
	close(in);
	if (err && out >= 0)
		unlink(dst);
	return err;
}

int tally_buildid_cache__add_kcore(struct tally_buildid_cache *c, const char *kcore, bool force,
				   char *dir_out, size_t len)
{
	char from[PATH_MAX], root[PATH_MAX], notes[PATH_MAX], top[PATH_MAX], dir[PATH_MAX];
	char hex[TALLY_BUILD_ID_HEX_SIZE], stamp[32], src[PATH_MAX], dst[PATH_MAX];
	struct tally_build_id id;
	struct kcore_ranges r;
	struct timespec ts;
	struct tm tm;
	char *slash;
	int err;

	if (pathf(from, sizeof(from), "%s", kcore))
		return -ENAMETOOLONG;
	slash = strrchr(from, '/');
	if (!slash || strcmp(slash + 1, "kcore"))
		return -EINVAL;
	*slash = 0;
	/* the kernel's notes are ROOT/sys/kernel/notes, ROOT being the parent of the
	 * kcore's directory ("" for /proc/kcore) */
	memcpy(root, from, (size_t)(slash - from) + 1);
	slash = strrchr(root, '/');
	if (slash)
		*slash = 0;
	else
		root[0] = 0;
	if (pathf(notes, sizeof(notes), "%s/sys/kernel/notes", root))
		return -ENAMETOOLONG;
	err = tally_build_id__from_notes(&id, notes);
	if (err)
		return err;
	tally_build_id__hex(&id, hex);
	if (pathf(top, sizeof(top), "%s/" KCORE_DIR "/%s", c->dir, hex))
		return -ENAMETOOLONG;
	if (!force && kcore_existing(top, from, dir, sizeof(dir))) {
		if (dir_out)
			snprintf(dir_out, len, "%s", dir);
		return 0;
	}
	if (pathf(src, sizeof(src), "%s/kallsyms", from) || pathf(dst, sizeof(dst), "%s/modules", from))
		return -ENAMETOOLONG;
	err = kcore_ranges(src, dst, &r);
	if (err)
		return err;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	if (pathf(dir, sizeof(dir), "%s/%s%02u", top, stamp, (unsigned)(ts.tv_nsec / 10000000)))
		return -ENAMETOOLONG;
	err = tly_mkdir_p(dir, 0755);
	for (size_t i = 0; !err && i < 2; i++) {
		const char *f = i ? "modules" : "kallsyms";

		if (pathf(src, sizeof(src), "%s/%s", from, f) || pathf(dst, sizeof(dst), "%s/%s", dir, f))
			err = -ENAMETOOLONG;
		else
			err = copy_file(src, dst, 0400, SRC_PROC);
	}
	if (!err && (pathf(src, sizeof(src), "%s/kcore", from) || pathf(dst, sizeof(dst), "%s/kcore", dir)))
		err = -ENAMETOOLONG;
	if (!err)
		err = kcore_write(src, dst, &r);
	if (err) {
		rm_rf(dir);
		rmdir(top);
		return err;
	}
	if (dir_out)
		snprintf(dir_out, len, "%s", dir);
	return 0;
}

/* ---- archive --------------------------------------------------------------- */

/* DIR (a path relative to the cache, REL) and everything in it, names sorted. */
static int tar_tree(struct tly_tar *t, const char *cache, const char *rel)
{
	char path[PATH_MAX];
	struct dirent **names = NULL;
	struct stat st;
	int n, err = 0;

	if (pathf(path, sizeof(path), "%s/%s", cache, rel))
		return -ENAMETOOLONG;
	if (lstat(path, &st))
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t len = readlink(path, target, sizeof(target) - 1);

		if (len < 0)
			return -errno;
		target[len] = 0;
		return tly_tar__add_symlink(t, rel, target, st.st_mtime);
	}
	if (S_ISREG(st.st_mode)) {
		int fd = tly_open_regular(path);

		if (fd < 0)
			return -errno;
		err = tly_tar__add_file(t, rel, fd, (uint64_t)st.st_size, st.st_mode, st.st_mtime);
		close(fd);
		return err;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;	/* no devices or FIFOs from a cache */
	err = tly_tar__add_dir(t, rel, st.st_mode, st.st_mtime);
	n = err ? 0 : scandir(path, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		char sub[PATH_MAX];

		if (!err && strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..")) {
			err = pathf(sub, sizeof(sub), "%s/%s", rel, names[i]->d_name);
			if (!err)
				err = tar_tree(t, cache, sub);
		}
		free(names[i]);
	}
	free(names);
	return n < 0 ? -errno : err;
}

int tally_buildid_cache__archive(struct tally_buildid_cache *c, const struct tally_build_id *ids,
				 size_t nr, int fd, tally_buildid_skip_fn skipped, void *arg,
				 size_t *archived)
{
	struct tly_tar *t;
	size_t done = 0;
	int err = tly_tar__open(&t, fd, true);

	if (err)
		return err;
	for (size_t i = 0; !err && i < nr; i++) {
		char hex[TALLY_BUILD_ID_HEX_SIZE], dir[PATH_MAX], target[PATH_MAX], path[PATH_MAX];
		char why[2 * PATH_MAX + 256] = "", rel[PATH_MAX];
		enum tally_buildid_kind kind = TALLY_BUILDID_ELF;
		struct stat st;
		int ferr;

		tally_build_id__hex(&ids[i], hex);
		if (link_target_dir(c, hex, dir, sizeof(dir), target, sizeof(target))) {
			if (skipped)
				skipped(arg, &ids[i], "not in the build-id cache");
			continue;
		}
		if (stat(dir, &st)) {
			snprintf(why, sizeof(why), "its link points at nothing (%s)", target);
			if (skipped)
				skipped(arg, &ids[i], why);
			continue;
		}
		if (strstr(target, "/" KALLSYMS_DIR "/"))
			kind = TALLY_BUILDID_KALLSYMS;
		else if (strstr(target, "/" VDSO_DIR "/"))
			kind = TALLY_BUILDID_VDSO;
		ferr = tally_buildid_cache__find(c, &ids[i], NULL, kind, path, sizeof(path), why,
						 sizeof(why));
		if (ferr) {
			if (skipped)
				skipped(arg, &ids[i], why[0] ? why : "not in the build-id cache");
			continue;
		}
		/* perf archive's manifest: the link, then its entry's directory */
		if (pathf(rel, sizeof(rel), ".build-id/%.2s/%s", hex, hex + 2))
			continue;
		err = tar_tree(t, c->dir, rel);
		if (!err)
			err = tar_tree(t, c->dir, target + 6);
		done++;
	}
	if (!err)
		err = tly_tar__finish(t);
	tly_tar__delete(t);
	if (archived)
		*archived = done;
	return err;
}
