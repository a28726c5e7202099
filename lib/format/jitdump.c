/*
 * jitdump files (include/tally/jitdump.h): a reader over the file mapped whole, every
 * size checked, either byte order; and the per-function ELF files perf inject --jit
 * writes, made with libelf at perf's layout (code at file offset and address 0x80, in
 * one PT_LOAD), so that perf and tally read the same symbols from them.
 */
#include <byteswap.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/jitdump.h>
#include "internal/util.h"

#define JIT_MAGIC 0x4A695444u
#define JIT_MAGIC_SWAPPED 0x4454694Au
#define HEADER_SIZE 40
#define PREFIX_SIZE 16

struct tally_jitdump {
	const uint8_t *map;
	size_t size, pos;
	bool swap;
	uint32_t pid, elf_mach;
	uint64_t flags;
};

static uint32_t rd32(const struct tally_jitdump *j, size_t off)
{
	uint32_t v;

	memcpy(&v, j->map + off, 4);
	return j->swap ? bswap_32(v) : v;
}

static uint64_t rd64(const struct tally_jitdump *j, size_t off)
{
	uint64_t v;

	memcpy(&v, j->map + off, 8);
	return j->swap ? bswap_64(v) : v;
}

int tally_jitdump__open(struct tally_jitdump **out, const char *path)
{
	struct tally_jitdump *j;
	struct stat st;
	uint32_t magic, total;
	int fd;

	*out = NULL;
	fd = tly_open_regular(path);
	if (fd < 0)
		return errno == EINVAL ? -EINVAL : -ENOENT;
	if (fstat(fd, &st) || st.st_size < HEADER_SIZE) {
		close(fd);
		return -EINVAL;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		close(fd);
		return -ENOMEM;
	}
	j->size = (size_t)st.st_size;
	j->map = mmap(NULL, j->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (j->map == MAP_FAILED) {
		free(j);
		return -ENOMEM;
	}
	memcpy(&magic, j->map, 4);
	j->swap = magic == JIT_MAGIC_SWAPPED;
	total = rd32(j, 8);
	if ((magic != JIT_MAGIC && !j->swap) || rd32(j, 4) != 1 || total < HEADER_SIZE ||
	    total > j->size) {
		tally_jitdump__delete(j);
		return -EINVAL;
	}
	j->elf_mach = rd32(j, 12);
	j->pid = rd32(j, 20);
	j->flags = rd64(j, 32);
	j->pos = total;
	*out = j;
	return 0;
}

void tally_jitdump__delete(struct tally_jitdump *j)
{
	if (!j)
		return;
	if (j->map && j->map != MAP_FAILED)
		munmap((void *)j->map, j->size);
	free(j);
}

uint32_t tally_jitdump__pid(const struct tally_jitdump *j)
{
	return j->pid;
}

uint32_t tally_jitdump__elf_mach(const struct tally_jitdump *j)
{
	return j->elf_mach;
}

uint64_t tally_jitdump__flags(const struct tally_jitdump *j)
{
	return j->flags;
}

int tally_jitdump__next(struct tally_jitdump *j, struct tally_jit_record *r)
{
	size_t at = j->pos, end, p;
	uint32_t size;

	memset(r, 0, sizeof(*r));
	if (j->size - at < PREFIX_SIZE)
		return 0;	/* the end, or a record cut short there */
	r->type = rd32(j, at);
	size = rd32(j, at + 4);
	r->timestamp = rd64(j, at + 8);
	if (size < PREFIX_SIZE)
		return -EINVAL;
	if (size > j->size - at)
		return 0;	/* the runtime was still writing it */
	end = at + size;
	p = at + PREFIX_SIZE;
	switch (r->type) {
	case TALLY_JIT_CODE_LOAD: {
		const char *name, *nul;

		if (end - p < 8 + 32)
			return -EINVAL;
		r->pid = rd32(j, p);
		r->tid = rd32(j, p + 4);
		r->vma = rd64(j, p + 8);
		r->code_addr = rd64(j, p + 16);
		r->code_size = rd64(j, p + 24);
		r->code_index = rd64(j, p + 32);
		name = (const char *)j->map + p + 40;
		nul = memchr(name, 0, end - (p + 40));
		if (!nul || r->code_size > (uint64_t)(end - (p + 40) - (size_t)(nul + 1 - name)))
			return -EINVAL;
		r->name = name;
		r->code = nul + 1;
		break;
	}
	case TALLY_JIT_CODE_MOVE:
		if (end - p < 8 + 40)
			return -EINVAL;
		r->pid = rd32(j, p);
		r->tid = rd32(j, p + 4);
		r->vma = rd64(j, p + 8);
		r->old_code_addr = rd64(j, p + 16);
		r->code_addr = rd64(j, p + 24);
		r->code_size = rd64(j, p + 32);
		r->code_index = rd64(j, p + 40);
		break;
	case TALLY_JIT_CODE_DEBUG_INFO:
		if (end - p < 16)
			return -EINVAL;
		r->code_addr = rd64(j, p);
		r->nr_entries = rd64(j, p + 8);
		r->entries = j->map + p + 16;
		r->entries_size = end - (p + 16);
		break;
	default:	/* CLOSE, UNWINDING_INFO and newer types: the caller decides */
		break;
	}
	j->pos = end;
	return 1;
}

bool tally_jitdump__is_marker(const char *mmap_name, pid_t pid)
{
	const char *base = strrchr(mmap_name, '/');
	char *end;
	long p;

	if (!base || strncmp(base, "/jit-", 5) || base[5] < '0' || base[5] > '9')
		return false;
	p = strtol(base + 5, &end, 10);
	return strcmp(end, ".dump") == 0 && (!pid || p == pid);
}

/* A 160-bit name for the function (not for security): three FNV-1a runs with other
 * starting points over its address, its name and its code. */
static void jit_build_id(const struct tally_jit_record *load, struct tally_build_id *id)
{
	static const uint64_t seeds[3] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull,
					   0x9e3779b97f4a7c15ull };
	uint8_t out[24];

	for (int k = 0; k < 3; k++) {
		uint64_t h = seeds[k];
		const uint8_t *parts[3] = { (const uint8_t *)&load->code_addr,
					    (const uint8_t *)load->name, load->code };
		size_t lens[3] = { sizeof(load->code_addr), strlen(load->name),
				   (size_t)load->code_size };

		for (int q = 0; q < 3; q++)
			for (size_t i = 0; i < lens[q]; i++)
				h = (h ^ parts[q][i]) * 0x100000001b3ull;
		memcpy(out + 8 * k, &h, 8);
	}
	tally_build_id__set(id, out, 20);
}

