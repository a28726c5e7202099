/*
 * kallsyms tables: the chunked, many-worker load (tly_kload) gives the same table as
 * one front-to-back read through a pipe, whatever the chunk size and the number of
 * workers; and its errors (no file, no symbol lines, hidden addresses).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal/symbols.h"

struct text {
	char *s;
	size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		assert_true(n >= 0);
		if (t->len + (size_t)n < t->cap)
			break;
		t->cap = t->cap ? t->cap * 2 + (size_t)n : 4096;
		t->s = realloc(t->s, t->cap);
		assert_non_null(t->s);
	}
	t->len += (size_t)n;
}

/* A kallsyms text with what the parser must get right at any cut: aliases (perf shows
 * the last), data symbols (skipped), module symbols, lines it must skip (blank, no
 * name, garbage), long names, a line longer than a chunk's first read, and, unless
 * ended, a last line without its newline. */
static void kallsyms_text(struct text *t, unsigned n, bool ended)
{
	uint64_t a = 0xffffffff81000000ull;

	for (unsigned i = 0; i < n; i++) {
		switch (i % 11) {
		case 0:
			put(t, "%016llx T alias_a_%u\n%016llx t alias_b_%u\n", (unsigned long long)a, i,
			    (unsigned long long)a, i);
			break;
		case 1:
			put(t, "%016llx d data_%u\n", (unsigned long long)a, i);
			break;
		case 2:
			put(t, "%016llx t mod_fn_%u\t[mod%u]\n", (unsigned long long)a, i, i % 3);
			break;
		case 3:
			put(t, "\n%016llx T \nnot a line at all\n", (unsigned long long)a);
			break;
		case 4:
			put(t, "%016llx W weak_%u\n", (unsigned long long)a, i);
			break;
		case 5:
			put(t, "%016llx T long_", (unsigned long long)a);
			for (unsigned j = 0; j < 40; j++)
				put(t, "name%u_", j);
			put(t, "%u", i);
			/* once, a line longer than a chunk's first read whose middle, read
			 * as a line of its own, would be symbols */
			for (unsigned j = 0; i == 5 && j < 1500; j++)
				put(t, "%s", j ? " 1 T x" : "\t[");
			put(t, "%s", i == 5 ? "]\n" : "\n");
			break;
		default:
			put(t, "%016llx %c fn_%u\n", (unsigned long long)a, i & 1 ? 't' : 'T', i);
		}
		a += 16 + (i % 7) * 8;
	}
	if (!ended)
		put(t, "%016llx T last_unended", (unsigned long long)a);
}

