/*
 * Side-band records synthesized from /proc (see include/tally/synth.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tally/buildid.h>
#include <tally/synth.h>
#include "internal/util.h"

#define REC_MAX 4096	/* COMM/FORK/MMAP2 + PATH_MAX name + trailer */

struct synth {
	const struct tally_synth_opts *opts;
	const char *proc;
	tally_synth_fn fn;
	void *arg;
	uint64_t buf[REC_MAX / 8];
};

size_t tally_synth__id_hdr_size(const struct perf_event_attr *attr)
{
	uint64_t t = attr->sample_type;
	size_t n = 0;

	if (!attr->sample_id_all)
		return 0;
	n += (t & PERF_SAMPLE_TID) ? 8 : 0;
	n += (t & PERF_SAMPLE_TIME) ? 8 : 0;
	n += (t & PERF_SAMPLE_ID) ? 8 : 0;
	n += (t & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
	n += (t & PERF_SAMPLE_CPU) ? 8 : 0;
	n += (t & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
	return n;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Finish the record in s->buf: header, name at NAME_OFF, trailer; hand it over. */
static int emit(struct synth *s, uint32_t type, uint16_t misc, size_t name_off,
		const char *name)
{
	struct perf_event_header *h = (struct perf_event_header *)s->buf;
	unsigned char *p = (unsigned char *)s->buf;
	size_t nlen = strlen(name) + 1, size = align8(name_off + nlen);

	if (size + s->opts->id_hdr_size > sizeof(s->buf))
		return 0;	/* cannot happen with PATH_MAX names; skip rather than cut */
	memset(p + name_off, 0, size - name_off + s->opts->id_hdr_size);
	memcpy(p + name_off, name, nlen);
	size += s->opts->id_hdr_size;
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)size;
	return s->fn(s->arg, h);
}

static int emit_comm(struct synth *s, pid_t pid, pid_t tid, const char *comm)
{
	uint32_t *u = (uint32_t *)(s->buf + 1);

	u[0] = (uint32_t)pid;
	u[1] = (uint32_t)tid;
	return emit(s, PERF_RECORD_COMM, 0, 16, comm);
}

/* {u32 pid, ppid, tid, ptid; u64 time}: as perf synthesizes it, a process's main thread
 * forked from its parent process, any other thread from the main thread. */
static int emit_fork(struct synth *s, pid_t pid, pid_t tid, pid_t parent)
{
	struct perf_event_header *h = (struct perf_event_header *)s->buf;
	uint32_t *u = (uint32_t *)(s->buf + 1);

	u[0] = (uint32_t)pid;
	u[1] = (uint32_t)parent;
	u[2] = (uint32_t)tid;
	u[3] = (uint32_t)parent;
	s->buf[3] = 0;
	memset(s->buf + 4, 0, s->opts->id_hdr_size);
	h->type = PERF_RECORD_FORK;
	h->misc = PERF_RECORD_MISC_FORK_EXEC;	/* perf's mark: synthesized, not seen */
	h->size = (uint16_t)(32 + s->opts->id_hdr_size);
	return s->fn(s->arg, h);
}

/* {u32 pid, tid; u64 nr_namespaces; {u64 dev, ino}[nr]}: the thread's namespaces in
 * perf's order (the kernel's NET, UTS, IPC, PID, USER, MNT, CGROUP indexes); one that
 * cannot be read is 0/0, as perf leaves it. */
static int emit_namespaces(struct synth *s, pid_t pid, pid_t tid)
{
	static const char *const ns[] = { "net", "uts", "ipc", "pid", "user", "mnt", "cgroup" };
	struct perf_event_header *h = (struct perf_event_header *)s->buf;
	uint32_t *u = (uint32_t *)(s->buf + 1);
	size_t nr = sizeof(ns) / sizeof(ns[0]);

	if (!s->opts->namespaces)
		return 0;
	u[0] = (uint32_t)pid;
	u[1] = (uint32_t)tid;
	s->buf[2] = nr;
	for (size_t i = 0; i < nr; i++) {
		char path[128];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%d/task/%d/ns/%s", s->proc, pid, tid, ns[i]);
		if (stat(path, &st))
			memset(&st, 0, sizeof(st));
		s->buf[3 + 2 * i] = st.st_dev;
		s->buf[4 + 2 * i] = st.st_ino;
	}
	memset(s->buf + 3 + 2 * nr, 0, s->opts->id_hdr_size);
	h->type = PERF_RECORD_NAMESPACES;
	h->misc = 0;
	h->size = (uint16_t)(24 + 16 * nr + s->opts->id_hdr_size);
	return s->fn(s->arg, h);
}

static int read_comm(struct synth *s, pid_t pid, pid_t tid, char *comm, size_t len)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/%d/task/%d/comm", s->proc, pid, tid);
	if (tly_read_file_str(path, comm, len) < 0) {
		snprintf(path, sizeof(path), "%s/%d/comm", s->proc, tid);
		if (tly_read_file_str(path, comm, len) < 0)
			return -ESRCH;
	}
	return 0;
}

/* --buildid-mmap: the build-id of the file a map names, or false (no file, not ELF, no
 * note; the vdso has no file either: perf gives it none). */
static bool map_build_id(const char *name, struct tally_build_id *id)
{
	return name[0] == '/' && !tally_build_id__from_elf(id, name) && id->size;
}

/* The 24 bytes of an MMAP2 record after pgoff: {u8 size; u8 reserved[3]; u8 id[20]}
 * (misc PERF_RECORD_MISC_MMAP_BUILD_ID) in place of {u32 maj, min; u64 ino, ino_gen}. */
static void put_build_id(uint64_t *at, const struct tally_build_id *id)
{
	unsigned char *p = (unsigned char *)at;

	memset(p, 0, 24);
	p[0] = (unsigned char)(id->size > 20 ? 20 : id->size);
	memcpy(p + 4, id->data, p[0]);
}

/* MMAP2 records from /proc/PID/maps. */
static int synth_maps(struct synth *s, pid_t pid)
{
	char path[96], *maps = NULL, *line, *next;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "%s/%d/maps", s->proc, pid);
	err = tly_read_file_all(path, &maps, &len);
	if (err)
		return err == -ENOENT ? -ESRCH : 0;	/* unreadable maps: comm only */
	for (line = maps; line && *line; line = next) {
		uint64_t start, end, pgoff, ino;
		unsigned int maj, min;
		char perms[8];
		int name_at = 0;
		const char *name;
		uint64_t *q = s->buf + 1;
		uint32_t prot = 0, flags;
		uint16_t misc;
		struct tally_build_id id;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &pgoff, &maj, &min, &ino, &name_at) < 7)
			continue;
		name = name_at ? line + name_at : "";
		/* Executable maps; with -d also every readable data map (perf's rule). */
		if (perms[2] != 'x' && !(s->opts->data_maps && perms[0] == 'r'))
			continue;
		if (!strcmp(name, "[vsyscall]"))
			continue;	/* a kernel address: not the process's map */
		if (!*name)
			name = "//anon";
		if (perms[0] == 'r')
			prot |= PROT_READ;
		if (perms[1] == 'w')
			prot |= PROT_WRITE;
		if (perms[2] == 'x')
			prot |= PROT_EXEC;
		flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		/* {u32 pid, tid; u64 addr, len, pgoff; u32 maj, min; u64 ino, ino_gen;
		 *  u32 prot, flags; char filename[]} */
		((uint32_t *)q)[0] = (uint32_t)pid;
		((uint32_t *)q)[1] = (uint32_t)pid;
		q[1] = start;
		q[2] = end - start;
		q[3] = pgoff;
		((uint32_t *)&q[4])[0] = maj;
		((uint32_t *)&q[4])[1] = min;
		q[5] = ino;
		q[6] = 0;
		((uint32_t *)&q[7])[0] = prot;
		((uint32_t *)&q[7])[1] = flags;
		misc = PERF_RECORD_MISC_USER | (perms[2] == 'x' ? 0 : PERF_RECORD_MISC_MMAP_DATA);
		if (s->opts->build_ids && map_build_id(name, &id)) {
			put_build_id(&q[4], &id);
			misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
		}
		err = emit(s, PERF_RECORD_MMAP2, misc, 8 + 64, name);
		if (err)
			break;
	}
	free(maps);
	return err;
}