struct jit_note {
	Elf64_Nhdr h;
	char name[4];
	uint8_t desc[20];
};

static Elf_Scn *add_section(Elf *e, const void *buf, size_t size, Elf64_Word name,
			    Elf64_Word type, Elf64_Xword flags, Elf64_Addr addr, Elf64_Off off,
			    Elf64_Xword align, Elf_Type dtype)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d = scn ? elf_newdata(scn) : NULL;
	Elf64_Shdr *sh = scn ? elf64_getshdr(scn) : NULL;

	if (!d || !sh)
		return NULL;
	d->d_buf = (void *)buf;
	d->d_size = size;
	d->d_type = dtype;
	d->d_align = align;
	d->d_version = EV_CURRENT;
	sh->sh_name = name;
	sh->sh_type = type;
	sh->sh_flags = flags;
	sh->sh_addr = addr;
	sh->sh_offset = off;
	sh->sh_size = size;
	sh->sh_addralign = align;
	return scn;
}

static Elf64_Off align_up(Elf64_Off v, Elf64_Off a)
{
	return (v + a - 1) & ~(a - 1);
}

/* What the ELF file holds besides the code: its one symbol, the name table and the
 * build-id note. */
struct jit_parts {
	Elf64_Sym syms[2];
	struct jit_note note;
	char *strtab;
	size_t nlen;
};

static int jit_parts__init(struct jit_parts *jp, const struct tally_jit_record *load,
			   const struct tally_build_id *id)
{
	jp->nlen = strlen(load->name);
	jp->strtab = malloc(jp->nlen + 2);
	if (!jp->strtab)
		return -ENOMEM;
	jp->strtab[0] = 0;
	memcpy(jp->strtab + 1, load->name, jp->nlen + 1);
	memset(jp->syms, 0, sizeof(jp->syms));
	jp->syms[1].st_name = 1;
	jp->syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	jp->syms[1].st_shndx = 1;
	jp->syms[1].st_value = TALLY_JIT_ELF_TEXT_OFFSET;
	jp->syms[1].st_size = load->code_size;
	jp->note.h.n_namesz = 4;
	jp->note.h.n_descsz = 20;
	jp->note.h.n_type = NT_GNU_BUILD_ID;
	memcpy(jp->note.name, "GNU", 4);
	memcpy(jp->note.desc, id->data, 20);
	return 0;
}

