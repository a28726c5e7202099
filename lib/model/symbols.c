/*
 * Symbol tables: ELF files through libelf (.symtab, else .dynsym; a separate debug
 * file's .symtab when there is one), /proc/kallsyms, and perf's JIT map files
 * (/tmp/perf-PID.map: "START SIZE name" in hex). Each table is sorted once and
 * searched by binary search; names are kept in one pool.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/symbols.h"
#include "internal/util.h"

void tly_symtab__exit(struct tly_symtab *t)
{
	free(t->syms);
	free(t->pool);
	free(t->segs);
	free(t->bind);
	free(t->blob);
	free(t->index);
	memset(t, 0, sizeof(*t));
}

/* Room for nsyms more symbols and pool more name bytes (capacities double). */
static int symtab_reserve(struct tly_symtab *t, size_t nsyms, size_t pool)
{
	if (t->nr + nsyms > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		if (ncap < t->nr + nsyms)
			ncap = t->nr + nsyms;
		struct tally_symbol *ns = realloc(t->syms, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		t->syms = ns;
		uint8_t *nb = realloc(t->bind, ncap);
		if (!nb)
			return -ENOMEM;
		t->bind = nb;
		t->cap = ncap;
	}
	if (t->pool_len + pool > t->pool_cap) {
		size_t ncap = t->pool_cap ? t->pool_cap * 2 : 4096;
		if (ncap < t->pool_len + pool)
			ncap = t->pool_len + pool;
		char *np = realloc(t->pool, ncap);
		if (!np)
			return -ENOMEM;
		t->pool = np;
		t->pool_cap = ncap;
	}
	return 0;
}

/* Forget the index: the symbols change. */
static void drop_index(struct tly_symtab *t)
{
	free(t->index);
	t->index = NULL;
	t->index_tried = false;
	t->searches = 0;
}

int tly_symtab__add(struct tly_symtab *t, uint64_t start, uint64_t size, const char *name,
		    size_t len, int bind)
{
	/* (a table being loaded has no index and no lookups yet: nothing to drop) */
	if (t->index || t->index_tried || t->searches)
		drop_index(t);
	if ((t->nr == t->cap || t->pool_len + len + 1 > t->pool_cap) && symtab_reserve(t, 1, len + 1))
		return -ENOMEM;
	memcpy(t->pool + t->pool_len, name, len);
	t->pool[t->pool_len + len] = 0;
	/* names are pool offsets until finish() turns them into pointers */
	t->syms[t->nr] = (struct tally_symbol){ .start = start, .size = size,
						.name = (const char *)(uintptr_t)t->pool_len };
	t->bind[t->nr] = (uint8_t)bind;
	t->pool_len += len + 1;
	t->nr++;
	return 0;
}

/* u's symbols into t at symbol at and pool offset pool, both tables not yet finished
 * (names still pool offsets); t has the room. */
static void symtab_copy_in(struct tly_symtab *t, size_t at, size_t pool, const struct tly_symtab *u)
{
	for (size_t i = 0; i < u->nr; i++) {
		t->syms[at + i] = u->syms[i];
		t->syms[at + i].name = (const char *)((uintptr_t)u->syms[i].name + pool);
	}
	if (u->nr)
		memcpy(t->bind + at, u->bind, u->nr);
	if (u->pool_len)
		memcpy(t->pool + pool, u->pool, u->pool_len);
}

static int sym_cmp(const void *a, const void *b)
{
	const struct tally_symbol *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

struct sym_tmp { struct tally_symbol s; uint8_t b; uint32_t idx; };

static int sym_cmp_stable(const void *a, const void *b)
{
	const struct sym_tmp *x = a, *y = b;
	if (x->s.start != y->s.start)
		return x->s.start < y->s.start ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Among symbols at the same address, the one perf would show: with a size, not weak,
 * global, fewer leading underscores, then the longer name. bind 3 means "keep the last
 * one" (kallsyms, where perf shows the last alias listed). */
static bool better(const struct tally_symbol *a, int ba, const struct tally_symbol *b, int bb)
{
	if (ba == 3 || bb == 3)
		return true;
	if (!!a->size != !!b->size)
		return a->size != 0;
	if ((ba == 1) != (bb == 1))
		return bb == 1;
	if ((ba == 2) != (bb == 2))
		return ba == 2;
	size_t ua = strspn(a->name, "_"), ub = strspn(b->name, "_");
	if (ua != ub)
		return ua < ub;
	return strlen(a->name) > strlen(b->name);
}

void tly_symtab__finish(struct tly_symtab *t)
{
	drop_index(t);
	size_t out = 0;

	if (!t->nr) {
		free(t->bind);
		t->bind = NULL;
		return;
	}
	/* already sorted (kallsyms, most symbol tables): choose among aliases in place */
	bool in_order = true;
	for (size_t i = 1; i < t->nr && in_order; i++)
		in_order = t->syms[i - 1].start <= t->syms[i].start;
	if (in_order) {
		for (size_t i = 0; i < t->nr; i++) {
			struct tally_symbol cur = t->syms[i];
			uint8_t b = t->bind[i];
			cur.name = t->pool + (uintptr_t)cur.name;
			if (out && t->syms[out - 1].start == cur.start) {
				if (better(&cur, b, &t->syms[out - 1], t->bind[out - 1])) {
					t->syms[out - 1] = cur;
					t->bind[out - 1] = b;
				}
				continue;
			}
			t->syms[out] = cur;
			t->bind[out] = b;
			out++;
		}
		goto sized;
	}
	/* sort a copy that carries each symbol's binding and table position */
	struct sym_tmp *tmp = malloc(t->nr * sizeof(*tmp));
	if (tmp) {
		for (size_t i = 0; i < t->nr; i++) {
			tmp[i].s = t->syms[i];
			tmp[i].s.name = t->pool + (uintptr_t)t->syms[i].name;
			tmp[i].b = t->bind[i];
			tmp[i].idx = (uint32_t)i;
		}
		/* stable: equal addresses keep their order in the table; kallsyms and most
		 * symbol tables are nearly sorted already */
		bool sorted = true;
		for (size_t i = 1; i < t->nr && sorted; i++)
			sorted = tmp[i - 1].s.start <= tmp[i].s.start;
		if (!sorted)
			qsort(tmp, t->nr, sizeof(*tmp), sym_cmp_stable);
		for (size_t i = 0; i < t->nr; i++) {
			if (out && t->syms[out - 1].start == tmp[i].s.start) {
				if (better(&tmp[i].s, tmp[i].b, &t->syms[out - 1], t->bind[out - 1])) {
					t->syms[out - 1] = tmp[i].s;
					t->bind[out - 1] = tmp[i].b;
				}
				continue;
			}
			t->syms[out] = tmp[i].s;
			t->bind[out] = tmp[i].b;
			out++;
		}
		free(tmp);
	} else {
		for (size_t i = 0; i < t->nr; i++)
			t->syms[i].name = t->pool + (uintptr_t)t->syms[i].name;
		qsort(t->syms, t->nr, sizeof(*t->syms), sym_cmp);
		out = t->nr;
	}
sized:
	t->nr = out;
	/* zero-size symbols reach up to the next one */
	for (size_t i = 0; i < t->nr; i++) {
		if (t->syms[i].size)
			continue;
		if (i + 1 < t->nr)
			t->syms[i].size = t->syms[i + 1].start - t->syms[i].start;
		else
			t->syms[i].size = 0x1000 - (t->syms[i].start & 0xfff);
	}
	free(t->bind);
	t->bind = NULL;
}

/*
 * A large table's lookups cost a cache miss per step of a binary search over all of it
 * (a compiler's 160k symbols: 17 steps). The index cuts the address range into at most
 * half as many buckets as symbols, each knowing its first symbol: a lookup searches its
 * bucket's few neighbours, for 2 bytes a symbol, made once the table has been searched
 * SYMTAB_INDEX_AFTER times (a short file's few lookups pay no memory for it). Without
 * memory for it the search goes over the whole table.
 */
#define SYMTAB_INDEX_MIN 4096
#define SYMTAB_INDEX_AFTER 4096

static void make_index(struct tly_symtab *t)
{
	uint64_t base, span;
	unsigned shift = 0;
	size_t n, i = 0;

	t->index_tried = true;
	if (t->nr < SYMTAB_INDEX_MIN || t->nr >= UINT32_MAX)
		return;
	base = t->syms[0].start;
	span = t->syms[t->nr - 1].start - base;
	while ((span >> shift) >= t->nr / 2)
		shift++;
	n = (size_t)(span >> shift) + 1;
	t->index = malloc((n + 1) * sizeof(*t->index));
	if (!t->index)
		return;
	for (size_t b = 0; b < n; b++) {
		uint64_t from = base + ((uint64_t)b << shift);

		while (i < t->nr && t->syms[i].start < from)
			i++;
		t->index[b] = (uint32_t)i;
	}
	t->index[n] = (uint32_t)t->nr;
	t->index_nr = n;
	t->index_base = base;
	t->index_shift = shift;
}

const struct tally_symbol *tly_symtab__find(struct tly_symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nr;

	if (t->last < t->nr && addr - t->syms[t->last].start < t->syms[t->last].size &&
	    (t->last + 1 == t->nr || addr < t->syms[t->last + 1].start))
		return &t->syms[t->last];

	if (!t->index_tried && ++t->searches >= SYMTAB_INDEX_AFTER)
		make_index(t);
	if (t->index) {
		/* the first symbol past addr lies between its bucket's first and the next's */
		if (addr < t->index_base) {
			hi = 0;
		} else {
			uint64_t b = (addr - t->index_base) >> t->index_shift;

			if (b >= t->index_nr)
				b = t->index_nr - 1;
			lo = t->index[b];
			hi = t->index[b + 1];
		}
	}

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo-1 is the last symbol starting at or below addr; a big one before it may
	 * still cover addr (nested symbols), so look back a little */
	for (size_t i = lo, n = 0; i > 0 && n < 4; i--, n++) {
		const struct tally_symbol *s = &t->syms[i - 1];
		if (addr - s->start < s->size) {
			t->last = i - 1;
			return s;
		}
	}
	return NULL;
}

uint64_t tly_symtab__offset_to_addr(const struct tly_symtab *t, uint64_t off)
{
	for (size_t i = 0; i < t->nr_segs; i++) {
		if (off >= t->segs[i].offset && off - t->segs[i].offset < t->segs[i].filesz)
			return off - t->segs[i].offset + t->segs[i].vaddr;
	}
	return off;
}

static int load_segments(struct tly_symtab *t, Elf *e)
{
	size_t n;
	if (elf_getphdrnum(e, &n))
		return 0;
	t->segs = calloc(n ? n : 1, sizeof(*t->segs));
	if (!t->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->segs[t->nr_segs].offset = ph.p_offset;
		t->segs[t->nr_segs].vaddr = ph.p_vaddr;
		t->segs[t->nr_segs].filesz = ph.p_filesz;
		t->nr_segs++;
	}
	return 0;
}

/* C++ names: the demangler of the C++ runtime, found at run time so the library needs
 * no C++ link. perf shows names without the parameter list (and so without the return
 * type templates carry), which is what demangle() returns. */
typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_init(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		cxa_demangle = (cxa_demangle_fn)(uintptr_t)dlsym(h, "__cxa_demangle");
}

static bool opens(char c)
{
	return c == '(' || c == '<' || c == '{' || c == '[';
}

static bool closes(char c)
{
	return c == ')' || c == '>' || c == '}' || c == ']';
}

/* The space at s[j] is a qualifier's of an enclosing function in a local name,
 * "f(long) const::{lambda(long)#1}::operator()", not the end of a return type. */
static bool scope_qualifier(const char *s, size_t j)
{
	static const char *const quals[] = { "const", "volatile", "&", "noexcept" };

	if (!j || s[j - 1] != ')')
		return false;
	for (size_t i = 0; i < sizeof(quals) / sizeof(quals[0]); i++)
		if (!strncmp(s + j + 1, quals[i], strlen(quals[i])))
			return true;
	return false;
}

/* Cut "ret name<args>(params) const" down to "name<args>". In place. */
static void strip_signature(char *s)
{
	size_t n = strlen(s);
	static const char *const quals[] = { " const", " volatile", " &&", " &", " noexcept" };
	const char *f = strstr(s, " for "), *paren = strchr(s, '(');

	/* "typeinfo for decltype(nullptr)", "transaction clone for X::f() const": special
	 * names keep what follows "for" whole, as perf shows them */
	if (f && paren && f < paren)
		return;

	for (bool again = true; again;) {
		again = false;
		for (size_t i = 0; i < TLY_ARRAY_SIZE(quals); i++) {
			size_t q = strlen(quals[i]);
			if (n > q && !strcmp(s + n - q, quals[i])) {
				n -= q;
				s[n] = 0;
				again = true;
			}
		}
	}
	if (!n || s[n - 1] != ')')
		return;
	/* "typeinfo for decltype(nullptr)", "vtable for X": the parentheses are the name's */
	int depth = 0;
	size_t i = n;
	while (i > 0) {
		char c = s[--i];
		if (closes(c))
			depth++;
		else if (opens(c) && --depth == 0)
			break;
	}
	if (depth != 0 || i == 0)
		return;
	/* "operator()(…)": the name's own parentheses stay */
	s[i] = 0;
	/* the return type: a space at nesting depth 0 (not the one in "operator new") */
	depth = 0;
	size_t cut = 0;
	for (size_t j = 0; j < i; j++) {
		/* past "operator", spaces are the operator's ("operator void (X::*)()") */
		if (j >= 8 && depth == 0 && !strncmp(s + j - 8, "operator", 8))
			break;
		if (opens(s[j]) && !(s[j] == '<' && j >= 8 && !strncmp(s + j - 8, "operator", 8)))
			depth++;
		else if (closes(s[j]) && depth > 0)
			depth--;
		else if (s[j] == ' ' && depth == 0 && !(j >= 8 && !strncmp(s + j - 8, "operator", 8)) &&
			 !scope_qualifier(s, j))
			cut = j + 1;
	}
	if (cut)
		memmove(s, s + cut, strlen(s + cut) + 1);
}

char *tly_demangle_full(const char *name)
{
	int status = 0;
	char *d;

	if (name[0] != '_' || name[1] != 'Z')
		return NULL;
	pthread_once(&cxa_once, cxa_init);
	if (!cxa_demangle)
		return NULL;
	d = cxa_demangle(name, NULL, NULL, &status);
	if (!d || status) {
		free(d);
		return NULL;
	}
	return d;
}

/* Drop GCC's clone suffixes, " [clone .constprop.0] [clone .isra.0]": perf 6.1 asks the
 * demangler for no parameters, and then it prints no clone suffix either. In place. */
static void strip_clones(char *s)
{
	for (;;) {
		size_t n = strlen(s);
		char *last = NULL;

		if (!n || s[n - 1] != ']')
			return;
		for (char *p = strstr(s, " [clone "); p; p = strstr(p + 1, " [clone "))
			last = p;
		if (!last || strchr(last + 1, ']') != s + n - 1)
			return;
		*last = 0;
	}
}

char *tly_demangle(const char *name)
{
	char *d = tly_demangle_full(name);

	if (!d)
		return NULL;
	strip_clones(d);
	/* thunks keep their target's parameters, as perf shows them */
	if (strncmp(d, "virtual thunk to ", 17) && strncmp(d, "non-virtual thunk to ", 21) &&
	    strncmp(d, "covariant return thunk to ", 26))
		strip_signature(d);
	return d;
}

/* Symbols are kept as file offsets, the address space of samples (ip - map start +
 * pgoff), as perf does: the same for PIE and fixed-address executables. */
static uint64_t vaddr_to_offset(const struct tly_symtab *t, uint64_t vaddr)
{
	for (size_t i = 0; i < t->nr_segs; i++) {
		if (vaddr >= t->segs[i].vaddr && vaddr - t->segs[i].vaddr < t->segs[i].filesz)
			return vaddr - t->segs[i].vaddr + t->segs[i].offset;
	}
	return vaddr;
}

/* Function symbols of one symbol table section; returns how many were added. */
static long load_section(struct tly_symtab *t, Elf *e, Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	long added = 0;

	if (!data || !sh->sh_entsize)
		return 0;
	/* perf also takes untyped labels of .text (e.g. _start in asm) */
	size_t text_idx = SIZE_MAX, shstrndx;
	if (!elf_getshdrstrndx(e, &shstrndx)) {
		Elf_Scn *sc = NULL;
		GElf_Shdr th;
		while ((sc = elf_nextscn(e, sc))) {
			const char *nm;
			if (gelf_getshdr(sc, &th) && (nm = elf_strptr(e, shstrndx, th.sh_name)) &&
			    !strcmp(nm, ".text")) {
				text_idx = elf_ndxscn(sc);
				break;
			}
		}
	}
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		int type = GELF_ST_TYPE(sym.st_info);
		bool label = type == STT_NOTYPE && sym.st_shndx == text_idx;
		if ((type != STT_FUNC && type != STT_GNU_IFUNC && !label) ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		int b = GELF_ST_BIND(sym.st_info);
		char *dm = t->raw_names ? NULL : tly_demangle(name);
		if (dm)
			name = dm;
		int ret = tly_symtab__add(t, vaddr_to_offset(t, sym.st_value), sym.st_size, name,
					  strlen(name), b == STB_GLOBAL ? 2 : b == STB_WEAK ? 1 : 0);
		free(dm);
		if (ret)
			return -ENOMEM;
		added++;
	}
	return added;
}

/* PLT entries as "name@plt": one 16-byte slot per .rela.plt relocation, in .plt.sec
 * when the binary has one (IBT), else in .plt after its 16-byte header. */
static long load_plt(struct tly_symtab *t, Elf *e)
{
	Elf_Scn *scn = NULL, *rela = NULL;
	GElf_Shdr sh, rsh = { 0 }, plt = { 0 }, pltsec = { 0 };
	size_t shstrndx;
	long n = 0;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".rela.plt") && sh.sh_type == SHT_RELA) {
			rela = scn;
			rsh = sh;
		} else if (!strcmp(name, ".plt")) {
			plt = sh;
		} else if (!strcmp(name, ".plt.sec")) {
			pltsec = sh;
		}
	}
	if (!rela || !rsh.sh_entsize || (!plt.sh_size && !pltsec.sh_size))
		return 0;
	Elf_Scn *dynscn = elf_getscn(e, rsh.sh_link);
	GElf_Shdr dsh;
	Elf_Data *rd = elf_getdata(rela, NULL), *dd = dynscn ? elf_getdata(dynscn, NULL) : NULL;
	if (!rd || !dd || !gelf_getshdr(dynscn, &dsh))
		return 0;
	uint64_t base = pltsec.sh_size ? pltsec.sh_addr : plt.sh_addr + 16;
	uint64_t limit = pltsec.sh_size ? pltsec.sh_addr + pltsec.sh_size : plt.sh_addr + plt.sh_size;
	size_t nr = rsh.sh_size / rsh.sh_entsize;
	for (size_t i = 0; i < nr && base + (i + 1) * 16 <= limit; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name = "";
		char buf[512];
		if (!gelf_getrela(rd, (int)i, &r))
			break;
		if (GELF_R_SYM(r.r_info) && gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym))
			name = elf_strptr(e, dsh.sh_link, sym.st_name);
		char *dm = name && !t->raw_names ? tly_demangle(name) : NULL;
		snprintf(buf, sizeof(buf), "%s@plt", dm ? dm : name ? name : "");
		free(dm);
		if (tly_symtab__add(t, vaddr_to_offset(t, base + i * 16), 16, buf, strlen(buf), 2))
			return -ENOMEM;
		n++;
	}
	return n;
}

