/*
 * The session: threads, maps, dsos and symbols from synthetic records, from this
 * test's own mappings (real ELF symbols), and from perf 6.1's files compared with
 * `perf report` (when perf is installed).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "tally/data.h"
#include "tally/session.h"
#include "internal/symbols.h"

static union {
	struct perf_event_header hdr;
	uint8_t b[4096];
	uint64_t align;
} rec;

static const struct perf_event_header *comm_rec(uint32_t pid, uint32_t tid, const char *comm,
						bool exec)
{
	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = PERF_RECORD_COMM;
	rec.hdr.misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0;
	memcpy(rec.b + 8, &pid, 4);
	memcpy(rec.b + 12, &tid, 4);
	strcpy((char *)rec.b + 16, comm);
	rec.hdr.size = (uint16_t)((16 + strlen(comm) + 1 + 7) & ~7u);
	return &rec.hdr;
}

static const struct perf_event_header *fork_rec(uint32_t type, uint32_t pid, uint32_t ppid,
						uint32_t tid, uint32_t ptid)
{
	uint32_t v[4] = { pid, ppid, tid, ptid };
	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = type;
	memcpy(rec.b + 8, v, 16);
	rec.hdr.size = 8 + 16 + 8;
	return &rec.hdr;
}

static const struct perf_event_header *mmap2_rec(uint32_t pid, uint64_t start, uint64_t len,
						 uint64_t pgoff, const char *name, uint16_t misc)
{
	uint64_t v[3] = { start, len, pgoff };
	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = PERF_RECORD_MMAP2;
	rec.hdr.misc = misc;
	memcpy(rec.b + 8, &pid, 4);
	memcpy(rec.b + 12, &pid, 4);
	memcpy(rec.b + 16, v, 24);
	strcpy((char *)rec.b + 8 + 8 + 24 + 24 + 8, name);
	rec.hdr.size = (uint16_t)((8 + 8 + 24 + 24 + 8 + strlen(name) + 1 + 7) & ~7u);
	return &rec.hdr;
}

static void threads(void **state)
{
	struct tally_session *s;
	struct tally_thread *t;
	(void)state;

	assert_int_equal(tally_session__new(&s, NULL), 0);
	t = tally_session__thread(s, 10, 11);
	assert_string_equal(tally_thread__comm(t), ":11");
	assert_string_equal(tally_thread__comm(tally_session__thread(s, 0, 0)), "swapper");
	assert_int_equal(tally_session__process(s, comm_rec(10, 10, "bash", false)), 0);
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_FORK, 20, 10, 20, 10)), 0);
	t = tally_session__thread(s, 20, 20);
	assert_string_equal(tally_thread__comm(t), "bash");
	assert_int_equal(tally_session__process(s, comm_rec(20, 20, "hot", true)), 0);
	assert_string_equal(tally_thread__comm(t), "hot");
	assert_int_equal(tally_thread__pid(t), 20);
	/* a thread of process 20 */
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_FORK, 20, 20, 21, 20)), 0);
	t = tally_session__thread(s, 20, 21);
	assert_string_equal(tally_thread__comm(t), "hot");
	assert_int_equal(tally_thread__tid(t), 21);
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_EXIT, 20, 20, 21, 20)), 0);
	/* a thread of a process no COMM named (started while the recorder synthesized
	 * the others): named after its own tid, as perf's thread__fork leaves it */
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_FORK, 30, 30, 35, 30)), 0);
	assert_string_equal(tally_thread__comm(tally_session__thread(s, 30, 35)), ":35");
	assert_string_equal(tally_thread__comm(tally_session__thread(s, 30, 30)), ":30");
	/* short records are rejected, not read past */
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = 8 };
	assert_int_equal(tally_session__process(s, &h), -EINVAL);
	tally_session__delete(s);
	tally_session__delete(NULL);
}

