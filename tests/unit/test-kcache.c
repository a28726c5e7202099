/*
 * The kallsyms cache (lib/model/kcache.c): a cache answers every address it covers
 * exactly as the table parsed from the text does; it never covers what may change while
 * the kernel runs (module, BPF and trampoline symbols, and the kernel image's last
 * symbol, which reaches up to them); an ELF file's table comes back as the loader made
 * it; and a cache of another key (boot, kernel, first page of the text, identity of a
 * file and its debug file), a damaged one or another user's is never used.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "internal/kcache.h"
#include "internal/symbols.h"

struct fixture {
	char dir[64], text[128], cache[192];
};

/* The kernel image (untagged, aliases included), a module, a BPF program and an ftrace
 * trampoline above it, data symbols that are not taken. */
static const char TEXT[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000040 t early_fn\n"
	"ffffffff81000100 T do_syscall_64\n"
	"ffffffff81000180 W weak_fn\n"
	"ffffffff81000200 t local_fn\n"
	"ffffffff81002000 D some_data\n"
	"ffffffff81003000 T last_core_fn\n"
	"ffffffffc0001000 t mod_fn\t[mod]\n"
	"ffffffffc0001080 T mod_fn2\t[mod]\n"
	"ffffffffc0002000 t bpf_prog_1234_f\t[bpf]\n"
	"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n";

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/tally-kcache.XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->text, sizeof(fx->text), "%s/kallsyms", fx->dir);
	snprintf(fx->cache, sizeof(fx->cache), "%s/a/b/cache", fx->dir);
	write_text(fx->text, TEXT);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd))
		return -1;
	free(fx);
	return 0;
}

/* Addresses all around the symbols of TEXT. */
static const uint64_t ADDRS[] = {
	0, 0x1000, 0xffffffff80ffffff, 0xffffffff81000000, 0xffffffff8100003f,
	0xffffffff81000040, 0xffffffff810000ff, 0xffffffff81000100, 0xffffffff81000181,
	0xffffffff81000200, 0xffffffff81001fff, 0xffffffff81002000, 0xffffffff81002fff,
	0xffffffff81003000, 0xffffffff81003008, 0xffffffffa0000000, 0xffffffffc0001000,
	0xffffffffc0001090, 0xffffffffc0002010, 0xffffffffc0201010, 0xfffffffffffff000,
};

/* Every address the cache covers gives the text's symbol (the same start, size and
 * name); returns how many addresses it covered. */
static size_t same_as_text(struct tly_kcache *c, struct tly_symtab *t)
{
	size_t covered = 0;

	for (size_t i = 0; i < sizeof(ADDRS) / sizeof(ADDRS[0]); i++) {
		const struct tally_symbol *a, *b;

		if (!tly_kcache__covers(c, ADDRS[i]))
			continue;
		covered++;
		a = tly_kcache__find(c, ADDRS[i]);
		b = tly_symtab__find(t, ADDRS[i]);
		if (!b) {
			assert_null(a);
			continue;
		}
		assert_non_null(a);
		assert_true(a->start == b->start);
		assert_true(a->size == b->size);
		assert_string_equal(a->name, b->name);
		/* the same pointer on the next find */
		assert_ptr_equal(tly_kcache__find(c, ADDRS[i]), a);
	}
	return covered;
}

/* /proc/kallsyms's kind: the kernel image's symbols only, and a key of boot, kernel
 * and first page. */
