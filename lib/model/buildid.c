/*
 * Build-ids: read from ELF files (libelf: the note sections, else the PT_NOTE
 * segments of a file without section headers), from the kernel's raw notes
 * (/sys/kernel/notes), and printed and parsed as perf's hex.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <tally/buildid.h>
#include "internal/util.h"

void tally_build_id__set(struct tally_build_id *id, const uint8_t *data, size_t len)
{
	if (len > TALLY_BUILD_ID_SIZE)
		len = TALLY_BUILD_ID_SIZE;
	memset(id->data, 0, sizeof(id->data));
	if (len)
		memcpy(id->data, data, len);
	id->size = len;
}

bool tally_build_id__equal(const struct tally_build_id *a, const struct tally_build_id *b)
{
	return a->size == b->size && !memcmp(a->data, b->data, a->size);
}

char *tally_build_id__hex(const struct tally_build_id *id, char *buf)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = id->size <= TALLY_BUILD_ID_SIZE ? id->size : TALLY_BUILD_ID_SIZE;

	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = digits[id->data[i] >> 4];
		buf[2 * i + 1] = digits[id->data[i] & 15];
	}
	buf[2 * n] = 0;
	return buf;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int tally_build_id__parse(struct tally_build_id *id, const char *hex, size_t len)
{
	if (len < 2 || len > 2 * TALLY_BUILD_ID_SIZE || (len & 1))
		return -EINVAL;
	memset(id, 0, sizeof(*id));
	for (size_t i = 0; i < len; i += 2) {
		int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		id->data[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	id->size = len / 2;
	return 0;
}

/* The GNU build-id among the notes of one note blob (section or segment data). */
static bool note_build_id(Elf_Data *data, struct tally_build_id *id)
{
	size_t off = 0, noff, doff;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
		    !memcmp((const char *)data->d_buf + noff, "GNU", 4)) {
			tally_build_id__set(id, (const uint8_t *)data->d_buf + doff, nh.n_descsz);
			return true;
		}
	}
	return false;
}

static int elf_build_id(Elf *e, struct tally_build_id *id)
{
	Elf_Scn *scn = NULL;
	size_t nph = 0;
	bool sections = false;

	memset(id, 0, sizeof(*id));
	if (elf_kind(e) != ELF_K_ELF)
		return -ENOEXEC;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		sections = true;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && note_build_id(data, id))
			return 0;
	}
	if (sections || elf_getphdrnum(e, &nph))
		return -ENODATA;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		Elf_Data *data;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		data = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (data && note_build_id(data, id))
			return 0;
	}
	return -ENODATA;
}

int tally_build_id__from_elf(struct tally_build_id *id, const char *path)
{
	int fd, ret;
	Elf *e;

	memset(id, 0, sizeof(*id));
	fd = tly_open_regular(path);
	if (fd < 0)
		return -ENOENT;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ret = e ? elf_build_id(e, id) : -ENOEXEC;
	elf_end(e);
	close(fd);
	return ret;
}

int tally_build_id__from_elf_mem(struct tally_build_id *id, const void *buf, size_t len)
{
	Elf *e;
	int ret;

	memset(id, 0, sizeof(*id));
	elf_version(EV_CURRENT);
	e = elf_memory((char *)buf, len);
	ret = e ? elf_build_id(e, id) : -ENOEXEC;
	elf_end(e);
	return ret;
}

int tally_build_id__from_notes(struct tally_build_id *id, const char *notes)
{
	char *buf = NULL;
	size_t n, off = 0;

	memset(id, 0, sizeof(*id));
	if (tly_read_file_all(notes, &buf, &n))
		return -ENOENT;
	while (off + 12 <= n) {
		uint32_t namesz, descsz, type;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		off += 12;
		if (namesz > n || descsz > n || off + ((namesz + 3) & ~3u) + descsz > n)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + off, "GNU", 4) &&
		    descsz && descsz <= TALLY_BUILD_ID_SIZE) {
			tally_build_id__set(id, (const uint8_t *)buf + off + 4, descsz);
			free(buf);
			return 0;
		}
		off += ((namesz + 3) & ~3u) + ((descsz + 3) & ~3u);
	}
	free(buf);
	return -ENODATA;
}

int tally_build_id__running_kernel(struct tally_build_id *id)
{
	return tally_build_id__from_notes(id, "/sys/kernel/notes");
}

int tally_vdso_image(const void **image, size_t *size)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char line[256];
	FILE *f;

	*image = NULL;
	*size = 0;
	if (!base || !(f = fopen("/proc/self/maps", "re")))
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a == base && strstr(line, "[vdso]")) {
			*image = (const void *)base;
			*size = b - a;
			break;
		}
	}
	fclose(f);
	return *size ? 0 : -ENOENT;
}
