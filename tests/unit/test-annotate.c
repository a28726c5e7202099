/*
 * annotate's library parts: capstone decoding (targets, returns, instruction-pointer
 * references, the lengths of encodings capstone 4 does not know), machine code and
 * symbols of this test's own ELF file, its DWARF lines and source, the annotate shares
 * of samples placed on its functions, and a listing of one of them.
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
#include <elf.h>

#include "tally/annotate.h"
#include "tally/disasm.h"
#include "tally/listing.h"
#include "tally/session.h"
#include "tally/srcline.h"
#include "internal/symbols.h"

/* Functions of this file the tests find in its own ELF: marker_fn is all on line
 * MARKER_LINE. */
__attribute__((noinline, used)) int marker_fn(int x);
enum { MARKER_LINE = __LINE__ + 1 };
__attribute__((noinline, used)) int marker_fn(int x) { return x * 3 + (x >> 2); }

__attribute__((noinline, used)) int other_fn(int x);
__attribute__((noinline, used)) int other_fn(int x)
{
	return marker_fn(x) + 7;
}

static char self[4096];

static void find_self(void)
{
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	assert_true(n > 0);
	self[n] = 0;
}

/* ---- decoding --------------------------------------------------------------------- */

static void decode(struct tally_disasm *d, const uint8_t *b, size_t n, uint64_t addr,
		   struct tally_insn *in)
{
	size_t got = tally_disasm__one(d, b, n, addr, in);

	assert_int_equal(got, in->size);
	assert_int_equal(in->addr, addr);
}

static void x86_att(void **state)
{
	struct tally_disasm *d;
	struct tally_insn in;
	static const uint8_t push[] = { 0x55 }, ret[] = { 0xc3 };
	static const uint8_t je[] = { 0x74, 0x24 };
	static const uint8_t call[] = { 0xe8, 0x10, 0x00, 0x00, 0x00 };
	static const uint8_t riprel[] = { 0x48, 0x8b, 0x05, 0xa4, 0x2e, 0x00, 0x00 };
	static const uint8_t nop[] = { 0x0f, 0x1f, 0x00 };

	(void)state;
	assert_int_equal(tally_disasm__new(&d, EM_X86_64, true, TALLY_DISASM_ATT), 0);
	decode(d, push, sizeof(push), 0x11a9, &in);
	assert_int_equal(in.size, 1);
	assert_int_equal(in.kind, TALLY_INSN_OTHER);
	assert_string_equal(in.operands, "%rbp");
	decode(d, ret, sizeof(ret), 0x11e5, &in);
	assert_int_equal(in.kind, TALLY_INSN_RET);
	decode(d, je, sizeof(je), 0x11b7, &in);
	assert_int_equal(in.kind, TALLY_INSN_JUMP);
	assert_true(in.has_target);
	assert_int_equal(in.target, 0x11dd);
	decode(d, call, sizeof(call), 0x1000, &in);
	assert_int_equal(in.kind, TALLY_INSN_CALL);
	assert_true(in.has_target);
	assert_int_equal(in.target, 0x1015);
	decode(d, riprel, sizeof(riprel), 0x11ad, &in);
	assert_int_equal(in.size, 7);
	assert_true(in.has_pc_ref);
	assert_int_equal(in.pc_ref, 0x4058);
	assert_false(in.has_target);
	decode(d, nop, sizeof(nop), 0x2000, &in);
	assert_int_equal(in.kind, TALLY_INSN_NOP);
	/* nothing to decode */
	assert_int_equal(tally_disasm__one(d, push, 0, 0, &in), 0);
	tally_disasm__delete(d);

	assert_int_equal(tally_disasm__new(&d, EM_X86_64, true, TALLY_DISASM_INTEL), 0);
	decode(d, push, sizeof(push), 0x11a9, &in);
	assert_string_equal(in.operands, "rbp");
	tally_disasm__delete(d);
	tally_disasm__delete(NULL);
}

/* capstone 4 decodes no AVX-512 compare into mask registers nor rdpkru: their lengths
 * still come out right, so the instructions after them stay in step */