static long load_symbols(struct tly_symtab *t, Elf *e, bool dynsym_too)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh, dsh;
	long n = 0;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			long r = load_section(t, e, scn, &sh);
			if (r < 0)
				return r;
			n += r;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dyn = scn;
			dsh = sh;
		}
	}
	if (!n && dyn && dynsym_too)
		n = load_section(t, e, dyn, &dsh);
	return n;
}

static Elf *elf_open(const char *path, int *fd)
{
	*fd = tly_open_regular(path);
	if (*fd < 0)
		return NULL;
	Elf *e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		*fd = -1;
		return NULL;
	}
	return e;
}

bool tly_elf__has_symtab(const char *path)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	bool found = false;
	int fd;
	Elf *e;

	elf_version(EV_CURRENT);
	if (!path || !(e = elf_open(path, &fd)))
		return false;
	while (!found && (scn = elf_nextscn(e, scn)))
		found = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB;
	elf_end(e);
	close(fd);
	return found;
}

int tly_symtab__load_elf(struct tly_symtab *t, const char *path, const char *debug_path)
{
	int fd, dfd = -1;
	Elf *e, *de = NULL;
	long n = 0;

	elf_version(EV_CURRENT);
	e = elf_open(path, &fd);
	if (!e)
		return -ENOENT;
	if (load_segments(t, e)) {
		elf_end(e);
		close(fd);
		return -ENOMEM;
	}
	if (debug_path && (de = elf_open(debug_path, &dfd)))
		n = load_symbols(t, de, false);
	if (n == 0)
		n = load_symbols(t, e, true);
	if (n >= 0) {
		long p = load_plt(t, e);
		n = p < 0 ? p : n + p;
	}
	if (de) {
		elf_end(de);
		close(dfd);
	}
	elf_end(e);
	close(fd);
	if (n < 0)
		return (int)n;
	tly_symtab__finish(t);
	return 0;
}

