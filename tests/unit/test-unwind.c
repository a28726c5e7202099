/*
 * The DWARF unwinder (tally/unwind.h) on this very process: a chain of calls captures
 * its registers and a copy of its stack the way the kernel's PERF_SAMPLE_REGS_USER and
 * STACK_USER do, and the unwinder must find the return addresses the calls left
 * (known here through __builtin_return_address), with binaries mapped as
 * /proc/self/maps says. Then damaged input: random registers and stack bytes (with
 * words pointing into real code, so that the CFI of real binaries is walked), cut
 * copies and missing registers must give short chains, never a crash or a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif

#include "tally/unwind.h"

/* The mappings of this process, from /proc/self/maps. */
struct mapping {
	uint64_t start, end, off;
	char path[256];
	const char *key;	/* the first mapping of the same path */
};
static struct mapping maps[512];
static size_t nr_maps;
static uint64_t stack_top;

static void load_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	assert_non_null(f);
	nr_maps = 0;
	while (fgets(line, sizeof(line), f) && nr_maps < 512) {
		struct mapping *m = &maps[nr_maps];
		unsigned long s, e, o;
		char perms[8], path[256] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &s, &e, perms, &o, path) < 4)
			continue;
		if (path[0] != '/')
			continue;
		*m = (struct mapping){ .start = s, .end = e, .off = o };
		strcpy(m->path, path);
		m->key = m->path;
		for (size_t i = 0; i < nr_maps; i++)
			if (!strcmp(maps[i].path, path)) {
				m->key = maps[i].key;
				break;
			}
		nr_maps++;
	}
	fclose(f);
}

static int find(void *arg, uint64_t addr, struct tally_unwind_module *m)
{
	(void)arg;
	for (size_t i = 0; i < nr_maps; i++)
		if (addr >= maps[i].start && addr < maps[i].end) {
			m->key = maps[i].key;
			m->offset = addr - maps[i].start + maps[i].off;
			return 0;
		}
	return -ENOENT;
}

static int files(void *arg, const void *key, char *path, size_t len, char *debug, size_t dlen)
{
	(void)arg;
	(void)dlen;
	snprintf(path, len, "%s", (const char *)key);
	debug[0] = '\0';
	return 0;
}

#if defined(__x86_64__)
/* What the kernel would put in a sample: registers in perf's order and the stack. */
#define MASK ((1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | \
	      (1ull << PERF_REG_X86_IP) | (1ull << PERF_REG_X86_R12) | \
	      (1ull << PERF_REG_X86_R13) | (1ull << PERF_REG_X86_R14) | (1ull << PERF_REG_X86_R15))
static uint64_t regs[8];	/* bx, bp, sp, ip, r12..r15: MASK's bit order */
static uint8_t stack_copy[16384];
static uint64_t stack_len;
static uint64_t ras[3];		/* return addresses of level3, level2, level1 */

/* Copy the stack as the kernel does: raw bytes, whatever the sanitizers think. */
__attribute__((noinline, no_sanitize_address)) static void copy_stack(uint64_t sp)
{
	volatile const uint8_t *p = (const uint8_t *)(uintptr_t)sp;

	stack_len = sizeof(stack_copy);
	if (stack_top > sp && stack_top - sp < stack_len)
		stack_len = stack_top - sp;
	for (uint64_t i = 0; i < stack_len; i++)
		stack_copy[i] = p[i];
}

__attribute__((noinline)) static void capture(void)
{
	__asm__ volatile(
		"mov %%rbx, 0(%0)\n\t"
		"mov %%rbp, 8(%0)\n\t"
		"mov %%rsp, 16(%0)\n\t"
		"lea 0(%%rip), %%rax\n\t"
		"mov %%rax, 24(%0)\n\t"
		"mov %%r12, 32(%0)\n\t"
		"mov %%r13, 40(%0)\n\t"
		"mov %%r14, 48(%0)\n\t"
		"mov %%r15, 56(%0)\n\t"
		: : "r"(regs) : "rax", "memory");
	copy_stack(regs[2]);
}

