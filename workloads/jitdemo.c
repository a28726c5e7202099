/*
 * jitdemo: a tiny "JIT" that writes a jitdump file for itself, as Node's --perf-prof,
 * Java agents and Python 3.12 do, so that `perf inject --jit` / `tally inject --jit`
 * can be tested without any of them (tools/perf/Documentation/jitdump-specification.txt).
 *
 *   jitdemo [SECONDS] [DIR]   (default 0.5 s, DIR ".")
 *
 * It creates DIR/jit-PID.dump, maps it executable (the marker perf looks for in the
 * recording), then "compiles" two x86-64 loop functions into executable memory:
 * jit_loop_a is described by a JIT_CODE_DEBUG_INFO and a JIT_CODE_LOAD record,
 * jit_loop_b by a JIT_CODE_LOAD and, once copied elsewhere, a JIT_CODE_MOVE. It runs
 * them for SECONDS (a in 2 calls of 3, b in 1), then writes JIT_CODE_CLOSE. Timestamps
 * are CLOCK_MONOTONIC: record it with -k monotonic.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1, JIT_CODE_DEBUG_INFO = 2, JIT_CODE_CLOSE = 3 };

struct jit_header {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};

struct jit_prefix {
	uint32_t id, total_size;
	uint64_t timestamp;
};

/* long f(long n): sum n + (n-1) + ... + 1 (a loop of add/dec/jnz) */
static const uint8_t loop_code[] = {
	0x48, 0x31, 0xc0,	/* xor  %rax,%rax */
	0x48, 0x01, 0xf8,	/* add  %rdi,%rax */
	0x48, 0xff, 0xcf,	/* dec  %rdi */
	0x75, 0xf8,		/* jne  -8 (the add) */
	0xc3,			/* ret */
};

static FILE *dump;

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put(const void *p, size_t n)
{
	if (fwrite(p, 1, n, dump) != n) {
		perror("jitdemo: writing the jitdump");
		exit(1);
	}
}

static void code_load(void *addr, const char *name, uint64_t index)
{
	struct jit_prefix p = { JIT_CODE_LOAD, 0, now() };
	uint32_t ids[2] = { (uint32_t)getpid(), (uint32_t)syscall(SYS_gettid) };
	uint64_t f[4] = { (uint64_t)(uintptr_t)addr, (uint64_t)(uintptr_t)addr, sizeof(loop_code),
			  index };

	p.total_size = (uint32_t)(sizeof(p) + sizeof(ids) + sizeof(f) + strlen(name) + 1 +
				  sizeof(loop_code));
	put(&p, sizeof(p));
	put(ids, sizeof(ids));
	put(f, sizeof(f));
	put(name, strlen(name) + 1);
	put(addr, sizeof(loop_code));
}

static void code_move(void *from, void *to, uint64_t index)
{
	struct jit_prefix p = { JIT_CODE_MOVE, 0, now() };
	uint32_t ids[2] = { (uint32_t)getpid(), (uint32_t)syscall(SYS_gettid) };
	uint64_t f[5] = { (uint64_t)(uintptr_t)to, (uint64_t)(uintptr_t)from,
			  (uint64_t)(uintptr_t)to, sizeof(loop_code), index };

	p.total_size = (uint32_t)(sizeof(p) + sizeof(ids) + sizeof(f));
	put(&p, sizeof(p));
	put(ids, sizeof(ids));
	put(f, sizeof(f));
}

/* Two line entries for the function at ADDR, in a made-up source file. */
static void debug_info(void *addr)
{
	static const char file[] = "jitdemo.js";
	struct jit_prefix p = { JIT_CODE_DEBUG_INFO, 0, now() };
	uint64_t head[2] = { (uint64_t)(uintptr_t)addr, 2 };
	size_t entry = 8 + 4 + 4 + sizeof(file);

	p.total_size = (uint32_t)(sizeof(p) + sizeof(head) + 2 * entry);
	put(&p, sizeof(p));
	put(head, sizeof(head));
	for (uint32_t line = 10; line <= 11; line++) {
		uint64_t a = (uint64_t)(uintptr_t)addr + (line == 10 ? 0 : 3);
		uint32_t l = line, discrim = 0;

		put(&a, 8);
		put(&l, 4);
		put(&discrim, 4);
		put(file, sizeof(file));
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.5;
	const char *dir = argc > 2 ? argv[2] : ".";
	struct jit_header h = { 0x4A695444, 1, sizeof(h), EM_X86_64, 0, (uint32_t)getpid(), now(), 0 };
	char path[4096];
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *code;
	void *marker;
	long (*fa)(long), (*fb)(long);
	volatile long sink = 0;
	uint64_t end;
	int fd;

	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, (int)getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	dump = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!dump) {
		perror(path);
		return 1;
	}
	put(&h, sizeof(h));
	fflush(dump);
	/* the marker: an executable mapping of the dump, which the recording sees */
	marker = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (marker == MAP_FAILED) {
		perror("jitdemo: mmap of the jitdump");
		return 1;
	}
	code = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (code == MAP_FAILED) {
		perror("jitdemo: mmap");
		return 1;
	}
	memcpy(code, loop_code, sizeof(loop_code));			/* jit_loop_a */
	memcpy(code + page, loop_code, sizeof(loop_code));		/* jit_loop_b */
	memcpy(code + 2 * page, loop_code, sizeof(loop_code));		/* b, moved */
	if (mprotect(code, 3 * (size_t)page, PROT_READ | PROT_EXEC)) {
		perror("jitdemo: mprotect");
		return 1;
	}
	debug_info(code);
	code_load(code, "jit_loop_a", 1);
	code_load(code + page, "jit_loop_b", 2);
	code_move(code + page, code + 2 * page, 2);
	fflush(dump);

	fa = (long (*)(long))(uintptr_t)code;
	fb = (long (*)(long))(uintptr_t)(code + 2 * page);
	end = now() + (uint64_t)(secs * 1e9);
	for (unsigned i = 0; now() < end; i++)
		sink += (i % 3 == 2 ? fb : fa)(200000);

	{
		struct jit_prefix p = { JIT_CODE_CLOSE, sizeof(p), now() };

		put(&p, sizeof(p));
	}
	fclose(dump);
	munmap(marker, (size_t)page);
	return sink == 42;
}
