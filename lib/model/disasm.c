/*
 * Machine code by address and its disassembly through capstone (see tally/disasm.h).
 *
 * Code is read with pread, not mapped: /proc/kcore cannot be mapped, and a listing
 * reads a few hundred bytes per function. ELF headers come from libelf; the symbol
 * table kept here names branch targets and data the way objdump does (nearest symbol
 * at or below the address, in the same section).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include <tally/disasm.h>

struct code_seg {
	uint64_t vaddr, offset, filesz;
};

struct code_sec {
	uint64_t addr, size, entsize;
	char *name;
};

struct code_sym {
	uint64_t addr, size;
	uint32_t name;		/* offset in the pool */
	uint32_t idx;		/* its place in the table: the last word on ties */
	uint16_t sec;		/* index into secs + 1, 0: none */
	uint8_t rank;		/* which of several symbols at one address wins */
	bool synthetic;		/* a PLT entry named after its relocation (objdump's) */
	uint16_t bfd_len;	/* the length of the name bfd knows: a dynamic symbol's
				 * without the version appended here */
};

/* A dynamic relocation (.rela.dyn, .rela.plt): objdump names an address that no symbol
 * starts at after the symbol of a relocation there. */
struct code_rel {
	uint64_t addr, addend;
	uint64_t value;		/* its symbol's (0 for an undefined one) */
	bool undef;		/* its symbol is another file's: objdump names no offset */
	uint32_t name;		/* its symbol's name with version, in the pool */
	bool named;		/* false: no symbol, or an absolute one */
	uint32_t plt_name;	/* the name a PLT entry through it gets ("free", "*ABS*") */
};

struct tally_code {
	int fd;
	bool is64;
	unsigned machine;
	struct code_seg *segs;
	size_t nr_segs;
	struct code_sec *secs;
	size_t nr_secs;
	struct code_sym *syms;
	size_t nr_syms, sym_cap;
	bool syms_dynamic;	/* syms are .dynsym's (the file has no .symtab) */
	struct code_rel *rels;	/* by address */
	size_t nr_rels;
	char *pool;
	size_t pool_len, pool_cap;
	uint8_t *buf;		/* what __bytes returns */
	size_t buf_cap;
	uint8_t *image;		/* an image in memory (open_mem), else read from fd */
	size_t image_len;
	uint8_t build_id[20];
	size_t build_id_len;
};

void tally_code__delete(struct tally_code *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	for (size_t i = 0; i < c->nr_secs; i++)
		free(c->secs[i].name);
	free(c->secs);
	free(c->segs);
	free(c->syms);
	free(c->rels);
	free(c->pool);
	free(c->buf);
	free(c->image);
	free(c);
}

static int load_segments(struct tally_code *c, Elf *e)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return 0;
	c->segs = calloc(n ? n : 1, sizeof(*c->segs));
	if (!c->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		c->segs[c->nr_segs++] = (struct code_seg){ ph.p_vaddr, ph.p_offset, ph.p_filesz };
	}
	return 0;
}

static int load_sections(struct tally_code *c, Elf *e)
{
	size_t shstrndx, n;
	Elf_Scn *scn = NULL;

	if (elf_getshdrnum(e, &n) || elf_getshdrstrndx(e, &shstrndx) || !n)
		return 0;
	c->secs = calloc(n, sizeof(*c->secs));
	if (!c->secs)
		return -ENOMEM;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		size_t i = elf_ndxscn(scn);

		if (i >= n || !gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		c->secs[i].addr = sh.sh_flags & SHF_ALLOC ? sh.sh_addr : 0;
		c->secs[i].size = sh.sh_flags & SHF_ALLOC ? sh.sh_size : 0;
		c->secs[i].entsize = sh.sh_entsize;
		if (name && !(c->secs[i].name = strdup(name)))
			return -ENOMEM;
	}
	c->nr_secs = n;
	return 0;
}

static size_t section_of(const struct tally_code *c, uint64_t addr)
{
	for (size_t i = 0; i < c->nr_secs; i++)
		if (c->secs[i].size && addr >= c->secs[i].addr && addr - c->secs[i].addr < c->secs[i].size)
			return i;
	return SIZE_MAX;
}

/* objdump's order: by address; at one address functions (STT_FUNC, not IFUNCs) before
 * objects before the rest, global before weak before local, larger before smaller,
 * then by name. */
