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

/* What the opcodes need from a line-number program's header. */
struct prog_header {
	unsigned min_len, opcode_base, line_range;
	const unsigned char *std_lens;
};

/* Read the header of the unit at off; leaves r over the unit's opcodes. */
static int read_header(struct reader *r, uint64_t off, struct prog_header *h)
{
	const unsigned char *prog;
	uint64_t len, hlen;
	unsigned version, offsz = 4, max_ops = 1;

	if (off >= (uint64_t)(r->end - r->p))
		return -EINVAL;
	r->p += off;
	len = rd_fixed(r, 4);
	if (len == 0xffffffff) {
		len = rd_fixed(r, 8);
		offsz = 8;
	}
	if (r->bad || len > (uint64_t)(r->end - r->p))
		return -EINVAL;
	r->end = r->p + len;
	version = (unsigned)rd_fixed(r, 2);
	if (version < 2 || version > 5)
		return -EINVAL;
	if (version >= 5)
		rd_fixed(r, 2);	/* address size, segment selector size */
	hlen = rd_fixed(r, offsz);
	if (r->bad || hlen > (uint64_t)(r->end - r->p))
		return -EINVAL;
	prog = r->p + hlen;
	h->min_len = (unsigned)rd_fixed(r, 1);
	if (version >= 4)
		max_ops = (unsigned)rd_fixed(r, 1);
	rd_fixed(r, 1);		/* default_is_stmt */
	rd_fixed(r, 1);		/* line_base */
	h->line_range = (unsigned)rd_fixed(r, 1);
	h->opcode_base = (unsigned)rd_fixed(r, 1);
	h->std_lens = r->p;
	if (r->bad || !h->line_range || !h->opcode_base || max_ops != 1 ||
	    (size_t)(prog - r->p) < h->opcode_base - 1)
		return -EINVAL;
	r->p = prog;
	return 0;
}

/* The state machine's registers that matter here, and the sequence being read. */
struct prog_state {
	uint64_t addr;
	struct tly_seq_default seq;
	bool started;
};

/* A row (non-end) at the current address: count the rows a sequence has at the
 * address where its first set_file comes, before it. */
static void row(struct prog_state *st)
{
	if (!st->started)
		st->seq.start = st->addr;
	st->started = true;
	if (!st->seq.set_file) {
		st->seq.nr_at = st->seq.set_file_addr == st->addr ? st->seq.nr_at + 1 : 1;
		st->seq.set_file_addr = st->addr;
	}
}

/* An extended opcode: end_sequence adds the sequence to out, set_address. */
static int extended_op(struct reader *r, struct prog_state *st, struct tly_seq_defaults *out)
{
	uint64_t n = rd_uleb(r);
	const unsigned char *next;
	unsigned sub;
	int err = 0;

	if (r->bad || !n || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return 0;
	}
	next = r->p + n;
	sub = *r->p++;
	if (sub == 1) {		/* end_sequence */
		if (!st->started)
			st->seq.start = st->addr;
		st->seq.end = st->addr;
		err = add_seq(out, &st->seq);
		memset(st, 0, sizeof(*st));
	} else if (sub == 2 && n - 1 <= 8) {	/* set_address */
		st->addr = rd_fixed(r, (unsigned)(n - 1));
	}
	r->p = next;
	return err;
}

static void set_file(struct prog_state *st)
{
	if (!st->seq.set_file) {
		st->seq.set_file = true;
		if (st->seq.set_file_addr != st->addr)	/* no row at addr yet */
			st->seq.nr_at = 0;
		st->seq.set_file_addr = st->addr;
	}
}

/* Run the opcodes, adding each sequence to out. */
static int run_program(struct reader *r, const struct prog_header *h,
		       struct tly_seq_defaults *out)
{
	struct prog_state st = { 0 };
	int err = 0;

	while (r->p < r->end && !r->bad && !err) {
		unsigned op = *r->p++;

		if (op >= h->opcode_base) {
			st.addr += (uint64_t)((op - h->opcode_base) / h->line_range) * h->min_len;
			row(&st);
			continue;
		}
		switch (op) {
		case 0:		/* extended */
			err = extended_op(r, &st, out);
			break;
		case 1:		/* copy */
			row(&st);
			break;
		case 2:		/* advance_pc */
			st.addr += rd_uleb(r) * h->min_len;
			break;
		case 4:		/* set_file */
			rd_uleb(r);
			set_file(&st);
			break;
		case 8:		/* const_add_pc */
			st.addr += (uint64_t)((255 - h->opcode_base) / h->line_range) * h->min_len;
			break;
		case 9:		/* fixed_advance_pc */
			st.addr += rd_fixed(r, 2);
			break;
		default:	/* operands as the header counts them (uleb or sleb alike) */
			for (unsigned i = 0; i < h->std_lens[op - 1] && !r->bad; i++)
				rd_uleb(r);
			break;
		}
	}
	return err ? err : r->bad ? -EINVAL : 0;
}

int tly_lineprog__defaults(const void *section, size_t size, uint64_t off,
			   struct tly_seq_defaults *out)
{
	struct reader r = { .p = section, .end = (const unsigned char *)section + size };
	struct prog_header h;
	int err;

	memset(out, 0, sizeof(*out));
	err = read_header(&r, off, &h);
	if (err)
		return err;
	err = run_program(&r, &h, out);
	if (err) {
		tly_seq_defaults__exit(out);
		return err;
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

void tly_seq_defaults__exit(struct tly_seq_defaults *d)
{
	free(d->seqs);
	d->seqs = NULL;
	d->nr = 0;
}