static void synth_init(struct synth *s, const struct tally_synth_opts *opts,
		       tally_synth_fn fn, void *arg)
{
	static const struct tally_synth_opts none;

	s->opts = opts ? opts : &none;
	s->proc = s->opts->proc ? s->opts->proc : "/proc";
	s->fn = fn;
	s->arg = arg;
}

/* Thread group id of TID, from /proc/TID/status. */
static pid_t tgid_of(struct synth *s, pid_t tid)
{
	char path[96], *st = NULL, *p;
	size_t len;
	long v = -1;

	snprintf(path, sizeof(path), "%s/%d/status", s->proc, tid);
	if (tly_read_file_all(path, &st, &len))
		return -1;
	p = strstr(st, "\nTgid:");
	if (p)
		v = strtol(p + 6, NULL, 10);
	free(st);
	return v > 0 ? (pid_t)v : -1;
}

/* "PPid:" of /proc/PID/status, 0 when it cannot be read. */
static pid_t ppid_of(struct synth *s, pid_t pid)
{
	char path[96], *st, *p;
	size_t len;
	long v = 0;

	snprintf(path, sizeof(path), "%s/%d/status", s->proc, pid);
	if (tly_read_file_all(path, &st, &len))
		return 0;
	p = strstr(st, "\nPPid:");
	if (p)
		v = strtol(p + 7, NULL, 10);
	free(st);
	return v > 0 ? (pid_t)v : 0;
}

