/*
 * A compressed .debug_info read unit by unit (see internal/dwinfo.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <zlib.h>

#include "internal/dwinfo.h"

#define STEP (256u << 10)	/* output bytes between restart points */
#define SCRATCH (64u << 10)
#define ABSENT UINT64_MAX

struct unit {
	uint64_t off, len;	/* in the file's .debug_info, length field included */
	uint64_t at;		/* where it is in buf (ABSENT: not yet) */
	uint8_t hdr;		/* its header's size: its unit DIE follows */
};

struct arange {
	uint64_t lo, len;
	size_t unit;
};

struct tly_dwinfo {
	Elf_Data *data;		/* .debug_info's, as libdw reads it: buf, used */
	unsigned char *buf;	/* reserved for the whole section, filled as units come */
	size_t cap, used;
	void *map;		/* the file's pages holding the compressed bytes, ours */
	size_t map_len;
	const unsigned char *zin;	/* the compressed bytes, in map */
	size_t zlen;
	z_stream zs;		/* at pos */
	bool live;
	uint64_t pos;
	z_stream *ck;		/* restart points: ck[i] at i * STEP */
	size_t nr_ck;
	struct unit *units;	/* by offset */
	size_t nr_units;
	struct arange *ar;	/* by address, none overlapping */
	size_t nr_ar;
	uint64_t spent;		/* bytes inflated to fetch units */
	bool all;		/* every unit is in (or being fetched) */
	unsigned char *scratch;
};