static void maps_and_overlaps(void **state)
{
	struct tally_session *s;
	struct tally_addr_loc loc;
	(void)state;

	assert_int_equal(tally_session__new(&s, &(struct tally_session_opts){ .no_symbols = true }), 0);
	assert_int_equal(tally_session__process(s, mmap2_rec(5, 0x1000, 0x3000, 0, "/nonexistent/a", 0)), 0);
	assert_int_equal(tally_session__process(s, mmap2_rec(5, 0x10000, 0x1000, 0, "[heap]", 0)), 0);
	assert_int_equal(tally_session__process(s, mmap2_rec(5, 0x20000, 0x1000, 0, "//anon", 0)), 0);
	/* punch a hole in the middle of /nonexistent/a */
	assert_int_equal(tally_session__process(s, mmap2_rec(5, 0x2000, 0x1000, 0x5000, "/nonexistent/b", 0)), 0);

	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_USER, 0x1800, &loc);
	assert_non_null(loc.dso);
	assert_string_equal(tally_dso__name(loc.dso), "/nonexistent/a");
	assert_string_equal(tally_dso__short_name(loc.dso), "a");
	assert_int_equal(loc.dso_addr, 0x800);
	assert_null(loc.sym);
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_USER, 0x2010, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "/nonexistent/b");
	assert_int_equal(loc.dso_addr, 0x5010);
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_USER, 0x3010, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "/nonexistent/a");
	assert_int_equal(loc.dso_addr, 0x2010);
	assert_int_equal(tally_map__start(loc.map), 0x3000);
	assert_int_equal(tally_map__end(loc.map), 0x4000);
	assert_int_equal(tally_map__pgoff(loc.map), 0x2000);
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_USER, 0x10010, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "[heap]");
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_USER, 0x20010, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "/tmp/perf-5.map");
	assert_string_equal(tally_dso__short_name(loc.dso), "[JIT] tid 5");	/* as perf names it */
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_USER, 0x50000, &loc);
	assert_null(loc.dso);
	assert_null(loc.map);
	assert_non_null(loc.thread);

	/* a forked process inherits the maps; its own mmaps stay its own */
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_FORK, 6, 5, 6, 5)), 0);
	assert_int_equal(tally_session__process(s, mmap2_rec(6, 0x1000, 0x1000, 0, "/nonexistent/c", 0)), 0);
	tally_session__resolve(s, 6, 6, PERF_RECORD_MISC_USER, 0x3010, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "/nonexistent/a");
	tally_session__resolve(s, 6, 6, PERF_RECORD_MISC_USER, 0x1010, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "/nonexistent/c");
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_USER, 0x1010, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "/nonexistent/a");
	/* perf's synthesized FORK (MISC_FORK_EXEC) of a running task copies nothing */
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_FORK, 7, 5, 7, 5)), 0);
	rec.hdr.misc = PERF_RECORD_MISC_FORK_EXEC;
	{
		const struct perf_event_header *fh = fork_rec(PERF_RECORD_FORK, 8, 5, 8, 5);
		rec.hdr.misc = PERF_RECORD_MISC_FORK_EXEC;
		assert_int_equal(tally_session__process(s, fh), 0);
	}
	tally_session__resolve(s, 7, 7, PERF_RECORD_MISC_USER, 0x3010, &loc);
	assert_non_null(loc.dso);
	tally_session__resolve(s, 8, 8, PERF_RECORD_MISC_USER, 0x3010, &loc);
	assert_null(loc.dso);
	/* a pid used again by a new process does not keep the old process's maps */
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_EXIT, 6, 5, 6, 5)), 0);
	assert_int_equal(tally_session__process(s, fork_rec(PERF_RECORD_FORK, 6, 8, 6, 8)), 0);
	tally_session__resolve(s, 6, 6, PERF_RECORD_MISC_USER, 0x1010, &loc);
	assert_null(loc.dso);

	/* kernel map from perf's [kernel.kallsyms]_text MMAP */
	assert_int_equal(tally_session__process(s, mmap2_rec(UINT32_MAX, 0xffffffff81000000ULL, 0x1000000,
				0xffffffff81000000ULL, "[kernel.kallsyms]_text", PERF_RECORD_MISC_KERNEL)), 0);
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_KERNEL, 0xffffffff81000100ULL, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "[kernel.kallsyms]");
	assert_true(tally_dso__is_kernel(loc.dso));
	assert_int_equal(loc.dso_addr, 0xffffffff81000100ULL);
	/* .init.text lies beyond _etext: still the kernel, up to the first module */
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_KERNEL, 0xffffffff83000000ULL, &loc);
	assert_non_null(loc.dso);
	assert_string_equal(tally_dso__name(loc.dso), "[kernel.kallsyms]");
	assert_int_equal(tally_session__process(s, mmap2_rec(UINT32_MAX, 0xffffffffc0000000ULL, 0x5000,
				0, "/lib/modules/6.18/kernel/fs/fuse-x.ko", PERF_RECORD_MISC_KERNEL)), 0);
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_KERNEL, 0xffffffffc0000010ULL, &loc);
	assert_string_equal(tally_dso__name(loc.dso), "[fuse_x]");
	assert_true(tally_dso__is_kernel(loc.dso));
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_KERNEL, 0xffffffffc0006000ULL, &loc);
	assert_null(loc.dso);
	/* a BPF program from KSYMBOL */
	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = PERF_RECORD_KSYMBOL;
	uint64_t kaddr = 0xffffffffc1000000ULL;
	uint32_t klen = 0x80;
	memcpy(rec.b + 8, &kaddr, 8);
	memcpy(rec.b + 16, &klen, 4);
	strcpy((char *)rec.b + 24, "bpf_prog_6deef7357e7b4530_sd_devices");
	rec.hdr.size = 24 + 40;
	assert_int_equal(tally_session__process(s, &rec.hdr), 0);
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_KERNEL, kaddr + 0x10, &loc);
	assert_non_null(loc.sym);
	assert_string_equal(loc.sym->name, "bpf_prog_6deef7357e7b4530_sd_devices");
	assert_string_equal(tally_dso__name(loc.dso), "bpf_prog_6deef7357e7b4530_sd_devices");
	assert_int_equal(loc.dso_addr - loc.sym->start, 0x10);
	tally_session__resolve(s, 5, 5, PERF_RECORD_MISC_HYPERVISOR, 0x1010, &loc);
	assert_null(loc.dso);
	tally_session__delete(s);
}