static int sym_cmp(const void *a, const void *b, void *pool)
{
	const struct code_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return (int)y->rank - (int)x->rank;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	/* by name, a dynamic symbol's without its version ("readdir" before "readdir64"; a
	 * .symtab's "pthread_sigmask@@GLIBC_2.32" before "pthread_sigmask@GLIBC_2.2.5") */
	{
		const char *na_s = (const char *)pool + x->name, *nb_s = (const char *)pool + y->name;
		size_t na = x->bfd_len, nb = y->bfd_len;
		int c = strncmp(na_s, nb_s, na < nb ? na : nb);

		if (c || na != nb)
			return c ? c : na < nb ? -1 : 1;
		return x->idx < y->idx ? -1 : x->idx > y->idx;	/* versions: table order */
	}
}

/* The symbol versions a dynamic symbol table's entries carry: objdump names a symbol
 * "name@@VERSION" (its default version) or "name@VERSION" (another, or a reference to
 * another file's symbol). */
struct versions {
	Elf_Data *versym;		/* per dynamic symbol */
	bool has_verdef;		/* the file defines versions */
	const char *names[512];		/* by version index (.gnu.version_d and _r) */
	bool needed[512];		/* the index is another file's version (_r) */
};

static void load_verdef(Elf *e, const GElf_Shdr *sh, Elf_Data *data, struct versions *v)
{
	size_t off = 0;

	v->has_verdef = true;
	for (size_t k = 0; k < sh->sh_info; k++) {
		GElf_Verdef vd;
		GElf_Verdaux va;

		if (!gelf_getverdef(data, (int)off, &vd) ||
		    !gelf_getverdaux(data, (int)(off + vd.vd_aux), &va))
			break;
		if (vd.vd_ndx < 512 && !(vd.vd_flags & VER_FLG_BASE))
			v->names[vd.vd_ndx] = elf_strptr(e, sh->sh_link, va.vda_name);
		if (!vd.vd_next)
			break;
		off += vd.vd_next;
	}
}

static void load_verneed(Elf *e, const GElf_Shdr *sh, Elf_Data *data, struct versions *v)
{
	size_t off = 0;

	for (size_t k = 0; k < sh->sh_info; k++) {
		GElf_Verneed vn;
		size_t aoff;

		if (!gelf_getverneed(data, (int)off, &vn))
			break;
		aoff = off + vn.vn_aux;
		for (size_t j = 0; j < vn.vn_cnt; j++) {
			GElf_Vernaux va;

			if (!gelf_getvernaux(data, (int)aoff, &va))
				break;
			if (va.vna_other < 512) {
				v->names[va.vna_other] = elf_strptr(e, sh->sh_link, va.vna_name);
				v->needed[va.vna_other] = true;
			}
			if (!va.vna_next)
				break;
			aoff += va.vna_next;
		}
		if (!vn.vn_next)
			break;
		off += vn.vn_next;
	}
}

static void load_versions(Elf *e, struct versions *v)
{
	Elf_Scn *scn = NULL;

	memset(v, 0, sizeof(*v));
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || !(data = elf_getdata(scn, NULL)))
			continue;
		if (sh.sh_type == SHT_GNU_versym)
			v->versym = data;
		else if (sh.sh_type == SHT_GNU_verdef)
			load_verdef(e, &sh, data, v);
		else if (sh.sh_type == SHT_GNU_verneed)
			load_verneed(e, &sh, data, v);
	}
}

/* Dynamic symbol i's name as objdump prints it: with its version, "@" for a hidden
 * version or another file's (a reference, or a copy relocation's "stderr@GLIBC_2.2.5");
 * a program's own exports are "@@Base". In buf, or name itself. */
static const char *versioned(const struct versions *v, size_t i, const char *name, bool undef,
			     char *buf, size_t len)
{
	GElf_Versym vs;

	if (!v || !v->versym || !gelf_getversym(v->versym, (int)i, &vs))
		return name;
	if ((vs & 0x7fff) >= 2 && (vs & 0x7fff) < 512 && v->names[vs & 0x7fff]) {
		snprintf(buf, len, "%s%s%s", name,
			 (vs & 0x8000) || undef || v->needed[vs & 0x7fff] ? "@" : "@@",
			 v->names[vs & 0x7fff]);
		return buf;
	}
	if (!v->has_verdef && !undef && (vs & 0x7fff) == 1) {
		snprintf(buf, len, "%s@@Base", name);
		return buf;
	}
	return name;
}

/* s into the pool: its offset, or -ENOMEM. */
static long pool_add(struct tally_code *c, const char *s)
{
	size_t len = strlen(s) + 1;
	long at = (long)c->pool_len;

	if (c->pool_len + len > c->pool_cap) {
		size_t ncap = c->pool_cap ? c->pool_cap * 2 : 16384;
		char *p;

		while (ncap < c->pool_len + len)
			ncap *= 2;
		p = realloc(c->pool, ncap);
		if (!p)
			return -ENOMEM;
		c->pool = p;
		c->pool_cap = ncap;
	}
	memcpy(c->pool + c->pool_len, s, len);
	c->pool_len += len;
	return at;
}