/*
 * The threads of process PID (or only ONLY_TID) and then its maps. A COMM names each
 * thread. With FORKS (perf record -a), each thread is first announced by a FORK, as
 * perf does for the whole system; for -p/-t perf sends the COMMs alone. A FORK after
 * the COMM would give the thread its process's name again.
 */
static int do_process(struct synth *s, pid_t pid, pid_t only_tid, bool forks)
{
	char path[96], comm[64];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%d/task", s->proc, pid);
	d = opendir(path);
	if (!d)
		return -ESRCH;
	while (!err && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0 || (only_tid > 0 && tid != only_tid))
			continue;
		if (read_comm(s, pid, (pid_t)tid, comm, sizeof(comm)))
			continue;	/* thread exited meanwhile */
		if (forks)
			err = emit_fork(s, pid, (pid_t)tid, tid == pid ? ppid_of(s, pid) : pid);
		if (!err && forks)
			err = emit_namespaces(s, pid, (pid_t)tid);
		if (!err)
			err = emit_comm(s, pid, (pid_t)tid, comm);
		if (!err && !forks)
			err = emit_namespaces(s, pid, (pid_t)tid);
	}
	closedir(d);
	if (!err && !s->opts->no_maps)
		err = synth_maps(s, pid);
	return err;
}

int tally_synth__process(pid_t pid, const struct tally_synth_opts *opts,
			 tally_synth_fn fn, void *arg)
{
	struct synth s;

	synth_init(&s, opts, fn, arg);
	return do_process(&s, pid, 0, false);
}

int tally_synth__thread(pid_t tid, const struct tally_synth_opts *opts,
			tally_synth_fn fn, void *arg)
{
	struct synth s;
	pid_t pid;

	synth_init(&s, opts, fn, arg);
	pid = tgid_of(&s, tid);
	if (pid < 0)
		return -ESRCH;
	return do_process(&s, pid, tid, false);
}

int tally_synth__comm(pid_t pid, pid_t tid, const char *comm,
		      const struct tally_synth_opts *opts, tally_synth_fn fn, void *arg)
{
	struct synth s;
	int err;

	synth_init(&s, opts, fn, arg);
	if (strlen(comm) >= 256)
		return -EINVAL;
	err = emit_comm(&s, pid, tid, comm);
	return err ? err : emit_namespaces(&s, pid, tid);
}