static void proc_cache(void **state)
{
	struct fixture *fx = *state;
	struct tly_symtab t = { 0 };
	struct tly_kcache_key key, other;
	struct tly_kcache *c;

	assert_int_equal(tly_symtab__load_kallsyms(&t, fx->text), 0);
	assert_int_equal(tly_kcache__key_proc(&key, fx->text, "00aa", "boot-1"), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), -ENOENT);
	assert_int_equal(tly_kcache__write(fx->cache, &key, &t, false), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), 0);

	/* what changes while the kernel runs is not covered: modules, BPF, trampolines,
	 * and the image's last symbol (it reaches up to the first module symbol) */
	assert_false(tly_kcache__covers(c, 0xffffffffc0001000));
	assert_false(tly_kcache__covers(c, 0xffffffffc0002010));
	assert_false(tly_kcache__covers(c, 0xffffffffc0201010));
	assert_false(tly_kcache__covers(c, 0xffffffff81003000));
	assert_false(tly_kcache__covers(c, 0xffffffff80ffffff));
	assert_true(tly_kcache__covers(c, 0xffffffff81000000));
	assert_true(tly_kcache__covers(c, 0xffffffff81002fff));
	assert_int_equal(same_as_text(c, &t), 10);
	assert_string_equal(tly_kcache__find(c, 0xffffffff81000000)->name, "_text");
	assert_string_equal(tly_kcache__find(c, 0xffffffff81000181)->name, "weak_fn");
	tly_kcache__delete(c);

	/* another boot, another kernel: not used */
	assert_int_equal(tly_kcache__key_proc(&other, fx->text, "00aa", "boot-2"), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &other), -ESTALE);
	assert_int_equal(tly_kcache__key_proc(&other, fx->text, "00ab", "boot-1"), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &other), -ESTALE);
	/* the same boot, but the text's first page differs (kptr_restrict now hides the
	 * addresses, say): not used */
	write_text(fx->text, "0000000000000000 A fixed_percpu_data\n"
			     "0000000000000000 T _stext\n");
	assert_int_equal(tly_kcache__key_proc(&other, fx->text, "00aa", "boot-1"), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &other), -ESTALE);
	assert_null(c);
	tly_symtab__exit(&t);
}

/* A regular file's kind (the build-id cache's copy): every address, keyed by the
 * file's identity, so that a changed copy is read again. */
static void file_cache(void **state)
{
	struct fixture *fx = *state;
	struct tly_symtab t = { 0 };
	struct tly_kcache_key key, other;
	struct tly_kcache *c;
	struct timespec later[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };

	assert_int_equal(tly_symtab__load_kallsyms(&t, fx->text), 0);
	assert_int_equal(tly_kcache__key_file(&key, fx->text, NULL), 0);
	assert_int_equal(tly_kcache__write(fx->cache, &key, &t, true), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), 0);
	assert_int_equal(same_as_text(c, &t), sizeof(ADDRS) / sizeof(ADDRS[0]));
	assert_string_equal(tly_kcache__find(c, 0xffffffffc0001090)->name, "mod_fn2");
	tly_kcache__delete(c);

	/* the same size, another time: another key */
	assert_int_equal(utimensat(AT_FDCWD, fx->text, later, 0), 0);
	assert_int_equal(tly_kcache__key_file(&other, fx->text, NULL), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &other), -ESTALE);
	tly_symtab__exit(&t);
}

/* An ELF file's table (whole, with its segments) read back as the loader made it, and
 * only under its key: the file's and its debug file's identity. */
