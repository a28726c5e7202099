/*
 * DWARF unwinding of a sample's copied user stack (tally/unwind.h): a loop of our own
 * over libdw's CFI rules (dwarf_cfi_addrframe, dwarf_frame_cfa, dwarf_frame_register),
 * so that the rules of a code address can be kept and reused from sample to sample.
 *
 * The steps follow libunwind's (what perf 6.1 on Debian unwinds with), so chains end
 * where perf's do: registers saved on the stack are read only when needed; the stack
 * pointer of a caller is the CFA; a step ends the chain at an undefined return address
 * or frame pointer (x86_64) and fails on a read outside the copy (whose last word perf
 * never reads), on an address with no binary, or when neither ip nor CFA moved. Code
 * without an FDE in a binary that has CFI is stepped as a PLT stub, else by the frame
 * pointer, as libunwind's x86_64 fallback does.
 *
 * Damaged input cannot lead anywhere: every stack read is checked against the copy,
 * expressions run on a bounded stack with a bounded number of steps, and the walk is
 * bounded by the caller's max.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/perf_event.h>

#include <tally/unwind.h>

#define NREGS 33		/* DWARF registers tracked: x86_64 uses 17, arm64 32 */
#define RULE_SLOTS 4096		/* per-address rule cache (direct mapped) */
#define EXPR_STACK 64
#define PATH_LEN 4096

/* One binary: its CFI and how file offsets map to its addresses. */
struct module {
	const void *key;
	bool bad;			/* cannot be read: no CFI for it */
	int fd, dfd;
	Elf *elf, *delf;
	Dwarf *dw;
	Dwarf_CFI *eh, *dbg;		/* .eh_frame; .debug_frame (may be NULL) */
	struct seg {
		uint64_t off, vaddr, size;
	} *segs;
	size_t nr_segs;
};

/* The rules of one code address (NULL frame: no FDE holds it). */
struct rule_slot {
	const struct module *mod;
	uint64_t vaddr;
	Dwarf_Frame *frame;
	bool used;
};

struct tally_unwinder {
	tally_unwind_find_fn find;
	tally_unwind_files_fn files;
	void *arg;
	struct module *mods;
	size_t nr_mods, cap_mods;
	struct rule_slot *rules;
	uint64_t hits, misses;
};

/* Where a register's value is: known, in the stack copy at an address, or nowhere. */
enum reg_kind { REG_NONE, REG_VAL, REG_MEM };
struct reg {
	enum reg_kind kind;
	uint64_t v;		/* the value or the address */
};

struct arch_desc {
	unsigned nregs;		/* DWARF registers 0 .. nregs-1 */
	unsigned sp, ra;	/* DWARF numbers of the stack pointer and return address */
	int fp;			/* frame pointer, whose undefined rule ends chains; -1: none */
	int perf_of[NREGS];	/* perf register of each DWARF register (-1: none) */
	unsigned perf_ip;	/* perf register holding the sampled ip */
};

/* perf_event's x86 register numbers (PERF_REG_X86_* of the x86 uapi asm/perf_regs.h,
 * spelled out so that any host can read x86_64 files): ax 0, bx 1, cx 2, dx 3, si 4,
 * di 5, bp 6, sp 7, ip 8, r8..r15 16..23. */
enum { X86_AX, X86_BX, X86_CX, X86_DX, X86_SI, X86_DI, X86_BP, X86_SP, X86_IP,
       X86_R8 = 16, X86_R9, X86_R10, X86_R11, X86_R12, X86_R13, X86_R14, X86_R15 };

static const struct arch_desc x86_64_desc = {
	.nregs = 17, .sp = 7, .ra = 16, .fp = 6,
	.perf_of = {
		X86_AX, X86_DX, X86_CX, X86_BX, X86_SI, X86_DI, X86_BP, X86_SP,
		X86_R8, X86_R9, X86_R10, X86_R11, X86_R12, X86_R13, X86_R14, X86_R15,
		X86_IP,
	},
	.perf_ip = X86_IP,
};

/* arm64: DWARF x0..x30 are perf's 0..30, sp is 31 in both; the pc has no DWARF number
 * (perf register 32); the return address column is x30. */