static int add_sym(struct tally_code *c, const struct code_sym *sym)
{
	if (c->nr_syms == c->sym_cap) {
		size_t ncap = c->sym_cap ? c->sym_cap * 2 : 1024;
		struct code_sym *grown = realloc(c->syms, ncap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		c->syms = grown;
		c->sym_cap = ncap;
	}
	c->syms[c->nr_syms++] = *sym;
	return 0;
}

/* Functions and data objects of one symbol table (v: its versions, for .dynsym; by_addr:
 * another file's table, whose sections are found by address); returns how many, or
 * -ENOMEM. */
static long load_symtab(struct tally_code *c, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
			const struct versions *v, bool by_addr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = data && sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	long added = 0;

	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		char buf[1024];
		int type, bind;
		long at;
		size_t sec, bfd_len;

		if (!gelf_getsym(data, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		bind = GELF_ST_BIND(s.st_info);
		/* (absolute symbols too, in no section, and thread-local ones, whose values
		 * are offsets: objdump names addresses after them,
		 * "LIBSELINUX_1.0@@LIBSELINUX_1.0+0x7020", "__h_errno@@GLIBC_PRIVATE+0x25f8c") */
		if ((type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT &&
		     type != STT_NOTYPE && type != STT_TLS) || s.st_shndx == SHN_UNDEF ||
		    (s.st_shndx >= SHN_LORESERVE && s.st_shndx != SHN_ABS) || !s.st_name)
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name || !*name || (type == STT_NOTYPE && name[0] == '$'))
			continue;
		bfd_len = strlen(name);
		name = versioned(v, i, name, false, buf, sizeof(buf));
		if ((at = pool_add(c, name)) < 0)
			return -ENOMEM;
		sec = s.st_shndx == SHN_ABS || (type == STT_TLS && by_addr) ? SIZE_MAX :
		      by_addr ? section_of(c, s.st_value) :
		      s.st_shndx < c->nr_secs ? s.st_shndx : SIZE_MAX;
		if (add_sym(c, &(struct code_sym){
			.addr = s.st_value,
			.size = s.st_size,
			.idx = (uint32_t)i,
			.name = (uint32_t)at,
			.sec = sec < c->nr_secs ? (uint16_t)(sec + 1) : 0,
			/* functions over objects over the rest (IFUNCs, labels); global
			 * over weak over local */
			.rank = (uint8_t)((type == STT_FUNC ? 8 : type == STT_OBJECT ? 4 : 0) +
					  (bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0)),
			.bfd_len = (uint16_t)(bfd_len < UINT16_MAX ? bfd_len : UINT16_MAX),
		    }))
			return -ENOMEM;
		added++;
	}
	return added;
}

static int rel_cmp(const void *a, const void *b)
{
	const struct code_rel *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The relocation sections over the dynamic symbol table dyn (index dyn_idx). */
static int load_dynrels(struct tally_code *c, Elf *e, Elf_Scn *dyn, size_t dyn_idx,
			const struct versions *v)
{
	Elf_Data *syms = elf_getdata(dyn, NULL);
	GElf_Shdr dsh;
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	long none = pool_add(c, "*ABS*");

	if (!syms || !gelf_getshdr(dyn, &dsh) || none < 0)
		return none < 0 ? -ENOMEM : 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_link != dyn_idx ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;
			GElf_Sym s;
			struct code_rel rel = { .plt_name = (uint32_t)none };
			size_t si;

			if (!gelf_getrela(data, (int)i, &r))
				break;
			rel.addr = r.r_offset;
			rel.addend = (uint64_t)r.r_addend;
			si = GELF_R_SYM(r.r_info);
			if (si && gelf_getsym(syms, (int)si, &s) && s.st_shndx != SHN_ABS) {
				const char *name = elf_strptr(e, dsh.sh_link, s.st_name);
				char buf[1024];
				long at, bare;

				if (name && *name) {
					bare = pool_add(c, name);
					at = pool_add(c, versioned(v, si, name, s.st_shndx == SHN_UNDEF,
								   buf, sizeof(buf)));
					if (at < 0 || bare < 0)
						return -ENOMEM;
					rel.name = (uint32_t)at;
					rel.plt_name = (uint32_t)bare;
					rel.named = true;
					rel.value = s.st_value;
					rel.undef = s.st_shndx == SHN_UNDEF;
				}
			}
			if (c->nr_rels == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct code_rel *g = realloc(c->rels, ncap * sizeof(*g));

				if (!g)
					return -ENOMEM;
				c->rels = g;
				cap = ncap;
			}
			c->rels[c->nr_rels++] = rel;
		}
	}
	if (c->nr_rels)
		qsort(c->rels, c->nr_rels, sizeof(*c->rels), rel_cmp);
	return 0;
}