static void x86_unknown_lengths(void **state)
{
	struct tally_disasm *d;
	struct tally_insn in;
	static const uint8_t vpcmpeqb[] = { 0x62, 0xf3, 0x75, 0x22, 0x3f, 0x0e, 0x00, 0x55 };
	static const uint8_t vptestmb[] = { 0x62, 0xb2, 0x75, 0x20, 0x26, 0xd1, 0x55 };
	static const uint8_t rdpkru[] = { 0x0f, 0x01, 0xee, 0x55 };
	static const uint8_t vzeroupper[] = { 0xc5, 0xf8, 0x77, 0x55 };
	static const uint8_t bad[] = { 0x06, 0x55 };	/* push %es: no such thing in 64-bit */

	(void)state;
	assert_int_equal(tally_disasm__new(&d, EM_X86_64, true, TALLY_DISASM_ATT), 0);
	decode(d, vpcmpeqb, sizeof(vpcmpeqb), 0x16713e, &in);
	assert_int_equal(in.size, 7);
	decode(d, vptestmb, sizeof(vptestmb), 0x167138, &in);
	assert_int_equal(in.size, 6);
	decode(d, rdpkru, sizeof(rdpkru), 0x109332, &in);
	assert_int_equal(in.size, 3);
	decode(d, vzeroupper, sizeof(vzeroupper), 0, &in);
	assert_int_equal(in.size, 3);
	decode(d, bad, sizeof(bad), 0, &in);
	assert_int_equal(in.size, 1);
	assert_int_equal(in.kind, TALLY_INSN_INVALID);
	assert_string_equal(in.mnemonic, ".byte");
	tally_disasm__delete(d);
}

/* Random bytes: every step decodes something of 1 to 16 bytes inside the buffer. */
static void random_bytes(void **state)
{
	static const unsigned machines[] = { EM_X86_64, EM_386, EM_AARCH64 };
	uint8_t buf[8192];
	struct tally_insn in;
	uint32_t x = 12345;

	(void)state;
	for (size_t m = 0; m < sizeof(machines) / sizeof(machines[0]); m++) {
		struct tally_disasm *d;

		assert_int_equal(tally_disasm__new(&d, machines[m], true, TALLY_DISASM_ATT), 0);
		for (int round = 0; round < 4; round++) {
			for (size_t i = 0; i < sizeof(buf); i++) {
				x = x * 1103515245u + 12345u;
				buf[i] = (uint8_t)(x >> 16);
			}
			for (size_t at = 0; at < sizeof(buf);) {
				size_t n = tally_disasm__one(d, buf + at, sizeof(buf) - at, 0x1000 + at, &in);

				assert_true(n >= 1 && n <= 16 && n <= sizeof(buf) - at);
				at += n;
			}
		}
		tally_disasm__delete(d);
	}
}

static void machines_and_styles(void **state)
{
	struct tally_disasm *d;
	enum tally_disasm_syntax s;

	(void)state;
	assert_int_equal(tally_disasm__new(&d, EM_AARCH64, true, TALLY_DISASM_ATT), 0);
	tally_disasm__delete(d);
	assert_int_equal(tally_disasm__new(&d, EM_SPARC, false, TALLY_DISASM_ATT), -ENOTSUP);
	assert_null(d);
	assert_int_equal(tally_disasm_syntax_parse("intel", &s), 0);
	assert_int_equal(s, TALLY_DISASM_INTEL);
	assert_int_equal(tally_disasm_syntax_parse("att", &s), 0);
	assert_int_equal(s, TALLY_DISASM_ATT);
	assert_int_equal(tally_disasm_syntax_parse("masm", &s), -EINVAL);
}

/* ---- this test's ELF -------------------------------------------------------------- */

static void code_of_self(void **state)
{
	struct tally_code *c;
	uint64_t addr, start;
	const uint8_t *b;
	size_t n;
	const char *name;
	char tmp[] = "/tmp/tally-annotate-XXXXXX";
	int fd;

	(void)state;
	find_self();
	assert_int_equal(tally_code__open(&c, self), 0);
	assert_true(tally_code__is_64bit(c) == (sizeof(void *) == 8));
	assert_int_equal(tally_code__symbol_addr(c, "marker_fn", &addr), 0);
	assert_int_equal(tally_code__symbol_addr(c, "no_such_function_here", &start), -ENOENT);
	/* the file holds the bytes this process runs */
	n = tally_code__bytes(c, addr, 8, &b);
	assert_int_equal(n, 8);
	assert_memory_equal(b, (const void *)(uintptr_t)marker_fn, 8);
	name = tally_code__symbol(c, addr + 1, &start);
	assert_non_null(name);
	assert_string_equal(name, "marker_fn");
	assert_int_equal(start, addr);
	assert_string_equal(tally_code__section(c, addr), ".text");
	assert_int_equal(tally_code__offset_to_addr(c, tally_code__addr_to_offset(c, addr)), addr);
	assert_int_equal(tally_code__bytes(c, UINT64_MAX - 64, 8, &b), 0);	/* in no segment */
	tally_code__delete(c);
	tally_code__delete(NULL);

	assert_int_equal(tally_code__open(&c, "/nonexistent/binary"), -ENOENT);
	assert_null(c);
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	assert_int_equal(tally_code__open(&c, tmp), -ENOEXEC);
	assert_int_equal(tally_code__open(&c, "/dev/null"), -ENOEXEC);
	unlink(tmp);
}