void test_session_marker_function(void);
__attribute__((noinline, used)) void test_session_marker_function(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Binaries found by build-id in perf's cache (~/.debug/.build-id/xx/rest/elf): the
 * path in the file no longer exists, the id comes from MMAP2 or the BUILD_ID feature. */
static void buildid_cache(void **state)
{
	struct tally_build_id bid;
	char exe[4096], dir[] = "/tmp/tally-bid.XXXXXX", path[4200], hex[41], line[4096];
	uint64_t ip = (uint64_t)(uintptr_t)&test_session_marker_function;
	unsigned long start = 0, end = 0, off = 0;
	(void)state;

	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;
	if (tally_build_id__from_elf(&bid, exe))
		skip();	/* linked without a build-id */
	tally_build_id__hex(&bid, hex);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, hex);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s/elf", dir, hex, hex + 2);
	assert_int_equal(symlink(exe, path), 0);

	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, o;
		if (sscanf(line, "%lx-%lx %*s %lx", &a, &b, &o) == 3 && ip >= a && ip < b) {
			start = a, end = b, off = o;
			break;
		}
	}
	fclose(f);
	assert_true(end > start);

	struct tally_session *s;
	struct tally_addr_loc loc;
	struct tally_session_opts o = { .buildid_dir = dir };
	assert_int_equal(tally_session__new(&s, &o), 0);
	/* 1: the id in MMAP2 */
	const struct perf_event_header *h = mmap2_rec(100, start, end - start, off, "/gone/one",
						      PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
	rec.b[40] = (uint8_t)bid.size;
	memcpy(rec.b + 44, bid.data, bid.size);
	assert_int_equal(tally_session__process(s, h), 0);
	tally_session__resolve(s, 100, 100, PERF_RECORD_MISC_USER, ip, &loc);
	assert_non_null(loc.sym);
	assert_string_equal(loc.sym->name, "test_session_marker_function");
	const uint8_t *got;
	assert_int_equal(tally_dso__build_id(loc.dso, &got), bid.size);
	assert_memory_equal(got, bid.data, bid.size);

	/* 2: the id from a BUILD_ID feature */
	uint8_t feat[8 + 4 + 24 + 64] = { 0 };
	struct perf_event_header bh = { .type = 67, .misc = 0, .size = sizeof(feat) };
	memcpy(feat, &bh, 8);
	memcpy(feat + 12, bid.data, bid.size);
	strcpy((char *)feat + 36, "/gone/two");
	assert_int_equal(tally_session__add_build_ids(s, feat, sizeof(feat)), 0);
	assert_int_equal(tally_session__process(s, mmap2_rec(101, start, end - start, off, "/gone/two",
							     PERF_RECORD_MISC_USER)), 0);
	tally_session__resolve(s, 101, 101, PERF_RECORD_MISC_USER, ip, &loc);
	assert_non_null(loc.sym);
	assert_string_equal(loc.sym->name, "test_session_marker_function");
	/* damaged feature: sizes that do not fit are refused */
	bh.size = 4;
	memcpy(feat, &bh, 8);
	assert_int_equal(tally_session__add_build_ids(s, feat, sizeof(feat)), -EINVAL);
	tally_session__delete(s);

	/* without the cache the gone path stays without symbols */
	assert_int_equal(tally_session__new(&s, NULL), 0);
	assert_int_equal(tally_session__process(s, mmap2_rec(102, start, end - start, off, "/gone/three",
							     PERF_RECORD_MISC_USER)), 0);
	tally_session__resolve(s, 102, 102, PERF_RECORD_MISC_USER, ip, &loc);
	assert_non_null(loc.dso);
	assert_null(loc.sym);
	tally_session__delete(s);

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void real_elf_and_jit(void **state)
{
	struct tally_session *s;
	struct tally_addr_loc loc;
	uint64_t ip = (uint64_t)(uintptr_t)&test_session_marker_function;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096], path[4096];
	bool fed = false;
	(void)state;

	assert_non_null(f);
	assert_int_equal(tally_session__new(&s, NULL), 0);
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, off;
		char perms[8];
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &a, &b, perms, &off, path) < 4 ||
		    path[0] != '/')
			continue;
		assert_int_equal(tally_session__process(s, mmap2_rec((uint32_t)getpid(), a, b - a, off,
									path, PERF_RECORD_MISC_USER)), 0);
		fed = true;
	}
	fclose(f);
	assert_true(fed);
	tally_session__resolve(s, getpid(), getpid(), PERF_RECORD_MISC_USER, ip, &loc);
	if (!loc.sym)
		print_message("marker %lx dso %s dso_addr %lx map %lx-%lx pgoff %lx\n", (unsigned long)loc.addr,
			      loc.dso ? tally_dso__name(loc.dso) : "-",
			      (unsigned long)loc.dso_addr, loc.map ? (unsigned long)tally_map__start(loc.map) : 0,
			      loc.map ? (unsigned long)tally_map__end(loc.map) : 0, loc.map ? (unsigned long)tally_map__pgoff(loc.map) : 0);
	assert_non_null(loc.sym);
	assert_string_equal(loc.sym->name, "test_session_marker_function");
	assert_int_equal(loc.dso_addr, loc.sym->start);
	/* a libc function through .dynsym/.symtab */
	tally_session__resolve(s, getpid(), getpid(), PERF_RECORD_MISC_USER,
			       (uint64_t)(uintptr_t)&getpid, &loc);
	assert_non_null(loc.dso);
	assert_non_null(strstr(tally_dso__name(loc.dso), "libc"));
	if (!loc.sym)
		print_message("getpid %lx dso_addr %lx map %lx-%lx pgoff %lx\n", (unsigned long)loc.addr,
			      (unsigned long)loc.dso_addr, (unsigned long)tally_map__start(loc.map),
			      (unsigned long)tally_map__end(loc.map), (unsigned long)tally_map__pgoff(loc.map));
	assert_non_null(loc.sym);

	/* JIT map file for an anonymous mapping */
	pid_t jpid = 4000000 + (getpid() % 100000);
	char jit[64];
	snprintf(jit, sizeof(jit), "/tmp/perf-%d.map", (int)jpid);
	f = fopen(jit, "w");
	assert_non_null(f);
	fprintf(f, "7f0000001000 100 jitted_one\n7f0000001100 80 LazyCompile:*foo bar.js:1\n");
	fclose(f);
	assert_int_equal(tally_session__process(s, mmap2_rec((uint32_t)jpid, 0x7f0000000000ULL, 0x10000, 0,
							     "//anon", PERF_RECORD_MISC_USER)), 0);
	tally_session__resolve(s, jpid, jpid, PERF_RECORD_MISC_USER, 0x7f0000001120ULL, &loc);
	assert_non_null(loc.sym);
	assert_string_equal(loc.sym->name, "LazyCompile:*foo bar.js:1");
	tally_session__resolve(s, jpid, jpid, PERF_RECORD_MISC_USER, 0x7f0000001010ULL, &loc);
	assert_string_equal(loc.sym->name, "jitted_one");
	tally_session__resolve(s, jpid, jpid, PERF_RECORD_MISC_USER, 0x7f0000002000ULL, &loc);
	assert_null(loc.sym);
	unlink(jit);
	tally_session__delete(s);
}