/* The dynamic relocation at addr (the first, of several), NULL if none. */
static const struct code_rel *rel_at(const struct tally_code *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nr_rels;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->rels[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nr_rels && c->rels[lo].addr == addr ? &c->rels[lo] : NULL;
}

/* objdump's synthetic symbols for x86-64 PLT entries: each entry's indirect jump goes
 * through a GOT slot; the dynamic relocation of that slot names the entry "sym@plt",
 * "*ABS*+0xADDEND@plt" for one without a symbol (an IRELATIVE slot). */
static int load_plt_syms(struct tally_code *c)
{
	for (size_t k = 0; k < c->nr_secs; k++) {
		const struct code_sec *sec = &c->secs[k];
		uint64_t step = sec->entsize ? sec->entsize : 16;

		if (!sec->name || !sec->size || (strcmp(sec->name, ".plt") && strcmp(sec->name, ".plt.sec") &&
						 strcmp(sec->name, ".plt.got") && strcmp(sec->name, ".plt.bnd")))
			continue;
		for (uint64_t a = sec->addr; a + step <= sec->addr + sec->size; a += step) {
			const uint8_t *b;
			size_t got = tally_code__bytes(c, a, (size_t)step, &b), p = 0;
			const struct code_rel *rel;
			char name[1100];
			long at;

			if (got < 6)
				break;
			if (got >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
				p = 4;		/* endbr64 */
			if (p < got && b[p] == 0xf2)
				p++;		/* bnd */
			if (p + 6 > got || b[p] != 0xff || b[p + 1] != 0x25)
				continue;	/* no jmp *disp32(%rip): the lazy entries of IBT */
			{
				int32_t disp = (int32_t)((uint32_t)b[p + 2] | (uint32_t)b[p + 3] << 8 |
							 (uint32_t)b[p + 4] << 16 | (uint32_t)b[p + 5] << 24);

				rel = rel_at(c, a + p + 6 + (uint64_t)(int64_t)disp);
			}
			if (!rel)
				continue;
			if (rel->addend)
				snprintf(name, sizeof(name), "%s+0x%llx@plt", c->pool + rel->plt_name,
					 (unsigned long long)rel->addend);
			else
				snprintf(name, sizeof(name), "%s@plt", c->pool + rel->plt_name);
			if ((at = pool_add(c, name)) < 0 ||
			    add_sym(c, &(struct code_sym){ .addr = a, .size = step, .name = (uint32_t)at,
							   .idx = UINT32_MAX, .sec = (uint16_t)(k + 1),
							   .rank = 2, .synthetic = true,
							   .bfd_len = (uint16_t)strlen(name) }))
				return -ENOMEM;
		}
	}
	return 0;
}

static int load_symbols(struct tally_code *c, Elf *e)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh, dsh;
	struct versions *v = NULL;
	long n = 0;
	int err = 0;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			long r = load_symtab(c, e, scn, &sh, NULL, false);

			if (r < 0)
				return (int)r;
			n += r;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dyn = scn;
			dsh = sh;
		}
	}
	if (dyn) {
		v = malloc(sizeof(*v));
		if (!v)
			return -ENOMEM;
		load_versions(e, v);
		if (!n) {
			n = load_symtab(c, e, dyn, &dsh, v, false);
			c->syms_dynamic = true;
		}
		if (n < 0)
			err = -ENOMEM;
		if (!err)
			err = load_dynrels(c, e, dyn, elf_ndxscn(dyn), v);
		free(v);
	}
	if (!err && c->machine == EM_X86_64 && c->nr_rels)
		err = load_plt_syms(c);
	if (c->nr_syms)
		qsort_r(c->syms, c->nr_syms, sizeof(*c->syms), sym_cmp, c->pool);
	return err;
}

/* The GNU build-id note, from a note section or (an image with no sections) segment. */
static void load_build_id(struct tally_code *c, Elf *e)
{
	Elf_Scn *scn = NULL;
	size_t n = 0;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)data->d_buf + noff, "GNU", 4)) {
				n = nh.n_descsz < sizeof(c->build_id) ? nh.n_descsz : sizeof(c->build_id);
				memcpy(c->build_id, (const char *)data->d_buf + doff, n);
				c->build_id_len = n;
				return;
			}
		}
	}
}