int tally_synth__all(const struct tally_synth_opts *opts, tally_synth_fn fn, void *arg)
{
	struct synth s;
	struct dirent *de;
	DIR *d;
	int err = 0;

	synth_init(&s, opts, fn, arg);
	d = opendir(s.proc);
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		err = do_process(&s, (pid_t)pid, 0, true);
		if (err == -ESRCH)
			err = 0;	/* gone meanwhile */
	}
	closedir(d);
	return err;
}

/* ID: with --buildid-mmap, the kernel's or module's build-id (NULL or empty: none) */
static int emit_kmap(struct synth *s, uint64_t start, uint64_t len, uint64_t pgoff,
		     const char *name, const struct tally_build_id *id)
{
	uint64_t *q = s->buf + 1;

	if (s->opts->build_ids && id && id->size) {
		/* MMAP2, prot and flags 0, as perf's */
		((uint32_t *)q)[0] = (uint32_t)-1;
		((uint32_t *)q)[1] = 0;
		q[1] = start;
		q[2] = len;
		q[3] = pgoff;
		put_build_id(&q[4], id);
		q[7] = 0;
		return emit(s, PERF_RECORD_MMAP2,
			    PERF_RECORD_MISC_KERNEL | PERF_RECORD_MISC_MMAP_BUILD_ID, 8 + 64, name);
	}

	/* MMAP: {u32 pid, tid; u64 start, len, pgoff; char filename[]} */
	((uint32_t *)q)[0] = (uint32_t)-1;
	((uint32_t *)q)[1] = 0;
	q[1] = start;
	q[2] = len;
	q[3] = pgoff;
	return emit(s, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, 8 + 32, name);
}

/* Address of symbol NAME in a kallsyms text ("ADDR TYPE NAME[\t[module]]\n" lines),
 * found by searching for the name rather than parsing 100k+ lines. 0 if absent. */
static uint64_t kallsyms_addr(const char *text, size_t len, const char *name)
{
	size_t nlen = strlen(name);
	const char *p = text, *end = text + len;

	while ((p = memmem(p, (size_t)(end - p), name, nlen))) {
		const char *line = p;

		/* " T _text\n": preceded by "<type> ", followed by the end of the line */
		if (p - text >= 3 && p[-1] == ' ' && p[-3] == ' ' &&
		    (p + nlen == end || p[nlen] == '\n')) {
			while (line > text && line[-1] != '\n')
				line--;
			return strtoull(line, NULL, 16);
		}
		p += nlen;
	}
	return 0;
}

int tally_synth__kernel_map(const struct tally_synth_opts *opts, tally_synth_fn fn, void *arg)
{
	struct tally_build_id id;
	uint64_t text, etext;
	char path[96], *buf = NULL;
	struct synth s;
	size_t len;
	int err;

	synth_init(&s, opts, fn, arg);
	snprintf(path, sizeof(path), "%s/kallsyms", s.proc);
	err = tly_read_file_all(path, &buf, &len);
	if (err)
		return err;
	text = kallsyms_addr(buf, len, "_text");
	etext = kallsyms_addr(buf, len, "_etext");
	free(buf);
	if (!text || etext <= text)
		return -ENOENT;
	if (!opts || !opts->build_ids || tally_build_id__running_kernel(&id))
		id.size = 0;
	return emit_kmap(&s, text, etext - text, text, "[kernel.kallsyms]_text", &id);
}