__attribute__((noinline)) static int level3(int x)
{
	ras[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	capture();
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) static int level2(int x)
{
	ras[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	int r = level3(x * 3);
	__asm__ volatile("" ::: "memory");
	return r + 2;
}

__attribute__((noinline)) static int level1(int x)
{
	ras[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	int r = level2(x + 5);
	__asm__ volatile("" ::: "memory");
	return r * 2;
}

/* The calls run on a thread whose stack is ours, so the copy knows where it ends. */
static void *run_levels(void *arg)
{
	*(int *)arg = level1(1);
	return NULL;
}

static void test_own_stack(void **state)
{
	struct tally_unwinder *u = tally_unwinder__new(find, files, NULL);
	uint64_t ips[64], hits, misses;
	size_t nr, stack_bytes = 1 << 20;
	void *thread_stack = aligned_alloc(4096, stack_bytes);
	pthread_attr_t attr;
	pthread_t th;
	int result = 0;

	(void)state;
	assert_non_null(u);
	assert_non_null(thread_stack);
	load_maps();
	stack_top = (uint64_t)(uintptr_t)thread_stack + stack_bytes;
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstack(&attr, thread_stack, stack_bytes), 0);
	assert_int_equal(pthread_create(&th, &attr, run_levels, &result), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_attr_destroy(&attr);
	free(thread_stack);
	assert_int_equal(result, 2 * (3 * 6 + 1 + 2));
	struct tally_unwind_input in = {
		.arch = TALLY_UNWIND_X86_64, .regs_mask = MASK, .regs = regs,
		.stack = stack_copy, .stack_size = stack_len,
	};
	for (int round = 0; round < 2; round++) {	/* the second from the rule cache */
		assert_int_equal(tally_unwinder__unwind(u, &in, ips, 64, &nr), 0);
		assert_true(nr >= 5);
		assert_int_equal(ips[0], regs[3]);
		/* capture's caller is level3 (ips[1]); then level2, level1, their caller */
		assert_int_equal(ips[2], ras[0] - 1);
		assert_int_equal(ips[3], ras[1] - 1);
		assert_int_equal(ips[4], ras[2] - 1);
	}
	tally_unwinder__stats(u, &hits, &misses);
	assert_true(hits >= misses);

	/* max bounds the chain */
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 3, &nr), 0);
	assert_int_equal(nr, 3);
	/* a copy cut after capture's frame: its caller is reported at -1 (as perf), then
	 * nothing */
	in.stack_size = 8;
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 64, &nr), 0);
	assert_true(nr <= 2);
	if (nr == 2)
		assert_int_equal(ips[1], UINT64_MAX);
	/* no stack at all, no sp: the sampled ip only */
	in.stack = NULL;
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 64, &nr), 0);
	assert_int_equal(nr, 1);
	in.stack = stack_copy;
	in.regs_mask = MASK & ~(1ull << PERF_REG_X86_SP);
	uint64_t fewer[7] = { regs[0], regs[1], regs[3], regs[4], regs[5], regs[6], regs[7] };
	in.regs = fewer;
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 64, &nr), 0);
	assert_int_equal(nr, 1);
	/* no ip: nothing */
	in.regs = regs;
	in.regs_mask = MASK & ~(1ull << PERF_REG_X86_IP);
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 64, &nr), 0);
	assert_int_equal(nr, 0);
	tally_unwinder__delete(u);
}

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Random registers and stacks whose words are often addresses of real code and of the
 * stack copy itself: every walk ends, within max, without touching anything else. */
