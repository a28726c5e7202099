/*
 * A sample's call chain as frames (tally_session__resolve_chain): every address of the
 * recorded chain resolved through the session's cache, callee first, the PERF_CONTEXT_*
 * markers turned into each frame's cpumode.
 *
 * This is the one place that turns a sample into frames. A sample recorded with
 * --call-graph dwarf (user registers and a copy of the user stack) gets, after the
 * recorded chain (its kernel part), the user frames unwound from the copy (unwind.h),
 * as perf adds them: the sampled user ip, then return addresses minus one, at most
 * max_stack of them. With tally_session__set_inline, an address where the DWARF names
 * inlined functions becomes one frame per function (push_addr), as perf's
 * append_inlines makes them. Callers walk the frames and need not change when they do.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tally/record.h>
#include <tally/srcline.h>
#include <tally/unwind.h>
#include "internal/session.h"

struct tally_frames *tally_frames__new(void)
{
	return calloc(1, sizeof(struct tally_frames));
}

void tally_frames__delete(struct tally_frames *f)
{
	if (!f)
		return;
	free(f->v);
	free(f->notes);
	free(f->lines);
	free(f);
}

size_t tally_frames__nr(const struct tally_frames *f)
{
	return f->nr;
}

const struct tally_addr_loc *tally_frames__get(const struct tally_frames *f, size_t i)
{
	return i < f->nr ? &f->v[i] : NULL;
}

/* Room for n more frames. */
static int reserve(struct tally_frames *f, size_t n)
{
	size_t cap = f->cap ? f->cap : 64;
	struct tally_addr_loc *v;
	struct tally_line *lines;
	uint32_t **notes;

	if (f->nr + n <= f->cap)
		return 0;
	while (cap < f->nr + n)
		cap *= 2;
	v = realloc(f->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	f->v = v;
	notes = realloc(f->notes, cap * sizeof(*notes));
	if (!notes)
		return -ENOMEM;
	f->notes = notes;
	lines = realloc(f->lines, cap * sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	f->lines = lines;
	f->cap = cap;
	for (size_t i = 0; i < f->nr; i++)	/* the frames' lines moved */
		if (f->v[i].line)
			f->v[i].line = &f->lines[i];
	return 0;
}

#define MAX_INLINE 64	/* functions kept per address, the outermost last */

/* Replace the frame just pushed (f->v[f->nr - 1]) by one per function the DWARF names at
 * its address, when it names another than the frame's symbol. return_addr: the frame
 * holds a return address (the call is the byte before). */
static int expand_inlines(struct tally_frames *f, struct tally_session *s, bool return_addr)
{
	struct tally_addr_loc *loc = &f->v[f->nr - 1];
	struct tally_line ln[MAX_INLINE];
	struct tally_dso_lines *lines;
	size_t at = f->nr - 1;
	bool perf_names;
	int n;

	/* perf asks addr2line only about an address with a symbol, in a file */
	if (!loc->sym || !loc->sym->name || !loc->map || !loc->dso ||
	    tally_cpumode_is_kernel(loc->cpumode))
		return 0;
	lines = tly_session__inline_lines(s);
	if (!lines)
		return -ENOMEM;
	n = tally_dso_lines__find_a2l(lines, loc, return_addr, ln, MAX_INLINE);
	if (n < 0)
		return n;
	if (n == 0)
		return 0;	/* addr2line's "??:0": perf adds nothing */
	perf_names = tly_session__inline_mode(s) == TALLY_INLINE_UNWOUND;
	if (reserve(f, (size_t)n - 1))
		return -ENOMEM;
	loc = &f->v[at];
	/* perf's frames carry addr2line's line, even one that only names the symbol */
	for (int i = n - 1; i >= 0; i--) {
		const char *fn = ln[i].function ? ln[i].function : "??";

		f->v[at + i] = *loc;
		/* perf's rule: a name other than the symbol's is an inlined function (a
		 * clone the DWARF names "f" too); else the outermost is the symbol's own */
		if (perf_names)
			f->v[at + i].inlined = strcmp(fn, loc->sym->name) ? fn : NULL;
		else
			f->v[at + i].inlined = i < n - 1 ? fn : NULL;
		f->lines[at + i] = ln[i];
		f->v[at + i].line = &f->lines[at + i];
		/* the cache's note is about the address's plain frame */
		if (f->v[at + i].inlined || n > 1)
			f->notes[at + i] = NULL;
	}
	f->nr = at + (size_t)n;
	return 0;
}

/* The frames of one address of the chain. expand: look for inlined functions there
 * (return_addr: ip is a return address). unwound: ip is an unwound caller's return
 * address minus one (tally_addr_loc.unwound). */
static int push_addr(struct tally_frames *f, struct tally_session *s,
		     const struct tally_sample *smp, uint8_t cpumode, uint64_t ip, bool expand,
		     bool return_addr, bool unwound)
{
	if (f->nr == f->cap && reserve(f, 1))
		return -ENOMEM;
	tly_session__resolve_noted(s, (pid_t)smp->pid, (pid_t)smp->tid, cpumode, ip, &f->v[f->nr],
				   &f->notes[f->nr]);
	f->v[f->nr].unwound = unwound;
	f->nr++;
	return expand ? expand_inlines(f, s, return_addr) : 0;
}

/* The recorded chain's addresses; 1 for an unknown PERF_CONTEXT_* marker. */
static int walk_chain(struct tally_frames *f, struct tally_session *s,
		      const struct tally_sample *smp, unsigned max_stack)
{
	uint8_t cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	bool expand = tly_session__inline_mode(s) == TALLY_INLINE_ALL;
	struct tly_resolve_cache *c = tly_session__cache(s);
	size_t nr = 0;	/* frames of the chain's addresses (inlined ones not counted) */
	uint32_t valid_from;
	int32_t key;
	bool keyed = false;	/* key and valid_from are cpumode's */

	for (uint64_t i = 0; i < smp->callchain_nr; i++) {
		uint64_t ip = smp->callchain[i];
		struct tly_resolve_slot *sl;

		if (ip >= PERF_CONTEXT_MAX) {
			if (tally_chain_context(ip, &cpumode) < 0)
				return 1;	/* the chain is corrupt: perf drops it */
			keyed = false;
			continue;
		}
		if (nr >= max_stack)
			break;
		if (!keyed)
			keyed = !tly_resolve_cache__valid_from(c, (pid_t)smp->pid, cpumode, &key,
							       &valid_from);
		/* most addresses are cached: their frame is the slot's */
		if (keyed && !expand && f->nr < f->cap &&
		    (sl = tly_resolve_cache__hit(c, ip, key, cpumode, valid_from))) {
			f->v[f->nr] = sl->loc;
			f->v[f->nr].unwound = false;
			f->notes[f->nr++] = &sl->note;
			nr++;
			continue;
		}
		/* the first address is the sampled ip, the others return addresses */
		if (push_addr(f, s, smp, cpumode, ip, expand && !tally_cpumode_is_kernel(cpumode),
			      nr > 0, false))
			return -ENOMEM;
		nr++;
	}
	return 0;
}

/* The user frames of a dwarf sample: perf unwinds when the event records both user
 * registers and stack and the sample holds registers and some stack. */
static int walk_user_stack(struct tally_frames *f, struct tally_session *s,
			   const struct tally_sample *smp, unsigned max_stack)
{
	bool expand = tly_session__inline_mode(s) != TALLY_INLINE_NONE;
	struct tally_unwind_input in = {
#if defined(__aarch64__)
		.arch = TALLY_UNWIND_ARM64,
#else
		.arch = TALLY_UNWIND_X86_64,
#endif
		.regs_mask = smp->user_regs_mask,
		.regs = smp->user_regs,
		.stack = smp->user_stack,
		.stack_size = smp->user_stack_dyn_size,
	};
	struct tally_unwinder *u;
	uint64_t ips[256];
	size_t nr;

	if (!tally_sample__has_user_stack(smp) || !max_stack)
		return 0;
	u = tly_session__unwinder(s, (pid_t)smp->pid, (pid_t)smp->tid);
	if (!u)
		return -ENOMEM;
	if (tally_unwinder__unwind(u, &in, ips, max_stack < 256 ? max_stack : 256, &nr))
		return 0;
	for (size_t i = 0; i < nr; i++)
		/* unwound callers are return addresses minus one already (perf looks them
		 * up as they are) */
		if (ips[i] && push_addr(f, s, smp, PERF_RECORD_MISC_USER, ips[i], expand, false,
					i > 0))
			return -ENOMEM;
	return 0;
}

/* A note is the frame's only while its slot still holds the frame's address: a later
 * frame of the same chain may have taken the slot. */
static void check_notes(struct tally_frames *f, const struct tally_sample *smp)
{
	for (size_t i = 0; i < f->nr; i++) {
		const struct tly_resolve_slot *sl;

		if (!f->notes[i])
			continue;
		sl = (const void *)((const char *)f->notes[i] -
				    offsetof(struct tly_resolve_slot, note));
		if (sl->ip != f->v[i].addr || sl->loc.cpumode != f->v[i].cpumode ||
		    sl->pid != (tally_cpumode_is_kernel(f->v[i].cpumode) ? -1 : (int32_t)smp->pid))
			f->notes[i] = NULL;
	}
}

int tally_session__resolve_chain(struct tally_session *s, const struct tally_sample *smp,
				 unsigned max_stack, struct tally_frames *f)
{
	struct tally_thread *th;
	int ret;

	uint32_t fills = tly_session__cache(s)->fills;

	f->nr = 0;
	if (!(smp->type & PERF_SAMPLE_CALLCHAIN))
		return 0;
	ret = walk_chain(f, s, smp, max_stack);
	if (!ret)
		ret = walk_user_stack(f, s, smp, max_stack);
	if (ret) {
		f->nr = 0;
		return ret;
	}
	th = f->nr ? tally_session__thread(s, (pid_t)smp->pid, (pid_t)smp->tid) : NULL;
	for (size_t i = 0; i < f->nr; i++)
		f->v[i].thread = th;
	if (tly_session__cache(s)->fills != fills)	/* else no slot changed hands */
		check_notes(f, smp);
	return 0;
}