/* ---- against perf report ---------------------------------------------------- */

struct hist {
	char **lines;
	size_t nr, cap;
	struct tally_session *s;
	const struct tally_data *d;
};

static void hist_add(struct hist *h, const char *line)
{
	if (h->nr == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 256;
		h->lines = realloc(h->lines, h->cap * sizeof(*h->lines));
		assert_non_null(h->lines);
	}
	h->lines[h->nr++] = strdup(line);
}

static int hist_cb(void *arg, const struct perf_event_header *hdr,
		   const struct tally_record_ctx *ctx)
{
	struct hist *h = arg;
	struct tally_sample smp;
	struct tally_addr_loc loc;
	char line[1024];

	if (hdr->type != PERF_RECORD_SAMPLE)
		return tally_session__process(h->s, hdr) == -ENOMEM;
	assert_true(ctx->evidx >= 0);
	assert_int_equal(tally_sample__parse(&tally_data__event(h->d, (size_t)ctx->evidx)->layout,
					     hdr, &smp), 0);
	uint8_t cpumode = smp.misc & PERF_RECORD_MISC_CPUMODE_MASK;
	tally_session__resolve(h->s, (pid_t)smp.pid, (pid_t)smp.tid, cpumode, smp.ip, &loc);
	/* perf report prints a block per event: count per event, compare the lines.
	 * Without a symbol, perf shows the dso-relative address when the dso is known. */
	char addr[32];
	snprintf(addr, sizeof(addr), "0x%016llx", (unsigned long long)loc.dso_addr);
	snprintf(line, sizeof(line), "%d|%s %s %s %s", ctx->evidx, tally_thread__comm(loc.thread),
		 loc.dso ? tally_dso__short_name(loc.dso) : "[unknown]",
		 cpumode == PERF_RECORD_MISC_KERNEL ? "[k]" : "[.]",
		 loc.sym ? loc.sym->name : loc.dso ? addr : "[unknown]");
	hist_add(h, line);
	return 0;
}