static void elf_table(void **state)
{
	struct fixture *fx = *state;
	struct tly_symtab t = { 0 }, u = { 0 };
	struct tly_kcache_key key, other;
	char debug[160];

	assert_int_equal(tly_symtab__add(&t, 0x2000, 0x40, "main", 4, 2), 0);
	assert_int_equal(tly_symtab__add(&t, 0x1000, 0x800, "outer", 5, 2), 0);
	assert_int_equal(tly_symtab__add(&t, 0x1100, 0x10, "inner", 5, 0), 0);
	assert_int_equal(tly_symtab__add(&t, 0x1100, 0x10, "inner_alias", 11, 1), 0);
	tly_symtab__finish(&t);
	t.segs = calloc(2, sizeof(*t.segs));
	assert_non_null(t.segs);
	t.segs[0].offset = 0;
	t.segs[0].vaddr = 0x400000;
	t.segs[0].filesz = 0x1000;
	t.segs[1].offset = 0x1000;
	t.segs[1].vaddr = 0x401000;
	t.segs[1].filesz = 0x2000;
	t.nr_segs = 2;
	snprintf(debug, sizeof(debug), "%s/debug", fx->dir);
	write_text(debug, "not really ELF");
	assert_int_equal(tly_kcache__key_file(&key, fx->text, debug), 0);
	assert_int_equal(tly_kcache__write(fx->cache, &key, &t, true), 0);
	assert_int_equal(tly_kcache__load(&u, fx->cache, &key), 0);
	assert_int_equal(u.nr, t.nr);
	for (size_t i = 0; i < t.nr; i++) {
		assert_true(u.syms[i].start == t.syms[i].start);
		assert_true(u.syms[i].size == t.syms[i].size);
		assert_string_equal(u.syms[i].name, t.syms[i].name);
	}
	assert_int_equal(u.nr_segs, 2);
	assert_true(tly_symtab__offset_to_addr(&u, 0x1010) == 0x401010);
	/* nested symbols are found as in the table made by the loader */
	for (uint64_t a = 0xff0; a < 0x2050; a += 8) {
		const struct tally_symbol *x = tly_symtab__find(&t, a), *y = tly_symtab__find(&u, a);

		assert_true(!x == !y);
		if (x)
			assert_string_equal(x->name, y->name);
	}
	tly_symtab__exit(&u);
	/* without the debug file, or with another one: another key */
	assert_int_equal(tly_kcache__key_file(&other, fx->text, NULL), 0);
	assert_int_equal(tly_kcache__load(&u, fx->cache, &other), -ESTALE);
	write_text(debug, "another debug file");
	assert_int_equal(tly_kcache__key_file(&other, fx->text, debug), 0);
	assert_int_equal(tly_kcache__load(&u, fx->cache, &other), -ESTALE);
	assert_int_equal(u.nr, 0);
	/* a kernel image table is no file's whole table */
	tly_symtab__exit(&t);
	assert_int_equal(tly_symtab__load_kallsyms(&t, fx->text), 0);
	assert_int_equal(tly_kcache__write(fx->cache, &key, &t, false), 0);
	assert_int_equal(tly_kcache__load(&u, fx->cache, &key), -EBADF);
	tly_symtab__exit(&t);
}

/* Damaged caches and other users' are never read. */
static void damaged(void **state)
{
	struct fixture *fx = *state;
	struct tly_symtab t = { 0 };
	struct tly_kcache_key key;
	struct tly_kcache *c;
	struct stat st;
	char cmd[512];

	assert_int_equal(tly_symtab__load_kallsyms(&t, fx->text), 0);
	assert_int_equal(tly_kcache__key_file(&key, fx->text, NULL), 0);
	assert_int_equal(tly_kcache__write(fx->cache, &key, &t, true), 0);
	assert_int_equal(stat(fx->cache, &st), 0);
	assert_int_equal(st.st_mode & 077, 0);

	/* writable by others */
	assert_int_equal(chmod(fx->cache, 0666), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), -EBADF);
	assert_int_equal(chmod(fx->cache, 0600), 0);
	/* cut short */
	assert_int_equal(truncate(fx->cache, st.st_size - 1), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), -EBADF);
	assert_int_equal(truncate(fx->cache, 100), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), -EBADF);
	/* not a cache */
	snprintf(cmd, sizeof(cmd), "head -c 9000 /dev/urandom > '%s'", fx->cache);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), -EBADF);
	/* a directory */
	assert_int_equal(unlink(fx->cache), 0);
	assert_int_equal(mkdir(fx->cache, 0700), 0);
	assert_int_equal(tly_kcache__open(&c, fx->cache, &key), -EBADF);
	assert_null(c);
	assert_int_equal(rmdir(fx->cache), 0);
	/* nothing worth keeping: no file */
	tly_symtab__exit(&t);
	assert_int_equal(tly_kcache__write(fx->cache, &key, &t, true), -ENODATA);
	assert_int_equal(access(fx->cache, F_OK), -1);
	tly_kcache__delete(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(proc_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(file_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(elf_table, setup, teardown),
		cmocka_unit_test_setup_teardown(damaged, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
