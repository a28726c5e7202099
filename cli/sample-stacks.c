/*
 * Samples with resolved call chains for flamegraph and data convert (see
 * sample-stacks.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tally/record.h>

#include "cmd.h"
#include "sample-stacks.h"

/* "1,2,3" into numbers; prints the error. */
static int parse_ids(const char *what, const char *list, long **out, size_t *nr)
{
	size_t n = 0;
	char **l = strlist_parse(list, &n);

	if (!l) {
		cli_error("out of memory");
		return -1;
	}
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out) {
		strlist_free(l);
		cli_error("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char *end;

		errno = 0;
		(*out)[i] = strtol(l[i], &end, 10);
		if (errno || end == l[i] || *end || (*out)[i] < 0) {
			cli_error("--%s: '%s' is not a %s (give a comma-separated list of numbers)",
				  what, l[i], what);
			strlist_free(l);
			return -1;
		}
	}
	*nr = n;
	strlist_free(l);
	return 0;
}

/* -e NAME: the event named so, or so up to its modifiers ("cpu-clock" for
 * "cpu-clock:pppH"). */
static int find_event(struct stack_walk *w)
{
	size_t nr = tally_data__nr_events(w->data), want = strlen(w->o.event);
	char names[1024] = "";
	size_t pos = 0;

	for (size_t i = 0; i < nr; i++) {
		const char *name = tally_data__event(w->data, i)->name;

		if (name && (!strcmp(name, w->o.event) ||
			     (!strncmp(name, w->o.event, want) && name[want] == ':')))
			return (int)i;
	}
	for (size_t i = 0; i < nr && pos < sizeof(names); i++) {
		const char *name = tally_data__event(w->data, i)->name;

		pos += (size_t)snprintf(names + pos, sizeof(names) - pos, "%s%s", i ? ", " : "",
					name ? name : "?");
	}
	cli_error("%s has no event '%s' (its events: %s)", w->o.input, w->o.event, names);
	return -1;
}

int stack_walk__open(struct stack_walk *w, const struct stack_walk_opts *o)
{
	struct tally_session_opts so = { .kallsyms = o->kallsyms, .symfs = o->symfs };

	memset(w, 0, sizeof(*w));
	w->o = *o;
	w->evidx = -1;
	if ((o->pids && parse_ids("pid", o->pids, &w->pids, &w->nr_pids)) ||
	    (o->tids && parse_ids("tid", o->tids, &w->tids, &w->nr_tids)))
		return 1;
	if (o->comms && !(w->comms = strlist_parse(o->comms, NULL))) {
		cli_error("out of memory");
		return 1;
	}
	if (report_open(&w->data, o->input, o->force))
		return 1;
	if (o->event && (w->evidx = find_event(w)) < 0)
		return 1;
	if (report_session_new(&w->session, w->data, &so) || !(w->frames = tally_frames__new())) {
		cli_error("out of memory");
		return 1;
	}
	return 0;
}

void stack_walk__close(struct stack_walk *w)
{
	tally_frames__delete(w->frames);
	free(w->v);
	free(w->rv);
	tally_session__delete(w->session);
	tally_data__delete(w->data);
	free(w->pids);
	free(w->tids);
	strlist_free(w->comms);
	memset(w, 0, sizeof(*w));
}