static const struct arch_desc arm64_desc = {
	.nregs = 32, .sp = 31, .ra = 30, .fp = -1,
	.perf_of = {
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
		21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
	},
	.perf_ip = 32,
};

/* One walk's state. */
struct walk {
	struct tally_unwinder *u;
	const struct arch_desc *a;
	const uint8_t *stack;
	uint64_t stack_lo, stack_size;
	struct reg regs[NREGS];
	uint64_t ip, cfa;	/* cfa: the stack pointer of the current frame */
	bool prev_instr;	/* look rules up at ip - 1 (a return address) */
};

static void module_close(struct module *m)
{
	if (m->eh)
		dwarf_cfi_end(m->eh);	/* dwarf_getcfi_elf's is ours; .debug_frame's is m->dw's */
	dwarf_end(m->dw);
	if (m->delf)
		elf_end(m->delf);
	if (m->elf)
		elf_end(m->elf);
	if (m->dfd >= 0)
		close(m->dfd);
	if (m->fd >= 0)
		close(m->fd);
	free(m->segs);
}

static void rules_clear(struct tally_unwinder *u)
{
	for (size_t i = 0; u->rules && i < RULE_SLOTS; i++) {
		free(u->rules[i].frame);
		u->rules[i] = (struct rule_slot){ 0 };
	}
}

struct tally_unwinder *tally_unwinder__new(tally_unwind_find_fn find, tally_unwind_files_fn files,
					   void *arg)
{
	struct tally_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->rules = calloc(RULE_SLOTS, sizeof(*u->rules));
	if (!u->rules) {
		free(u);
		return NULL;
	}
	u->find = find;
	u->files = files;
	u->arg = arg;
	elf_version(EV_CURRENT);
	return u;
}

void tally_unwinder__flush(struct tally_unwinder *u)
{
	if (!u)
		return;
	rules_clear(u);
	for (size_t i = 0; i < u->nr_mods; i++)
		module_close(&u->mods[i]);
	u->nr_mods = 0;
}

void tally_unwinder__delete(struct tally_unwinder *u)
{
	if (!u)
		return;
	tally_unwinder__flush(u);
	free(u->mods);
	free(u->rules);
	free(u);
}

void tally_unwinder__stats(const struct tally_unwinder *u, uint64_t *hits, uint64_t *misses)
{
	*hits = u->hits;
	*misses = u->misses;
}

static int open_elf(const char *path, int *fd, Elf **elf)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		if (*elf)
			elf_end(*elf);
		*elf = NULL;
		close(*fd);
		*fd = -1;
		return -EINVAL;
	}
	return 0;
}