/* An image in memory: this process's vdso (the running kernel's). */
static void code_in_memory(void **state)
{
	struct tally_code *c;
	static const char junk[64] = "not an ELF image";
	const uint8_t *id, *b, *base;
	const void *image;
	size_t size;
	uint64_t addr;

	(void)state;
	assert_int_equal(tally_code__open_mem(&c, junk, sizeof(junk)), -ENOEXEC);
	assert_null(c);
	if (tally_vdso_image(&image, &size))
		skip();
	base = image;
	assert_int_equal(tally_code__open_mem(&c, image, size), 0);
	assert_int_equal(tally_code__symbol_addr(c, "__vdso_clock_gettime", &addr), 0);
	assert_true(tally_code__bytes(c, addr, 4, &b) == 4);
	assert_memory_equal(b, (const uint8_t *)base + tally_code__addr_to_offset(c, addr), 4);
	assert_true(tally_code__build_id(c, &id) == 0 || tally_code__build_id(c, &id) == 20);
	tally_code__delete(c);
}

static void lines_of_self(void **state)
{
	struct tally_code *c;
	struct tally_lines *l;
	struct tally_line ln;
	struct tally_sources *src;
	const char *text;
	size_t len;
	uint64_t addr;

	(void)state;
	find_self();
	assert_int_equal(tally_code__open(&c, self), 0);
	assert_int_equal(tally_code__symbol_addr(c, "marker_fn", &addr), 0);
	assert_int_equal(tally_lines__open(&l, self, NULL), 0);
	assert_int_equal(tally_lines__find(l, addr, &ln), 0);
	assert_int_equal(ln.line, MARKER_LINE);
	assert_non_null(ln.file);
	assert_non_null(strstr(ln.file, "test-annotate.c"));
	assert_non_null(ln.function);
	assert_string_equal(ln.function, "marker_fn");
	assert_string_equal(tally_lines__symbol_name(l, addr), "marker_fn");
	assert_int_equal(tally_lines__find(l, 1, &ln), -ENOENT);

	assert_int_equal(tally_sources__new(&src), 0);
	assert_int_equal(tally_lines__find(l, addr, &ln), 0);
	if (tally_sources__nr_lines(src, ln.file)) {	/* the source is where it was built */
		assert_int_equal(tally_sources__line(src, ln.file, MARKER_LINE, &text, &len), 0);
		assert_true(len > 0 && memchr(text, '{', len));
		assert_int_equal(tally_sources__line(src, ln.file, 1000000, &text, &len), -ERANGE);
	}
	assert_int_equal(tally_sources__line(src, "/nonexistent.c", 1, &text, &len), -ENOENT);
	tally_sources__delete(src);
	tally_lines__delete(l);
	tally_code__delete(c);

	assert_int_equal(tally_lines__open(&l, "/nonexistent/binary", NULL), -ENOENT);
}

/* ---- shares and listings ---------------------------------------------------------- */

static union {
	struct perf_event_header hdr;
	uint8_t b[4096];
	uint64_t align;
} rec;

/* An MMAP or MMAP2 record of name at start .. start + len, fed to s. */
static void feed_mmap(struct tally_session *s, uint32_t type, uint16_t misc, uint32_t pid,
		      uint64_t start, uint64_t len, const char *name)
{
	uint64_t v[3] = { start, len, 0 };
	size_t at = type == PERF_RECORD_MMAP2 ? 8 + 64 : 40;

	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = type;
	rec.hdr.misc = misc;
	memcpy(rec.b + 8, &pid, 4);
	memcpy(rec.b + 12, &pid, 4);
	memcpy(rec.b + 16, v, 24);
	strcpy((char *)rec.b + at, name);
	rec.hdr.size = (uint16_t)((at + strlen(name) + 1 + 7) & ~7u);
	assert_int_equal(tally_session__process(s, &rec.hdr), 0);
}