static bool has_id(const long *v, size_t n, long id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

struct walk_ctx {
	struct stack_walk *w;
	stack_fn fn;
	void *arg;
	int fn_err;		/* what fn stopped the walk with */
};

/* Room for n frames in *v (of *cap). 0 or -ENOMEM. */
static int room(struct tally_addr_loc **v, size_t *cap, size_t n)
{
	size_t c = *cap ? *cap : 64;
	struct tally_addr_loc *nv;

	if (n <= *cap)
		return 0;
	while (c < n)
		c *= 2;
	nv = realloc(*v, c * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* smp's chain as recorded, each address resolved alone, as perf's JSON export reads it:
 * the markers it knows (user, kernel, hypervisor) set the cpumode, any other is left
 * out; no user frames unwound from a stack copy, no inlined functions. Frames into
 * w->rv; their number, or -ENOMEM. */
static long resolve_recorded(struct stack_walk *w, const struct tally_sample *smp)
{
	uint8_t mode = PERF_RECORD_MISC_USER;
	size_t n = 0;

	for (uint64_t i = 0; i < smp->callchain_nr; i++) {
		uint64_t ip = smp->callchain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			if (ip == PERF_CONTEXT_USER || ip == PERF_CONTEXT_KERNEL ||
			    ip == PERF_CONTEXT_HV)
				tally_chain_context(ip, &mode);
			continue;
		}
		if (room(&w->rv, &w->rcap, n + 1) ||
		    tally_session__resolve(w->session, (pid_t)smp->pid, (pid_t)smp->tid, mode, ip,
					   &w->rv[n]))
			return -ENOMEM;
		n++;
	}
	return (long)n;
}

/* The library's frames of smp into w->v (the convert API takes an array), and with
 * o.recorded the recorded chain into w->rv (*nr_recorded). The number of frames, or
 * -ENOMEM; *damaged when the chain held a marker the library does not know: then the
 * frames are the recorded chain's, as perf's JSON lists them. */
static long resolve_chain(struct stack_walk *w, const struct tally_sample *smp, bool *damaged,
			  size_t *nr_recorded)
{
	int ret = tally_session__resolve_chain(w->session, smp, UINT32_MAX, w->frames);
	size_t n = tally_frames__nr(w->frames);
	long nr;

	*damaged = ret == 1;
	*nr_recorded = 0;
	if (ret < 0)
		return -ENOMEM;
	if (ret == 1 || w->o.recorded) {
		nr = resolve_recorded(w, smp);
		if (nr < 0)
			return nr;
		*nr_recorded = (size_t)nr;
	}
	if (ret == 1) {
		if (room(&w->v, &w->cap, *nr_recorded))
			return -ENOMEM;
		memcpy(w->v, w->rv, *nr_recorded * sizeof(*w->v));
		return (long)*nr_recorded;
	}
	if (room(&w->v, &w->cap, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		w->v[i] = *tally_frames__get(w->frames, i);
	return (long)n;
}

static int on_sample(struct walk_ctx *c, int evidx, const struct perf_event_header *hdr)
{
	struct stack_walk *w = c->w;
	const struct tally_data_event *ev = tally_data__event(w->data, (size_t)evidx);
	struct tally_convert_sample cs = { .evidx = evidx };
	struct tally_sample smp;
	long nr;
	int ret;

	if (tally_sample__parse(&ev->layout, hdr, &smp))
		return 0;
	if ((w->nr_pids && !has_id(w->pids, w->nr_pids, (long)smp.pid)) ||
	    (w->nr_tids && !has_id(w->tids, w->nr_tids, (long)smp.tid)))
		return 0;
	cs.smp = &smp;
	cs.thread = tally_session__thread(w->session, (pid_t)smp.pid, (pid_t)smp.tid);
	if (w->comms && (!cs.thread || !strlist_has(w->comms, tally_thread__comm(cs.thread))))
		return 0;
	cs.period = tally_sample__period(&smp, &ev->attr);
	if (smp.type & PERF_SAMPLE_CALLCHAIN) {
		nr = resolve_chain(w, &smp, &cs.chain_damaged, &cs.nr_recorded);
		if (nr < 0)
			return (int)nr;
		cs.frames = w->v;
		cs.nr_frames = (size_t)nr;
		cs.chain = true;
		/* an empty recorded chain still is one: point it somewhere */
		if (w->o.recorded)
			cs.recorded = cs.nr_recorded ? w->rv : w->v;
	} else if (smp.type & PERF_SAMPLE_IP) {
		if (room(&w->v, &w->cap, 1) ||
		    tally_session__resolve(w->session, (pid_t)smp.pid, (pid_t)smp.tid,
					   smp.misc & PERF_RECORD_MISC_CPUMODE_MASK, smp.ip, &w->v[0]))
			return -ENOMEM;
		cs.frames = w->v;
		cs.nr_frames = 1;
	}
	w->nr_samples++;
	ret = c->fn(c->arg, &cs);
	if (ret < 0)
		c->fn_err = ret;
	return ret < 0 ? ret : 0;
}

static int on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct walk_ctx *c = arg;
	struct stack_walk *w = c->w;
	int evidx = ctx->evidx;

	if (exiting)
		return -EINTR;
	if (hdr->type != PERF_RECORD_SAMPLE)
		return tally_session__process(w->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	if (evidx < 0 && tally_data__nr_events(w->data) == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= tally_data__nr_events(w->data) ||
	    (w->evidx >= 0 && evidx != w->evidx))
		return 0;
	return on_sample(c, evidx, hdr);
}

int stack_walk__run(struct stack_walk *w, stack_fn fn, void *arg)
{
	struct walk_ctx c = { .w = w, .fn = fn, .arg = arg };
	struct tally_data_error derr = { 0 };
	int ret = tally_data__for_each(w->data, TALLY_DATA_ORDERED, on_record, &c, &derr);

	if (ret < 0 && c.fn_err)
		return c.fn_err;
	if (ret == -EINTR && exiting) {
		cli_error("interrupted");
		return 1;
	}
	if (ret == -ENOMEM) {
		cli_error("out of memory");
		return 1;
	}
	if (ret < 0 && derr.msg[0]) {
		cli_error("%s: file offset %#" PRIx64 ": %s", w->o.input, derr.offset, derr.msg);
		return 1;
	}
	if (ret < 0) {
		cli_error("%s: reading failed: %s", w->o.input, strerror(-ret));
		return 1;
	}
	if (tally_data__truncated(w->data))
		cli_warn("%s is cut short: %" PRIu64 " bytes missing at the end; "
			 "used the complete records before it", w->o.input,
			 tally_data__truncated(w->data));
	if (tally_data__nr_unknown_records(w->data))
		cli_warn("%s: skipped %" PRIu64 " record(s) of unknown type (a newer perf?)",
			 w->o.input, tally_data__nr_unknown_records(w->data));
	report_kernel_symbols_note(w->session);
	return 0;
}