/* The loadable segments, to turn file offsets into the addresses CFI speaks of. */
static int load_segments(struct module *m)
{
	size_t n;

	if (elf_getphdrnum(m->elf, &n) || !n)
		return -EINVAL;
	m->segs = calloc(n, sizeof(*m->segs));
	if (!m->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(m->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		m->segs[m->nr_segs++] = (struct seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	return m->nr_segs ? 0 : -EINVAL;
}

/* Whether e has a .debug_frame section (libdw also reads a compressed .zdebug_frame). */
static bool has_debug_frame(Elf *e)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(e, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_frame") || !strcmp(name, ".zdebug_frame")))
			return true;
	}
	return false;
}

static void module_open(struct tally_unwinder *u, struct module *m)
{
	char *path = malloc(2 * PATH_LEN);
	char *debug = path ? path + PATH_LEN : NULL;

	m->fd = m->dfd = -1;
	m->bad = true;
	if (!path)
		return;
	path[0] = debug[0] = '\0';
	if (u->files(u->arg, m->key, path, PATH_LEN, debug, PATH_LEN) || !path[0] ||
	    open_elf(path, &m->fd, &m->elf) || load_segments(m))
		goto out;
	m->eh = dwarf_getcfi_elf(m->elf);
	/* .debug_frame through libdw, which decompresses every debug section of the file
	 * when it opens it (10 MB for glibc's debuginfo): only for a file that has one */
	if (debug[0] && !open_elf(debug, &m->dfd, &m->delf)) {
		if (has_debug_frame(m->delf))
			m->dw = dwarf_begin_elf(m->delf, DWARF_C_READ, NULL);
	} else if (has_debug_frame(m->elf)) {
		m->dw = dwarf_begin_elf(m->elf, DWARF_C_READ, NULL);
	}
	if (m->dw)
		m->dbg = dwarf_getcfi(m->dw);
	m->bad = !m->eh && !m->dbg;
out:
	free(path);
}

static struct module *module_get(struct tally_unwinder *u, const void *key)
{
	struct module *m;

	for (size_t i = 0; i < u->nr_mods; i++)
		if (u->mods[i].key == key)
			return &u->mods[i];
	if (u->nr_mods == u->cap_mods) {
		size_t cap = u->cap_mods ? 2 * u->cap_mods : 16;
		struct module *v = realloc(u->mods, cap * sizeof(*v));

		if (!v)
			return NULL;
		/* the rule cache points at modules: it cannot follow them */
		rules_clear(u);
		u->mods = v;
		u->cap_mods = cap;
	}
	m = &u->mods[u->nr_mods++];
	*m = (struct module){ .key = key };
	module_open(u, m);
	return m;
}

static bool module_vaddr(const struct module *m, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < m->nr_segs; i++) {
		const struct seg *s = &m->segs[i];

		if (off >= s->off && off - s->off < s->size) {
			*vaddr = off - s->off + s->vaddr;
			return true;
		}
	}
	return false;
}

/* Read a word of the stack copy. perf reads none that ends at or past the copy's end. */
static bool read_word(const struct walk *w, uint64_t addr, uint64_t *val)
{
	if (addr < w->stack_lo || addr + 8 < addr || addr + 8 >= w->stack_lo + w->stack_size)
		return false;
	memcpy(val, w->stack + (addr - w->stack_lo), 8);
	return true;
}

static bool reg_value(const struct walk *w, unsigned regno, uint64_t *val)
{
	const struct reg *r;

	if (regno == w->a->sp) {
		*val = w->cfa;
		return true;
	}
	if (regno >= w->a->nregs)
		return false;
	r = &w->regs[regno];
	if (r->kind == REG_VAL) {
		*val = r->v;
		return true;
	}
	return r->kind == REG_MEM && read_word(w, r->v, val);
}

/* The DWARF expression stack. */
struct expr_stack {
	uint64_t v[EXPR_STACK];
	size_t sp;
};

static bool push(struct expr_stack *st, uint64_t x)
{
	if (st->sp >= EXPR_STACK)
		return false;
	st->v[st->sp++] = x;
	return true;
}

static bool pop(struct expr_stack *st, uint64_t *x)
{
	if (!st->sp)
		return false;
	*x = st->v[--st->sp];
	return true;
}

/* The operations that push a literal or a register's value. 1 when op is none. */
static int push_operand(const struct walk *w, const Dwarf_Op *op, struct expr_stack *st)
{
	uint8_t at = op->atom;
	uint64_t a;

	if (at >= DW_OP_lit0 && at <= DW_OP_lit31)
		return push(st, (uint64_t)(at - DW_OP_lit0)) ? 0 : -1;
	if (at >= DW_OP_breg0 && at <= DW_OP_breg31)
		return reg_value(w, at - DW_OP_breg0, &a) && push(st, a + op->number) ? 0 : -1;
	if (at >= DW_OP_reg0 && at <= DW_OP_reg31)
		return reg_value(w, at - DW_OP_reg0, &a) && push(st, a) ? 0 : -1;
	switch (at) {
	case DW_OP_bregx:
		if (op->number > UINT32_MAX || !reg_value(w, (unsigned)op->number, &a))
			return -1;
		return push(st, a + op->number2) ? 0 : -1;
	case DW_OP_regx:
		if (op->number > UINT32_MAX || !reg_value(w, (unsigned)op->number, &a))
			return -1;
		return push(st, a) ? 0 : -1;
	case DW_OP_addr: case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u:
	case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u:
	case DW_OP_const8s: case DW_OP_constu: case DW_OP_consts:
		return push(st, op->number) ? 0 : -1;
	default:
		return 1;
	}
}

/* The operations that rearrange the stack. 1 when op is none. */
static int stack_op(const Dwarf_Op *op, struct expr_stack *st)
{
	uint64_t a, b;

	switch (op->atom) {
	case DW_OP_dup:
		return pop(st, &a) && push(st, a) && push(st, a) ? 0 : -1;
	case DW_OP_drop:
		return pop(st, &a) ? 0 : -1;
	case DW_OP_over:
		return st->sp >= 2 && push(st, st->v[st->sp - 2]) ? 0 : -1;
	case DW_OP_pick:
		return op->number < st->sp && push(st, st->v[st->sp - 1 - op->number]) ? 0 : -1;
	case DW_OP_swap:
		return pop(st, &a) && pop(st, &b) && push(st, a) && push(st, b) ? 0 : -1;
	default:
		return 1;
	}
}

/* a OP b for DWARF's binary operations (comparisons signed, as DWARF says). */
static uint64_t binary_op(uint8_t at, uint64_t a, uint64_t b)
{
	switch (at) {
	case DW_OP_plus: return a + b;
	case DW_OP_minus: return a - b;
	case DW_OP_mul: return a * b;
	case DW_OP_and: return a & b;
	case DW_OP_or: return a | b;
	case DW_OP_xor: return a ^ b;
	case DW_OP_shl: return b >= 64 ? 0 : a << b;
	case DW_OP_shr: return b >= 64 ? 0 : a >> b;
	case DW_OP_shra:
		return b >= 64 ? ((int64_t)a < 0 ? UINT64_MAX : 0) : (uint64_t)((int64_t)a >> b);
	case DW_OP_eq: return (int64_t)a == (int64_t)b;
	case DW_OP_ne: return (int64_t)a != (int64_t)b;
	case DW_OP_lt: return (int64_t)a < (int64_t)b;
	case DW_OP_le: return (int64_t)a <= (int64_t)b;
	case DW_OP_gt: return (int64_t)a > (int64_t)b;
	default: return (int64_t)a >= (int64_t)b;
	}
}

/* The arithmetic operations and deref. 1 when op is none. */
static int compute_op(const struct walk *w, const Dwarf_Op *op, struct expr_stack *st)
{
	uint64_t a, b;

	switch (op->atom) {
	case DW_OP_plus_uconst:
		return pop(st, &a) && push(st, a + op->number) ? 0 : -1;
	case DW_OP_deref:
		return pop(st, &a) && read_word(w, a, &b) && push(st, b) ? 0 : -1;
	case DW_OP_neg:
		return pop(st, &a) && push(st, -a) ? 0 : -1;
	case DW_OP_not:
		return pop(st, &a) && push(st, ~a) ? 0 : -1;
	case DW_OP_abs:
		return pop(st, &a) && push(st, (int64_t)a < 0 ? -a : a) ? 0 : -1;
	case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or:
	case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra: case DW_OP_eq:
	case DW_OP_ne: case DW_OP_lt: case DW_OP_le: case DW_OP_gt: case DW_OP_ge:
		return pop(st, &b) && pop(st, &a) && push(st, binary_op(op->atom, a, b)) ? 0 : -1;
	default:
		return 1;
	}
}

/* Evaluate a CFI expression as elfutils synthesizes them: DW_OP_call_frame_cfa makes
 * the result a location (its contents are the value) unless DW_OP_stack_value ends
 * it. *is_loc says which; false on anything it cannot compute. */
static bool eval(const struct walk *w, const Dwarf_Op *ops, size_t nops, uint64_t cfa,
		 uint64_t *out, bool *is_loc)
{
	struct expr_stack st = { .sp = 0 };
	bool loc = false;

	if (nops > 256)
		return false;
	for (size_t i = 0; i < nops; i++) {
		const Dwarf_Op *op = &ops[i];
		int rc = push_operand(w, op, &st);

		if (rc == 1)
			rc = stack_op(op, &st);
		if (rc == 1)
			rc = compute_op(w, op, &st);
		if (rc == 1) {
			switch (op->atom) {
			case DW_OP_call_frame_cfa:
				rc = push(&st, cfa) ? 0 : -1;
				loc = true;
				break;
			case DW_OP_stack_value:
				rc = 0;
				loc = false;
				break;
			case DW_OP_nop:
				rc = 0;
				break;
			default:
				return false;
			}
		}
		if (rc)
			return false;
	}
	if (!st.sp)
		return false;
	*out = st.v[st.sp - 1];
	*is_loc = loc;
	return true;
}

/* The rules at a code address (vaddr of module m), from the cache or the CFI: the
 * .eh_frame first, then .debug_frame. NULL: no FDE holds it. */
static Dwarf_Frame *rules_at(struct tally_unwinder *u, const struct module *m, uint64_t vaddr)
{
	uint64_t h = ((vaddr ^ (uintptr_t)m) * 0x9e3779b97f4a7c15ull) >> 52;
	struct rule_slot *sl = &u->rules[h & (RULE_SLOTS - 1)];
	Dwarf_Frame *fr = NULL;

	if (sl->used && sl->mod == m && sl->vaddr == vaddr) {
		u->hits++;
		return sl->frame;
	}
	u->misses++;
	if (!m->eh || dwarf_cfi_addrframe(m->eh, vaddr, &fr) != 0) {
		fr = NULL;
		if (m->dbg && dwarf_cfi_addrframe(m->dbg, vaddr, &fr) != 0)
			fr = NULL;
	}
	free(sl->frame);
	*sl = (struct rule_slot){ .mod = m, .vaddr = vaddr, .frame = fr, .used = true };
	return fr;
}

/* STEP_LOST: the return address could not be read (the copy ended): perf's libunwind
 * then still reports a caller, at address 0 (printed as -1), and stops after it. */
enum step { STEP_OK, STEP_END, STEP_FAIL, STEP_LOST };

/* One step with the CFI rules fr. */
static enum step step_cfi(struct walk *w, Dwarf_Frame *fr)
{
	const struct arch_desc *a = w->a;
	struct reg next[NREGS];
	Dwarf_Op *ops, mem[3];
	size_t nops;
	uint64_t cfa, v;
	bool loc;

	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || !eval(w, ops, nops, 0, &cfa, &loc) || loc)
		return STEP_FAIL;
	for (unsigned r = 0; r < a->nregs; r++) {
		next[r] = w->regs[r];
		if (dwarf_frame_register(fr, (int)r, mem, &ops, &nops) != 0)
			return STEP_FAIL;
		if (nops == 0) {
			if (ops == mem)
				next[r].kind = REG_NONE;	/* undefined */
			continue;				/* else: same value */
		}
		if (!eval(w, ops, nops, cfa, &v, &loc))
			return STEP_FAIL;
		next[r] = (struct reg){ loc ? REG_MEM : REG_VAL, v };
	}
	if (next[a->ra].kind == REG_NONE)
		return STEP_END;
	next[a->sp] = (struct reg){ REG_VAL, cfa };
	{
		struct walk nw = *w;

		memcpy(nw.regs, next, sizeof(next));
		if (!reg_value(&nw, a->ra, &v))
			return STEP_LOST;
	}
	memcpy(w->regs, next, sizeof(next));
	w->cfa = cfa;
	w->ip = v;
	w->prev_instr = true;
	if (a->fp >= 0 && next[a->fp].kind == REG_NONE)
		return STEP_END;
	return v ? STEP_OK : STEP_END;
}