static uint64_t le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static bool uleb(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end) {
		unsigned char b = *(*p)++;

		if (shift < 64)
			*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Does no abbreviation let a DIE refer outside its unit (or to a form unknown here)? */
static bool abbrevs_local(const Elf_Data *ab)
{
	const unsigned char *p = ab->d_buf, *end = p + ab->d_size;
	uint64_t code, tag, name, form, skip;

	while (p < end) {
		if (!uleb(&p, end, &code))
			return false;
		if (!code)
			continue;	/* a table's end */
		if (!uleb(&p, end, &tag) || tag == 0x3d /* DW_TAG_imported_unit */ || p >= end)
			return false;
		p++;			/* DW_CHILDREN_* */
		for (;;) {
			if (!uleb(&p, end, &name) || !uleb(&p, end, &form))
				return false;
			if (!name && !form)
				break;
			switch (form) {
			case 0x10:	/* DW_FORM_ref_addr */
			case 0x16:	/* DW_FORM_indirect */
			case 0x1c:	/* DW_FORM_ref_sup4 */
			case 0x20:	/* DW_FORM_ref_sig8 */
			case 0x24:	/* DW_FORM_ref_sup8 */
			case 0x1f20:	/* DW_FORM_GNU_ref_alt */
				return false;
			case 0x21:	/* DW_FORM_implicit_const: its value follows */
				if (!uleb(&p, end, &skip))
					return false;
				break;
			}
		}
	}
	return true;
}

/* Inflate the next n bytes into dst (NULL: throw them away). */
static int pull(struct tly_dwinfo *d, unsigned char *dst, uint64_t n)
{
	while (n) {
		size_t k = dst ? (n > UINT_MAX ? UINT_MAX : (size_t)n) : (n > SCRATCH ? SCRATCH : (size_t)n);

		d->zs.next_out = dst ? dst : d->scratch;
		d->zs.avail_out = (uInt)k;
		while (d->zs.avail_out) {
			int r = inflate(&d->zs, Z_NO_FLUSH);

			if ((r != Z_OK && r != Z_STREAM_END) || (r == Z_STREAM_END && d->zs.avail_out))
				return -EINVAL;
		}
		d->pos += k;
		d->spent += k;
		n -= k;
		if (dst)
			dst += k;
	}
	return 0;
}

/* Give back the pages of the compressed bytes (read again from the file when a unit
 * is fetched). */
static void drop_input(const struct tly_dwinfo *d)
{
	madvise(d->map, d->map_len, MADV_DONTNEED);
}

/* Read [off, off + n) of the section into dst. */
static int read_at(struct tly_dwinfo *d, uint64_t off, uint64_t n, unsigned char *dst)
{
	size_t i = (size_t)(off / STEP);

	/* from the restart point before off, unless the stream is already between them */
	if (off < d->pos || (uint64_t)i * STEP > d->pos) {
		if (i >= d->nr_ck)
			return -EINVAL;
		inflateEnd(&d->zs);
		d->live = false;
		if (inflateCopy(&d->zs, &d->ck[i]) != Z_OK)
			return -ENOMEM;
		d->live = true;
		d->pos = (uint64_t)i * STEP;
	}
	if (pull(d, NULL, off - d->pos))
		return -EINVAL;
	return pull(d, dst, n);
}

/* Unit n into buf (where it is not already). */
static int fetch_one(struct tly_dwinfo *d, size_t n)
{
	struct unit *u = &d->units[n];
	int err;

	if (u->at != ABSENT)
		return 0;
	if (!d->live || u->len > d->cap - d->used)
		return -EINVAL;
	err = read_at(d, u->off, u->len, d->buf + d->used);
	if (err)
		return err;
	u->at = d->used;
	d->used += u->len;
	d->data->d_size = d->used;
	return 0;
}

static int fetch(struct tly_dwinfo *d, size_t n)
{
	int err;

	if (d->units[n].at != ABSENT)
		return 0;
	err = fetch_one(d, n);
	/* Units asked for all over the section (a listing of many functions, a profile
	 * spread over a whole library) would inflate it again and again: once that has
	 * cost as much as inflating it whole, the rest comes in at once, in one pass. */
	if (!err && !d->all && d->spent > d->cap) {
		d->all = true;
		for (size_t i = 0; i < d->nr_units && !err; i++)
			err = fetch_one(d, i);
	}
	drop_input(d);
	return err;
}

/* The unit header at h (12 bytes read; the section has size bytes from off): false if
 * it is none this reader takes. */
static bool unit_header(const unsigned char *h, uint64_t off, uint64_t size, struct unit *u)
{
	uint64_t len = le(h, 4), ver = le(h + 4, 2);

	if (len >= 0xfffffff0 || ver < 2 || ver > 5)
		return false;
	if (ver == 5 && h[6] != 1 /* DW_UT_compile */ && h[6] != 3 /* DW_UT_partial */)
		return false;
	*u = (struct unit){ .off = off, .len = len + 4, .at = ABSENT, .hdr = ver == 5 ? 12 : 11 };
	return u->len > u->hdr && u->len <= size - off;
}

/* Inflate the whole section once: the unit boundaries and the restart points. */
static int scan_units(struct tly_dwinfo *d, uint64_t size)
{
	uint64_t next = 0;	/* the next unit's offset */
	unsigned char h[12], end;
	size_t fill = 0, cap = 0;
	uLong sum = adler32(0, NULL, 0);

	d->nr_ck = (size_t)((size + STEP - 1) / STEP);
	d->ck = calloc(d->nr_ck ? d->nr_ck : 1, sizeof(*d->ck));
	if (!d->ck)
		return -ENOMEM;
	while (d->pos < size) {
		uint64_t p0 = d->pos, k = size - p0;

		if (p0 % STEP == 0) {
			if (inflateCopy(&d->ck[p0 / STEP], &d->zs) != Z_OK)
				return -ENOMEM;
		}
		if (k > SCRATCH)
			k = SCRATCH;
		if (k > STEP - p0 % STEP)
			k = STEP - p0 % STEP;
		if (pull(d, d->scratch, k))
			return -EINVAL;
		sum = adler32(sum, d->scratch, (uInt)k);
		/* the headers starting in or running into this piece */
		while (next + fill < p0 + k) {
			uint64_t from = next + fill, n = 12 - fill;

			if (from < p0)
				return -EINVAL;
			if (n > p0 + k - from)
				n = p0 + k - from;
			memcpy(h + fill, d->scratch + (from - p0), (size_t)n);
			fill += (size_t)n;
			if (fill < 12)
				break;
			if (d->nr_units == cap) {
				struct unit *v;

				cap = cap ? cap * 2 : 256;
				v = realloc(d->units, cap * sizeof(*v));
				if (!v)
					return -ENOMEM;
				d->units = v;
			}
			if (next + 12 > size ||
			    !unit_header(h, next, size, &d->units[d->nr_units]))
				return -EINVAL;
			next += d->units[d->nr_units++].len;
			fill = 0;
		}
	}
	if (next != size || fill || !d->nr_units)
		return -EINVAL;
	/* the end of the stream, and its adler32 (big-endian) right after it: fetches
	 * inflate raw, this pass checks what they will read */
	d->zs.next_out = &end;
	d->zs.avail_out = 1;
	if (inflate(&d->zs, Z_FINISH) != Z_STREAM_END || d->zs.avail_in < 4 ||
	    ((uint32_t)d->zs.next_in[0] << 24 | (uint32_t)d->zs.next_in[1] << 16 |
	     (uint32_t)d->zs.next_in[2] << 8 | d->zs.next_in[3]) != sum)
		return -EINVAL;
	return 0;
}

static size_t unit_at(const struct tly_dwinfo *d, uint64_t off)
{
	size_t lo = 0, hi = d->nr_units;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->units[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nr_units && d->units[lo].off == off ? lo : SIZE_MAX;
}

static int arange_cmp(const void *x, const void *y)
{
	const struct arange *a = x, *b = y;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* .debug_aranges, as libdw's dwarf_addrdie reads it: false where it might read it
 * otherwise (see internal/dwinfo.h) or it is damaged. */
static bool read_aranges(struct tly_dwinfo *d, const Elf_Data *data)
{
	const unsigned char *p = data->d_buf, *end = p + data->d_size;
	size_t cap = 0;

	while (p < end) {
		uint64_t len, unit_off, asz;
		const unsigned char *set_end, *q;
		bool ended = false;
		size_t u;

		if (end - p < 12 || (len = le(p, 4)) >= 0xfffffff0 || len > (uint64_t)(end - p) - 4 ||
		    le(p + 4, 2) != 2 || p[11] != 0)
			return false;
		unit_off = le(p + 6, 4);
		asz = p[10];
		if ((asz != 4 && asz != 8) || (u = unit_at(d, unit_off)) == SIZE_MAX)
			return false;
		set_end = p + 4 + len;
		q = p + (12 + 2 * asz - 1) / (2 * asz) * (2 * asz);
		for (; q + 2 * asz <= set_end; q += 2 * asz) {
			uint64_t lo = le(q, (unsigned)asz), n = le(q + asz, (unsigned)asz);

			if (!lo && !n) {
				ended = true;
				continue;
			}
			if (ended || !n || lo + n < lo)
				return false;
			if (d->nr_ar == cap) {
				struct arange *v;

				cap = cap ? cap * 2 : 1024;
				v = realloc(d->ar, cap * sizeof(*v));
				if (!v)
					return false;
				d->ar = v;
			}
			d->ar[d->nr_ar++] = (struct arange){ lo, n, u };
		}
		p = set_end;
	}
	if (!d->nr_ar)
		return false;
	qsort(d->ar, d->nr_ar, sizeof(*d->ar), arange_cmp);
	for (size_t i = 1; i < d->nr_ar; i++)
		if (d->ar[i - 1].lo + d->ar[i - 1].len > d->ar[i].lo)
			return false;
	return true;
}

void tly_dwinfo__delete(struct tly_dwinfo *d)
{
	if (!d)
		return;
	if (d->live)
		inflateEnd(&d->zs);
	for (size_t i = 0; d->ck && i < d->nr_ck; i++)
		if (d->ck[i].state)
			inflateEnd(&d->ck[i]);
	free(d->ck);
	if (d->buf)
		munmap(d->buf, d->cap);
	if (d->map)
		munmap(d->map, d->map_len);
	free(d->units);
	free(d->ar);
	free(d->scratch);
	free(d);
}

static Elf_Scn *section(Elf *e, size_t shstrndx, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	const char *name;

	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, sh) && (name = elf_strptr(e, shstrndx, sh->sh_name)) &&
		    !strcmp(name, want))
			return scn;
	return NULL;
}

/* A section's data, decompressed (NULL: none, or it cannot be). */
static Elf_Data *plain_data(Elf_Scn *scn)
{
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
	    ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0))
		return NULL;
	return elf_getdata(scn, NULL);
}