int tly_symtab__load_elf_mem(struct tly_symtab *t, const void *buf, size_t len)
{
	elf_version(EV_CURRENT);
	Elf *e = elf_memory((char *)buf, len);
	long n;
	if (!e)
		return -EINVAL;
	if (load_segments(t, e)) {
		elf_end(e);
		return -ENOMEM;
	}
	n = load_symbols(t, e, true);
	elf_end(e);
	if (n < 0)
		return (int)n;
	tly_symtab__finish(t);
	return 0;
}

/* hex digit value + 1 (0: not a hex digit) */
static const uint8_t hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
	['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
	['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15,
	['F'] = 16,
};

/* The lines in [p, end), the last one ending at end, into t (tly_symtab__add, bind 3:
 * kallsyms lists aliases in order and perf shows the last one of an address). st->seen
 * gets KSEEN_ZERO for a symbol line at address 0 and KSEEN_ADDR for one at another
 * address (kptr_restrict zeroes them all); st->core_max and st->tagged_min grow and
 * shrink to the highest address of a symbol taken without a "\t[module]" tag (the
 * kernel image's) and the lowest of one with a tag (modules, BPF, trampolines: what
 * comes and goes while the kernel runs). 0 or -ENOMEM. */
#define KSEEN_ZERO 1
#define KSEEN_ADDR 2
struct kstats {
	unsigned seen;
	uint64_t core_max, tagged_min;
};

static void kstats_init(struct kstats *st)
{
	*st = (struct kstats){ .tagged_min = UINT64_MAX };
}

static void kstats_merge(struct kstats *to, const struct kstats *st)
{
	to->seen |= st->seen;
	if (st->core_max > to->core_max)
		to->core_max = st->core_max;
	if (st->tagged_min < to->tagged_min)
		to->tagged_min = st->tagged_min;
}

static int kallsyms_lines(struct tly_symtab *t, struct kstats *st, const char *p, const char *end)
{
	while (p < end) {
		const char *name, *ne, *nl;
		uint64_t addr = 0;
		unsigned v;

		while (p < end && (v = hex1[(unsigned char)*p])) {
			addr = addr << 4 | (v - 1);
			p++;
		}
		/* " T name" with a name of at least one byte, on this line */
		if (end - p < 4 || p[0] != ' ' || p[1] == '\n' || p[2] != ' ' || p[3] == '\n')
			goto next;
		st->seen |= addr ? KSEEN_ADDR : KSEEN_ZERO;
		if (p[1] != 't' && p[1] != 'T' && p[1] != 'w' && p[1] != 'W') {
			p += 3;
			goto next;
		}
		/* the name ends at a tab (a module name follows), a space or the line's end
		 * (control characters end it too) */
		name = p + 3;
		for (ne = name; ne < end && (unsigned char)*ne > ' '; ne++)
			;
		if (tly_symtab__add(t, addr, 0, name, (size_t)(ne - name), 3))
			return -ENOMEM;
		if (ne < end && *ne == '\t') {
			if (addr < st->tagged_min)
				st->tagged_min = addr;
		} else if (addr > st->core_max) {
			st->core_max = addr;
		}
		p = ne;
next:
		if (p < end && *p == '\n') {
			p++;
			continue;
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* Just after the last newline in [p, end), or p if there is none. */
static const char *after_last_line(const char *p, const char *end)
{
	const char *nl = memrchr(p, '\n', (size_t)(end - p));

	return nl ? nl + 1 : p;
}

/*
 * "ffffffff81000000 T _text\t[module]" lines, 100k+ of them, read on every report with
 * kernel samples, parsed by hand in one pass. The text is never all in memory, only the
 * table: it is read 256 KiB at a time (/proc/kallsyms gives a page per read), a cut
 * line carried over.
 *
 * A regular file (perf's build-id cache copy, --kallsyms) is cut into chunks that any
 * number of workers parse at once, a chunk owning the lines that start in its byte
 * range. Each is parsed into a small table of the worker's own; once the chunks before
 * it are in, it gets its place in the result and is copied there, outside the lock, so
 * the copies (and the first touches of the result's memory) run in parallel too. The
 * result's room is set aside once, for as many symbols as the file could hold (address
 * space, not memory: untouched pages cost nothing), so it never moves under a copy; the
 * small tables are recycled. Memory stays the result's plus a few chunks'.
 * /proc/kallsyms (not a regular file, no size, costly to seek) is one chunk read front
 * to back.
 */
#define KREAD_BUF ((size_t)1 << 18)
#define KCHUNK_DEFAULT ((uint64_t)1 << 18)
#define KSPARES 4

struct tly_kload {
	struct tly_symtab *t;
	int fd;
	bool seq;			/* read() front to back: a single chunk */
	uint64_t chunk;			/* bytes per chunk */
	size_t nchunks, next, placed;	/* chunks: all, claimed, given their place in t */
	struct tly_symtab *parts;	/* parsed, waiting for their place */
	struct { size_t sym, pool; } *at;	/* their place: first symbol, pool offset */
	bool *parsed;
	struct tly_symtab spare[KSPARES];	/* emptied parts, their memory kept */
	size_t nspare;
	struct kstats st;
	int err;
	atomic_bool cancel;		/* tly_kload__cancel: stop between reads */
	pthread_mutex_t mu;
};

/* The lines of fd that start in [from, to) into t; buf holds KREAD_BUF bytes. */
static int kallsyms_chunk(struct tly_symtab *t, struct kstats *st, atomic_bool *cancel, int fd,
			  bool seq, uint64_t from, uint64_t to, char *buf)
{
	uint64_t base = from ? from - 1 : 0;	/* file offset of buf[0] */
	bool synced = from == 0;		/* buf[0] starts a line */
	size_t have = 0;

	for (;;) {
		const char *lim, *end;
		size_t want;
		ssize_t r;
		bool eof;
		int ret;

		if (synced && base >= to)
			return 0;	/* the next line is the next chunk's */
		if (atomic_load_explicit(cancel, memory_order_relaxed))
			return -ECANCELED;
		want = KREAD_BUF - have;
		if (!seq && base + have < to) {
			uint64_t left = to - (base + have);

			if (left < want && want - left > 4096)
				want = (size_t)left + 4096;	/* and the line across to */
		}
		r = seq ? read(fd, buf + have, want) : pread(fd, buf + have, want, (off_t)(base + have));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		eof = r == 0;
		have += (size_t)r;
		if (!synced) {
			/* the chunk's first line follows the first newline from offset from - 1 */
			const char *nl = memchr(buf, '\n', have);
			size_t skip = nl ? (size_t)(nl + 1 - buf) : have;

			base += skip;
			have -= skip;
			memmove(buf, buf + skip, have);
			synced = nl != NULL;
			if (eof || (synced && base >= to))
				return 0;
			if (!synced || !have)
				continue;
		}
		lim = eof ? buf + have : after_last_line(buf, buf + have);
		if (lim == buf && have == KREAD_BUF)
			lim = buf + have;	/* a line longer than the buffer: cut it */
		end = lim;
		if (to - base < (uint64_t)(lim - buf)) {
			/* the lines from the first one starting at to or later are not ours */
			size_t d = (size_t)(to - base);
			const char *nl = memchr(buf + d - 1, '\n', (size_t)(lim - buf) - (d - 1));

			end = nl ? nl + 1 : lim;
		}
		ret = kallsyms_lines(t, st, buf, end);
		if (ret || eof || end != lim)
			return ret;
		have -= (size_t)(lim - buf);
		base += (uint64_t)(lim - buf);
		memmove(buf, lim, have);
	}
}

int tly_kload__new(struct tly_kload **out, struct tly_symtab *t, const char *path,
		   uint64_t chunk)
{
	struct tly_kload *k;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return -errno;
	k = calloc(1, sizeof(*k));
	if (!k)
		goto nomem;
	k->t = t;
	kstats_init(&k->st);
	atomic_init(&k->cancel, false);
	k->fd = fd;
	k->chunk = chunk ? chunk : KCHUNK_DEFAULT;
	k->seq = fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0;
	k->nchunks = k->seq ? 1 : (size_t)(((uint64_t)st.st_size + k->chunk - 1) / k->chunk);
	k->parts = calloc(k->nchunks, sizeof(*k->parts));
	k->parsed = calloc(k->nchunks, sizeof(*k->parsed));
	k->at = calloc(k->nchunks, sizeof(*k->at));
	if (!k->parts || !k->parsed || !k->at)
		goto nomem;
	/* a symbol line takes at least 4 bytes, its name and NUL at most its length; a file
	 * too big for that much address space is read by one worker, the table growing */
	if (!k->seq && k->nchunks > 1 &&
	    symtab_reserve(t, (size_t)st.st_size / 4 + k->nchunks, (size_t)st.st_size + k->nchunks)) {
		tly_symtab__exit(t);
		k->nchunks = 1;
	}
	if (pthread_mutex_init(&k->mu, NULL))
		goto nomem;
	*out = k;
	return 0;
nomem:
	tly_symtab__exit(t);
	if (k) {
		free(k->parts);
		free(k->parsed);
		free(k->at);
		free(k);
	}
	close(fd);
	return -ENOMEM;
}

/* Gives its place in k->t to every parsed chunk whose turn has come, from the first:
 * the range [first, k->placed) is the caller's to copy in. Under k->mu. */
static size_t kload_place(struct tly_kload *k, size_t *first)
{
	*first = k->placed;
	while (!k->err && k->placed < k->nchunks && k->parsed[k->placed]) {
		struct tly_symtab *p = &k->parts[k->placed];

		if (k->t->nr + p->nr > k->t->cap || k->t->pool_len + p->pool_len > k->t->pool_cap) {
			k->err = -EOVERFLOW;	/* the room set aside is a bound: not reached */
			break;
		}
		k->at[k->placed].sym = k->t->nr;
		k->at[k->placed].pool = k->t->pool_len;
		k->t->nr += p->nr;
		k->t->pool_len += p->pool_len;
		k->placed++;
	}
	return k->placed;
}

void tly_kload__work(struct tly_kload *k)
{
	char *buf = malloc(KREAD_BUF);
	struct tly_symtab part = { 0 };

	for (;;) {
		struct kstats st;
		size_t i, first, last;
		int ret;

		pthread_mutex_lock(&k->mu);
		if (!buf && !k->err)
			k->err = -ENOMEM;
		if (k->err || k->next == k->nchunks) {
			pthread_mutex_unlock(&k->mu);
			break;
		}
		i = k->next++;
		if (i && !part.cap && k->nspare)
			part = k->spare[--k->nspare];
		pthread_mutex_unlock(&k->mu);

		/* chunk 0 goes straight into the table: its place is the start */
		kstats_init(&st);
		ret = kallsyms_chunk(i ? &part : k->t, &st, &k->cancel, k->fd, k->seq, i * k->chunk,
				     i + 1 == k->nchunks ? UINT64_MAX : (i + 1) * k->chunk, buf);

		pthread_mutex_lock(&k->mu);
		if (ret && !k->err)
			k->err = ret;
		kstats_merge(&k->st, &st);
		if (i) {
			k->parts[i] = part;
			memset(&part, 0, sizeof(part));
		}
		k->parsed[i] = true;
		if (!i && !ret)
			k->placed = 1;
		last = kload_place(k, &first);
		pthread_mutex_unlock(&k->mu);

		for (size_t j = first; j < last; j++)
			symtab_copy_in(k->t, k->at[j].sym, k->at[j].pool, &k->parts[j]);

		pthread_mutex_lock(&k->mu);
		for (size_t j = first; j < last; j++) {
			struct tly_symtab *p = &k->parts[j];

			p->nr = 0;
			p->pool_len = 0;
			if (k->nspare < KSPARES)
				k->spare[k->nspare++] = *p;
			else
				tly_symtab__exit(p);
			memset(p, 0, sizeof(*p));
		}
		pthread_mutex_unlock(&k->mu);
	}
	tly_symtab__exit(&part);
	free(buf);
}

void tly_kload__cancel(struct tly_kload *k)
{
	atomic_store(&k->cancel, true);
	pthread_mutex_lock(&k->mu);
	if (!k->err)
		k->err = -ECANCELED;
	pthread_mutex_unlock(&k->mu);
}

int tly_kload__end(struct tly_kload *k, bool keep)
{
	int err;

	if (!k)
		return -EINVAL;
	err = k->err;
	if (!err && k->placed != k->nchunks)
		err = -EINVAL;	/* ended before the work was done: a caller's bug */
	else if (!err && !(k->st.seen & KSEEN_ADDR))
		err = k->st.seen ? -EPERM : -ENODATA;	/* all addresses 0: kptr_restrict */
	if (err || !keep) {
		tly_symtab__exit(k->t);
	} else {
		tly_symtab__finish(k->t);
		k->t->core_max = k->st.core_max;
		k->t->tagged_min = k->st.tagged_min;
	}
	for (size_t i = 0; i < k->nchunks; i++)
		tly_symtab__exit(&k->parts[i]);	/* left by an error */
	for (size_t i = 0; i < k->nspare; i++)
		tly_symtab__exit(&k->spare[i]);
	pthread_mutex_destroy(&k->mu);
	close(k->fd);
	free(k->parts);
	free(k->parsed);
	free(k->at);
	free(k);
	return err;
}

int tly_symtab__load_kallsyms(struct tly_symtab *t, const char *path)
{
	struct tly_kload *k;
	int ret = tly_kload__new(&k, t, path, 0);

	if (ret)
		return ret;
	tly_kload__work(k);
	return tly_kload__end(k, true);
}

int tly_symtab__load_perfmap(struct tly_symtab *t, const char *path)
{
	int fd = tly_open_regular(path);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		unsigned long long start, size;
		int pos = 0;
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (sscanf(line, "%llx %llx %n", &start, &size, &pos) != 2 || !pos)
			continue;
		ret = tly_symtab__add(t, start, size, line + pos, strlen(line + pos), 2);
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	tly_symtab__finish(t);
	return ret;
}
