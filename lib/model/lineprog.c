/*
 * A walk over one DWARF line-number program that finds, per sequence, where its first
 * DW_LNS_set_file comes (see internal/lineprog.h).
 *
 * Why: binutils 2.40 (objdump -l, so perf annotate) names the rows of a DWARF 5 table
 * that come before a sequence's first set_file, whose file register holds its default
 * 1, after file entry 0, and every row after it by its true entry. Where entries 0 and 1
 * differ (glibc's strfromd.c including strfrom-skeleton.c, dl-get-cpu-features.c
 * including dl-cacheinfo.h) a listing shows what perf shows only when it knows which
 * rows those are; libdw hands out rows without the opcodes that made them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal/lineprog.h"

struct reader {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t rd_fixed(struct reader *r, unsigned n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)	/* little-endian: x86-64's DWARF */
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end) {
		unsigned char b = *r->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return v;
}

static int add_seq(struct tly_seq_defaults *d, const struct tly_seq_default *seq)
{
	if (d->nr % 64 == 0) {
		struct tly_seq_default *v = realloc(d->seqs, (d->nr + 64) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->seqs = v;
	}
	d->seqs[d->nr++] = *seq;
	return 0;
}

static int seq_cmp(const void *x, const void *y)
{
	const struct tly_seq_default *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

int tly_lineprog__defaults(const void *section, size_t size, uint64_t off,
			   struct tly_seq_defaults *out)
{
	struct reader r = { .p = section, .end = (const unsigned char *)section + size };
	const unsigned char *unit_end, *prog;
	uint64_t len, hlen, addr = 0;
	unsigned version, offsz = 4, min_len, max_ops = 1, opcode_base, line_range;
	const unsigned char *std_lens;
	struct tly_seq_default seq = { 0 };
	bool started = false;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (off >= size)
		return -EINVAL;
	r.p += off;
	len = rd_fixed(&r, 4);
	if (len == 0xffffffff) {
		len = rd_fixed(&r, 8);
		offsz = 8;
	}
	if (r.bad || len > (uint64_t)(r.end - r.p))
		return -EINVAL;
	unit_end = r.p + len;
	r.end = unit_end;
	version = (unsigned)rd_fixed(&r, 2);
	if (version < 2 || version > 5)
		return -EINVAL;
	if (version >= 5)
		rd_fixed(&r, 2);	/* address size, segment selector size */
	hlen = rd_fixed(&r, offsz);
	if (r.bad || hlen > (uint64_t)(r.end - r.p))
		return -EINVAL;
	prog = r.p + hlen;
	min_len = (unsigned)rd_fixed(&r, 1);
	if (version >= 4)
		max_ops = (unsigned)rd_fixed(&r, 1);
	rd_fixed(&r, 1);		/* default_is_stmt */
	rd_fixed(&r, 1);		/* line_base */
	line_range = (unsigned)rd_fixed(&r, 1);
	opcode_base = (unsigned)rd_fixed(&r, 1);
	std_lens = r.p;
	if (r.bad || !line_range || !opcode_base || max_ops != 1 ||
	    (size_t)(prog - r.p) < opcode_base - 1)
		return -EINVAL;
	r.p = prog;

	/* the rows (non-end ones) a sequence has at the address where its first set_file
	 * comes, before it */
#define ROW()                                                                  \
	do {                                                                   \
		if (!started)                                                  \
			seq.start = addr;                                      \
		started = true;                                                \
		if (!seq.set_file) {                                           \
			seq.nr_at = seq.set_file_addr == addr ? seq.nr_at + 1 : 1; \
			seq.set_file_addr = addr;                              \
		}                                                              \
	} while (0)
	while (r.p < r.end && !r.bad && !err) {
		unsigned op = *r.p++;

		if (op >= opcode_base) {
			addr += (uint64_t)((op - opcode_base) / line_range) * min_len;
			ROW();
			continue;
		}
		switch (op) {
		case 0: {	/* extended */
			uint64_t n = rd_uleb(&r);
			const unsigned char *next;
			unsigned sub;

			if (r.bad || !n || n > (uint64_t)(r.end - r.p)) {
				r.bad = true;
				break;
			}
			next = r.p + n;
			sub = *r.p++;
			if (sub == 1) {		/* end_sequence */
				if (!started)
					seq.start = addr;
				seq.end = addr;
				err = add_seq(out, &seq);
				addr = 0;
				memset(&seq, 0, sizeof(seq));
				started = false;
			} else if (sub == 2 && n - 1 <= 8) {	/* set_address */
				addr = rd_fixed(&r, (unsigned)(n - 1));
			}
			r.p = next;
			break;
		}
		case 1:		/* copy */
			ROW();
			break;
		case 2:		/* advance_pc */
			addr += rd_uleb(&r) * min_len;
			break;
		case 4:		/* set_file */
			rd_uleb(&r);
			if (!seq.set_file) {
				seq.set_file = true;
				if (seq.set_file_addr != addr)	/* no row at addr yet */
					seq.nr_at = 0;
				seq.set_file_addr = addr;
			}
			break;
		case 8:		/* const_add_pc */
			addr += (uint64_t)((255 - opcode_base) / line_range) * min_len;
			break;
		case 9:		/* fixed_advance_pc */
			addr += rd_fixed(&r, 2);
			break;
		default:	/* operands as the header counts them (uleb or sleb alike) */
			for (unsigned i = 0; i < std_lens[op - 1] && !r.bad; i++)
				rd_uleb(&r);
			break;
		}
	}
#undef ROW
	if (err || r.bad) {
		tly_seq_defaults__release(out);
		return err ? err : -EINVAL;
	}
	qsort(out->seqs, out->nr, sizeof(*out->seqs), seq_cmp);
	return 0;
}

const struct tly_seq_default *tly_seq_defaults__find(const struct tly_seq_defaults *d,
						      uint64_t addr)
{
	size_t lo = 0, hi = d->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->seqs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr <= d->seqs[lo - 1].end ? &d->seqs[lo - 1] : NULL;
}

bool tly_seq_default__is_default(const struct tly_seq_default *s, uint64_t addr, size_t nth)
{
	return !s->set_file || addr < s->set_file_addr ||
	       (addr == s->set_file_addr && nth < s->nr_at);
}

void tly_seq_defaults__release(struct tly_seq_defaults *d)
{
	free(d->seqs);
	d->seqs = NULL;
	d->nr = 0;
}
