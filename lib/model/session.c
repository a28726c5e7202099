/*
 * The session: threads (hash by tid), processes with their maps (sorted arrays,
 * binary search), the kernel's maps, and dsos (hash by name) whose symbol tables are
 * loaded lazily, once, on the first lookup that lands in them.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tally/buildid-cache.h>
#include <tally/data.h>
#include <tally/format.h>
#include <tally/session.h>
#include <tally/srcline.h>
#include <tally/unwind.h>
#include "internal/session.h"
#include "internal/kcache.h"
#include "internal/symbols.h"

struct tally_dso {
	char *name;
	const char *short_name;
	char *jit_name;			/* "[JIT] tid N": perf's short name for /tmp/perf-N.map */
	struct tally_dso *next;		/* hash chain */
	struct tally_dso *all_next;
	char *long_name;		/* a module's path (name is "[mod]"), else NULL */
	char *problem;			/* why its symbols are missing (malloc'd), or NULL */
	struct tally_build_id bid;
	bool kernel;			/* [kernel.kallsyms] or a module: absolute addresses */
	bool absolute;			/* symbols use absolute addresses (kernel, JIT maps) */
	bool no_symbols;		/* //anon, [heap], [stack], … */
	bool loaded;
	bool hit;
	uint32_t index;			/* creation order */
	struct tly_symtab syms;
};

struct tally_map {
	uint64_t start, end, pgoff;
	uint64_t rec_end;		/* the end its record gave (the kernel's map reaches
					 * further when kernel symbols cover the rest) */
	struct tally_dso *dso;
	struct tally_map *all_next;	/* every map ever made, freed with the session */
	struct tally_map_desc desc;	/* as its record gave it (report --mmaps); the
					 * range and offset follow later cuts */
	char anon_name[32];		/* a data map of anonymous memory: its record's name
					 * (perf names only executable ones after the JIT map) */
	uint32_t refs;			/* the processes' maps holding it: a new process
					 * shares its parent's until a mapping cuts one */
};

struct maps {
	struct tally_map **v;
	size_t nr, cap;
	struct tally_map *last;	/* last map found (cleared when the maps change) */
};

struct proc {
	pid_t pid;
	struct proc *next;
	struct maps maps;
};

struct tally_thread {
	pid_t pid, tid;
	pid_t ppid;		/* the parent thread's tid (its FORK), else -1 */
	struct tally_thread *next;
	struct tally_thread *all_next;
	char *comm;
	struct proc *proc;
	bool exited;
	bool comm_set;		/* named by a COMM (or its parent's), not ":tid" (perf's) */
};

#define NBUCKETS 4096

struct tally_session {
	struct tally_session_opts opts;
	char *kallsyms, *symfs;
	struct tally_buildid_cache *cache;
	struct tally_thread *threads[NBUCKETS], *all_threads;
	struct proc *procs[NBUCKETS];
	struct tally_dso *dsos[NBUCKETS], *all_dsos, **dsos_tail;	/* creation order */
	uint32_t nr_dsos;
	struct tally_map *all_maps;
	struct maps kmaps;
	struct tally_dso *kernel_dso;
	struct tally_build_id kernel_bid;	/* the recording kernel's, from the BUILD_ID list */
	bool kallsyms_chosen;		/* s->kallsyms decided (NULL: no kernel symbols) */
	bool kallsyms_loaded;
	bool kallsyms_thread;		/* loading in the background since chosen */
	struct tly_kload *kload;	/* the load under way (NULL: none, or done) */
	bool kallsyms_needed;		/* a kernel address wanted a symbol */
	int kallsyms_err;		/* what loading it gave */
	char kallsyms_problem[4608];	/* why kernel symbols are missing ("": they are not) */
	char kallsyms_note[8448];	/* a damaged cache copy passed over ("": none) */
	pthread_t kallsyms_tid;
	struct tly_symtab ksyms;	/* kallsyms, shared by the kernel and modules */
	/* the kallsyms cache: read when it matches (kcache), else written after loading
	 * (kkey, kcache_path; whole: it covers every address) */
	struct tly_kcache *kcache;
	struct tly_kcache_key *kkey;
	char *kcache_path;
	bool kcache_whole;
	struct tly_resolve_cache rcache;	/* resolved addresses of the recent past */
	const void *notes_owner;	/* who uses the cache's notes (NULL: nobody) */
	struct tally_thread *last_thread;	/* tally_session__thread's last answer */
	struct tally_unwinder *unwinder;	/* made on the first dwarf sample */
	pid_t unwind_pid, unwind_tid;		/* whose addresses it looks up */
	enum tally_inline_mode inline_mode;	/* frames for inlined functions (frames.c) */
	struct tally_dso_lines *inline_lines;	/* their lookups, made on first use */
};

static size_t hash_u(uint64_t v)
{
	return (size_t)((v * 0x9e3779b97f4a7c15ULL) >> 40) & (NBUCKETS - 1);
}

static size_t hash_s(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ULL;
	return (size_t)(h >> 20) & (NBUCKETS - 1);
}

/* A worker of s->kload (which owns s->ksyms until ended). */
static void *kallsyms_thread_fn(void *arg)
{
	tly_kload__work(arg);
	return NULL;
}

/* The load of s->kallsyms starts: on a thread of its own (THREAD), else the first
 * kernel address does it all. */
static void kallsyms_start(struct tally_session *s, bool thread)
{
	s->kallsyms_err = tly_kload__new(&s->kload, &s->ksyms, s->kallsyms, 0);
	if (thread && s->kload &&
	    pthread_create(&s->kallsyms_tid, NULL, kallsyms_thread_fn, s->kload) == 0)
		s->kallsyms_thread = true;
}

/*
 * The kallsyms cache of s->kallsyms (internal/kcache.h): /proc/kallsyms's is kept in
 * the build-id cache's entry of the running kernel, keyed by this boot; a build-id
 * cache copy's beside it, keyed by the copy's identity. A file the user named
 * (--kallsyms) is read as it is. True when a cache matches (s->kcache); else the key
 * stays for writing one once the text is loaded.
 */
static bool kcache_open(struct tally_session *s)
{
	char path[PATH_MAX], hex[TALLY_BUILD_ID_HEX_SIZE], boot[64];
	struct tally_build_id run;
	bool proc = !strcmp(s->kallsyms, "/proc/kallsyms");
	const char *dir = tally_buildid_cache__dir(s->cache);
	int n;

	if (s->opts.kallsyms || !dir || !(s->kkey = malloc(sizeof(*s->kkey))))
		return false;
	if (proc) {
		if (tally_build_id__running_kernel(&run) || tly_kcache__boot_id(boot, sizeof(boot)) ||
		    tly_kcache__key_proc(s->kkey, s->kallsyms, tally_build_id__hex(&run, hex), boot))
			goto none;
		n = snprintf(path, sizeof(path), "%s/[kernel.kallsyms]/%s/" TLY_KCACHE_PROC, dir,
			     hex);
	} else {
		if (tly_kcache__key_file(s->kkey, s->kallsyms, NULL))
			goto none;
		n = snprintf(path, sizeof(path), "%s" TLY_KCACHE_SUFFIX, s->kallsyms);
	}
	if (n < 0 || (size_t)n >= sizeof(path) || !(s->kcache_path = strdup(path)))
		goto none;
	s->kcache_whole = !proc;
	return tly_kcache__open(&s->kcache, path, s->kkey) == 0;
none:
	free(s->kkey);
	s->kkey = NULL;
	return false;
}

/*
 * Where kernel symbols come from, decided as perf does. The file's BUILD_ID list names
 * the kernel it was recorded on: perf's build-id cache may hold that kernel's kallsyms
 * (perf record copies it there; being a plain file it also reads much faster than
 * /proc), and /proc/kallsyms is right only when this machine runs that same kernel.
 * Without a build-id there is nothing to check and /proc/kallsyms it is. Nearly every
 * profile has kernel samples and loading takes a while: it starts on a thread of its own
 * as soon as the source is known, while the records are read.
 */