/* This test's file mapped at 0x400000 in process 42. */
static void map_self(struct tally_session *s)
{
	struct stat st;

	assert_int_equal(stat(self, &st), 0);
	feed_mmap(s, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 42, 0x400000,
		  ((uint64_t)st.st_size + 4095) & ~4095ull, self);
}

/* The ip in process 42 of ELF address addr + off. */
static void resolve(struct tally_session *s, struct tally_code *c, uint64_t addr, uint64_t off,
		    struct tally_addr_loc *loc)
{
	uint64_t ip = 0x400000 + tally_code__addr_to_offset(c, addr) + off;

	assert_int_equal(tally_session__resolve(s, 42, 42, PERF_RECORD_MISC_USER, ip, loc), 0);
	assert_non_null(loc->sym);
}

static void shares(void **state)
{
	struct tally_session *s;
	struct tally_code *c;
	struct tally_annotate *a;
	struct tally_annotated **v;
	struct tally_addr_loc m, m1, o, none = { 0 };
	struct tally_annotate_count t;
	uint64_t maddr, oaddr;
	size_t nr;

	(void)state;
	find_self();
	assert_int_equal(tally_code__open(&c, self), 0);
	assert_int_equal(tally_code__symbol_addr(c, "marker_fn", &maddr), 0);
	assert_int_equal(tally_code__symbol_addr(c, "other_fn", &oaddr), 0);
	assert_int_equal(tally_session__new(&s, NULL), 0);
	map_self(s);
	resolve(s, c, maddr, 0, &m);
	resolve(s, c, maddr, 1, &m1);
	resolve(s, c, oaddr, 0, &o);
	assert_string_equal(m.sym->name, "marker_fn");
	assert_string_equal(o.sym->name, "other_fn");

	assert_int_equal(tally_annotate__new(&a, 0), -EINVAL);
	assert_int_equal(tally_annotate__new(&a, 2), 0);
	/* event 0: marker_fn 3 samples (periods 10, 10, 5), other_fn 2 (20 + 20), one with no
	 * symbol; event 1: other_fn 1 */
	assert_int_equal(tally_annotate__add(a, 0, &m, 10), 0);
	assert_int_equal(tally_annotate__add(a, 0, &m, 10), 0);
	assert_int_equal(tally_annotate__add(a, 0, &m1, 5), 0);
	assert_int_equal(tally_annotate__add(a, 0, &o, 20), 0);
	assert_int_equal(tally_annotate__add(a, 0, &o, 20), 0);
	assert_int_equal(tally_annotate__add(a, 0, &none, 7), 0);
	assert_int_equal(tally_annotate__add(a, 1, &o, 3), 0);
	assert_int_equal(tally_annotate__add(a, 2, &o, 3), -EINVAL);

	t = tally_annotate__event_total(a, 0);
	assert_int_equal(t.nr_samples, 6);
	assert_int_equal(t.period, 72);
	assert_int_equal(tally_annotate__symbols(a, 0, &v, &nr), 0);
	assert_int_equal(nr, 2);
	/* hottest first: other_fn (40) before marker_fn (25) */
	assert_string_equal(tally_annotated__symbol(v[0])->name, "other_fn");
	assert_string_equal(tally_annotated__symbol(v[1])->name, "marker_fn");
	assert_ptr_equal(tally_annotated__dso(v[1]), m.dso);
	t = tally_annotated__total(v[1], 0);
	assert_int_equal(t.nr_samples, 3);
	assert_int_equal(t.period, 25);
	t = tally_annotated__range(v[1], 0, 0, 1);
	assert_int_equal(t.nr_samples, 2);
	assert_int_equal(t.period, 20);
	t = tally_annotated__range(v[1], 0, 1, 1000);
	assert_int_equal(t.period, 5);
	t = tally_annotated__range(v[1], 1, 0, 1000);
	assert_int_equal(t.nr_samples, 0);
	free(v);
	assert_int_equal(tally_annotate__symbols(a, 1, &v, &nr), 0);
	assert_int_equal(nr, 1);
	free(v);
	tally_annotate__delete(a);
	tally_annotate__delete(NULL);
	tally_session__delete(s);
	tally_code__delete(c);
}