static void test_random(void **state)
{
	struct tally_unwinder *u = tally_unwinder__new(find, files, NULL);
	static uint64_t words[512];
	uint64_t ips[128], r[24];
	size_t nr, code[64], nr_code = 0;

	(void)state;
	assert_non_null(u);
	load_maps();
	for (size_t i = 0; i < nr_maps && nr_code < 64; i++)
		code[nr_code++] = i;
	assert_true(nr_code > 0);
	for (int it = 0; it < 20000; it++) {
		uint64_t sp = 0x7ffc00000000ull + (rnd() & 0xfff8);
		size_t nwords = rnd() % 513;

		for (size_t i = 0; i < nwords; i++) {
			uint64_t k = rnd() % 4;
			const struct mapping *m = &maps[code[rnd() % nr_code]];

			if (k == 0)
				words[i] = m->start + rnd() % (m->end - m->start);
			else if (k == 1)
				words[i] = sp + (rnd() % 4096);
			else
				words[i] = rnd() >> (rnd() % 64);
		}
		for (size_t i = 0; i < 24; i++) {
			const struct mapping *m = &maps[code[rnd() % nr_code]];

			r[i] = rnd() % 3 ? m->start + rnd() % (m->end - m->start) : rnd();
		}
		enum tally_unwind_arch arch = rnd() % 8 ? TALLY_UNWIND_X86_64 : TALLY_UNWIND_ARM64;
		struct tally_unwind_input in = {
			.arch = arch,
			.regs_mask = rnd() % 4 ? (arch == TALLY_UNWIND_X86_64 ? 0xff0fffull
									      : 0x1ffffffffull)
					       : rnd(),
			.regs = NULL,
			.stack = words,
			.stack_size = nwords * 8 - (nwords ? rnd() % 8 : 0),
		};
		/* popcount(mask) values must be readable: use a big enough array */
		static uint64_t many[64];
		if (__builtin_popcountll(in.regs_mask) > 24) {
			for (int i = 0; i < 64; i++)
				many[i] = r[i % 24] + (uint64_t)i;
			in.regs = many;
		} else {
			in.regs = r;
		}
		/* perf's sp and ip slots: the stack copy's start and code */
		if (in.arch == TALLY_UNWIND_X86_64 && in.regs_mask == 0xff0fffull) {
			r[PERF_REG_X86_SP] = sp;
		}
		size_t max = 1 + rnd() % 128;
		int ret = tally_unwinder__unwind(u, &in, ips, max, &nr);

		assert_true(ret == 0 || ret == -EINVAL);
		assert_true(nr <= max);
	}
	/* an architecture it does not know */
	struct tally_unwind_input bad = { .arch = (enum tally_unwind_arch)7, .regs = r,
					  .regs_mask = 1 };
	assert_int_equal(tally_unwinder__unwind(u, &bad, ips, 8, &nr), -EINVAL);
	tally_unwinder__flush(u);
	tally_unwinder__delete(u);
	tally_unwinder__delete(NULL);
}
#endif

/* A binary that cannot be read and addresses with no binary end the walk at once. */
static int files_none(void *arg, const void *key, char *path, size_t len, char *debug,
		      size_t dlen)
{
	(void)arg, (void)key, (void)path, (void)len, (void)debug, (void)dlen;
	return -ENOENT;
}

static void test_no_binary(void **state)
{
	struct tally_unwinder *u = tally_unwinder__new(find, files_none, NULL);
	uint64_t r[3] = { 0x1000, 0x7ffc00000000ull, 0x401000 }, words[8] = { 0x401234 }, ips[8];
	struct tally_unwind_input in = {
		.arch = TALLY_UNWIND_X86_64,
		.regs_mask = (1ull << 6) | (1ull << 7) | (1ull << 8),	/* x86 bp, sp, ip */
		.regs = r, .stack = words, .stack_size = sizeof(words),
	};
	size_t nr;

	(void)state;
	assert_non_null(u);
	nr_maps = 0;
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 8, &nr), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(ips[0], 0x401000);
	tally_unwinder__delete(u);
}