static void kallsyms_choose(struct tally_session *s)
{
	char path[4096], want[TALLY_BUILD_ID_HEX_SIZE], have[TALLY_BUILD_ID_HEX_SIZE];
	char why[4096 + 256];
	struct tally_build_id run;
	int err;

	if (s->kallsyms_chosen)
		return;
	s->kallsyms_chosen = true;
	if (s->opts.no_symbols)
		return;
	if (s->opts.kallsyms) {
		s->kallsyms = strdup(s->opts.kallsyms);
	} else if (!s->kernel_bid.size) {
		s->kallsyms = strdup("/proc/kallsyms");
	} else {
		tally_build_id__hex(&s->kernel_bid, want);
		err = tally_buildid_cache__find(s->cache, &s->kernel_bid, NULL,
						TALLY_BUILDID_KALLSYMS, path, sizeof(path), why,
						sizeof(why));
		if (!err) {
			s->kallsyms = strdup(path);
		} else if (tally_build_id__running_kernel(&run) ||
			   tally_build_id__equal(&run, &s->kernel_bid)) {
			/* this is that kernel: a damaged copy is passed over, and said so */
			if (err == -EBADF)
				snprintf(s->kallsyms_note, sizeof(s->kallsyms_note),
					 "the build-id cache's kallsyms copy is not used: %s; kernel "
					 "symbols come from /proc/kallsyms (this machine runs the "
					 "recording's kernel)", why);
			s->kallsyms = strdup("/proc/kallsyms");
		} else {
			tally_build_id__hex(&run, have);
			if (err == -EBADF)
				snprintf(s->kallsyms_problem, sizeof(s->kallsyms_problem),
					 "the file was recorded on kernel build-id %s, this machine runs "
					 "%s, and the build-id cache's copy of its kallsyms is not usable: "
					 "%s", want, have, why);
			else
				snprintf(s->kallsyms_problem, sizeof(s->kallsyms_problem),
					 "the file was recorded on kernel build-id %s, this machine runs "
					 "%s, and the build-id cache (%s) has no copy of its kallsyms: "
					 "kernel addresses are left unresolved (unpack the recording "
					 "machine's 'tally archive' or 'perf archive' there, or pass "
					 "--kallsyms FILE)", want, have, tally_buildid_cache__dir(s->cache));
			return;
		}
	}
	if (!s->kallsyms) {
		snprintf(s->kallsyms_problem, sizeof(s->kallsyms_problem), "out of memory");
		return;
	}
	if (kcache_open(s))
		return;	/* the text is read only for an address the cache does not cover */
	/* the load starts now, in the background; the first kernel address joins in */
	kallsyms_start(s, true);
}

