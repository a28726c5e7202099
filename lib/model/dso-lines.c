/*
 * Source lines of addresses a session resolved (see tally_dso_lines in tally/srcline.h),
 * for exporters that name a frame's file and line and the functions inlined at it
 * (pprof's lines, a flame graph's inlined frames).
 *
 * A resolved address is in its dso's address space (the file offset, for ELF files);
 * DWARF speaks ELF virtual addresses, so each dso's loadable segments are read once
 * to translate. Dsos without DWARF (most distribution libraries), the kernel and JIT
 * code are remembered as such after the first try: a lookup there costs one array read.
 * Answers are kept per address (samples repeat their addresses; a DWARF lookup that
 * moves to another function walks its unit's tree), their function names copied into a
 * pool so they stay valid until __delete.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include <tally/session.h>
#include <tally/srcline.h>
#include "internal/strpool.h"
#include "internal/util.h"

struct seg {
	uint64_t offset, vaddr, filesz;
};

struct dso_state {
	bool tried;
	struct tally_lines *lines;	/* NULL: no lines for this dso */
	struct seg *segs;
	size_t nr_segs;
};

/* a remembered answer: lines[first .. first + n) */
struct answer {
	uint64_t off;		/* dso address looked up (a return address minus one) */
	uint32_t dso;		/* tally_dso__index + 1; 0: empty slot */
	uint32_t first;
	uint32_t n;
};

struct tally_dso_lines {
	struct tally_session *s;
	struct dso_state *dsos;		/* by tally_dso__index */
	size_t nr_dsos;
	struct answer *answers;		/* open addressing on (dso, off) */
	size_t nr_answers, cap_answers;	/* cap: a power of two */
	struct tally_line *lines;
	size_t nr_lines, cap_lines;
	struct tly_strpool names;
};

int tally_dso_lines__new(struct tally_dso_lines **out, struct tally_session *s)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->s = s;
	return 0;
}

void tally_dso_lines__delete(struct tally_dso_lines *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nr_dsos; i++) {
		tally_lines__delete(l->dsos[i].lines);
		free(l->dsos[i].segs);
	}
	free(l->dsos);
	free(l->answers);
	free(l->lines);
	tly_strpool__exit(&l->names);
	free(l);
}

/* The PT_LOAD segments of the ELF file at path. */
static int read_segs(struct dso_state *d, const char *path)
{
	int fd = tly_open_regular(path), err = -ENOENT;
	size_t n = 0;
	Elf *e;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0 && n) {
		d->segs = calloc(n, sizeof(*d->segs));
		err = d->segs ? 0 : -ENOMEM;
		for (size_t i = 0; d->segs && i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
				d->segs[d->nr_segs++] = (struct seg){ ph.p_offset, ph.p_vaddr,
								      ph.p_filesz };
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

static void open_dso(struct tally_dso_lines *l, struct dso_state *d, struct tally_dso *dso)
{
	char path[4096], debug[4096];
	const char *name = tally_dso__name(dso);

	d->tried = true;
	/* the kernel (no vmlinux here), JIT code and anonymous memory have no files */
	if (tally_dso__is_kernel(dso) || tally_dso__is_jit(dso) || name[0] == '[' ||
	    !strncmp(name, "//", 2))
		return;
	if (tally_session__dso_files(l->s, dso, path, sizeof(path), debug, sizeof(debug)))
		return;
	if (read_segs(d, path))
		return;
	if (tally_lines__open(&d->lines, path, debug[0] ? debug : NULL)) {
		free(d->segs);
		d->segs = NULL;
		d->nr_segs = 0;
	}
}

static struct dso_state *state(struct tally_dso_lines *l, struct tally_dso *dso)
{
	size_t i = tally_dso__index(dso);

	if (i >= l->nr_dsos) {
		size_t n = i + 64;
		struct dso_state *v = realloc(l->dsos, n * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + l->nr_dsos, 0, (n - l->nr_dsos) * sizeof(*v));
		l->dsos = v;
		l->nr_dsos = n;
	}
	if (!l->dsos[i].tried)
		open_dso(l, &l->dsos[i], dso);
	return &l->dsos[i];
}

static size_t answer_slot(const struct tally_dso_lines *l, uint32_t dso, uint64_t off)
{
	uint64_t h = (off ^ ((uint64_t)dso << 40)) * 0x9e3779b97f4a7c15ull;
	size_t mask = l->cap_answers - 1, i;

	for (i = (size_t)(h >> 20) & mask; l->answers[i].dso; i = (i + 1) & mask)
		if (l->answers[i].dso == dso && l->answers[i].off == off)
			break;
	return i;
}

static int grow_answers(struct tally_dso_lines *l)
{
	struct answer *old = l->answers;
	size_t n = l->cap_answers;

	l->cap_answers = n ? n * 2 : 4096;
	l->answers = calloc(l->cap_answers, sizeof(*l->answers));
	if (!l->answers) {
		l->answers = old;
		l->cap_answers = n;
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (old[i].dso)
			l->answers[answer_slot(l, old[i].dso, old[i].off)] = old[i];
	free(old);
	return 0;
}

/* The DWARF's answer for off in d, kept at *a. */
static int look_up(struct tally_dso_lines *l, struct dso_state *d, uint64_t off,
		   struct answer *a)
{
	struct tally_line ln[64];
	int n = 0;

	for (size_t i = 0; i < d->nr_segs; i++) {
		const struct seg *s = &d->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			n = tally_lines__find_inline(d->lines, off - s->offset + s->vaddr, ln,
						     sizeof(ln) / sizeof(ln[0]));
			break;
		}
	}
	a->first = (uint32_t)l->nr_lines;
	a->n = 0;
	for (int i = 0; i < n; i++) {
		if (l->nr_lines == l->cap_lines) {
			size_t cap = l->cap_lines ? l->cap_lines * 2 : 1024;
			struct tally_line *v = realloc(l->lines, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			l->lines = v;
			l->cap_lines = cap;
		}
		/* file names live as long as d->lines; function names only until the next
		 * lookup there: they go into the pool */
		if (ln[i].function) {
			int64_t id = tly_strpool__intern(&l->names, ln[i].function);

			if (id < 0)
				return -ENOMEM;
			ln[i].function = tly_strpool__str(&l->names, (uint32_t)id);
		}
		l->lines[l->nr_lines++] = ln[i];
		a->n++;
	}
	return 0;
}

int tally_dso_lines__find(struct tally_dso_lines *l, const struct tally_addr_loc *loc,
			  bool return_addr, struct tally_line *out, size_t max)
{
	struct dso_state *d;
	struct answer *a;
	uint64_t off;
	uint32_t key;
	size_t n;

	if (!loc->dso || !loc->map || !max)
		return 0;
	d = state(l, loc->dso);
	if (!d)
		return -ENOMEM;
	if (!d->lines)
		return 0;
	/* a caller's frame holds the return address: the call is the byte before it */
	off = loc->dso_addr - (return_addr && loc->dso_addr ? 1 : 0);
	key = tally_dso__index(loc->dso) + 1;
	if ((l->nr_answers + 1) * 2 > l->cap_answers && grow_answers(l))
		return -ENOMEM;
	a = &l->answers[answer_slot(l, key, off)];
	if (!a->dso) {
		if (look_up(l, d, off, a))
			return -ENOMEM;
		a->dso = key;
		a->off = off;
		l->nr_answers++;
	}
	n = a->n < max ? a->n : max;
	memcpy(out, l->lines + a->first, n * sizeof(*out));
	return (int)n;
}
