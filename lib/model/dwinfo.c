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

#define STEP (256u << 10)	/* output bytes between restart points (.debug_info) */
/* the same in .debug_abbrev and .debug_line, whose tables are small (a few hundred
 * bytes a unit): a restart point holds 39 KiB, a table costs on average half a step
 * inflated */
#define LAZY_STEP (128u << 10)
#define SCRATCH (64u << 10)
#define ABSENT UINT64_MAX
#define PAGE 4096u		/* what a lazy section is filled by */

/* A zlib-compressed section (SHF_COMPRESSED) inflated by pieces: its compressed bytes
 * mapped from the file (their pages given back after each use), restart points every
 * step output bytes. */
struct zsec {
	void *map;		/* the file's pages holding the compressed bytes, ours */
	size_t map_len;
	const unsigned char *zin;	/* the compressed bytes, in map */
	size_t zlen;
	z_stream zs;		/* at pos */
	bool live;
	uint64_t pos;
	uint64_t size;		/* inflated */
	uint64_t step;
	z_stream *ck;		/* restart points: ck[i] at i * step */
	size_t nr_ck;
	uint64_t spent;		/* bytes inflated by reads (not the scan) */
	unsigned char *scratch;	/* the owner's, SCRATCH bytes */
};

/* .debug_abbrev or .debug_line handed to libdw whole in size but filled by pages as
 * the units fetched need them (an abbreviation table, a line table): the pages never
 * filled cost nothing (an anonymous mapping reserved, not touched). */
struct lazy {
	struct zsec z;
	Elf_Data *data;		/* the section's, as libdw reads it */
	unsigned char *buf;
	uint8_t *filled;	/* a bit per PAGE of buf */
	bool whole;		/* every page filled */
	bool on;		/* this section is read so (else libdw has it whole) */
};

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
	struct zsec z;		/* .debug_info */
	struct lazy abbrev, line;
	struct unit *units;	/* by offset */
	size_t nr_units;
	struct arange *ar;	/* by address, none overlapping */
	size_t nr_ar;
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