int tally_session__new(struct tally_session **out, const struct tally_session_opts *opts)
{
	struct tally_session *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	if (opts)
		s->opts = *opts;
	s->symfs = s->opts.symfs ? strdup(s->opts.symfs) : NULL;
	if (tally_buildid_cache__new(&s->cache, s->opts.buildid_dir) || (s->opts.symfs && !s->symfs)) {
		tally_session__delete(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

const char *tally_session__kernel_symbols_note(const struct tally_session *s)
{
	return s->kallsyms_needed && s->kallsyms_note[0] ? s->kallsyms_note : NULL;
}

const char *tally_session__kernel_symbols_problem(const struct tally_session *s)
{
	return s->kallsyms_needed && s->kallsyms_problem[0] ? s->kallsyms_problem : NULL;
}

void tally_session__delete(struct tally_session *s)
{
	if (!s)
		return;
	/* a load nobody waited for (no kernel address came) is not finished */
	if (s->kload)
		tly_kload__cancel(s->kload);
	if (s->kallsyms_thread)
		pthread_join(s->kallsyms_tid, NULL);
	if (s->kload)
		tly_kload__end(s->kload, false);
	for (struct tally_thread *t = s->all_threads, *n; t; t = n) {
		n = t->all_next;
		free(t->comm);
		free(t);
	}
	for (size_t i = 0; i < NBUCKETS; i++) {
		for (struct proc *p = s->procs[i], *n; p; p = n) {
			n = p->next;
			free(p->maps.v);
			free(p);
		}
	}
	for (struct tally_map *m = s->all_maps, *n; m; m = n) {
		n = m->all_next;
		free(m);
	}
	for (struct tally_dso *d = s->all_dsos, *n; d; d = n) {
		n = d->all_next;
		tly_symtab__exit(&d->syms);
		free(d->name);
		free(d->long_name);
		free(d->problem);
		free(d->jit_name);
		free(d);
	}
	free(s->kmaps.v);
	tly_resolve_cache__exit(&s->rcache);
	tally_unwinder__delete(s->unwinder);
	tally_dso_lines__delete(s->inline_lines);
	tly_symtab__exit(&s->ksyms);
	tly_kcache__delete(s->kcache);
	free(s->kkey);
	free(s->kcache_path);
	free(s->kallsyms);
	free(s->symfs);
	tally_buildid_cache__delete(s->cache);
	free(s);
}

/* ---- dsos ------------------------------------------------------------------ */

static bool is_anon(const char *name)
{
	return !strcmp(name, "//anon") || !strncmp(name, "/dev/zero", 9) ||
	       !strncmp(name, "/anon_hugepage", 14);
}

static struct tally_dso *dso_findnew(struct tally_session *s, const char *name)
{
	size_t h = hash_s(name);
	struct tally_dso *d;

	for (d = s->dsos[h]; d; d = d->next)
		if (!strcmp(d->name, name))
			return d;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->name = strdup(name))) {
		free(d);
		return NULL;
	}
	const char *slash = strrchr(d->name, '/');
	int tid;

	d->short_name = d->name[0] == '[' || !slash ? d->name : slash + 1;
	/* perf calls a JIT map by the thread it belongs to */
	if (sscanf(d->name, "/tmp/perf-%d.map", &tid) == 1) {
		if (asprintf(&d->jit_name, "[JIT] tid %d", tid) < 0) {
			free(d->name);
			free(d);
			return NULL;
		}
		d->short_name = d->jit_name;
	}
	if (d->name[0] == '[' && strcmp(d->name, "[vdso]") && strcmp(d->name, "[vsyscall]"))
		d->no_symbols = strcmp(d->name, "[kernel.kallsyms]") != 0;
	if (!strncmp(d->name, "/tmp/perf-", 10))
		d->absolute = true;
	d->index = s->nr_dsos++;
	d->next = s->dsos[h];
	s->dsos[h] = d;
	if (!s->dsos_tail)
		s->dsos_tail = &s->all_dsos;
	*s->dsos_tail = d;
	s->dsos_tail = &d->all_next;
	return d;
}

static void set_problem(struct tally_dso *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_problem(struct tally_dso *d, const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		p = NULL;
	va_end(ap);
	free(d->problem);
	d->problem = p;
}

/* The file at PATH for dso D: usable (true), or gone / of another build (*have gets
 * its id then). A file without a build-id note is taken: there is nothing to compare. */
static bool file_matches(const char *path, const struct tally_dso *d, struct tally_build_id *have)
{
	memset(have, 0, sizeof(*have));
	if (access(path, R_OK))
		return false;
	if (!d->bid.size || tally_build_id__from_elf(have, path))
		return true;
	return tally_build_id__equal(have, &d->bid);
}

/* Names that never were files one could look up, or are no more: no warning. */
static bool unfindable(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(name, "/memfd:", 7) || (n > 10 && !strcmp(name + n - 10, " (deleted)"));
}

/* Why D has no symbols, for the user: what is on disk, what the cache has. */
static void explain_missing(struct tally_session *s, struct tally_dso *d,
			    const struct tally_build_id *have, int cache_err, const char *why)
{
	char want[TALLY_BUILD_ID_HEX_SIZE], now[TALLY_BUILD_ID_HEX_SIZE], disk[96];

	if (unfindable(d->name))
		return;
	if (!d->bid.size) {
		set_problem(d, "%s: no symbols: no such file, and the recording names no build-id "
			    "to look a copy up by", d->name);
		return;
	}
	tally_build_id__hex(&d->bid, want);
	if (have->size)
		snprintf(disk, sizeof(disk), "the file there now has build-id %s",
			 tally_build_id__hex(have, now));
	else
		snprintf(disk, sizeof(disk), "there is no such file");
	if (cache_err == -EBADF)
		set_problem(d, "%s: no symbols: the recording's build-id is %s, %s, and the "
			    "build-id cache's copy is not usable: %s", d->name, want, disk, why);
	else
		set_problem(d, "%s: no symbols: the recording's build-id is %s, %s, and the "
			    "build-id cache (%s) has no copy (bring one with 'tally archive' or "
			    "'perf archive' from the recording machine)", d->name, want, disk,
			    tally_buildid_cache__dir(s->cache));
}

/* The file to read a dso's symbols from: symfs, the path itself (if it is the build
 * the recording names), the build-id cache, or the path seen from the process's mount
 * namespace. When there is none, d->problem says why. *KEY (if not NULL): the build-id
 * that names the chosen file's entry in the build-id cache: the recording's, or, when
 * the recording names none, the file's own note (size 0: none). */
static bool find_binary(struct tally_session *s, struct tally_dso *d, pid_t pid,
			char *path, size_t len, char *debug, size_t dlen,
			struct tally_build_id *key)
{
	struct tally_build_id own = d->bid, have, other;
	char idhex[TALLY_BUILD_ID_HEX_SIZE], why[8192] = "";
	int cache_err = -ENOENT;

	debug[0] = 0;
	if (key)
		*key = d->bid;
	if (!own.size && !s->symfs)
		tally_build_id__from_elf(&own, d->name);	/* its own note finds its debuginfo */
	if (own.size) {
		tally_build_id__hex(&own, idhex);
		snprintf(debug, dlen, "/usr/lib/debug/.build-id/%.2s/%s.debug", idhex, idhex + 2);
		if (access(debug, R_OK))
			debug[0] = 0;
	}
	if (s->symfs) {
		snprintf(path, len, "%s%s", s->symfs, d->name);
		if (file_matches(path, d, &have))
			return true;
		set_problem(d, "%s: no symbols: %s is %s", d->name, path,
			    have.size ? "another build" : "not there");
		return false;
	}
	snprintf(path, len, "%s", d->name);
	if (file_matches(path, d, &have)) {
		if (key)
			*key = own;
		return true;
	}
	if (d->bid.size) {
		cache_err = tally_buildid_cache__find(s->cache, &d->bid, d->name, TALLY_BUILDID_ELF,
						      path, len, why, sizeof(why));
		if (!cache_err) {
			if (why[0])
				set_problem(d, "build-id cache: %s", why);
			if (!debug[0] &&
			    tally_buildid_cache__find(s->cache, &d->bid, d->name, TALLY_BUILDID_DEBUG,
						      debug, dlen, NULL, 0))
				debug[0] = 0;
			return true;
		}
	}
	if (pid > 0) {
		snprintf(path, len, "/proc/%d/root%s", (int)pid, d->name);
		if (file_matches(path, d, &other))
			return true;
	}
	explain_missing(s, d, &have, cache_err, why);
	return false;
}

/* The vdso of the kernel we run on when it is the recording's (or the file does not
 * say); else the build-id cache's copy of the recording's. */
static void load_vdso(struct tally_session *s, struct tally_dso *d)
{
	char path[4096], why[8192] = "", want[TALLY_BUILD_ID_HEX_SIZE];
	struct tally_build_id run;
	const void *image;
	size_t size;
	int err;

	if (!tally_vdso_image(&image, &size) &&
	    (!d->bid.size || (!tally_build_id__from_elf_mem(&run, image, size) &&
			      tally_build_id__equal(&run, &d->bid)))) {
		tly_symtab__load_elf_mem(&d->syms, image, size);
		return;
	}
	if (!d->bid.size)
		return;
	err = tally_buildid_cache__find(s->cache, &d->bid, "[vdso]", TALLY_BUILDID_VDSO, path,
					sizeof(path), why, sizeof(why));
	if (!err) {
		tly_symtab__load_elf(&d->syms, path, NULL);
		return;
	}
	tally_build_id__hex(&d->bid, want);
	if (err == -EBADF)
		set_problem(d, "[vdso]: no symbols: the recording's vdso (build-id %s) is not this "
			    "kernel's, and the build-id cache's copy is not usable: %s", want, why);
	else
		set_problem(d, "[vdso]: no symbols: the recording's vdso (build-id %s) is not this "
			    "kernel's, and the build-id cache (%s) has no copy", want,
			    tally_buildid_cache__dir(s->cache));
}

/*
 * The symbols of ELF file PATH (DEBUG: its separate debug file, or NULL) for dso D.
 * Reading a symbol table means demangling, sorting and choosing among aliases: the
 * finished table is kept in the build-id cache's entry of D (DIR/REALPATH/BUILD-ID/
 * tally-symtab, beside perf's copy of the file), keyed by the identity of both files,
 * and read back from there while neither changes.
 */
static void load_elf_cached(struct tally_session *s, struct tally_dso *d,
			    const struct tally_build_id *bid, const char *path, const char *debug)
{
	char cpath[PATH_MAX], real[PATH_MAX], hex[TALLY_BUILD_ID_HEX_SIZE];
	const char *dir = tally_buildid_cache__dir(s->cache);
	struct tly_kcache_key *key = NULL;
	int n;

	if (s->opts.no_demangle || !bid->size || !dir || !realpath(path, real) ||
	    (n = snprintf(cpath, sizeof(cpath), "%s%s/%s/" TLY_KCACHE_ELF, dir, real,
			  tally_build_id__hex(bid, hex))) < 0 || (size_t)n >= sizeof(cpath) ||
	    !(key = malloc(sizeof(*key))) || tly_kcache__key_file(key, path, debug)) {
		free(key);
		tly_symtab__load_elf(&d->syms, path, debug);
		return;
	}
	if (tly_kcache__load(&d->syms, cpath, key)) {
		tly_symtab__load_elf(&d->syms, path, debug);
		if (d->syms.nr)	/* best effort: a read-only cache is no error */
			tly_kcache__write(cpath, key, &d->syms, true);
	}
	free(key);
}

/*
 * perf reads a dso's symbols from the first file with a .symtab among the build-id
 * cache's copy of its build, the cache's debug copy, the distribution's debug file and
 * the file itself. So when neither DEBUG nor PATH has one (a stripped file), an
 * unstripped copy of the same build in the cache gives the symbols: DEBUG becomes it.
 */
static void symtab_source(struct tally_session *s, struct tally_dso *d, const char *path,
			  char *debug, size_t dlen)
{
	static const enum tally_buildid_kind kinds[] = { TALLY_BUILDID_ELF, TALLY_BUILDID_DEBUG };
	char c[4096];

	if (!d->bid.size || s->symfs || !tally_buildid_cache__has(s->cache, &d->bid) ||
	    tly_elf__has_symtab(debug[0] ? debug : NULL) || tly_elf__has_symtab(path))
		return;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!tally_buildid_cache__find(s->cache, &d->bid, d->name, kinds[i], c, sizeof(c),
					       NULL, 0) &&
		    strcmp(c, path) && tly_elf__has_symtab(c)) {
			snprintf(debug, dlen, "%s", c);
			return;
		}
}

static void dso_load(struct tally_session *s, struct tally_dso *d, pid_t pid)
{
	char path[4096], debug[4096];
	struct tally_build_id key = { .size = 0 };

	d->loaded = true;
	if (s->opts.no_symbols || d->no_symbols)
		return;
	d->syms.raw_names = s->opts.no_demangle;
	if (d->kernel)
		return;	/* kernel and modules use the session's kallsyms table */
	if (!strcmp(d->name, "[vdso]")) {
		load_vdso(s, d);
		return;
	}
	if (d->absolute) {
		tly_symtab__load_perfmap(&d->syms, d->name);
		return;
	}
	if (find_binary(s, d, pid, path, sizeof(path), debug, sizeof(debug), &key)) {
		symtab_source(s, d, path, debug, sizeof(debug));
		load_elf_cached(s, d, &key, path, debug[0] ? debug : NULL);
	}
}

/* ---- maps ------------------------------------------------------------------ */

/* ms->v[i], made ms's own first when other processes' maps hold it too (a cut changes
 * it). NULL: no memory. */
static struct tally_map *map_own(struct tally_session *s, struct maps *ms, size_t i)
{
	struct tally_map *o = ms->v[i], *c;

	if (o->refs <= 1)
		return o;
	c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	*c = *o;
	c->refs = 1;
	c->all_next = s->all_maps;
	s->all_maps = c;
	o->refs--;
	return ms->v[i] = c;
}

static int maps_insert(struct maps *ms, struct tally_map *m, struct tally_session *s)
{
	size_t lo = 0, hi = ms->nr;

	ms->last = NULL;

	/* find the first map ending after m starts */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ms->v[mid]->end <= m->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* cut the overlapped parts out of older maps (a new mapping replaces them) */
	size_t i = lo;
	while (i < ms->nr && ms->v[i]->start < m->end) {
		struct tally_map *o = ms->v[i];
		bool left = o->start < m->start, right = o->end > m->end;
		if ((left || right) && !(o = map_own(s, ms, i)))
			return -ENOMEM;
		if (left && right) {
			struct tally_map *r = malloc(sizeof(*r));
			if (!r)
				return -ENOMEM;
			*r = *o;
			r->refs = 1;
			r->pgoff = o->pgoff + (m->end - o->start);
			r->start = m->end;
			r->all_next = s->all_maps;
			s->all_maps = r;
			o->end = m->start;
			/* insert r after o */
			if (ms->nr + 2 > ms->cap) {
				size_t ncap = ms->cap ? ms->cap * 2 : 16;
				struct tally_map **nv = realloc(ms->v, ncap * sizeof(*nv));
				if (!nv)
					return -ENOMEM;
				ms->v = nv;
				ms->cap = ncap;
			}
			memmove(&ms->v[i + 2], &ms->v[i + 1], (ms->nr - i - 1) * sizeof(*ms->v));
			ms->v[i + 1] = r;
			ms->nr++;
			i++;
			break;
		} else if (left) {
			o->end = m->start;
			i++;
		} else if (right) {
			o->pgoff += m->end - o->start;
			o->start = m->end;
			break;
		} else {
			o->refs--;
			memmove(&ms->v[i], &ms->v[i + 1], (ms->nr - i - 1) * sizeof(*ms->v));
			ms->nr--;
		}
	}
	/* insertion point: after every map starting before m */
	lo = 0;
	hi = ms->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ms->v[mid]->start < m->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (ms->nr + 1 > ms->cap) {
		size_t ncap = ms->cap ? ms->cap * 2 : 16;
		struct tally_map **nv = realloc(ms->v, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		ms->v = nv;
		ms->cap = ncap;
	}
	memmove(&ms->v[lo + 1], &ms->v[lo], (ms->nr - lo) * sizeof(*ms->v));
	ms->v[lo] = m;
	ms->nr++;
	return 0;
}

static struct tally_map *maps_find(struct maps *ms, uint64_t ip)
{
	size_t lo = 0, hi = ms->nr;

	if (ms->last && ip >= ms->last->start && ip < ms->last->end)
		return ms->last;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ms->v[mid]->start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && ip < ms->v[lo - 1]->end)
		return ms->last = ms->v[lo - 1];
	return NULL;
}

static struct tally_map *map_new(struct tally_session *s, uint64_t start, uint64_t len,
				 uint64_t pgoff, struct tally_dso *dso)
{
	struct tally_map *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->start = start;
	m->end = start + len < start ? UINT64_MAX : start + len;
	m->rec_end = m->end;
	m->pgoff = pgoff;
	m->dso = dso;
	m->refs = 1;
	m->all_next = s->all_maps;
	s->all_maps = m;
	return m;
}

/* ---- threads --------------------------------------------------------------- */

static struct proc *proc_findnew(struct tally_session *s, pid_t pid)
{
	size_t h = hash_u((uint64_t)(uint32_t)pid);
	struct proc *p;
	for (p = s->procs[h]; p; p = p->next)
		if (p->pid == pid)
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = s->procs[h];
	s->procs[h] = p;
	return p;
}

static struct tally_thread *thread_find(struct tally_session *s, pid_t tid)
{
	for (struct tally_thread *t = s->threads[hash_u((uint64_t)(uint32_t)tid)]; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

static int set_comm(struct tally_thread *t, const char *comm, size_t len)
{
	char *c = strndup(comm, len);
	if (!c)
		return -ENOMEM;
	free(t->comm);
	t->comm = c;
	return 0;
}

/* A process that starts now: its pid may have served an older one, whose maps must
 * not leak into it. Lookups find the newest first (bucket head). */
static struct proc *proc_fresh(struct tally_session *s, pid_t pid)
{
	size_t h = hash_u((uint64_t)(uint32_t)pid);
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = s->procs[h];
	s->procs[h] = p;
	return p;
}

static struct tally_thread *thread_new_in(struct tally_session *s, pid_t pid, pid_t tid,
					  struct proc *proc)
{
	struct tally_thread *t = calloc(1, sizeof(*t));
	char buf[32];
	size_t h = hash_u((uint64_t)(uint32_t)tid);

	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	t->ppid = -1;
	t->proc = proc ? proc : proc_findnew(s, pid);
	t->comm_set = tid == 0;	/* perf names its idle thread */
	if (tid == 0)
		snprintf(buf, sizeof(buf), "swapper");
	else
		snprintf(buf, sizeof(buf), ":%d", (int)tid);
	if (!t->proc || set_comm(t, buf, strlen(buf))) {
		free(t);
		return NULL;
	}
	t->next = s->threads[h];
	s->threads[h] = t;
	t->all_next = s->all_threads;
	s->all_threads = t;
	return t;
}

static struct tally_thread *thread_new(struct tally_session *s, pid_t pid, pid_t tid)
{
	return thread_new_in(s, pid, tid, NULL);
}

struct tally_thread *tally_session__thread(struct tally_session *s, pid_t pid, pid_t tid)
{
	struct tally_thread *t = s->last_thread;

	/* samples come in runs of one thread: the last answer, until a record changes them */
	if (t && t->tid == tid && (t->pid == pid || pid == -1))
		return t;
	t = thread_find(s, tid);
	if (t && pid != -1 && t->pid != pid && t->pid == -1) {
		t->pid = pid;	/* learned the process of a thread first seen without it */
		t->proc = proc_findnew(s, pid);
	}
	if (!t)
		t = thread_new(s, pid == -1 ? tid : pid, tid);
	s->last_thread = t;
	return t;
}

/* ---- records --------------------------------------------------------------- */

/* perf's name of a kernel module: "[name]" for /lib/modules/.../name.ko(.xz), dashes
 * made underscores. */
static void module_name(const char *path, char *mod, size_t len)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (b[0] == '[')
		snprintf(mod, len, "%s", b);
	else
		snprintf(mod, len, "[%.*s]", (int)strcspn(b, "."), b);
	for (char *c = mod; *c; c++)
		if (*c == '-')
			*c = '_';
}

/* What an MMAP or MMAP2 record says beyond the range: its thread, protection, flags,
 * inode and build-id (MMAP: perf's defaults, executable and private). */
struct mmap_extra {
	uint32_t tid, prot, flags;
	uint64_t ino;
	const uint8_t *bid;
	size_t bid_len;
};

static int process_mmap(struct tally_session *s, uint32_t pid, uint64_t start, uint64_t len,
			uint64_t pgoff, const char *name, uint16_t misc,
			const struct mmap_extra *x)
{
	uint8_t cpumode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
	bool kernel = tally_cpumode_is_kernel(cpumode);
	struct tally_dso *dso;
	struct tally_map *m;
	char jit[64];

	if (kernel && (int32_t)pid == -1) {
		const char *dname = name;
		bool is_kernel = !strncmp(name, "[kernel.kallsyms]", 17) || !strncmp(name, "[guest.kernel", 13);
		uint64_t rec_end = 0;
		char mod[256];
		if (is_kernel) {
			dname = "[kernel.kallsyms]";
		} else {
			module_name(name, mod, sizeof(mod));
			dname = mod;
		}
		dso = dso_findnew(s, dname);
		if (!dso)
			return -ENOMEM;
		if (!is_kernel && name[0] == '/' && !dso->long_name && !(dso->long_name = strdup(name)))
			return -ENOMEM;
		dso->kernel = dso->absolute = true;
		dso->no_symbols = false;
		if (is_kernel) {
			/* The kernel's map reaches up to the first module (perf does the same):
			 * the MMAP covers _text.._etext, but .init.text and others follow. */
			s->kernel_dso = dso;
			uint64_t end = UINT64_MAX;

			rec_end = start + len < start ? UINT64_MAX : start + len;
			for (size_t i = 0; i < s->kmaps.nr; i++) {
				if (s->kmaps.v[i]->start > start) {
					end = s->kmaps.v[i]->start;
					break;
				}
			}
			len = end - start;
		} else {
			/* a module cuts the kernel map short where it starts */
			struct tally_map *k = s->kernel_dso ? maps_find(&s->kmaps, start) : NULL;
			if (k && k->dso == s->kernel_dso && k->start < start)
				k->end = start;
		}
		m = map_new(s, start, len, start, dso);
		if (!m)
			return -ENOMEM;
		if (is_kernel && rec_end < m->end)
			m->rec_end = rec_end;
		return maps_insert(&s->kmaps, m, s);
	}

	const char *rec_name = name;

	if (is_anon(name)) {
		snprintf(jit, sizeof(jit), "/tmp/perf-%u.map", pid);
		name = jit;
	}
	dso = dso_findnew(s, name);
	if (!dso)
		return -ENOMEM;
	if (x->bid_len && !dso->bid.size) {
		tally_build_id__set(&dso->bid, x->bid, x->bid_len);
	}
	/* the record's thread, as perf (a thread of the process may map) */
	struct tally_thread *t = tally_session__thread(s, (pid_t)pid, (pid_t)x->tid);
	if (!t)
		return -ENOMEM;
	m = map_new(s, start, len, dso->absolute ? start : pgoff, dso);
	if (!m)
		return -ENOMEM;
	m->desc = (struct tally_map_desc){
		.start = m->start, .end = m->end,
		/* perf's vdso map keeps no file offset */
		.pgoff = !strcmp(name, "[vdso]") ? 0 : pgoff,
		.ino = x->ino, .prot = x->prot, .flags = x->flags, .dso = dso,
	};
	if (name != rec_name && !(x->prot & PROT_EXEC))
		snprintf(m->anon_name, sizeof(m->anon_name), "%s", rec_name);
	return maps_insert(&t->proc->maps, m, s);
}

static size_t str_len(const char *p, const char *end)
{
	return p < end ? strnlen(p, (size_t)(end - p)) : 0;
}

static int add_build_ids(struct tally_session *s, const void *buf, size_t len);

static int process_comm(struct tally_session *s, const struct perf_event_header *hdr)
{
	const uint8_t *p = (const uint8_t *)(hdr + 1);
	const char *end = (const char *)hdr + hdr->size;
	const char *comm = (const char *)p + 8;
	struct tally_thread *t;
	uint32_t u[2];

	if (hdr->size < 16)
		return -EINVAL;
	memcpy(u, p, 8);
	t = tally_session__thread(s, (pid_t)u[0], (pid_t)u[1]);
	if (!t)
		return -ENOMEM;
	t->comm_set = true;
	return set_comm(t, comm, str_len(comm, end));
}

/* A new process starts with its parent's maps: the same ones, until a mapping of either
 * cuts one (map_own). */
static int copy_maps(struct tally_session *s, const struct maps *src, struct maps *dst)
{
	for (size_t i = 0; i < src->nr; i++) {
		src->v[i]->refs++;
		if (maps_insert(dst, src->v[i], s))
			return -ENOMEM;
	}
	return 0;
}

static int process_fork_exit(struct tally_session *s, const struct perf_event_header *hdr)
{
	uint32_t u[4];

	if (hdr->size < 8 + 16)
		return -EINVAL;
	memcpy(u, hdr + 1, 16);	/* pid, ppid, tid, ptid */
	if (hdr->type == PERF_RECORD_EXIT) {
		struct tally_thread *t = thread_find(s, (pid_t)u[2]);
		if (t)
			t->exited = true;
		return 0;
	}
	/* Like perf, a FORK always makes a new thread (a tid seen before belonged to
	 * a thread that is gone); a new process gets new maps, copied from its
	 * parent's, a new thread shares its process's. */
	struct tally_thread *parent = tally_session__thread(s, (pid_t)u[1], (pid_t)u[3]);
	if (!parent)
		return -ENOMEM;
	bool new_process = u[0] != u[1];
	struct proc *proc = new_process ? proc_fresh(s, (pid_t)u[0]) : parent->proc;
	if (!proc)
		return -ENOMEM;
	struct tally_thread *child = thread_new_in(s, (pid_t)u[0], (pid_t)u[2], proc);
	if (!child)
		return -ENOMEM;
	child->ppid = parent->tid;
	/* perf copies the parent's name only when it has one (not its ":tid") */
	if (parent->comm_set) {
		if (set_comm(child, parent->comm, strlen(parent->comm)))
			return -ENOMEM;
		child->comm_set = true;
	}
	/* perf marks the FORKs it synthesizes for running tasks with MISC_FORK_EXEC:
	 * their own MMAPs follow, the parent's maps are not theirs */
	bool clone = !(hdr->misc & PERF_RECORD_MISC_FORK_EXEC);
	if (new_process && clone && child->proc != parent->proc)
		return copy_maps(s, &parent->proc->maps, &child->proc->maps);
	return 0;
}

static int process_mmap_record(struct tally_session *s, const struct perf_event_header *hdr)
{
	const uint8_t *p = (const uint8_t *)(hdr + 1);
	const char *end = (const char *)hdr + hdr->size;
	struct { uint32_t pid, tid; uint64_t start, len, pgoff; } mm;
	if (hdr->size < 8 + sizeof(mm) + 1)
		return -EINVAL;
	memcpy(&mm, p, sizeof(mm));
	const char *name = (const char *)p + sizeof(mm);
	char buf[4096];
	snprintf(buf, sizeof(buf), "%.*s", (int)str_len(name, end), name);
	struct mmap_extra x = {
		.tid = mm.tid,
		.prot = hdr->misc & PERF_RECORD_MISC_MMAP_DATA ? 0 : PROT_EXEC,
	};
	return process_mmap(s, mm.pid, mm.start, mm.len, mm.pgoff, buf, hdr->misc, &x);
}

static int process_mmap2_record(struct tally_session *s, const struct perf_event_header *hdr)
{
	const uint8_t *p = (const uint8_t *)(hdr + 1);
	const char *end = (const char *)hdr + hdr->size;
	struct { uint32_t pid, tid; uint64_t start, len, pgoff;
		 uint8_t idpart[24]; uint32_t prot, flags; } mm;
	if (hdr->size < 8 + sizeof(mm) + 1)
		return -EINVAL;
	memcpy(&mm, p, sizeof(mm));
	const char *name = (const char *)p + sizeof(mm);
	char buf[4096];
	size_t bl = 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)str_len(name, end), name);
	if (hdr->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		bl = mm.idpart[0] <= 20 ? mm.idpart[0] : 20;
	}
	struct mmap_extra x = { .tid = mm.tid, .prot = mm.prot, .flags = mm.flags,
				.bid = mm.idpart + 4, .bid_len = bl };
	if (!(hdr->misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
		memcpy(&x.ino, mm.idpart + 8, sizeof(x.ino));	/* after maj, min */
	return process_mmap(s, mm.pid, mm.start, mm.len, mm.pgoff, buf, hdr->misc, &x);
}

/* BPF programs and trampolines: a kernel map whose dso is named after the symbol,
 * holding that one symbol (what perf shows) */
static int process_ksymbol(struct tally_session *s, const struct perf_event_header *hdr)
{
	const uint8_t *p = (const uint8_t *)(hdr + 1);
	const char *end = (const char *)hdr + hdr->size;
	struct { uint64_t addr; uint32_t len; uint16_t type, flags; } k;
	if (hdr->size < 8 + sizeof(k) + 1)
		return -EINVAL;
	memcpy(&k, p, sizeof(k));
	if (k.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER)
		return 0;
	const char *name = (const char *)p + sizeof(k);
	size_t nlen = str_len(name, end);
	char buf[512];
	snprintf(buf, sizeof(buf), "%.*s", (int)nlen, name);
	struct tally_dso *dso = dso_findnew(s, buf);
	if (!dso)
		return -ENOMEM;
	dso->kernel = dso->absolute = dso->loaded = true;
	dso->no_symbols = false;
	if (!dso->syms.nr) {
		if (tly_symtab__add(&dso->syms, k.addr, k.len, buf, strlen(buf), 2))
			return -ENOMEM;
		tly_symtab__finish(&dso->syms);
	}
	struct tally_map *m = map_new(s, k.addr, k.len, k.addr, dso);
	if (!m)
		return -ENOMEM;
	return maps_insert(&s->kmaps, m, s);
}

int tally_session__process(struct tally_session *s, const struct perf_event_header *hdr)
{
	if (!s->kallsyms_chosen)
		kallsyms_choose(s);	/* no BUILD_ID list came first: decide now */
	if (hdr->type != PERF_RECORD_SAMPLE)
		tly_resolve_cache__note(&s->rcache, hdr);
	s->last_thread = NULL;

	switch (hdr->type) {
	case TALLY_RECORD_HEADER_BUILD_ID:	/* perf inject -b, pipe mode */
		return add_build_ids(s, hdr, hdr->size);
	case PERF_RECORD_COMM:
		return process_comm(s, hdr);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return process_fork_exit(s, hdr);
	case PERF_RECORD_MMAP:
		return process_mmap_record(s, hdr);
	case PERF_RECORD_MMAP2:
		return process_mmap2_record(s, hdr);
	case PERF_RECORD_KSYMBOL:
		return process_ksymbol(s, hdr);
	default:
		return 0;
	}
}

/* BUILD_ID entries (the feature's list, or one HEADER_BUILD_ID record): each names a
 * dso, made now if new (perf makes them as it reads the list, so they come first in
 * the dso order), and gives it its id unless it has one. */
static int add_build_ids(struct tally_session *s, const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;

	while ((size_t)(end - p) >= 8 + 4 + 24) {
		struct perf_event_header h;
		struct tally_build_id id;
		struct tally_dso *d;
		char name[4096], mod[256];
		const char *dname = name;
		uint8_t cpumode;

		memcpy(&h, p, sizeof(h));
		if (h.size < 8 + 4 + 24 || h.size > (size_t)(end - p))
			return -EINVAL;
		snprintf(name, sizeof(name), "%.*s", (int)(h.size - (8 + 4 + 24)),
			 (const char *)p + 8 + 4 + 24);
		cpumode = h.misc & PERF_RECORD_MISC_CPUMODE_MASK;
		tally_build_id__set(&id, p + 12, (h.misc & TALLY_RECORD_MISC_BUILD_ID_SIZE) ?
				    (p[12 + 20] <= 20 ? p[12 + 20] : 20) : 20);
		p += h.size;
		if (!name[0])
			continue;
		if ((cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL) &&
		    name[0] == '/') {
			module_name(name, mod, sizeof(mod));
			dname = mod;
		}
		d = dso_findnew(s, dname);
		if (!d)
			return -ENOMEM;
		if (dname != name && !d->long_name && !(d->long_name = strdup(name)))
			return -ENOMEM;
		if (!d->bid.size)
			d->bid = id;
		if (!strcmp(name, "[kernel.kallsyms]") && id.size && !s->kernel_bid.size)
			s->kernel_bid = id;
	}
	return 0;
}

int tally_session__add_build_ids(struct tally_session *s, const void *buf, size_t len)
{
	int err = add_build_ids(s, buf, len);

	kallsyms_choose(s);
	return err;
}

/* ---- resolving ------------------------------------------------------------- */

static void kallsyms_load(struct tally_session *s)
{
	s->kallsyms_needed = true;
	if (s->kallsyms_loaded)
		return;
	kallsyms_choose(s);
	s->kallsyms_loaded = true;
	if (s->kcache && s->kallsyms)
		kallsyms_start(s, false);	/* an address the cache does not cover */
	if (s->kload) {
		tly_kload__work(s->kload);	/* help with what is left */
		if (s->kallsyms_thread)
			pthread_join(s->kallsyms_tid, NULL);
		s->kallsyms_thread = false;
		s->kallsyms_err = tly_kload__end(s->kload, true);
		s->kload = NULL;
		/* for the next report: best effort (a read-only cache is no error) */
		if (!s->kallsyms_err && s->kkey && !s->kcache)
			tly_kcache__write(s->kcache_path, s->kkey, &s->ksyms, s->kcache_whole);
	}
	if (s->kallsyms && s->kallsyms_err == -EPERM)
		snprintf(s->kallsyms_problem, sizeof(s->kallsyms_problem),
			 "%s hides kernel addresses (kptr_restrict): run as root, or set "
			 "/proc/sys/kernel/kptr_restrict to 0", s->kallsyms);
	else if (s->kallsyms && s->kallsyms_err == -ENODATA)
		snprintf(s->kallsyms_problem, sizeof(s->kallsyms_problem),
			 "%s lists no kernel symbols", s->kallsyms);
	else if (s->kallsyms && s->kallsyms_err)
		snprintf(s->kallsyms_problem, sizeof(s->kallsyms_problem), "%s: %s", s->kallsyms,
			 strerror(-s->kallsyms_err));
}

/* Kernel symbol at ADDR: from the cache when it covers ADDR, else from the text. */
static const struct tally_symbol *ksym_find(struct tally_session *s, uint64_t addr)
{
	if (!s->kallsyms_loaded && tly_kcache__covers(s->kcache, addr)) {
		s->kallsyms_needed = true;
		return tly_kcache__find(s->kcache, addr);
	}
	kallsyms_load(s);
	return tly_symtab__find(&s->ksyms, addr);
}

/* Are there kernel symbols at all? */
static bool ksyms_exist(struct tally_session *s)
{
	if (!s->kallsyms_loaded && tly_kcache__nr(s->kcache)) {
		s->kallsyms_needed = true;
		return true;
	}
	kallsyms_load(s);
	return s->ksyms.nr != 0;
}

/* The lookup itself: thread, map, dso, symbol. */
/* resolve_addr up to the symbol: the thread, map, dso and dso_addr (the dso's symbols
 * loaded as resolving loads them), loc->sym left NULL */
static int locate_addr(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
		       uint64_t ip, struct tally_addr_loc *loc)
{
	struct tally_map *m = NULL;

	memset(loc, 0, sizeof(*loc));
	loc->addr = ip;
	loc->dso_addr = ip;
	loc->cpumode = cpumode;
	loc->thread = tally_session__thread(s, pid, tid);
	if (!loc->thread)
		return -ENOMEM;

	if (tally_cpumode_is_kernel(cpumode)) {
		m = maps_find(&s->kmaps, ip);
		if (!m && !s->kmaps.nr && !s->opts.no_symbols) {
			/* no kernel MMAP in the file: kallsyms still names kernel addresses */
			if (!s->kernel_dso) {
				s->kernel_dso = dso_findnew(s, "[kernel.kallsyms]");
				if (!s->kernel_dso)
					return -ENOMEM;
				s->kernel_dso->kernel = s->kernel_dso->absolute = true;
				s->kernel_dso->no_symbols = false;
			}
			loc->dso = s->kernel_dso;
		}
	} else if (cpumode == PERF_RECORD_MISC_USER || cpumode == PERF_RECORD_MISC_GUEST_USER) {
		m = maps_find(&loc->thread->proc->maps, ip);
	}
	if (m && ip >= m->rec_end && m->dso == s->kernel_dso && !s->opts.no_symbols) {
		/* past what the kernel's MMAP covered: the kernel's only if its symbols are
		 * there to cover it (perf widens the map with them, not without) */
		if (!ksyms_exist(s))
			m = NULL;
	}
	if (m) {
		loc->map = m;
		loc->dso = m->dso;
		loc->dso_addr = ip - m->start + m->pgoff;
	}
	if (!loc->dso)
		return 0;
	if (loc->dso->kernel)
		loc->dso_addr = ip;
	else if (!loc->dso->loaded)
		dso_load(s, loc->dso, loc->thread->pid);
	return 0;
}

static int resolve_addr(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
			uint64_t ip, struct tally_addr_loc *loc)
{
	int err = locate_addr(s, pid, tid, cpumode, ip, loc);

	if (err || !loc->dso)
		return err;
	if (!loc->dso->kernel)
		loc->sym = tly_symtab__find(&loc->dso->syms, loc->dso_addr);
	else if (loc->dso->syms.nr)	/* KSYMBOL */
		loc->sym = tly_symtab__find(&loc->dso->syms, ip);
	else
		loc->sym = ksym_find(s, ip);
	return 0;
}

int tally_session__locate(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
			  uint64_t ip, struct tally_addr_loc *loc)
{
	return locate_addr(s, pid, tid, cpumode, ip, loc);
}

/* ---- what annotate needs of a dso ------------------------------------------ */

int tally_session__dso_files(struct tally_session *s, struct tally_dso *d, char *path,
			     size_t len, char *debug, size_t dlen)
{
	char dbg[4096];

	path[0] = 0;
	if (dlen)
		debug[0] = 0;
	if (!strcmp(d->name, "[vdso]") && d->bid.size) {
		/* perf record and tally record keep a copy of the vdso in the build-id cache */
		if (!tally_buildid_cache__find(s->cache, &d->bid, "[vdso]", TALLY_BUILDID_VDSO,
					       path, len, NULL, 0))
			return 0;
		path[0] = 0;
		return -ENOENT;
	}
	if (d->kernel || d->absolute || d->no_symbols || !strcmp(d->name, "[vdso]"))
		return -ENOENT;
	if (!find_binary(s, d, 0, path, len, dbg, sizeof(dbg), NULL)) {
		path[0] = 0;
		return -ENOENT;
	}
	if (dlen)
		snprintf(debug, dlen, "%s", dbg);
	return 0;
}

const struct tally_symbol *tally_session__dso_symbol(struct tally_session *s,
							 struct tally_dso *d, uint64_t dso_addr)
{
	if (d->kernel) {
		if (d->syms.nr)
			return tly_symtab__find(&d->syms, dso_addr);
		return ksym_find(s, dso_addr);
	}
	if (!d->loaded)
		dso_load(s, d, 0);
	return tly_symtab__find(&d->syms, dso_addr);
}

int tally_session__runs_recording_kernel(const struct tally_session *s)
{
	struct tally_build_id run;

	if (!s->kernel_bid.size || tally_build_id__running_kernel(&run))
		return -ENOENT;
	return tally_build_id__equal(&run, &s->kernel_bid);
}

struct tally_dso *tally_session__mark_hit(struct tally_session *s, pid_t pid, pid_t tid,
					 uint8_t cpumode, uint64_t ip)
{
	struct tally_addr_loc loc;

	if (tally_session__resolve(s, pid, tid, cpumode, ip, &loc) || !loc.dso || loc.dso->hit)
		return NULL;
	loc.dso->hit = true;
	return loc.dso;
}

struct hits_walk {
	struct tally_session *s;
	struct tally_data *d;
};

static int hits_record(void *arg, const struct perf_event_header *h,
		       const struct tally_record_ctx *ctx)
{
	struct hits_walk *w = arg;
	const struct tally_data_event *ev;
	struct tally_sample smp;

	if (h->type != PERF_RECORD_SAMPLE)
		return tally_session__process(w->s, h) == -ENOMEM ? -ENOMEM : 0;
	if (ctx->evidx < 0 || !(ev = tally_data__event(w->d, (size_t)ctx->evidx)) ||
	    tally_sample__parse(&ev->layout, h, &smp))
		return 0;
	tally_session__mark_hit(w->s, (pid_t)smp.pid, (pid_t)smp.tid,
				h->misc & PERF_RECORD_MISC_CPUMODE_MASK, smp.ip);
	return 0;
}

int tally_session__read_hits(struct tally_session *s, struct tally_data *d,
			     struct tally_data_error *err)
{
	struct hits_walk w = { s, d };

	return tally_data__for_each(d, TALLY_DATA_ORDERED, hits_record, &w, err);
}

/* ---- the resolve cache (internal/session.h) ---------------------------------- */

struct tly_resolve_cache *tly_session__cache(struct tally_session *s)
{
	return &s->rcache;
}

void tly_session__resolve_noted(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
				uint64_t ip, struct tally_addr_loc *loc, uint32_t **note)
{
	struct tly_resolve_cache *c = &s->rcache;
	struct tly_resolve_slot *slot;
	uint32_t valid_from;
	int32_t key;

	if (note)
		*note = NULL;
	if (tly_resolve_cache__valid_from(c, pid, cpumode, &key, &valid_from)) {
		resolve_addr(s, pid, tid, cpumode, ip, loc);
		loc->thread = NULL;
		return;
	}
	slot = &c->slots[(tly_resolve_hash(ip, key, cpumode) >> 40) & c->mask];
	if (slot->tick >= valid_from && slot->ip == ip && slot->pid == key &&
	    slot->loc.cpumode == cpumode) {
		*loc = slot->loc;
	} else {
		if (slot->tick && (slot->ip != ip || slot->pid != key))
			tly_resolve_cache__evicted(c);
		if (resolve_addr(s, pid, tid, cpumode, ip, loc)) {
			loc->thread = NULL;
			return;		/* out of memory: not worth keeping */
		}
		loc->thread = NULL;
		c->fills++;
		slot->tick = c->tick;
		slot->ip = ip;
		slot->pid = key;
		slot->note = 0;
		slot->loc = *loc;
	}
	if (note)
		*note = &slot->note;
}

int tally_session__resolve(struct tally_session *s, pid_t pid, pid_t tid, uint8_t cpumode,
			   uint64_t ip, struct tally_addr_loc *loc)
{
	tly_session__resolve_noted(s, pid, tid, cpumode, ip, loc, NULL);
	loc->thread = tally_session__thread(s, pid, tid);
	return loc->thread ? 0 : -ENOMEM;
}

bool tly_session__own_notes(struct tally_session *s, const void *owner)
{
	if (!owner || (s->notes_owner && s->notes_owner != owner)) {
		if (!owner)
			s->notes_owner = NULL;
		return false;
	}
	if (s->notes_owner != owner && s->rcache.slots)
		for (size_t i = 0; i <= s->rcache.mask; i++)	/* never used past it */
			s->rcache.slots[i].note = 0;
	s->notes_owner = owner;
	return true;
}

uint64_t tally_session__generation(struct tally_session *s)
{
	if (tly_resolve_cache__init(&s->rcache))
		return 0;
	return tly_resolve_generation(s->rcache.wraps, s->rcache.tick);
}

uint64_t tally_session__valid_since(struct tally_session *s, pid_t pid, uint8_t cpumode)
{
	uint32_t valid_from;
	int32_t key;

	if (tly_resolve_cache__valid_from(&s->rcache, pid, cpumode, &key, &valid_from))
		return UINT64_MAX;
	return tly_resolve_generation(s->rcache.wraps, valid_from);
}

/* ---- accessors ------------------------------------------------------------- */

char tally_cpumode_level(uint8_t cpumode)
{
	switch (cpumode) {
	case PERF_RECORD_MISC_KERNEL:
		return 'k';
	case PERF_RECORD_MISC_GUEST_KERNEL:
		return 'g';
	case PERF_RECORD_MISC_GUEST_USER:
		return 'u';
	case PERF_RECORD_MISC_HYPERVISOR:
		return 'H';
	default:
		return '.';
	}
}

const char *tally_thread__comm(const struct tally_thread *t)
{
	return t->comm;
}

pid_t tally_thread__pid(const struct tally_thread *t)
{
	return t->pid;
}

pid_t tally_thread__tid(const struct tally_thread *t)
{
	return t->tid;
}

const char *tally_dso__name(const struct tally_dso *d)
{
	return d->name;
}

const char *tally_dso__long_name(const struct tally_dso *d)
{
	return d->long_name ? d->long_name : d->name;
}

const char *tally_dso__problem(const struct tally_dso *d)
{
	return d->problem;
}

const struct tally_build_id *tally_dso__bid(const struct tally_dso *d)
{
	return &d->bid;
}

const char *tally_dso__short_name(const struct tally_dso *d)
{
	return d->short_name;
}

bool tally_dso__is_kernel(const struct tally_dso *d)
{
	return d->kernel;
}

bool tally_dso__is_jit(const struct tally_dso *d)
{
	const char *base = strrchr(d->name, '/');
	size_t n;

	if (d->jit_name)
		return true;
	/* perf inject --jit: <dir>/jitted-<pid>-<n>.so */
	base = base ? base + 1 : d->name;
	n = strlen(base);
	return !strncmp(base, "jitted-", 7) && n > 10 && !strcmp(base + n - 3, ".so");
}

enum tally_frame_kind tally_addr_loc__kind(const struct tally_addr_loc *loc)
{
	uint8_t m = loc->cpumode;

	if (m == PERF_RECORD_MISC_KERNEL || m == PERF_RECORD_MISC_GUEST_KERNEL ||
	    (loc->dso && loc->dso->kernel))
		return TALLY_FRAME_KERNEL;
	if (loc->dso && tally_dso__is_jit(loc->dso))
		return TALLY_FRAME_JIT;
	return TALLY_FRAME_USER;
}

uint32_t tally_dso__index(const struct tally_dso *d)
{
	return d->index;
}

size_t tally_dso__build_id(const struct tally_dso *d, const uint8_t **id)
{
	*id = d->bid.data;
	return d->bid.size;
}

void tally_dso__set_hit(struct tally_dso *d)
{
	d->hit = true;
}

bool tally_dso__hit(const struct tally_dso *d)
{
	return d->hit;
}

int tally_session__for_each_dso(struct tally_session *s, tally_dso_fn fn, void *arg)
{
	for (struct tally_dso *d = s->all_dsos; d; d = d->all_next) {
		int ret = fn(arg, d);
		if (ret)
			return ret;
	}
	return 0;
}

uint64_t tally_map__start(const struct tally_map *m)
{
	return m->start;
}

uint64_t tally_map__end(const struct tally_map *m)
{
	return m->end;
}

uint64_t tally_map__pgoff(const struct tally_map *m)
{
	return m->pgoff;
}

void tally_map__describe(const struct tally_map *m, struct tally_map_desc *d)
{
	*d = m->desc;
	if (!d->dso)
		return;		/* a kernel map */
	d->name = m->anon_name[0] ? m->anon_name : tally_dso__name(d->dso);
	/* a later map cut its start: the offset moves along (perf's split) */
	if (d->pgoff || m->start > d->start)
		d->pgoff += m->start - d->start;
	d->start = m->start;
	d->end = m->end;
}

pid_t tally_thread__ppid(const struct tally_thread *t)
{
	return t->ppid;
}

int tally_thread__for_each_map(const struct tally_thread *t, tally_map_fn fn, void *arg)
{
	const struct maps *ms = &t->proc->maps;

	for (size_t i = 0; i < ms->nr; i++) {
		int ret = fn(arg, ms->v[i]);

		if (ret)
			return ret;
	}
	return 0;
}

int tally_session__for_each_thread(struct tally_session *s, tally_thread_fn fn, void *arg)
{
	for (struct tally_thread *t = s->all_threads; t; t = t->all_next) {
		int ret;

		if (thread_find(s, t->tid) != t)
			continue;	/* an older thread of a reused tid */
		ret = fn(arg, t);
		if (ret)
			return ret;
	}
	return 0;
}

/* The unwinder's view of the session: a user address's binary (the dso, at the file
 * offset the map gives it) and that binary's files. */
static int unwind_find(void *arg, uint64_t addr, struct tally_unwind_module *m)
{
	struct tally_session *s = arg;
	struct tally_addr_loc loc;

	tly_session__resolve_noted(s, s->unwind_pid, s->unwind_tid, PERF_RECORD_MISC_USER, addr,
				   &loc, NULL);
	if (!loc.map || !loc.dso || tally_dso__is_kernel(loc.dso))
		return -ENOENT;
	m->key = loc.dso;
	m->offset = loc.dso_addr;
	return 0;
}

static int unwind_files(void *arg, const void *key, char *path, size_t len, char *debug,
			size_t dlen)
{
	return tally_session__dso_files(arg, (struct tally_dso *)key, path, len, debug, dlen);
}

void tally_session__set_inline(struct tally_session *s, enum tally_inline_mode mode)
{
	s->inline_mode = mode;
}

enum tally_inline_mode tly_session__inline_mode(const struct tally_session *s)
{
	return s->inline_mode;
}

struct tally_dso_lines *tly_session__inline_lines(struct tally_session *s)
{
	if (!s->inline_lines && tally_dso_lines__new(&s->inline_lines, s))
		s->inline_lines = NULL;
	return s->inline_lines;
}

struct tally_unwinder *tly_session__unwinder(struct tally_session *s, pid_t pid, pid_t tid)
{
	if (!s->unwinder)
		s->unwinder = tally_unwinder__new(unwind_find, unwind_files, s);
	s->unwind_pid = pid;
	s->unwind_tid = tid;
	return s->unwinder;
}