/* arm64: a synthetic sample in tests/data/unwind/arm64-frames (_start -> f1 -> f2, each
 * with a frame record), stopped in f2: perf's arm64 registers (x0..x30, sp, pc) and a
 * stack laid out as the code would have left it. */
static uint64_t a64_sym[8];
static struct { uint64_t vaddr, off, size; } a64_text;
static char a64_path[4096];

static int a64_find(void *arg, uint64_t addr, struct tally_unwind_module *m)
{
	(void)arg;
	if (addr < a64_text.vaddr || addr - a64_text.vaddr >= a64_text.size)
		return -ENOENT;
	m->key = a64_path;
	m->offset = addr - a64_text.vaddr + a64_text.off;
	return 0;
}

static void a64_load(void)
{
	static const char *const names[] = { "f2_body", "f1_ret", "start_ret" };
	const char *top = getenv("TALLY_TOP");
	Elf_Scn *scn = NULL;
	size_t n;
	Elf *e;
	int fd;

	snprintf(a64_path, sizeof(a64_path), "%s/tests/data/unwind/arm64-frames", top ? top : "..");
	elf_version(EV_CURRENT);
	fd = open(a64_path, O_RDONLY);
	assert_true(fd >= 0);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_int_equal(elf_getphdrnum(e, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			a64_text.vaddr = ph.p_vaddr, a64_text.off = ph.p_offset,
			a64_text.size = ph.p_filesz;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    !(name = elf_strptr(e, sh.sh_link, sym.st_name)))
				continue;
			for (size_t k = 0; k < 3; k++)
				if (!strcmp(name, names[k]))
					a64_sym[k] = sym.st_value;
		}
	}
	elf_end(e);
	close(fd);
	assert_true(a64_text.size && a64_sym[0] && a64_sym[1] && a64_sym[2]);
}

static void test_arm64_synthetic(void **state)
{
	struct tally_unwinder *u = tally_unwinder__new(a64_find, files, NULL);
	const uint64_t S = 0x7ffff000;
	uint64_t r[33] = { 0 }, stack[8] = { 0 }, ips[16];
	size_t nr;

	(void)state;
	assert_non_null(u);
	a64_load();
	for (int i = 0; i < 29; i++)
		r[i] = 0x1111 * (uint64_t)i;	/* whatever x0..x28 held */
	r[29] = S;			/* f2's frame record */
	r[30] = a64_sym[1];		/* lr: f2 was called from f1 */
	r[31] = S;			/* sp */
	r[32] = a64_sym[0];		/* pc: in f2's body */
	stack[0] = S + 32;		/* f2's record: f1's x29 ... */
	stack[1] = a64_sym[1];		/* ... and the return into f1 */
	stack[4] = 0;			/* f1's record: _start's x29 ... */
	stack[5] = a64_sym[2];		/* ... and the return into _start */
	struct tally_unwind_input in = {
		.arch = TALLY_UNWIND_ARM64, .regs_mask = (1ull << 33) - 1, .regs = r,
		.stack = stack, .stack_size = sizeof(stack),
	};
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 16, &nr), 0);
	assert_int_equal(nr, 3);	/* _start's return address is undefined: the end */
	assert_int_equal(ips[0], a64_sym[0]);
	assert_int_equal(ips[1], a64_sym[1] - 1);
	assert_int_equal(ips[2], a64_sym[2] - 1);
	/* the copy ends before f1's record: f1 is found, its caller is lost (-1) */
	in.stack_size = 40;
	assert_int_equal(tally_unwinder__unwind(u, &in, ips, 16, &nr), 0);
	assert_int_equal(nr, 3);
	assert_int_equal(ips[1], a64_sym[1] - 1);
	assert_int_equal(ips[2], UINT64_MAX);
	tally_unwinder__delete(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#if defined(__x86_64__)
		cmocka_unit_test(test_own_stack),
		cmocka_unit_test(test_random),
#endif
		cmocka_unit_test(test_no_binary),
		cmocka_unit_test(test_arm64_synthetic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