/* Map the compressed bytes of .debug_info (section header ish, compression header of
 * chdr bytes) and start inflating them: 0, 1 (not a stream this reader takes), -errno. */
static int open_stream(struct tly_dwinfo *d, int fd, const GElf_Shdr *ish, size_t chdr)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t at;

	if (page <= 0)
		return 1;
	at = (size_t)ish->sh_offset % (size_t)page;
	d->map_len = at + (size_t)ish->sh_size;
	d->map = mmap(NULL, d->map_len, PROT_READ, MAP_PRIVATE, fd, (off_t)(ish->sh_offset - at));
	if (d->map == MAP_FAILED) {
		d->map = NULL;
		return 1;
	}
	d->zin = (const unsigned char *)d->map + at + chdr;
	d->zlen = ish->sh_size - chdr;
	/* a zlib stream (RFC 1950): its deflate data inflated raw (fetches skip the
	 * adler32 of every byte; scan_units checks it once) */
	if (d->zlen < 2 || (d->zin[0] & 0x0f) != 8 || (d->zin[0] >> 4) > 7 || d->zin[1] & 0x20 ||
	    ((unsigned)d->zin[0] << 8 | d->zin[1]) % 31)
		return 1;
	d->zs.next_in = (Bytef *)(uintptr_t)(d->zin + 2);
	d->zs.avail_in = (uInt)(d->zlen - 2);
	if (inflateInit2(&d->zs, -15) != Z_OK)
		return -ENOMEM;
	d->live = true;
	return 0;
}