/* Path of module NAME from modules.dep ("kernel/drivers/x/name.ko[.xz]: deps"). */
static bool module_path(const char *dep, const char *dir, const char *name, char *out,
			size_t len)
{
	const char *p = dep;
	size_t nlen = strlen(name);

	while (p && *p) {
		const char *colon = strchr(p, ':'), *eol = strchr(p, '\n'), *base;
		size_t i;

		if (!colon || (eol && colon > eol))
			goto nextline;
		for (base = colon; base > p && base[-1] != '/'; base--)
			;
		if ((size_t)(colon - base) > nlen && base[nlen] == '.') {
			for (i = 0; i < nlen; i++) {
				char c = base[i] == '-' ? '_' : base[i];

				if (c != name[i])
					break;
			}
			if (i == nlen) {
				snprintf(out, len, "%s/%.*s", dir, (int)(colon - p), p);
				return true;
			}
		}
nextline:
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

int tally_synth__modules(const struct tally_synth_opts *opts, tally_synth_fn fn, void *arg)
{
	char path[PATH_MAX], dir[300], *mods = NULL, *dep = NULL, *line, *next;
	struct tally_build_id id;
	struct utsname u;
	struct synth s;
	size_t len;
	int err;

	synth_init(&s, opts, fn, arg);
	snprintf(path, sizeof(path), "%s/modules", s.proc);
	if (tly_read_file_all(path, &mods, &len))
		return 0;
	dir[0] = '\0';
	if (!uname(&u)) {
		snprintf(dir, sizeof(dir), "/lib/modules/%s", u.release);
		snprintf(path, sizeof(path), "%s/modules.dep", dir);
		if (tly_read_file_all(path, &dep, &len))
			dep = NULL;
	}
	err = 0;
	for (line = mods; !err && line && *line; line = next) {
		char name[128], file[PATH_MAX + 2];
		uint64_t size, addr;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%127s %" SCNu64 " %*s %*s %*s %" SCNx64, name, &size, &addr) != 3 ||
		    !addr)
			continue;
		if (!dep || !module_path(dep, dir, name, file, sizeof(file)))
			snprintf(file, sizeof(file), "[%s]", name);
		snprintf(path, sizeof(path), "/sys/module/%s/notes/.note.gnu.build-id", name);
		if (!s.opts->build_ids || tally_build_id__from_notes(&id, path))
			id.size = 0;
		err = emit_kmap(&s, addr, size, 0, file, &id);
	}
	free(mods);
	free(dep);
	return err;
}

/* The cgroup id of directory PATH: its file handle, 8 bytes on cgroupfs (0: none). */
static uint64_t cgroup_id(const char *path)
{
	union { struct file_handle fh; char room[sizeof(struct file_handle) + 8]; } h;
	uint64_t id;
	int mount_id;

	h.fh.handle_bytes = sizeof(id);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) || h.fh.handle_bytes != 8)
		return 0;
	memcpy(&id, h.fh.f_handle, sizeof(id));
	return id;
}

/* CGROUP for directory PATH (REL: its path under the mount, "" for the root), then for
 * the directories in it. */
static int cgroup_tree(struct synth *s, char *path, size_t len, size_t root_len)
{
	const char *rel = path + root_len;
	uint64_t id = cgroup_id(path);
	struct dirent *de;
	DIR *d;
	int err;

	if (!id)
		return 0;	/* gone meanwhile */
	s->buf[1] = id;
	err = emit(s, PERF_RECORD_CGROUP, 0, 16, *rel ? rel : "/");
	d = err ? NULL : opendir(path);
	while (d && !err && (de = readdir(d))) {
		size_t n = strlen(path);

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n + 1 + strlen(de->d_name) >= len)
			continue;
		snprintf(path + n, len - n, "/%s", de->d_name);
		err = cgroup_tree(s, path, len, root_len);
		path[n] = '\0';
	}
	if (d)
		closedir(d);
	return err;
}

int tally_synth__cgroups(const char *mount, const struct tally_synth_opts *opts,
			 tally_synth_fn fn, void *arg)
{
	char path[PATH_MAX];
	struct synth s;
	size_t n;

	synth_init(&s, opts, fn, arg);
	n = (size_t)snprintf(path, sizeof(path), "%s", mount);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	if (n >= sizeof(path) - 1 || access(path, R_OK))
		return -ENOENT;
	return cgroup_tree(&s, path, sizeof(path), n);
}