/* x86_64 without an FDE: a PLT stub (jmp *x(%rip); push $n; jmp) has only the return
 * address on the stack; other code is taken to keep a frame pointer. */
static enum step step_guess(struct walk *w, const struct module *m, uint64_t off)
{
	uint8_t code[16];
	uint64_t rbp, next_rbp;
	struct reg *fp = &w->regs[6];

	if (m && pread(m->fd, code, sizeof(code), (off_t)off) == (ssize_t)sizeof(code) &&
	    code[0] == 0xff && code[1] == 0x25 && code[6] == 0x68 && code[11] == 0xe9) {
		if (!read_word(w, w->cfa, &w->ip))
			return STEP_FAIL;
		for (unsigned r = 0; r < w->a->nregs; r++)
			if (r != 6)	/* the stub leaves the frame pointer alone */
				w->regs[r].kind = REG_NONE;
		w->cfa += 8;
		w->prev_instr = true;
		return w->ip ? STEP_OK : STEP_END;
	}
	if (fp->kind == REG_NONE)
		return STEP_END;
	if (!reg_value(w, 6, &rbp))
		return STEP_FAIL;
	if (!rbp)
		return STEP_END;
	if (!read_word(w, rbp, &next_rbp) || rbp < w->cfa || rbp - w->cfa > 0x4000)
		return STEP_END;	/* no frame there: libunwind gives up */
	for (unsigned r = 0; r < w->a->nregs; r++)
		w->regs[r].kind = REG_NONE;
	*fp = (struct reg){ REG_MEM, rbp };
	w->cfa += 16;
	if (!read_word(w, rbp + 8, &w->ip))
		return STEP_FAIL;
	w->prev_instr = true;
	return w->ip ? STEP_OK : STEP_END;
}