/* The sections after the ELF header, laid out by hand; returns where the section
 * headers go, 0 when out of memory. */
static Elf64_Off add_sections(Elf *e, const struct tally_jit_record *load,
			      struct jit_parts *jp)
{
	static const char shstr[] = "\0.text\0.shstrtab\0.symtab\0.strtab\0.note.gnu.build-id";
	enum { N_TEXT = 1, N_SHSTR = 7, N_SYMTAB = 17, N_STRTAB = 25, N_NOTE = 33 };
	Elf64_Off off = TALLY_JIT_ELF_TEXT_OFFSET;
	Elf_Scn *sym_scn;

	if (!add_section(e, load->code, (size_t)load->code_size, N_TEXT, SHT_PROGBITS,
			 SHF_ALLOC | SHF_EXECINSTR, TALLY_JIT_ELF_TEXT_OFFSET, off, 16, ELF_T_BYTE))
		return 0;
	off += load->code_size;
	if (!add_section(e, shstr, sizeof(shstr), N_SHSTR, SHT_STRTAB, 0, 0, off, 1, ELF_T_BYTE))
		return 0;
	off = align_up(off + sizeof(shstr), 8);
	sym_scn = add_section(e, jp->syms, sizeof(jp->syms), N_SYMTAB, SHT_SYMTAB, 0, 0, off, 8,
			      ELF_T_SYM);
	if (!sym_scn)
		return 0;
	elf64_getshdr(sym_scn)->sh_link = 4;
	elf64_getshdr(sym_scn)->sh_info = 1;
	elf64_getshdr(sym_scn)->sh_entsize = sizeof(Elf64_Sym);
	off += sizeof(jp->syms);
	if (!add_section(e, jp->strtab, jp->nlen + 2, N_STRTAB, SHT_STRTAB, 0, 0, off, 1,
			 ELF_T_BYTE))
		return 0;
	off = align_up(off + jp->nlen + 2, 4);
	if (!add_section(e, &jp->note, sizeof(jp->note), N_NOTE, SHT_NOTE, SHF_ALLOC, 0, off, 4,
			 ELF_T_NHDR))
		return 0;
	return align_up(off + sizeof(jp->note), 8);
}

/* The whole file on e: the ELF header, one PT_LOAD of the code, the sections. */
static int write_elf(Elf *e, const struct tally_jit_record *load, uint16_t machine,
		     struct jit_parts *jp)
{
	Elf64_Ehdr *eh = e ? elf64_newehdr(e) : NULL;
	Elf64_Phdr *ph = eh ? elf64_newphdr(e, 1) : NULL;

	if (!ph)
		return -ENOMEM;
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	eh->e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	eh->e_machine = machine;
	eh->e_type = ET_DYN;
	eh->e_version = EV_CURRENT;
	eh->e_entry = TALLY_JIT_ELF_TEXT_OFFSET;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shstrndx = 2;
	eh->e_shoff = add_sections(e, load, jp);
	if (!eh->e_shoff)
		return -ENOMEM;
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_offset = TALLY_JIT_ELF_TEXT_OFFSET;
	ph->p_vaddr = ph->p_paddr = TALLY_JIT_ELF_TEXT_OFFSET;
	ph->p_filesz = ph->p_memsz = load->code_size;
	ph->p_align = 16;
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	return elf_update(e, ELF_C_WRITE) < 0 ? -EIO : 0;
}

int tally_jitdump__write_elf(const char *path, const struct tally_jit_record *load,
			     uint16_t machine, struct tally_build_id *id_out)
{
	struct tally_build_id id;
	struct jit_parts jp;
	char tmp[PATH_MAX];
	int fd, err;
	Elf *e;

	if (load->type != TALLY_JIT_CODE_LOAD || !load->name)
		return -EINVAL;
	jit_build_id(load, &id);
	err = jit_parts__init(&jp, load, &id);
	if (err)
		return err;
	/* written beside PATH and renamed: a reader never sees half a file */
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		free(jp.strtab);
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		free(jp.strtab);
		return err;
	}
	fchmod(fd, 0644);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	err = write_elf(e, load, machine, &jp);
	elf_end(e);
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	else if (id_out)
		*id_out = id;
	free(jp.strtab);
	return err;
}