/* Segments, sections, symbols and build-id of e. */
static int load_elf(struct tally_code *c, Elf *e)
{
	GElf_Ehdr eh;
	int err;

	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		return -ENOEXEC;
	c->is64 = gelf_getclass(e) == ELFCLASS64;
	c->machine = eh.e_machine;
	err = load_segments(c, e);
	if (!err)
		err = load_sections(c, e);
	if (!err)
		err = load_symbols(c, e);
	if (!err)
		load_build_id(c, e);
	return err;
}

int tally_code__open_mem(struct tally_code **out, const void *image, size_t len)
{
	struct tally_code *c;
	Elf *e;
	int err;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->image = malloc(len ? len : 1);
	if (!c->image) {
		free(c);
		return -ENOMEM;
	}
	memcpy(c->image, image, len);
	c->image_len = len;
	elf_version(EV_CURRENT);
	e = elf_memory((char *)c->image, len);
	err = e ? load_elf(c, e) : -ENOEXEC;
	if (e)
		elf_end(e);
	if (err) {
		tally_code__delete(c);
		return err;
	}
	*out = c;
	return 0;
}

size_t tally_code__build_id(const struct tally_code *c, const uint8_t **id)
{
	*id = c->build_id;
	return c->build_id_len;
}

int tally_code__open(struct tally_code **out, const char *path)
{
	struct tally_code *c;
	struct stat st;
	Elf *e;
	int err;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (c->fd < 0) {
		err = -errno;
		free(c);
		return err;
	}
	/* a path from perf.data: never a FIFO or a device (kcore is a regular file) */
	if (fstat(c->fd, &st) || !S_ISREG(st.st_mode)) {
		tally_code__delete(c);
		return -ENOEXEC;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(c->fd, ELF_C_READ, NULL);
	err = e ? load_elf(c, e) : -ENOEXEC;
	if (e)
		elf_end(e);
	if (err) {
		tally_code__delete(c);
		return err;
	}
	*out = c;
	return 0;
}

size_t tally_code__bytes(struct tally_code *c, uint64_t addr, size_t len, const uint8_t **bytes)
{
	*bytes = NULL;
	for (size_t i = 0; i < c->nr_segs; i++) {
		const struct code_seg *s = &c->segs[i];
		ssize_t n;

		if (addr < s->vaddr || addr - s->vaddr >= s->filesz)
			continue;
		if (len > s->filesz - (addr - s->vaddr))
			len = (size_t)(s->filesz - (addr - s->vaddr));
		if (len > c->buf_cap) {
			uint8_t *b = realloc(c->buf, len);

			if (!b)
				return 0;
			c->buf = b;
			c->buf_cap = len;
		}
		if (c->image) {
			uint64_t off = s->offset + (addr - s->vaddr);

			if (off >= c->image_len)
				return 0;
			if (len > c->image_len - off)
				len = (size_t)(c->image_len - off);
			memcpy(c->buf, c->image + off, len);
			n = (ssize_t)len;
		} else {
			n = pread(c->fd, c->buf, len, (off_t)(s->offset + (addr - s->vaddr)));
		}
		if (n <= 0)
			return 0;
		*bytes = c->buf;
		return (size_t)n;
	}
	return 0;
}

uint64_t tally_code__offset_to_addr(const struct tally_code *c, uint64_t offset)
{
	for (size_t i = 0; i < c->nr_segs; i++) {
		const struct code_seg *s = &c->segs[i];

		if (offset >= s->offset && offset - s->offset < s->filesz)
			return offset - s->offset + s->vaddr;
	}
	return offset;
}

uint64_t tally_code__addr_to_offset(const struct tally_code *c, uint64_t addr)
{
	for (size_t i = 0; i < c->nr_segs; i++) {
		const struct code_seg *s = &c->segs[i];

		if (addr >= s->vaddr && addr - s->vaddr < s->filesz)
			return addr - s->vaddr + s->offset;
	}
	return addr;
}

int tally_code__symbol_addr(const struct tally_code *c, const char *name, uint64_t *addr)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < c->nr_syms; i++) {
		const char *sn = c->pool + c->syms[i].name;

		/* a dynamic symbol's name carries its version: "name@@VERSION" */
		if (!strncmp(sn, name, n) && (sn[n] == 0 || (sn[n] == '@' && !strchr(name, '@')))) {
			*addr = c->syms[i].addr;
			return 0;
		}
	}
	return -ENOENT;
}

const char *tally_code__section(const struct tally_code *c, uint64_t addr)
{
	size_t i = section_of(c, addr);

	return i == SIZE_MAX ? NULL : c->secs[i].name;
}