static enum step step(struct walk *w)
{
	uint64_t pc = w->prev_instr ? w->ip - 1 : w->ip, vaddr, prev_ip = w->ip, prev_cfa = w->cfa;
	struct tally_unwind_module where;
	struct module *m;
	Dwarf_Frame *fr;
	enum step r;

	if (w->u->find(w->u->arg, pc, &where))
		return STEP_FAIL;	/* no binary: perf's lookup fails, the walk ends */
	m = module_get(w->u, where.key);
	if (!m || m->bad)
		return STEP_FAIL;
	if (!module_vaddr(m, where.offset, &vaddr))
		return STEP_FAIL;
	fr = rules_at(w->u, m, vaddr);
	if (fr)
		r = step_cfi(w, fr);
	else if (w->a == &x86_64_desc)
		r = step_guess(w, m, where.offset + (w->ip - pc));
	else
		r = STEP_FAIL;
	if (r == STEP_OK && w->ip == prev_ip && w->cfa == prev_cfa)
		return STEP_FAIL;	/* nothing moved: a cycle */
	return r;
}

/* The value of perf register bit in the sample's registers. */
static bool perf_reg(const struct tally_unwind_input *in, unsigned bit, uint64_t *v)
{
	if (bit >= 64 || !(in->regs_mask & (1ull << bit)))
		return false;
	*v = in->regs[__builtin_popcountll(in->regs_mask & ((1ull << bit) - 1))];
	return true;
}

