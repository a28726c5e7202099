/*
 * A sample's call chain as frames (tally_session__resolve_chain): every address of the
 * recorded chain resolved through the session's cache, callee first, the PERF_CONTEXT_*
 * markers turned into each frame's cpumode.
 *
 * This is the one place that turns a sample into frames. A sample recorded with
 * --call-graph dwarf (user registers and a copy of the user stack) gets, after the
 * recorded chain (its kernel part), the user frames unwound from the copy (unwind.h),
 * as perf adds them: the sampled user ip, then return addresses minus one, at most
 * max_stack of them. Still to come: one frame per function inlined at an address
 * (push_addr). Callers walk the frames and need not change when they do.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tally/record.h>
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

static int reserve(struct tally_frames *f)
{
	size_t cap = f->cap ? f->cap * 2 : 64;
	struct tally_addr_loc *v;
	uint32_t **notes;

	if (f->nr < f->cap)
		return 0;
	v = realloc(f->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	f->v = v;
	notes = realloc(f->notes, cap * sizeof(*notes));
	if (!notes)
		return -ENOMEM;
	f->notes = notes;
	f->cap = cap;
	return 0;
}

/* The frames of one address of the chain. */
static int push_addr(struct tally_frames *f, struct tally_session *s,
		     const struct tally_sample *smp, uint8_t cpumode, uint64_t ip)
{
	if (reserve(f))
		return -ENOMEM;
	tly_session__resolve_noted(s, (pid_t)smp->pid, (pid_t)smp->tid, cpumode, ip, &f->v[f->nr],
				   &f->notes[f->nr]);
	f->nr++;
	return 0;
}

/* The recorded chain's addresses; 1 for an unknown PERF_CONTEXT_* marker. */
static int walk_chain(struct tally_frames *f, struct tally_session *s,
		      const struct tally_sample *smp, unsigned max_stack)
{
	uint8_t cpumode = smp->misc & PERF_RECORD_MISC_CPUMODE_MASK;

	for (uint64_t i = 0; i < smp->callchain_nr; i++) {
		uint64_t ip = smp->callchain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			if (tally_chain_context(ip, &cpumode) < 0)
				return 1;	/* the chain is corrupt: perf drops it */
			continue;
		}
		if (f->nr >= max_stack)
			break;
		if (push_addr(f, s, smp, cpumode, ip))
			return -ENOMEM;
	}
	return 0;
}

/* The user frames of a dwarf sample: perf unwinds when the event records both user
 * registers and stack and the sample holds registers and some stack. */
static int walk_user_stack(struct tally_frames *f, struct tally_session *s,
			   const struct tally_sample *smp, unsigned max_stack)
{
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
		if (ips[i] && push_addr(f, s, smp, PERF_RECORD_MISC_USER, ips[i]))
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
	check_notes(f, smp);
	return 0;
}