/* How many symbols start at or below addr (the index of the first above it). */
static size_t syms_upto(const struct tally_code *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nr_syms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *tally_code__symbol(const struct tally_code *c, uint64_t addr, uint64_t *start)
{
	size_t lo = syms_upto(c, addr), sec = section_of(c, addr);

	/* from the first symbol above addr, walk down to one in addr's section */
	while (lo > 0) {
		const struct code_sym *s = &c->syms[--lo];
		size_t first = lo;

		/* the best of the symbols at this address comes first among them */
		while (first > 0 && c->syms[first - 1].addr == s->addr)
			first--;
		for (size_t i = first; i <= lo; i++) {
			if (sec == SIZE_MAX || c->syms[i].sec == sec + 1) {
				if (start)
					*start = c->syms[i].addr;
				return c->pool + c->syms[i].name;
			}
		}
		lo = first;
	}
	/* none below: objdump names the address after the first symbol above it in its
	 * section (start > addr: a negative offset) */
	for (size_t i = 0; sec != SIZE_MAX && i < c->nr_syms; i++) {
		if (c->syms[i].addr > addr && c->syms[i].sec == sec + 1) {
			if (start)
				*start = c->syms[i].addr;
			return c->pool + c->syms[i].name;
		}
	}
	return NULL;
}

bool tally_code__is_64bit(const struct tally_code *c)
{
	return c->is64;
}

unsigned tally_code__machine(const struct tally_code *c)
{
	return c->machine;
}

/* ---- capstone ------------------------------------------------------------------ */

/*
 * capstone is opened on the first disassembler, not linked: its tables are megabytes
 * of relocated pointers, and mapping them cost every tally command (report, script,
 * stat) about 3 MiB of resident memory and the time to relocate them, for the few
 * that disassemble. The soname is the one of the headers built against.
 */
#define CS_STR2(x) #x
#define CS_STR(x) CS_STR2(x)
#define CAPSTONE_SONAME "libcapstone.so." CS_STR(CS_API_MAJOR)

static struct {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	cs_insn *(*malloc)(csh);
	cs_err (*close)(csh *);
	void (*free)(cs_insn *, size_t);
	bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
	bool ok;
} cs;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

static void cs_load(void)
{
	void *h = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	*(void **)&cs.open = dlsym(h, "cs_open");
	*(void **)&cs.option = dlsym(h, "cs_option");
	*(void **)&cs.malloc = dlsym(h, "cs_malloc");
	*(void **)&cs.close = dlsym(h, "cs_close");
	*(void **)&cs.free = dlsym(h, "cs_free");
	*(void **)&cs.disasm_iter = dlsym(h, "cs_disasm_iter");
	cs.ok = cs.open && cs.option && cs.malloc && cs.close && cs.free && cs.disasm_iter;
	if (!cs.ok)
		dlclose(h);	/* kept open otherwise: its code is in use until exit */
}

struct tally_disasm {
	csh cs;
	cs_insn *insn;
	unsigned machine;
};

int tally_disasm__new(struct tally_disasm **out, unsigned e_machine, bool is_64bit,
		      enum tally_disasm_syntax syntax)
{
	struct tally_disasm *d;
	cs_arch arch;
	cs_mode mode;

	*out = NULL;
	switch (e_machine) {
	case EM_X86_64:
	case EM_386:
		arch = CS_ARCH_X86;
		mode = e_machine == EM_X86_64 && is_64bit ? CS_MODE_64 : CS_MODE_32;
		break;
	case EM_AARCH64:
		arch = CS_ARCH_ARM64;
		mode = CS_MODE_ARM;
		break;
	default:
		return -ENOTSUP;
	}
	pthread_once(&cs_once, cs_load);
	if (!cs.ok)
		return -ELIBACC;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->machine = e_machine;
	if (cs.open(arch, mode, &d->cs) != CS_ERR_OK) {
		free(d);
		return -ENOTSUP;
	}
	cs.option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (arch == CS_ARCH_X86)
		cs.option(d->cs, CS_OPT_SYNTAX,
			  syntax == TALLY_DISASM_INTEL ? CS_OPT_SYNTAX_INTEL : CS_OPT_SYNTAX_ATT);
	d->insn = cs.malloc(d->cs);
	if (!d->insn) {
		cs.close(&d->cs);
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void tally_disasm__delete(struct tally_disasm *d)
{
	if (!d)
		return;
	if (d->insn)
		cs.free(d->insn, 1);
	cs.close(&d->cs);
	free(d);
}

static bool in_group(const cs_insn *i, uint8_t group)
{
	for (uint8_t k = 0; k < i->detail->groups_count; k++)
		if (i->detail->groups[k] == group)
			return true;
	return false;
}

/* Jump/call targets and instruction-pointer-relative memory operands (x86). */
static void x86_operands(const cs_insn *i, struct tally_insn *out)
{
	const cs_x86 *x = &i->detail->x86;

	for (uint8_t k = 0; k < x->op_count; k++) {
		const cs_x86_op *op = &x->operands[k];

		if (op->type == X86_OP_IMM && (out->kind == TALLY_INSN_JUMP ||
					       out->kind == TALLY_INSN_CALL)) {
			out->has_target = true;
			out->target = (uint64_t)op->imm;
		} else if (op->type == X86_OP_MEM &&
			   (op->mem.base == X86_REG_RIP || op->mem.base == X86_REG_EIP) &&
			   op->mem.index == X86_REG_INVALID) {
			out->has_pc_ref = true;
			out->pc_ref = i->address + i->size + (uint64_t)op->mem.disp;
		}
	}
}

static void arm64_operands(const cs_insn *i, struct tally_insn *out)
{
	const cs_arm64 *a = &i->detail->arm64;

	for (uint8_t k = 0; k < a->op_count; k++) {
		if (a->operands[k].type == ARM64_OP_IMM &&
		    (out->kind == TALLY_INSN_JUMP || out->kind == TALLY_INSN_CALL)) {
			out->has_target = true;
			out->target = (uint64_t)a->operands[k].imm;
		}
	}
}

/* Length of a VEX or EVEX encoded x86-64 instruction (prefix 0xc4, 0xc5 or 0x62 after
 * optional 0x67 and segment prefixes) or of a 0f 01 system instruction, 0 for anything
 * else. capstone 4 decodes neither
 * every AVX-512 nor every newer AVX instruction; walking on a byte at a time would read
 * the rest of the function out of step and hand samples to the wrong lines. */
static size_t vex_length(const uint8_t *c, size_t len)
{
	size_t i = 0, map, op;
	uint8_t modrm;

	while (i < len && i < 4 && (c[i] == 0x67 || c[i] == 0x26 || c[i] == 0x2e || c[i] == 0x36 ||
				    c[i] == 0x3e || c[i] == 0x64 || c[i] == 0x65))
		i++;
	if (i >= len)
		return 0;
	/* 0f 01 with a register ModRM: system instructions of three bytes (rdpkru,
	 * wrpkru, serialize, ...), some unknown to capstone 4 */
	{
		size_t k = i;

		while (k < len && k < 4 && (c[k] == 0x66 || c[k] == 0xf2 || c[k] == 0xf3))
			k++;
		if (k + 2 < len && c[k] == 0x0f && c[k + 1] == 0x01 && (c[k + 2] >> 6) == 3)
			return k + 3;
	}
	if (c[i] == 0x62 && i + 4 < len) {		/* EVEX: 62 P0 P1 P2 */
		map = c[i + 1] & 7;
		i += 4;
	} else if (c[i] == 0xc4 && i + 3 < len) {	/* VEX3: c4 R.X.B.mmmmm W.vvvv.L.pp */
		map = c[i + 1] & 0x1f;
		i += 3;
	} else if (c[i] == 0xc5 && i + 2 < len) {	/* VEX2: c5 R.vvvv.L.pp, map 0f */
		map = 1;
		i += 2;
	} else {
		return 0;
	}
	op = c[i++];
	if (map == 1 && op == 0x77)
		return i;	/* vzeroupper, vzeroall: no ModRM */
	if (i >= len)
		return 0;
	modrm = c[i++];
	if ((modrm >> 6) != 3) {
		uint8_t rm = modrm & 7, mod = modrm >> 6;

		if (rm == 4) {
			if (i >= len)
				return 0;
			if (mod == 0 && (c[i] & 7) == 5)
				i += 4;
			i++;
		}
		if (mod == 1)
			i += 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			i += 4;
	}
	/* an 8-bit immediate: every 0f3a instruction and a few of 0f */
	if (map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 ||
				      op == 0xc5 || op == 0xc6)))
		i++;
	return i <= len ? i : 0;
}

size_t tally_disasm__one(struct tally_disasm *d, const uint8_t *code, size_t len, uint64_t addr,
			 struct tally_insn *out)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t a = addr;
	cs_insn *i = d->insn;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	if (!len)
		return 0;
	if (!cs.disasm_iter(d->cs, &p, &left, &a, i)) {
		size_t n = d->machine == EM_X86_64 ? vex_length(code, len) : 0, o = 0;

		out->size = n ? (uint32_t)n : 1;
		memcpy(out->bytes, code, out->size < 16 ? out->size : 16);
		out->kind = TALLY_INSN_INVALID;
		snprintf(out->mnemonic, sizeof(out->mnemonic), ".byte");
		for (size_t k = 0; k < out->size && o + 6 < sizeof(out->operands); k++)
			o += (size_t)snprintf(out->operands + o, sizeof(out->operands) - o, "%s0x%02x",
					      k ? "," : "", code[k]);
		return out->size;
	}
	out->size = i->size;
	memcpy(out->bytes, code, i->size < sizeof(out->bytes) ? i->size : sizeof(out->bytes));
	snprintf(out->mnemonic, sizeof(out->mnemonic), "%s", i->mnemonic);
	snprintf(out->operands, sizeof(out->operands), "%s", i->op_str);
	if (in_group(i, CS_GRP_RET) || in_group(i, CS_GRP_IRET))
		out->kind = TALLY_INSN_RET;
	else if (in_group(i, CS_GRP_CALL))
		out->kind = TALLY_INSN_CALL;
	else if (in_group(i, CS_GRP_JUMP))
		out->kind = TALLY_INSN_JUMP;
	else if ((d->machine == EM_X86_64 || d->machine == EM_386) && i->id == X86_INS_NOP)
		out->kind = TALLY_INSN_NOP;
	else if (d->machine == EM_AARCH64 && i->id == ARM64_INS_NOP)
		out->kind = TALLY_INSN_NOP;
	if (d->machine == EM_AARCH64)
		arm64_operands(i, out);
	else
		x86_operands(i, out);
	return i->size;
}