static char *write_tmp(const struct text *t)
{
	char *path = strdup("/tmp/tally-test-kallsyms.XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, t->s, t->len), (ssize_t)t->len);
	close(fd);
	return path;
}

struct feed {
	int fd;
	const struct text *t;
};

static void *feed_fn(void *arg)
{
	struct feed *f = arg;
	size_t off = 0;

	while (off < f->t->len) {
		ssize_t w = write(f->fd, f->t->s + off, f->t->len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

/* The reference: the text read front to back from a pipe (not a regular file). */
static int load_from_pipe(struct tly_symtab *ref, const struct text *t)
{
	int p[2];
	char path[64];
	pthread_t tid;
	struct feed f;
	int ret;

	assert_int_equal(pipe(p), 0);
	f.fd = p[1];
	f.t = t;
	assert_int_equal(pthread_create(&tid, NULL, feed_fn, &f), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	ret = tly_symtab__load_kallsyms(ref, path);
	pthread_join(tid, NULL);
	close(p[0]);
	return ret;
}

static void *work_fn(void *k)
{
	tly_kload__work(k);
	return NULL;
}

static int load_chunked(struct tly_symtab *t, const char *path, uint64_t chunk, int workers)
{
	struct tly_kload *k;
	pthread_t tid[4];
	int ret = tly_kload__new(&k, t, path, chunk);

	if (ret)
		return ret;
	for (int i = 1; i < workers; i++)
		assert_int_equal(pthread_create(&tid[i], NULL, work_fn, k), 0);
	tly_kload__work(k);
	for (int i = 1; i < workers; i++)
		pthread_join(tid[i], NULL);
	return tly_kload__end(k, true);
}

static void assert_same_table(const struct tly_symtab *a, const struct tly_symtab *b,
			      uint64_t chunk, int workers)
{
	if (a->nr != b->nr)
		fail_msg("chunk %llu, %d workers: %zu symbols, not %zu",
			 (unsigned long long)chunk, workers, a->nr, b->nr);
	for (size_t i = 0; i < a->nr; i++) {
		if (a->syms[i].start != b->syms[i].start || a->syms[i].size != b->syms[i].size ||
		    strcmp(a->syms[i].name, b->syms[i].name))
			fail_msg("chunk %llu, %d workers, symbol %zu: %s %llx+%llx, not %s %llx+%llx",
				 (unsigned long long)chunk, workers, i, a->syms[i].name,
				 (unsigned long long)a->syms[i].start,
				 (unsigned long long)a->syms[i].size, b->syms[i].name,
				 (unsigned long long)b->syms[i].start,
				 (unsigned long long)b->syms[i].size);
	}
}

static void check_text(const struct text *t, const uint64_t *chunks, size_t nchunks)
{
	struct tly_symtab ref = { 0 };
	char *path = write_tmp(t);

	assert_int_equal(load_from_pipe(&ref, t), 0);
	for (size_t c = 0; c < nchunks; c++) {
		for (int w = 1; w <= 3; w++) {
			struct tly_symtab got = { 0 };

			assert_int_equal(load_chunked(&got, path, chunks[c], w), 0);
			assert_same_table(&got, &ref, chunks[c], w);
			tly_symtab__exit(&got);
		}
	}
	unlink(path);
	free(path);
	tly_symtab__exit(&ref);
}

/* Every cut of a small text, through tiny chunks, and chunks that end just before,
 * at and just after the start of the long line (the line before ends a chunk's reads). */
static void chunks_small(void **state)
{
	uint64_t chunks[] = { 1, 2, 3, 5, 7, 16, 33, 64, 100, 4096, 0, 0, 0, 0 };
	struct text t = { 0 };

	(void)state;
	for (int ended = 0; ended <= 1; ended++) {
		t.len = 0;
		kallsyms_text(&t, 60, ended);
		const char *at = strstr(t.s, "\t[ 1 T x");
		assert_non_null(at);
		while (at > t.s && at[-1] != '\n')
			at--;
		chunks[11] = (uint64_t)(at - t.s) - 1;
		chunks[12] = (uint64_t)(at - t.s);
		chunks[13] = (uint64_t)(at - t.s) + 1;
		check_text(&t, chunks, sizeof(chunks) / sizeof(chunks[0]));
	}
	free(t.s);
}

/* A text of more than one read buffer, in chunks that are not a divisor of it. */
static void chunks_large(void **state)
{
	static const uint64_t chunks[] = { 4093, 65536, 100000, 0 };
	struct text t = { 0 };
	struct tly_symtab ref = { 0 };

	(void)state;
	kallsyms_text(&t, 40000, true);
	assert_true(t.len > (1u << 19));
	check_text(&t, chunks, sizeof(chunks) / sizeof(chunks[0]));
	/* and what it holds: the last alias of an address, no data symbols, sizes up to
	 * the next symbol */
	assert_int_equal(load_from_pipe(&ref, &t), 0);
	const struct tally_symbol *s = tly_symtab__find(&ref, 0xffffffff81000000ull);
	assert_non_null(s);
	assert_string_equal(s->name, "alias_b_0");
	assert_int_equal(s->size, 16 + 16 + 8);	/* fn_1 is data: to mod_fn_2 */
	s = tly_symtab__find(&ref, 0xffffffff81000000ull + 16 + 8);
	assert_string_equal(s->name, "alias_b_0");
	tly_symtab__exit(&ref);
	free(t.s);
}

static uint64_t next_rand(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return *seed >> 33;
}

/* Random kallsyms-like texts: lines of random pieces (addresses of 0 to 16 hex digits,
 * types, names, module suffixes) with random damage (a missing newline, blank lines,
 * stray bytes), chunks of random size, 1 to 3 workers: the same answer and the same
 * table as the pipe. */
static void random_texts(void **state)
{
	static const char *const pieces[] = { "ffffffff8100", "a0", "0", "", " T ", " t ", " W ",
					      " w ", " d ", " b ", "name", "_x", "\t[mod]", "\n",
					      "\n", "\n", " ", "\t", "T", "\n\n" };
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	struct text t = { 0 };
	size_t symbols = 0;

	(void)state;
	for (int round = 0; round < 300; round++) {
		struct tly_symtab ref = { 0 }, got = { 0 };
		size_t lines = next_rand(&seed) % 120;
		uint64_t chunk = 1 + next_rand(&seed) % 300;
		int workers = 1 + (int)(next_rand(&seed) % 3), r0, r1;
		char *path;

		t.len = 0;
		for (size_t i = 0; i < lines; i++) {
			if (next_rand(&seed) % 4) {	/* a well-formed line */
				put(&t, "%llx %c fn%u%s\n",
				    (unsigned long long)(0xffffffff81000000ull + next_rand(&seed) % 4096),
				    "TtWwdb"[next_rand(&seed) % 6], (unsigned)(next_rand(&seed) % 50),
				    next_rand(&seed) % 5 ? "" : "\t[mod]");
				continue;
			}
			for (uint64_t n = 1 + next_rand(&seed) % 6; n; n--)
				put(&t, "%s", pieces[next_rand(&seed) % (sizeof(pieces) / sizeof(*pieces))]);
		}
		r0 = load_from_pipe(&ref, &t);
		path = write_tmp(&t);
		r1 = load_chunked(&got, path, chunk, workers);
		if (r0 != r1)
			fail_msg("round %d (%zu bytes, chunk %llu): %d, not %d", round, t.len,
				 (unsigned long long)chunk, r1, r0);
		assert_same_table(&got, &ref, chunk, workers);
		symbols += ref.nr;
		tly_symtab__exit(&ref);
		tly_symtab__exit(&got);
		unlink(path);
		free(path);
	}
	assert_true(symbols > 300 * 10);	/* the texts did hold symbols */
	free(t.s);
}

static void errors(void **state)
{
	struct text t = { 0 };
	struct tly_symtab tab = { 0 };
	struct tly_kload *k;
	char *path;

	(void)state;
	assert_int_equal(tly_symtab__load_kallsyms(&tab, "/nonexistent/kallsyms"), -ENOENT);
	assert_int_equal(tly_kload__new(&k, &tab, "/nonexistent/kallsyms", 0), -ENOENT);
	assert_null(k);
	assert_int_equal(tly_kload__end(NULL, true), -EINVAL);

	/* empty, and no symbol line: nothing to say about kptr_restrict */
	put(&t, "%s", "");
	path = write_tmp(&t);
	assert_int_equal(tly_symtab__load_kallsyms(&tab, path), -ENODATA);
	unlink(path);
	free(path);
	put(&t, "nothing here\n\n");
	path = write_tmp(&t);
	assert_int_equal(load_chunked(&tab, path, 3, 2), -ENODATA);
	assert_int_equal(tab.nr, 0);
	unlink(path);
	free(path);

	/* every address 0: kptr_restrict */
	t.len = 0;
	for (int i = 0; i < 2000; i++)
		put(&t, "0000000000000000 T hidden_%d\n", i);
	path = write_tmp(&t);
	assert_int_equal(tly_symtab__load_kallsyms(&tab, path), -EPERM);
	assert_int_equal(load_chunked(&tab, path, 1000, 2), -EPERM);
	assert_null(tab.syms);

	/* a loader ended before its work was done (a caller's bug): told, nothing kept */
	assert_int_equal(tly_kload__new(&k, &tab, path, 1000), 0);
	assert_int_equal(tly_kload__end(k, true), -EINVAL);
	assert_null(tab.syms);
	/* ended without keeping: released */
	assert_int_equal(tly_kload__new(&k, &tab, path, 1000), 0);
	tly_kload__work(k);
	assert_int_equal(tly_kload__end(k, false), -EPERM);
	assert_null(tab.syms);
	unlink(path);
	free(path);
	free(t.s);
}

/* C++ names as perf 6.1 shows them (its demangler asked for no parameters; binutils'
 * c++filt -p prints the same but for std:: abbreviations): no parameter list, return
 * type, "const" or clone suffix of the function itself, but the enclosing function of a
 * local name (a lambda) keeps its own, "const" included. libstdc++'s __cxa_demangle is
 * dlopened: without it nothing is demangled, and the cases are not checked. */
static void demangle_as_perf(void **state)
{
	static const char *const cases[][2] = {
		{ "_ZZNK11__sanitizer25SuspendedThreadsListLinux17GetRegistersAndSPEmPNS_18InternalMmapVectorImEEPmENKUlmE_clEm",
		  "__sanitizer::SuspendedThreadsListLinux::GetRegistersAndSP(unsigned long, "
		  "__sanitizer::InternalMmapVector<unsigned long>*, unsigned long*) "
		  "const::{lambda(unsigned long)#1}::operator()" },
		{ "_ZZ11apply_twiceIZ4mainEUllE0_ElT_lENKUllE_clEl.constprop.0",
		  "apply_twice<main::{lambda(long)#2}>(main::{lambda(long)#2}, long)::{lambda(long)#1}::operator()" },
		{ "_Z4tmplILi7EEll", "tmpl<7>" },
		{ "_ZNK5outer5inner3BoxIdE4spinEl.isra.0", "outer::inner::Box<double>::spin" },
		{ "_ZN5outer7CounterpLEl.isra.0", "outer::Counter::operator+=" },
		{ "_ZNK4llvm2cl10SubCommandcvbEv", "llvm::cl::SubCommand::operator bool" },
		{ "_ZN4llvm11erase_valueINS_13TinyPtrVectorIPN5clang6ModuleEEEDnEEvRT_T0_",
		  "llvm::erase_value<llvm::TinyPtrVector<clang::Module*>, decltype(nullptr)>" },
	};
	char *probe = tly_demangle("_Z4tmplILi7EEll");

	(void)state;
	if (!probe) {
		skip();
		return;
	}
	free(probe);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = tly_demangle(cases[i][0]);

		assert_non_null(d);
		assert_string_equal(d, cases[i][1]);
		free(d);
	}
	assert_null(tly_demangle("c_function"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(demangle_as_perf),
		cmocka_unit_test(chunks_small),
		cmocka_unit_test(chunks_large),
		cmocka_unit_test(random_texts),
		cmocka_unit_test(errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
