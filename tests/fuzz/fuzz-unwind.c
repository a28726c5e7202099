/*
 * Fuzz target: the DWARF unwinder (lib/model/unwind.c) on damaged samples. The input
 * is a sample's user state: one byte choosing the architecture, 8 bytes of register
 * mask, then registers and stack bytes. Addresses are looked up in this process's own
 * mappings (/proc/self/maps), so registers and stack words that point into its code
 * walk the CFI of real binaries. Any input must give a chain within max, no crash,
 * no hang.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/unwind.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mapping {
	uint64_t start, end, off;
	char path[256];
} maps[256];
static size_t nr_maps;
static struct tally_unwinder *unwinder;

static void load_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	while (f && fgets(line, sizeof(line), f) && nr_maps < 256) {
		unsigned long s, e, o;
		char path[256] = "";

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %255s", &s, &e, &o, path) >= 3 &&
		    path[0] == '/') {
			maps[nr_maps] = (struct mapping){ s, e, o, "" };
			strcpy(maps[nr_maps++].path, path);
		}
	}
	if (f)
		fclose(f);
}

static int find(void *arg, uint64_t addr, struct tally_unwind_module *m)
{
	(void)arg;
	for (size_t i = 0; i < nr_maps; i++)
		if (addr >= maps[i].start && addr < maps[i].end) {
			size_t k = i;

			while (k && !strcmp(maps[k - 1].path, maps[i].path))
				k--;
			m->key = maps[k].path;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t regs[64], stack[1024];
	uint64_t ips[128], mask;
	size_t nr, nregs;
	bool arm64;

	if (!unwinder) {
		load_maps();
		unwinder = tally_unwinder__new(find, files, NULL);
		if (!unwinder)
			return 0;
	}
	if (size < 9)
		return 0;
	arm64 = data[0] & 1;
	memcpy(&mask, data + 1, 8);
	data += 9;
	size -= 9;
	nregs = (size_t)__builtin_popcountll(mask);
	if (size < nregs * 8)
		return 0;
	memcpy(regs, data, nregs * 8);
	/* registers and stack words given as small numbers point into the mappings */
	for (size_t i = 0; i < nregs && nr_maps; i++)
		if (regs[i] < 0x100000)
			regs[i] += maps[regs[i] % nr_maps].start;
	data += nregs * 8;
	size -= nregs * 8;
	if (size > sizeof(stack))
		size = sizeof(stack);
	memcpy(stack, data, size);
	struct tally_unwind_input in = {
		.arch = arm64 ? TALLY_UNWIND_ARM64 : TALLY_UNWIND_X86_64,
		.regs_mask = mask, .regs = regs, .stack = stack, .stack_size = size,
	};
	if (tally_unwinder__unwind(unwinder, &in, ips, 128, &nr) == 0 && nr > 128)
		__builtin_trap();
	return 0;
}