/* Hand libdw the units buffer as .debug_info (its first unit in: libdw takes no empty
 * section) and hide .debug_aranges from it. */
static int take_over(struct tly_dwinfo *d, Elf_Scn *info, Elf_Scn *ar)
{
	GElf_Shdr ish, ash;

	d->buf = mmap(NULL, d->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0);
	if (d->buf == MAP_FAILED) {
		d->buf = NULL;
		return -ENOMEM;
	}
	if (!gelf_getshdr(info, &ish) || !gelf_getshdr(ar, &ash))
		return -EINVAL;
	ish.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
	ash.sh_type = SHT_NOBITS;
	if (!gelf_update_shdr(info, &ish) || !gelf_update_shdr(ar, &ash) ||
	    !(d->data = elf_getdata(info, NULL)))
		return -EINVAL;
	d->data->d_buf = d->buf;
	d->data->d_size = 0;
	return fetch(d, 0);
}

int tly_dwinfo__prepare(struct tly_dwinfo **out, Elf *e, int fd)
{
	struct tly_dwinfo *d;
	Elf_Scn *info, *ar;
	Elf_Data *ab_data, *ar_data;
	GElf_Shdr sh, ish;
	GElf_Ehdr eh;
	size_t shstrndx, chdr;
	unsigned char ch[sizeof(Elf64_Chdr)];
	struct stat st;
	uint64_t size;
	int err;

	*out = NULL;
	if (!gelf_getehdr(e, &eh) || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    elf_getshdrstrndx(e, &shstrndx) || fstat(fd, &st) || st.st_size < 0)
		return 0;
	if (section(e, shstrndx, ".debug_types", &sh) || section(e, shstrndx, ".gnu_debugaltlink", &sh))
		return 0;
	if (!(info = section(e, shstrndx, ".debug_info", &ish)) || !(ish.sh_flags & SHF_COMPRESSED) ||
	    ish.sh_type == SHT_NOBITS || (ish.sh_flags & SHF_GROUP))
		return 0;
	chdr = eh.e_ident[EI_CLASS] == ELFCLASS64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
	if (ish.sh_offset > (uint64_t)st.st_size || ish.sh_size > (uint64_t)st.st_size - ish.sh_offset ||
	    ish.sh_size <= chdr || ish.sh_size - chdr > UINT_MAX ||
	    pread(fd, ch, chdr, (off_t)ish.sh_offset) != (ssize_t)chdr || le(ch, 4) != ELFCOMPRESS_ZLIB)
		return 0;
	size = eh.e_ident[EI_CLASS] == ELFCLASS64 ? le(ch + 8, 8) : le(ch + 4, 4);
	if (!size || size > SIZE_MAX / 2)
		return 0;
	if (!(ar = section(e, shstrndx, ".debug_aranges", &sh)) ||
	    !(ab_data = plain_data(section(e, shstrndx, ".debug_abbrev", &sh))) ||
	    !abbrevs_local(ab_data) || !(ar_data = plain_data(ar)))
		return 0;

	d = calloc(1, sizeof(*d));
	if (!d || !(d->scratch = malloc(SCRATCH))) {
		free(d);
		return -ENOMEM;
	}
	err = open_stream(d, fd, &ish, chdr);
	if (!err) {
		err = scan_units(d, size);
		drop_input(d);
		d->spent = 0;
		/* not one this reader takes: libdw reads it whole */
		if (err == -EINVAL || (!err && !read_aranges(d, ar_data)))
			err = 1;
	}
	d->cap = (size_t)size;
	if (!err)
		err = take_over(d, info, ar);
	if (err) {
		if (d->data)
			d->data->d_buf = NULL;
		tly_dwinfo__delete(d);
		return err > 0 ? 0 : err;
	}
	*out = d;
	return 0;
}

int tly_dwinfo__unit(struct tly_dwinfo *d, size_t n, uint64_t *die_off)
{
	if (n >= d->nr_units || fetch(d, n))
		return -ENOENT;
	*die_off = d->units[n].at + d->units[n].hdr;
	return 0;
}

int tly_dwinfo__addr_unit(struct tly_dwinfo *d, uint64_t addr, uint64_t *die_off)
{
	size_t lo = 0, hi = d->nr_ar;

	/* the last arange starting at or below addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->ar[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - d->ar[lo - 1].lo >= d->ar[lo - 1].len)
		return -ENOENT;
	return tly_dwinfo__unit(d, d->ar[lo - 1].unit, die_off);
}