static void listing(void **state)
{
	struct tally_session *s;
	struct tally_code *c;
	struct tally_lister *l;
	struct tally_listing *x;
	struct tally_lister_opts lo = { .syntax = TALLY_DISASM_ATT, .source = true, .lines = true };
	struct tally_addr_loc m;
	uint64_t maddr;
	char why[512];
	bool located = false, call = false;
	size_t insns = 0;

	(void)state;
	find_self();
	assert_int_equal(tally_code__open(&c, self), 0);
	assert_int_equal(tally_code__symbol_addr(c, "marker_fn", &maddr), 0);
	assert_int_equal(tally_session__new(&s, NULL), 0);
	map_self(s);
	resolve(s, c, maddr, 0, &m);
	assert_int_equal(tally_lister__new(&l, s, &lo), 0);
	assert_int_equal(tally_lister__list(l, m.dso, m.sym, &x, why, sizeof(why)), 0);
	assert_int_equal(x->start, maddr);
	assert_int_equal(x->end - x->start, m.sym->size);
	assert_string_equal(x->section, ".text");
	assert_string_equal(x->name, "marker_fn");
	for (size_t i = 0; i < x->nr_rows; i++) {
		const struct tally_row *r = &x->rows[i];

		if (r->kind == TALLY_ROW_LOCATION && r->line == MARKER_LINE)
			located = true;
		if (r->kind == TALLY_ROW_INSN) {
			assert_int_equal(r->offset, r->insn.addr - maddr);
			assert_true(r->offset < m.sym->size);
			insns++;
		}
	}
	assert_true(located);
	assert_int_equal(insns, x->nr_insns);
	assert_true(insns > 0);
	tally_listing__delete(x);

	/* other_fn calls marker_fn: the call names it */
	assert_int_equal(tally_code__symbol_addr(c, "other_fn", &maddr), 0);
	resolve(s, c, maddr, 0, &m);
	assert_int_equal(tally_lister__list(l, m.dso, m.sym, &x, why, sizeof(why)), 0);
	for (size_t i = 0; i < x->nr_rows; i++) {
		const struct tally_row *r = &x->rows[i];

		if (r->kind == TALLY_ROW_INSN && r->insn.kind == TALLY_INSN_CALL && r->target.sym &&
		    !strcmp(r->target.sym, "marker_fn") && r->target.off == 0)
			call = true;
	}
	assert_true(call);
	tally_listing__delete(x);
	tally_listing__delete(NULL);
	tally_lister__delete(l);
	tally_session__delete(s);
	tally_code__delete(c);
}

/* A dso with no file behind it says why it cannot be listed. */
static void listing_errors(void **state)
{
	struct tally_session *s;
	struct tally_lister *l;
	struct tally_listing *x;
	struct tally_lister_opts lo = { .lines = true, .kcore = "/nonexistent/kcore" };
	struct tally_addr_loc k;
	struct tally_symbol ksym = { .start = 0xffffffff81000000ull, .size = 16, .name = "fake" };
	char why[512];

	(void)state;
	assert_int_equal(tally_session__new(&s, &(struct tally_session_opts){ .no_symbols = true }), 0);
	feed_mmap(s, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, UINT32_MAX, 0xffffffff81000000ull,
		  0x1000000, "[kernel.kallsyms]_text");
	assert_int_equal(tally_session__resolve(s, -1, 0, PERF_RECORD_MISC_KERNEL,
						0xffffffff81000010ull, &k), 0);
	assert_non_null(k.dso);
	assert_true(tally_dso__is_kernel(k.dso));
	assert_int_equal(tally_lister__new(&l, s, &lo), 0);
	assert_true(tally_lister__list(l, k.dso, &ksym, &x, why, sizeof(why)) < 0);
	assert_null(x);
	assert_non_null(strstr(why, "/nonexistent/kcore"));
	assert_non_null(strstr(why, "vmlinux"));
	tally_lister__delete(l);
	tally_session__delete(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(x86_att),
		cmocka_unit_test(x86_unknown_lengths),
		cmocka_unit_test(random_bytes),
		cmocka_unit_test(machines_and_styles),
		cmocka_unit_test(code_of_self),
		cmocka_unit_test(code_in_memory),
		cmocka_unit_test(lines_of_self),
		cmocka_unit_test(shares),
		cmocka_unit_test(listing),
		cmocka_unit_test(listing_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