int tally_disasm_syntax_parse(const char *s, enum tally_disasm_syntax *syntax)
{
	if (!strcmp(s, "att") || !strcmp(s, "att-mnemonic")) {
		*syntax = TALLY_DISASM_ATT;
		return 0;
	}
	if (!strcmp(s, "intel") || !strcmp(s, "intel-mnemonic")) {
		*syntax = TALLY_DISASM_INTEL;
		return 0;
	}
	return -EINVAL;
}

const char *tally_code__target_symbol(const struct tally_code *c, uint64_t addr, uint64_t cur,
				      uint64_t *start)
{
	size_t lo = syms_upto(c, addr), first, cur_sec = section_of(c, cur);
	const struct code_sym *s;
	const struct code_rel *rel;

	if (!c->nr_syms)
		return NULL;
	/* the nearest symbol at or below (none: the first of all, a negative offset); of
	 * several there, one in the section being disassembled ends the search, else the
	 * first in objdump's order */
	first = lo ? lo - 1 : 0;
	while (first > 0 && c->syms[first - 1].addr == c->syms[first].addr)
		first--;
	s = &c->syms[first];
	for (size_t i = first; i < c->nr_syms && c->syms[i].addr == s->addr; i++) {
		if (cur_sec != SIZE_MAX && c->syms[i].sec == cur_sec + 1) {
			*start = c->syms[i].addr;
			return c->pool + c->syms[i].name;
		}
	}
	/* a symbol of another section (objdump compares a section-relative value with the
	 * address here, so even one starting there) and no PLT entry: the symbol of a
	 * dynamic relocation at the address (a GOT slot: "__errno_location@GLIBC_2.2.5"; a
	 * pointer: libc's stderr, "_IO_2_1_stderr_@@GLIBC_2.2.5-0x20") */
	if (!s->synthetic && c->nr_rels && c->rels[0].addr <= addr &&
	    c->rels[c->nr_rels - 1].addr >= addr && (rel = rel_at(c, addr))) {
		for (; rel < c->rels + c->nr_rels && rel->addr == addr; rel++) {
			if (rel->named) {
				/* (objdump: offset from the symbol's value, none from an
				 * undefined one's) */
				*start = rel->undef ? addr : rel->value;
				return c->pool + rel->name;
			}
		}
	}
	*start = s->addr;
	return c->pool + s->name;
}

int tally_code__add_symbols(struct tally_code *c, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), err = 0;
	struct stat st;
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	bool found = false;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(e = elf_begin(fd, ELF_C_READ, NULL)) ||
	    elf_kind(e) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	while (!found && (scn = elf_nextscn(e, scn)))
		found = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB;
	if (!found) {
		err = -ENOENT;
		goto out;
	}
	if (c->syms_dynamic) {
		/* objdump's table is .symtab's when there is one: the dynamic symbols go,
		 * the PLT entries stay */
		size_t kept = 0;

		for (size_t i = 0; i < c->nr_syms; i++)
			if (c->syms[i].synthetic)
				c->syms[kept++] = c->syms[i];
		c->nr_syms = kept;
		c->syms_dynamic = false;
	}
	if (load_symtab(c, e, scn, &sh, NULL, true) < 0)
		err = -ENOMEM;
	qsort_r(c->syms, c->nr_syms, sizeof(*c->syms), sym_cmp, c->pool);
out:
	if (e)
		elf_end(e);
	close(fd);
	return err;
}