static inline bool uleb(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	unsigned shift = 0;

	if (*p < end && !(**p & 0x80)) {	/* most are one byte */
		*v = *(*p)++;
		return true;
	}
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

/* One abbreviation at *p (its code already read): past its attribute specs, the spec
 * of attribute want (0: none) in *form (0: not there) and, for want, an implicit
 * constant's value. false: damaged or a form that lets a DIE refer outside its unit. */
static bool abbrev_specs(const unsigned char **p, const unsigned char *end, uint64_t want,
			 uint64_t *form)
{
	uint64_t tag, name, f, skip;

	*form = 0;
	if (!uleb(p, end, &tag) || tag == 0x3d /* DW_TAG_imported_unit */ || *p >= end)
		return false;
	(*p)++;			/* DW_CHILDREN_* */
	for (;;) {
		if (!uleb(p, end, &name) || !uleb(p, end, &f))
			return false;
		if (!name && !f)
			return true;
		switch (f) {
		case 0x10:	/* DW_FORM_ref_addr */
		case 0x16:	/* DW_FORM_indirect */
		case 0x1c:	/* DW_FORM_ref_sup4 */
		case 0x20:	/* DW_FORM_ref_sig8 */
		case 0x24:	/* DW_FORM_ref_sup8 */
		case 0x1f20:	/* DW_FORM_GNU_ref_alt */
			return false;
		case 0x21:	/* DW_FORM_implicit_const: its value follows */
			if (!uleb(p, end, &skip))
				return false;
			break;
		}
		if (want && name == want && !*form)
			*form = f;
	}
}

/* Does no abbreviation let a DIE refer outside its unit (or to a form unknown here)? */
static bool abbrevs_local(const unsigned char *p, size_t size)
{
	const unsigned char *end = p + size;
	uint64_t code, form;

	while (p < end) {
		if (!uleb(&p, end, &code))
			return false;
		if (code && !abbrev_specs(&p, end, 0, &form))
			return false;
	}
	return true;
}

/* Inflate the next n bytes into dst (NULL: throw them away). */
static int pull(struct zsec *z, unsigned char *dst, uint64_t n)
{
	while (n) {
		size_t k = dst ? (n > UINT_MAX ? UINT_MAX : (size_t)n) : (n > SCRATCH ? SCRATCH : (size_t)n);

		z->zs.next_out = dst ? dst : z->scratch;
		z->zs.avail_out = (uInt)k;
		while (z->zs.avail_out) {
			int r = inflate(&z->zs, Z_NO_FLUSH);

			if ((r != Z_OK && r != Z_STREAM_END) || (r == Z_STREAM_END && z->zs.avail_out))
				return -EINVAL;
		}
		z->pos += k;
		z->spent += k;
		n -= k;
		if (dst)
			dst += k;
	}
	return 0;
}

/* Give back the pages of the compressed bytes (read again from the file when a piece
 * is inflated). */
static void drop_input(const struct zsec *z)
{
	if (z->map)
		madvise(z->map, z->map_len, MADV_DONTNEED);
}

/* Read [off, off + n) of the section into dst. */
static int read_at(struct zsec *z, uint64_t off, uint64_t n, unsigned char *dst)
{
	size_t i = (size_t)(off / z->step);

	/* from the restart point before off, unless the stream is already between them */
	if (off < z->pos || (uint64_t)i * z->step > z->pos) {
		if (i >= z->nr_ck)
			return -EINVAL;
		inflateEnd(&z->zs);
		z->live = false;
		if (inflateCopy(&z->zs, &z->ck[i]) != Z_OK)
			return -ENOMEM;
		z->live = true;
		z->pos = (uint64_t)i * z->step;
	}
	if (pull(z, NULL, off - z->pos))
		return -EINVAL;
	return pull(z, dst, n);
}

/* Inflate the whole section once, from its start: each piece (SCRATCH bytes at most,
 * none across a restart point) to fn, the restart points taken on the way, the
 * stream's end and its adler32 checked (reads inflate raw and skip it). */
static int scan(struct zsec *z, int (*fn)(void *arg, const unsigned char *p, uint64_t at, size_t n),
		void *arg)
{
	uLong sum = adler32(0, NULL, 0);
	unsigned char end;
	int err;

	z->nr_ck = (size_t)((z->size + z->step - 1) / z->step);
	z->ck = calloc(z->nr_ck ? z->nr_ck : 1, sizeof(*z->ck));
	if (!z->ck)
		return -ENOMEM;
	while (z->pos < z->size) {
		uint64_t p0 = z->pos, k = z->size - p0;

		if (p0 % z->step == 0 && inflateCopy(&z->ck[p0 / z->step], &z->zs) != Z_OK)
			return -ENOMEM;
		if (k > SCRATCH)
			k = SCRATCH;
		if (k > z->step - p0 % z->step)
			k = z->step - p0 % z->step;
		if (pull(z, z->scratch, k))
			return -EINVAL;
		sum = adler32(sum, z->scratch, (uInt)k);
		if (fn && (err = fn(arg, z->scratch, p0, (size_t)k)))
			return err;
	}
	/* the adler32 (big-endian) right after the stream's end */
	z->zs.next_out = &end;
	z->zs.avail_out = 1;
	if (inflate(&z->zs, Z_FINISH) != Z_STREAM_END || z->zs.avail_in < 4 ||
	    ((uint32_t)z->zs.next_in[0] << 24 | (uint32_t)z->zs.next_in[1] << 16 |
	     (uint32_t)z->zs.next_in[2] << 8 | z->zs.next_in[3]) != sum)
		return -EINVAL;
	z->spent = 0;
	drop_input(z);
	return 0;
}

static void zsec_free(struct zsec *z)
{
	if (z->live)
		inflateEnd(&z->zs);
	for (size_t i = 0; z->ck && i < z->nr_ck; i++)
		if (z->ck[i].state)
			inflateEnd(&z->ck[i]);
	free(z->ck);
	if (z->map)
		munmap(z->map, z->map_len);
}

/* Fill [lo, hi) of a lazy section (whole pages). */
static int lazy_fill(struct lazy *lz, uint64_t lo, uint64_t hi)
{
	size_t a, b;
	bool all = lz->z.spent > lz->z.size;
	int err = 0;

	if (!lz->on || lz->whole)
		return 0;
	/* fills all over the section have cost as much as inflating it whole: the rest
	 * comes in at once (as the units do in fetch) */
	if (all) {
		lo = 0;
		hi = lz->z.size;
	}
	if (hi > lz->z.size)
		hi = lz->z.size;
	if (lo >= hi)
		return 0;
	a = (size_t)(lo / PAGE);
	b = (size_t)((hi + PAGE - 1) / PAGE);
	while (a < b && !err) {
		size_t e = a;
		uint64_t from, to;

		if (lz->filled[a / 8] & (1u << (a % 8))) {
			a++;
			continue;
		}
		while (e < b && !(lz->filled[e / 8] & (1u << (e % 8))))
			e++;
		from = (uint64_t)a * PAGE;
		to = (uint64_t)e * PAGE < lz->z.size ? (uint64_t)e * PAGE : lz->z.size;
		err = read_at(&lz->z, from, to - from, lz->buf + from);
		for (; !err && a < e; a++)
			lz->filled[a / 8] |= (uint8_t)(1u << (a % 8));
	}
	drop_input(&lz->z);
	if (!err && all)
		lz->whole = true;
	return err;
}

static int lazy_whole(struct lazy *lz)
{
	int err = lazy_fill(lz, 0, lz->z.size);

	if (!err && lz->on)
		lz->whole = true;
	return err;
}

/* Past the value of a FORM at *p, in a unit of address size asz (32-bit offsets). */
static bool skip_form(const unsigned char **p, const unsigned char *end, uint64_t form, unsigned asz)
{
	const unsigned char *nul;
	uint64_t n;

	switch (form) {
	case 0x19: case 0x21:	/* flag_present, implicit_const */
		n = 0;
		break;
	case 0x0b: case 0x0c: case 0x11: case 0x25: case 0x29:	/* data1 flag ref1 strx1 addrx1 */
		n = 1;
		break;
	case 0x05: case 0x12: case 0x26: case 0x2a:	/* data2 ref2 strx2 addrx2 */
		n = 2;
		break;
	case 0x27: case 0x2b:	/* strx3 addrx3 */
		n = 3;
		break;
	case 0x06: case 0x0e: case 0x13: case 0x17: case 0x1d: case 0x1f: case 0x28: case 0x2c:
	case 0x1f21:	/* data4 strp ref4 sec_offset strp_sup line_strp strx4 addrx4 GNU_strp_alt */
		n = 4;
		break;
	case 0x07: case 0x14:	/* data8 ref8 */
		n = 8;
		break;
	case 0x1e:		/* data16 */
		n = 16;
		break;
	case 0x01:		/* addr */
		n = asz;
		break;
	case 0x0d: case 0x0f: case 0x15: case 0x1a: case 0x1b: case 0x22: case 0x23:
	case 0x1f01: case 0x1f02:	/* LEB128s */
		return uleb(p, end, &n);
	case 0x08:		/* string */
		if (!(nul = memchr(*p, 0, (size_t)(end - *p))))
			return false;
		*p = nul + 1;
		return true;
	case 0x0a:		/* block1 */
		if (*p >= end)
			return false;
		n = 1 + (uint64_t)**p;
		break;
	case 0x03:		/* block2 */
		if (end - *p < 2)
			return false;
		n = 2 + le(*p, 2);
		break;
	case 0x04:		/* block4 */
		if (end - *p < 4)
			return false;
		n = 4 + le(*p, 4);
		break;
	case 0x09: case 0x18:	/* block exprloc */
		if (!uleb(p, end, &n))
			return false;
		break;
	default:
		return false;
	}
	if (n > (uint64_t)(end - *p))
		return false;
	*p += n;
	return true;
}

/* The abbreviations of the table at off: the section's bytes from there to its end
 * (lazily filled: as many pages as it takes). NULL: damaged. */
static const unsigned char *abbrev_table(struct tly_dwinfo *d, uint64_t off, const unsigned char **tend)
{
	const unsigned char *ab = d->abbrev.on ? d->abbrev.buf : d->abbrev.data->d_buf;
	uint64_t size = d->abbrev.on ? d->abbrev.z.size : d->abbrev.data->d_size;
	uint64_t have = off + PAGE;

	if (off >= size)
		return NULL;
	for (;;) {
		const unsigned char *p = ab + off, *end = ab + (have < size ? have : size);
		uint64_t code, form;
		bool ok;

		if (lazy_fill(&d->abbrev, off, have))
			return NULL;
		while ((ok = uleb(&p, end, &code)) && code && (ok = abbrev_specs(&p, end, 0, &form)))
			;
		if (ok && !code) {
			*tend = p;
			return ab + off;
		}
		if (have >= size)
			return NULL;
		have += 16 * PAGE;
	}
}

/* The unit DIE's DW_AT_stmt_list (u in buf): 1 when it has none, -1 when it cannot
 * be read here. */
static int stmt_list(struct tly_dwinfo *d, const struct unit *u, uint64_t *off)
{
	const unsigned char *h = d->buf + u->at, *end = h + u->len, *p = h + u->hdr, *a, *tend;
	uint64_t ver = le(h + 4, 2), code, c, name, form, skip;
	unsigned asz = ver == 5 ? h[7] : h[10];

	if (!(a = abbrev_table(d, le(h + (ver == 5 ? 8 : 6), 4), &tend)) || !uleb(&p, end, &code) ||
	    !code)
		return -1;
	/* its abbreviation */
	for (;;) {
		if (!uleb(&a, tend, &c) || !c)
			return -1;
		if (c == code)
			break;
		if (!abbrev_specs(&a, tend, 0, &form))
			return -1;
	}
	if (!uleb(&a, tend, &c) || a >= tend)
		return -1;
	a++;			/* its tag read, DW_CHILDREN_* */
	for (;;) {
		if (!uleb(&a, tend, &name) || !uleb(&a, tend, &form))
			return -1;
		if (!name && !form)
			return 1;
		if (form == 0x21 && !uleb(&a, tend, &skip))
			return -1;
		if (name == 0x10 /* DW_AT_stmt_list */) {
			if ((form != 0x17 && form != 0x06) || end - p < 4)
				return -1;	/* sec_offset, data4 */
			*off = le(p, 4);
			return 0;
		}
		if (!skip_form(&p, end, form, asz))
			return -1;
	}
}

/* What libdw reads of a unit outside .debug_info: its abbreviation table, and its line
 * table, into their lazy sections (both whole where the unit DIE is not read here). */
static int unit_tables(struct tly_dwinfo *d, const struct unit *u)
{
	uint64_t off, len;
	int r;

	if (!d->abbrev.on && !d->line.on)
		return 0;
	r = stmt_list(d, u, &off);
	if (r < 0) {
		int err = lazy_whole(&d->abbrev);

		return err ? err : lazy_whole(&d->line);
	}
	if (r > 0 || !d->line.on || d->line.z.size < 4 || off > d->line.z.size - 4)
		return 0;	/* none, or libdw finds it damaged */
	if ((r = lazy_fill(&d->line, off, off + 4)))
		return r;
	len = le(d->line.buf + off, 4);
	if (len >= 0xfffffff0)
		return lazy_whole(&d->line);
	return lazy_fill(&d->line, off, off + 4 + len);
}

/* Unit n into buf (where it is not already). */
static int fetch_one(struct tly_dwinfo *d, size_t n)
{
	struct unit *u = &d->units[n];
	int err;

	if (u->at != ABSENT)
		return 0;
	if (!d->z.live || u->len > d->cap - d->used)
		return -EINVAL;
	err = read_at(&d->z, u->off, u->len, d->buf + d->used);
	if (err)
		return err;
	u->at = d->used;
	err = unit_tables(d, u);
	if (err) {
		u->at = ABSENT;
		return err;
	}
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
	if (!err && !d->all && d->z.spent > d->cap) {
		d->all = true;
		if (!(err = lazy_whole(&d->abbrev)))
			err = lazy_whole(&d->line);
		for (size_t i = 0; i < d->nr_units && !err; i++)
			err = fetch_one(d, i);
	}
	drop_input(&d->z);
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

/* The unit headers in the pieces of .debug_info as scan inflates them. */
struct unit_scan {
	struct tly_dwinfo *d;
	uint64_t next;		/* the next unit's offset */
	unsigned char h[12];
	size_t fill, cap;
};

static int unit_piece(void *arg, const unsigned char *piece, uint64_t p0, size_t k)
{
	struct unit_scan *us = arg;
	struct tly_dwinfo *d = us->d;

	/* the headers starting in or running into this piece */
	while (us->next + us->fill < p0 + k) {
		uint64_t from = us->next + us->fill, n = 12 - us->fill;

		if (from < p0)
			return -EINVAL;
		if (n > p0 + k - from)
			n = p0 + k - from;
		memcpy(us->h + us->fill, piece + (from - p0), (size_t)n);
		us->fill += (size_t)n;
		if (us->fill < 12)
			break;
		if (d->nr_units == us->cap) {
			struct unit *v;

			us->cap = us->cap ? us->cap * 2 : 256;
			v = realloc(d->units, us->cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			d->units = v;
		}
		if (us->next + 12 > d->z.size ||
		    !unit_header(us->h, us->next, d->z.size, &d->units[d->nr_units]))
			return -EINVAL;
		us->next += d->units[d->nr_units++].len;
		us->fill = 0;
	}
	return 0;
}

/* Inflate the whole section once: the unit boundaries and the restart points. */
static int scan_units(struct tly_dwinfo *d)
{
	struct unit_scan us = { .d = d };
	int err = scan(&d->z, unit_piece, &us);

	if (!err && (us.next != d->z.size || us.fill || !d->nr_units))
		err = -EINVAL;
	return err;
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

static void lazy_free(struct lazy *lz)
{
	zsec_free(&lz->z);
	if (lz->buf)
		munmap(lz->buf, (size_t)lz->z.size);
	free(lz->filled);
}

void tly_dwinfo__delete(struct tly_dwinfo *d)
{
	if (!d)
		return;
	zsec_free(&d->z);
	lazy_free(&d->abbrev);
	lazy_free(&d->line);
	if (d->buf)
		munmap(d->buf, d->cap);
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

/* Is scn zlib-compressed (SHF_COMPRESSED) and whole in the file? Its header in *sh,
 * the compression header's size in *chdr, the inflated size in *size. */
static bool zlib_section(Elf *e, int fd, Elf_Scn *scn, GElf_Shdr *sh, size_t *chdr, uint64_t *size)
{
	unsigned char ch[sizeof(Elf64_Chdr)];
	GElf_Ehdr eh;
	struct stat st;
	bool is64;

	if (!scn || !gelf_getshdr(scn, sh) || !gelf_getehdr(e, &eh) || fstat(fd, &st) ||
	    st.st_size < 0 || !(sh->sh_flags & SHF_COMPRESSED) || sh->sh_type == SHT_NOBITS ||
	    (sh->sh_flags & SHF_GROUP))
		return false;
	is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	*chdr = is64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
	if (sh->sh_offset > (uint64_t)st.st_size || sh->sh_size > (uint64_t)st.st_size - sh->sh_offset ||
	    sh->sh_size <= *chdr || sh->sh_size - *chdr > UINT_MAX ||
	    pread(fd, ch, *chdr, (off_t)sh->sh_offset) != (ssize_t)*chdr || le(ch, 4) != ELFCOMPRESS_ZLIB)
		return false;
	*size = is64 ? le(ch + 8, 8) : le(ch + 4, 4);
	return *size && *size <= SIZE_MAX / 2;
}

/* Map the compressed bytes of a section (its header sh, compression header of chdr
 * bytes) and start inflating them: 0, 1 (not a stream this reader takes), -errno. */
static int zsec_open(struct zsec *z, int fd, const GElf_Shdr *sh, size_t chdr)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t at;

	if (page <= 0)
		return 1;
	at = (size_t)sh->sh_offset % (size_t)page;
	z->map_len = at + (size_t)sh->sh_size;
	z->map = mmap(NULL, z->map_len, PROT_READ, MAP_PRIVATE, fd, (off_t)(sh->sh_offset - at));
	if (z->map == MAP_FAILED) {
		z->map = NULL;
		return 1;
	}
	z->zin = (const unsigned char *)z->map + at + chdr;
	z->zlen = sh->sh_size - chdr;
	/* a zlib stream (RFC 1950): its deflate data inflated raw (reads skip the
	 * adler32 of every byte; scan checks it once) */
	if (z->zlen < 2 || (z->zin[0] & 0x0f) != 8 || (z->zin[0] >> 4) > 7 || z->zin[1] & 0x20 ||
	    ((unsigned)z->zin[0] << 8 | z->zin[1]) % 31)
		return 1;
	z->zs.next_in = (Bytef *)(uintptr_t)(z->zin + 2);
	z->zs.avail_in = (uInt)(z->zlen - 2);
	if (inflateInit2(&z->zs, -15) != Z_OK)
		return -ENOMEM;
	z->live = true;
	return 0;
}

static int keep_piece(void *arg, const unsigned char *piece, uint64_t at, size_t n)
{
	struct lazy *lz = arg;

	memcpy(lz->buf + at, piece, n);
	return 0;
}

/* Set lz up to read the compressed section scn (.debug_abbrev, .debug_line) lazily,
 * its restart points taken (keep: its bytes left in buf, which the caller drops):
 * 0, 1 (not one this reader takes: lz is left off), -errno. */
static int lazy_open(struct tly_dwinfo *d, struct lazy *lz, Elf *e, int fd, Elf_Scn *scn, bool keep)
{
	GElf_Shdr sh;
	size_t chdr;
	uint64_t size;
	int err;

	if (!zlib_section(e, fd, scn, &sh, &chdr, &size))
		return 1;
	lz->z.scratch = d->scratch;
	lz->z.size = size;
	lz->z.step = LAZY_STEP;
	lz->buf = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (lz->buf == MAP_FAILED) {
		lz->buf = NULL;
		return -ENOMEM;
	}
	lz->filled = calloc((size_t)(size / PAGE / 8 + 1), 1);
	err = lz->filled ? zsec_open(&lz->z, fd, &sh, chdr) : -ENOMEM;
	if (!err)
		err = scan(&lz->z, keep ? keep_piece : NULL, lz);
	if (err) {
		lazy_free(lz);
		memset(lz, 0, sizeof(*lz));
		return err == -EINVAL ? 1 : err;
	}
	lz->on = true;
	return 0;
}

/* Hand libdw a lazy section: its size whole, its pages filled as units need them. */
static int lazy_take(struct lazy *lz, Elf_Scn *scn)
{
	GElf_Shdr sh;

	if (!lz->on)
		return 0;
	if (!gelf_getshdr(scn, &sh))
		return -EINVAL;
	sh.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
	if (!gelf_update_shdr(scn, &sh) || !(lz->data = elf_getdata(scn, NULL)))
		return -EINVAL;
	lz->data->d_buf = lz->buf;
	lz->data->d_size = (size_t)lz->z.size;
	return 0;
}

/* Hand libdw the units buffer as .debug_info (its first unit in: libdw takes no empty
 * section), the lazy sections, and hide .debug_aranges from it. */
static int take_over(struct tly_dwinfo *d, Elf_Scn *info, Elf_Scn *ar, Elf_Scn *ab, Elf_Scn *line)
{
	GElf_Shdr ish, ash;
	int err;

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
	if ((err = lazy_take(&d->abbrev, ab)) || (err = lazy_take(&d->line, line)))
		return err;
	return fetch(d, 0);
}

int tly_dwinfo__prepare(struct tly_dwinfo **out, Elf *e, int fd)
{
	struct tly_dwinfo *d;
	Elf_Scn *info, *ar, *ab, *line;
	Elf_Data *ar_data;
	GElf_Shdr sh, ish;
	GElf_Ehdr eh;
	size_t shstrndx, chdr;
	uint64_t size;
	int err;

	*out = NULL;
	if (!gelf_getehdr(e, &eh) || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    elf_getshdrstrndx(e, &shstrndx))
		return 0;
	if (section(e, shstrndx, ".debug_types", &sh) || section(e, shstrndx, ".gnu_debugaltlink", &sh))
		return 0;
	if (!(info = section(e, shstrndx, ".debug_info", &ish)) ||
	    !zlib_section(e, fd, info, &ish, &chdr, &size) ||
	    !(ar = section(e, shstrndx, ".debug_aranges", &sh)) ||
	    !(ab = section(e, shstrndx, ".debug_abbrev", &sh)))
		return 0;
	line = section(e, shstrndx, ".debug_line", &sh);

	d = calloc(1, sizeof(*d));
	if (!d || !(d->scratch = malloc(SCRATCH))) {
		free(d);
		return -ENOMEM;
	}
	d->z.scratch = d->scratch;
	d->z.step = STEP;
	d->z.size = d->cap = (size_t)size;
	/* the abbreviations checked whole, then given back (tables come in as units do) */
	err = lazy_open(d, &d->abbrev, e, fd, ab, true);
	if (err == 1)
		err = (d->abbrev.data = plain_data(ab)) ? 0 : 1;
	if (!err && !abbrevs_local(d->abbrev.on ? d->abbrev.buf : d->abbrev.data->d_buf,
				   d->abbrev.on ? (size_t)d->abbrev.z.size : d->abbrev.data->d_size))
		err = 1;
	if (!err && d->abbrev.on)
		madvise(d->abbrev.buf, (size_t)d->abbrev.z.size, MADV_DONTNEED);
	if (!err && line && (err = lazy_open(d, &d->line, e, fd, line, false)) == 1)
		err = 0;
	if (!err && !(ar_data = plain_data(ar)))
		err = 1;
	if (!err)
		err = zsec_open(&d->z, fd, &ish, chdr);
	if (!err) {
		err = scan_units(d);
		/* not one this reader takes: libdw reads it whole */
		if (err == -EINVAL || (!err && !read_aranges(d, ar_data)))
			err = 1;
	}
	if (!err)
		err = take_over(d, info, ar, ab, line);
	if (err) {
		if (d->data)
			d->data->d_buf = NULL;
		if (d->abbrev.on && d->abbrev.data)
			d->abbrev.data->d_buf = NULL;
		if (d->line.on && d->line.data)
			d->line.data->d_buf = NULL;
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