int tally_unwinder__unwind(struct tally_unwinder *u, const struct tally_unwind_input *in,
			   uint64_t *ips, size_t max, size_t *nr)
{
	struct walk w = { .u = u, .stack = in->stack, .stack_size = in->stack_size };
	uint64_t sp;

	*nr = 0;
	switch (in->arch) {
	case TALLY_UNWIND_X86_64:
		w.a = &x86_64_desc;
		break;
	case TALLY_UNWIND_ARM64:
		w.a = &arm64_desc;
		break;
	default:
		return -EINVAL;
	}
	if (!in->regs || !max)
		return in->regs ? 0 : -EINVAL;
	for (unsigned r = 0; r < w.a->nregs; r++) {
		uint64_t v;

		if (perf_reg(in, (unsigned)w.a->perf_of[r], &v))
			w.regs[r] = (struct reg){ REG_VAL, v };
	}
	if (!perf_reg(in, w.a->perf_ip, &w.ip))
		return 0;
	ips[(*nr)++] = w.ip;
	if (!perf_reg(in, (unsigned)w.a->perf_of[w.a->sp], &sp) || !in->stack)
		return 0;
	w.cfa = w.stack_lo = sp;
	while (*nr < max) {
		enum step r = step(&w);

		if (r == STEP_LOST)
			ips[(*nr)++] = UINT64_MAX;
		if (r != STEP_OK)
			break;
		ips[(*nr)++] = w.ip - 1;
	}
	return 0;
}