/* Lines compare without blanks: perf pads columns, and comms may hold spaces. */
static void squeeze(char *s)
{
	char *o = s;
	for (; *s; s++)
		if (*s != ' ')
			*o++ = *s;
	*o = 0;
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A BUILD_ID feature with one entry: the recording kernel's id. */
static size_t kernel_bid_feature(uint8_t *feat, const uint8_t *id, size_t len)
{
	struct perf_event_header bh = { .type = 67, .misc = 0, .size = 8 + 4 + 24 + 24 };

	memset(feat, 0, bh.size);
	memcpy(feat, &bh, 8);
	memcpy(feat + 12, id, len);
	strcpy((char *)feat + 36, "[kernel.kallsyms]");
	return bh.size;
}

/* resolve a kernel address in a session made with o and the kernel id (NULL: none);
 * returns the symbol's name or NULL */
static const char *kernel_sym(const struct tally_session_opts *o, const uint8_t *id,
			      uint64_t addr, char *problem, size_t plen)
{
	static char name[256];
	struct tally_session *s;
	struct tally_addr_loc loc;
	uint8_t feat[128];
	const char *why, *ret = NULL;

	assert_int_equal(tally_session__new(&s, o), 0);
	if (id)
		assert_int_equal(tally_session__add_build_ids(s, feat,
							     kernel_bid_feature(feat, id, 20)), 0);
	assert_null(tally_session__kernel_symbols_problem(s));	/* nothing looked up yet */
	tally_session__resolve(s, 1, 1, PERF_RECORD_MISC_KERNEL, addr, &loc);
	if (loc.sym && loc.sym->name) {
		snprintf(name, sizeof(name), "%s", loc.sym->name);
		ret = name;
	}
	why = tally_session__kernel_symbols_problem(s);
	snprintf(problem, plen, "%s", why ? why : "");
	tally_session__delete(s);
	return ret;
}

/* Does an address past the kernel MMAP's end (.init.text and the like) land in the
 * kernel? */
static bool kernel_beyond_etext(const struct tally_session_opts *o, const uint8_t *id)
{
	struct tally_session *s;
	struct tally_addr_loc loc;
	uint8_t feat[128];
	bool in_kernel;

	assert_int_equal(tally_session__new(&s, o), 0);
	assert_int_equal(tally_session__add_build_ids(s, feat, kernel_bid_feature(feat, id, 20)), 0);
	assert_int_equal(tally_session__process(s, mmap2_rec(UINT32_MAX, 0xffffffff81000000ULL,
				0x100, 0xffffffff81000000ULL, "[kernel.kallsyms]_text",
				PERF_RECORD_MISC_KERNEL)), 0);
	tally_session__resolve(s, 1, 1, PERF_RECORD_MISC_KERNEL, 0xffffffff81000010ULL, &loc);
	assert_non_null(loc.dso);
	tally_session__resolve(s, 1, 1, PERF_RECORD_MISC_KERNEL, 0xffffffff81000110ULL, &loc);
	in_kernel = loc.dso != NULL;
	tally_session__delete(s);
	return in_kernel;
}

/* /proc/kallsyms's cache (when this machine's kallsyms shows addresses): written on
 * the first report, then giving the same names as the text for this kernel, and never
 * used for a file of another kernel (perf's rule stays: no symbols, and why). */
static void proc_cache_checks(struct tally_session_opts *o, const uint8_t *id,
			      const uint8_t *other)
{
	char first[256], cached[256], text[256], problem[4608], path[4400], hex[41];
	struct tally_session_opts direct = *o;
	const char *n;
	uint8_t third[20];

	for (int i = 0; i < 20; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	n = kernel_sym(o, id, 0xffffffff81000010ull, problem, sizeof(problem));
	if (!n) {
		fprintf(stderr, "# kallsyms hides addresses here: no /proc/kallsyms cache checks\n");
		return;
	}
	snprintf(first, sizeof(first), "%s", n);
	snprintf(path, sizeof(path), "%s/[kernel.kallsyms]/%s/tally-kallsyms.proc",
		 o->buildid_dir, hex);
	assert_int_equal(access(path, F_OK), 0);
	n = kernel_sym(o, id, 0xffffffff81000010ull, problem, sizeof(problem));
	assert_non_null(n);
	snprintf(cached, sizeof(cached), "%s", n);
	direct.kallsyms = "/proc/kallsyms";	/* named: read as it is, no cache */
	n = kernel_sym(&direct, id, 0xffffffff81000010ull, problem, sizeof(problem));
	assert_non_null(n);
	snprintf(text, sizeof(text), "%s", n);
	assert_string_equal(first, text);
	assert_string_equal(cached, text);
	/* a file of another kernel with no copy of its kallsyms */
	memcpy(third, other, 20);
	third[19] ^= 0x5a;
	assert_null(kernel_sym(o, third, 0xffffffff81000010ull, problem, sizeof(problem)));
	assert_non_null(strstr(problem, "recorded on kernel build-id"));
}

/* Where kernel symbols come from: perf's rules (the recording kernel's build-id decides
 * between perf's build-id cache, /proc/kallsyms and nothing), and why, when none. */
static void kernel_symbols_source(void **state)
{
	char dir[] = "/tmp/tally-ksyms.XXXXXX", path[4300], hexid[41], problem[4608];
	uint8_t other[20], running[20];
	struct tally_session_opts o = { 0 };
	struct tally_build_id kbid;
	int nrun = tally_build_id__running_kernel(&kbid) ? -1 : (int)kbid.size;
	FILE *f;
	(void)state;

	if (nrun > 0)
		memcpy(running, kbid.data, (size_t)nrun);
	for (int i = 0; i < 20; i++)
		other[i] = (uint8_t)(0xa0 + i);
	if (nrun == 20 && !memcmp(running, other, 20))
		other[0] ^= 1;
	for (int i = 0; i < 20; i++)
		sprintf(hexid + 2 * i, "%02x", other[i]);
	assert_non_null(mkdtemp(dir));
	o.buildid_dir = dir;

	/* another kernel's file, no copy of its kallsyms: no symbols, and a reason */
	if (nrun > 0) {
		assert_null(kernel_sym(&o, other, 0xffffffff81000010ull, problem, sizeof(problem)));
		assert_non_null(strstr(problem, "recorded on kernel build-id"));
		assert_non_null(strstr(problem, hexid));
	}

	/* without them, the kernel's map is only what its MMAP covered (perf widens it to
	 * the first module with symbols, not without) */
	if (nrun > 0)
		assert_false(kernel_beyond_etext(&o, other));

	/* perf's build-id cache has it: its symbols */
	snprintf(path, sizeof(path), "%s/[kernel.kallsyms]", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/[kernel.kallsyms]/%s", dir, hexid);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/[kernel.kallsyms]/%s/kallsyms", dir, hexid);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("ffffffff81000000 T recorded_kernel_fn\nffffffff81000100 t next_fn\t[mod]\n", f);
	fclose(f);
	assert_string_equal(kernel_sym(&o, other, 0xffffffff81000010ull, problem,
				       sizeof(problem)), "recorded_kernel_fn");
	assert_string_equal(problem, "");
	assert_string_equal(kernel_sym(&o, other, 0xffffffff81000110ull, problem,
				       sizeof(problem)), "next_fn");
	assert_true(kernel_beyond_etext(&o, other));

	/* the copy's kallsyms cache is written beside it and read while the copy stays the
	 * same; a changed copy (another size or time) is read again, never the old cache */
	snprintf(path, sizeof(path), "%s/[kernel.kallsyms]/%s/kallsyms.tally", dir, hexid);
	assert_int_equal(access(path, F_OK), 0);
	assert_string_equal(kernel_sym(&o, other, 0xffffffff81000110ull, problem,
				       sizeof(problem)), "next_fn");
	snprintf(path, sizeof(path), "%s/[kernel.kallsyms]/%s/kallsyms", dir, hexid);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("ffffffff81000000 T renamed_fn\nffffffff81000100 t next_fn\t[mod]\n", f);
	fclose(f);
	assert_string_equal(kernel_sym(&o, other, 0xffffffff81000010ull, problem,
				       sizeof(problem)), "renamed_fn");

	/* --kallsyms wins, and its troubles are told */
	o.kallsyms = "/nonexistent/kallsyms";
	assert_null(kernel_sym(&o, other, 0xffffffff81000010ull, problem, sizeof(problem)));
	assert_non_null(strstr(problem, "/nonexistent/kallsyms"));
	snprintf(path, sizeof(path), "%s/zeros", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("0000000000000000 T hidden_fn\n0000000000000000 T other_fn\n", f);
	fclose(f);
	o.kallsyms = path;
	assert_null(kernel_sym(&o, NULL, 0xffffffff81000010ull, problem, sizeof(problem)));
	assert_non_null(strstr(problem, "kptr_restrict"));

	/* this machine's own kernel, no copy: /proc/kallsyms (never "another kernel") */
	o.kallsyms = NULL;
	if (nrun > 0) {
		uint8_t id[20] = { 0 };

		memcpy(id, running, (size_t)nrun);
		kernel_sym(&o, id, 0xffffffff81000010ull, problem, sizeof(problem));
		assert_null(strstr(problem, "recorded on kernel build-id"));
		proc_cache_checks(&o, id, other);
	}
	/* no build-id at all: /proc/kallsyms as well */
	kernel_sym(&o, NULL, 0xffffffff81000010ull, problem, sizeof(problem));
	assert_null(strstr(problem, "recorded on kernel build-id"));

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* "count comm dso [x] sym" lines, sorted. */
static void hist_count(struct hist *h, struct hist *out)
{
	qsort(h->lines, h->nr, sizeof(*h->lines), strp_cmp);
	for (size_t i = 0; i < h->nr;) {
		size_t j = i;
		while (j < h->nr && !strcmp(h->lines[i], h->lines[j]))
			j++;
		char line[1100];
		snprintf(line, sizeof(line), "%zu %s", j - i, strchr(h->lines[i], '|') + 1);
		squeeze(line);
		hist_add(out, line);
		i = j;
	}
	qsort(out->lines, out->nr, sizeof(*out->lines), strp_cmp);
}

static void hist_free(struct hist *h)
{
	for (size_t i = 0; i < h->nr; i++)
		free(h->lines[i]);
	free(h->lines);
}

static void merge(struct hist *h)
{
	qsort(h->lines, h->nr, sizeof(*h->lines), strp_cmp);
	size_t w = 0;
	for (size_t i = 0; i < h->nr; i++) {
		unsigned long n = strtoul(h->lines[i], NULL, 10);
		const char *rest = h->lines[i] + strspn(h->lines[i], "0123456789");
		size_t j;
		for (j = 0; j < w; j++) {
			const char *r2 = h->lines[j] + strspn(h->lines[j], "0123456789");
			if (!strcmp(rest, r2))
				break;
		}
		if (j < w) {
			unsigned long m = strtoul(h->lines[j], NULL, 10) + n;
			char buf[1100];
			snprintf(buf, sizeof(buf), "%lu%s", m, rest);
			free(h->lines[j]);
			h->lines[j] = strdup(buf);
			free(h->lines[i]);
		} else {
			h->lines[w++] = h->lines[i];
		}
	}
	h->nr = w;
	qsort(h->lines, h->nr, sizeof(*h->lines), strp_cmp);
}

static int compare_with_perf(const char *file, size_t *nlines)
{
	struct tally_data *d;
	struct tally_data_error err;
	struct hist h = { 0 }, mine = { 0 }, theirs = { 0 };
	char cmd[8192], line[1024];
	int diffs = 0;
	const void *bid;
	size_t bidlen;

	assert_int_equal(tally_data__open(&d, file, NULL, &err), 0);
	assert_int_equal(tally_session__new(&h.s, NULL), 0);
	h.d = d;
	if (tally_data__feature(d, TALLY_FEAT_BUILD_ID, &bid, &bidlen) == 0)
		assert_int_equal(tally_session__add_build_ids(h.s, bid, bidlen), 0);
	assert_int_equal(tally_data__for_each(d, TALLY_DATA_ORDERED, hist_cb, &h, &err), 0);
	hist_count(&h, &mine);

	/* Fixed column widths (-w): perf sizes the comm column by the threads' current
	 * comms and cuts older ones ("perf-exec" before the exec) to that width. */
	snprintf(cmd, sizeof(cmd), "perf report -i '%s' --stdio -q -F sample,comm,dso,sym "
		 "--no-children -g none -w 12,32,64,0 2>/dev/null", file);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long n;
		if (sscanf(line, " %lu ", &n) != 1 || (!strstr(line, "[.]") && !strstr(line, "[k]")))
			continue;
		line[strcspn(line, "\n")] = 0;
		squeeze(line);
		hist_add(&theirs, line);
	}
	pclose(p);
	/* perf keeps same-named symbols at different addresses apart, and events apart:
	 * compare sums per line */
	merge(&theirs);
	merge(&mine);
	if (nlines)
		*nlines = theirs.nr;
	for (size_t i = 0, j = 0; i < mine.nr || j < theirs.nr;) {
		int c = i == mine.nr ? 1 : j == theirs.nr ? -1 : strcmp(mine.lines[i], theirs.lines[j]);
		if (c == 0) {
			i++, j++;
			continue;
		}
		diffs++;
		if (c < 0)
			print_message("  tally only: %s\n", mine.lines[i++]);
		else
			print_message("  perf only:  %s\n", theirs.lines[j++]);
	}
	print_message("%s: %zu lines, %d differences\n", file, theirs.nr, diffs);
	hist_free(&h);
	hist_free(&mine);
	hist_free(&theirs);
	tally_session__delete(h.s);
	tally_data__delete(d);
	return diffs;
}

static void perf_report_oracle(void **state)
{
	static const char *const files[] = { "plain.data", "callchain.data", "zstd.data",
					     "pipe.data", "system.data", "multi.data" };
	const char *top = getenv("TALLY_TOP");
	char path[4096];
	int diffs = 0;
	(void)state;

	if (system("perf --version >/dev/null 2>&1") != 0)
		skip();
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/tests/data/perf/%s", top ? top : "..", files[i]);
		diffs += compare_with_perf(path, NULL);
	}
	/* a fresh system-wide recording: many processes, libraries and kernel symbols */
	int fresh = 0;
	size_t fresh_lines = 0;
	char dir[] = "/tmp/tally-session.XXXXXX", cmd[8192];
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cd %s && perf record -q -F 2000 -a -o sys.data -- sh -c "
		 "'find /usr/lib -name \"*.so*\" 2>/dev/null | head -100 | xargs cat >/dev/null; "
		 "timeout 1 ls -lR /usr/share >/dev/null 2>&1; %s/workloads/hot 0.1' >/dev/null 2>&1", dir,
		 getenv("TALLY_BUILD") ? getenv("TALLY_BUILD") : ".");
	if (system(cmd) == 0) {
		snprintf(path, sizeof(path), "%s/sys.data", dir);
		fresh = compare_with_perf(path, &fresh_lines);
		unlink(path);
	}
	rmdir(dir);
	assert_int_equal(diffs, 0);
	/* Other processes run meanwhile: a binary replaced between the recording and the
	 * report may resolve differently. Allow 2% of the lines. */
	assert_true((size_t)fresh * 50 <= fresh_lines);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(threads),
		cmocka_unit_test(maps_and_overlaps),
		cmocka_unit_test(real_elf_and_jit),
		cmocka_unit_test(buildid_cache),
		cmocka_unit_test(kernel_symbols_source),
		cmocka_unit_test(perf_report_oracle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
