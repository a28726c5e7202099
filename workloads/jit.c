/*
 * A tiny JIT: copies a counting loop into anonymous executable memory, describes it
 * in /tmp/perf-PID.map (the perf map convention JITs use) and runs it for a while,
 * so reports can be checked on JIT code as perf shows it ("[JIT] tid PID").
 * Usage: jit [SECONDS] (default 0.3). Prints its pid; the caller removes the map file.
 * x86-64 only: elsewhere it exits 77 (skip).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	/* xor eax,eax; 1: inc rax; cmp rax,0x100000; jne 1b; ret */
	static const unsigned char loop[] = { 0x31, 0xc0, 0x48, 0xff, 0xc0, 0x48, 0x3d, 0x00,
					      0x00, 0x10, 0x00, 0x75, 0xf5, 0xc3 };
	double secs = argc > 1 ? atof(argv[1]) : 0.3, end;
	unsigned char *code;
	char path[64];
	FILE *f;

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, loop, sizeof(loop));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jitted_loop\n", (unsigned long)code, sizeof(loop));
	fclose(f);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	end = now() + secs;
	while (now() < end)
		((void (*)(void))code)();
	return 0;
#else
	(void)argc;
	(void)argv;
	return 77;
#endif
}
