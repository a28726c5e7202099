/*
 * tally top's sampling side: open the events (system-wide per CPU by default, or on
 * the tasks of -p/-t), map one ring per CPU (per thread for per-task events, which
 * the kernel will not redirect across tasks), and on every drain copy what the
 * rings hold, sort it by time across rings, and feed it in order to the session
 * (so an exec, exit or new mapping is seen exactly between the samples it separates)
 * and to the histograms. Between refreshes the histograms decay like perf top's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "open-error.h"
#include "top.h"
#include "internal/sys.h"

#include <tally/event.h>
#include <tally/synth.h>

#define TOP_DEFAULT_PAGES 128	/* 512 KiB with 4 KiB pages, like perf */

static int add_event(struct top *t, const struct perf_event_attr *attr, const char *name,
		     bool user_period)
{
	struct top_event *v = realloc(t->ev, (t->nr_ev + 1) * sizeof(*v));
	struct top_event *e;

	if (!v)
		return -ENOMEM;
	t->ev = v;
	e = &t->ev[t->nr_ev];
	memset(e, 0, sizeof(*e));
	e->attr = *attr;
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	t->nr_ev++;
	/* policy: top samples at 4000 Hz unless the event or -c/-F say otherwise */
	if (!user_period) {
		if (t->o->count) {
			e->attr.freq = 0;
			e->attr.sample_period = t->o->count;
		} else {
			e->attr.freq = 1;
			e->attr.sample_freq = t->freq;
		}
	}
	return 0;
}

/* Like perf: a frequency above kernel.perf_event_max_sample_rate is lowered to it,
 * with a warning, instead of failing the open with a bare EINVAL. */
static unsigned capped_freq(unsigned freq)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	unsigned max = 0;

	if (!f)
		return freq;
	if (fscanf(f, "%u", &max) != 1)
		max = 0;
	fclose(f);
	if (!max || freq <= max)
		return freq;
	cli_warn("-F %u is above the kernel's maximum sample rate: sampling at %u Hz "
		 "(/proc/sys/kernel/perf_event_max_sample_rate)", freq, max);
	return max;
}

/* The events of -e, or cycles (with the cpu-clock fallback decided at open time). */
static int parse_events(struct top *t)
{
	const struct top_opts *o = t->o;

	if (!o->nr_events) {
		struct perf_event_attr a;

		/* perf top's default: cycles without a precise modifier */
		tally_event__default_cycles(&a);
		a.precise_ip = 0;
		return add_event(t, &a, "cycles", false) ? -ENOMEM : 0;
	}
	struct tally_evlist *list = NULL;
	int err = tally_evlist__new(&list);

	if (err)
		return err;
	for (size_t i = 0; i < o->nr_events; i++) {
		struct tally_parse_error perr = { 0 };

		err = tally_evlist__add(list, o->events[i], &perr);
		if (err) {
			char buf[1024];

			tally_parse_error__format(&perr, o->events[i], buf, sizeof(buf));
			cli_error("%s", buf);
			tally_evlist__delete(list);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < list->nr && !err; i++) {
		const struct tally_event *ev = &list->ev[i];

		err = add_event(t, &ev->attr, ev->name, ev->period_set || ev->freq_set);
	}
	tally_evlist__delete(list);
	return err;
}

static void apply_policy(struct top *t, struct perf_event_attr *a, bool first)
{
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (t->o->callgraph)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	a->sample_id_all = 1;
	a->disabled = 0;
	a->inherit = !t->system_wide;
	/* exclude_guest is the parser's (or tally_event__default_cycles') */
	if (first) {
		a->mmap = 1;
		a->mmap2 = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		a->ksymbol = 1;
	}
}

static bool is_default_cycles(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_HARDWARE && a->config == PERF_COUNT_HW_CPU_CYCLES;
}

/* Hardware cycles do not open without a PMU (VMs): sample cpu-clock instead, as
 * record and perf do. */
static bool fallback_to_cpu_clock(struct top_event *e, int err)
{
	if (!is_default_cycles(&e->attr))
		return false;
	if (err != -ENOENT && err != -EOPNOTSUPP && err != -ENODEV && err != -EINVAL)
		return false;
	e->attr.type = PERF_TYPE_SOFTWARE;
	e->attr.config = PERF_COUNT_SW_CPU_CLOCK;
	e->attr.precise_ip = 0;
	free(e->name);
	e->name = strdup(e->attr.exclude_kernel ? "cpu-clock:u" : "cpu-clock");
	if (verbose)
		cli_warn("cycles does not open here (%s): sampling cpu-clock instead",
			 strerror(-err));
	return e->name != NULL;
}

static int push_fd(struct top *t, int fd, size_t ev)
{
	int *f = realloc(t->fds, (t->nr_fds + 1) * sizeof(*f));
	struct top_id *ids;
	uint64_t id = 0;
	int err;

	if (!f)
		return -ENOMEM;
	t->fds = f;
	t->fds[t->nr_fds++] = fd;
	err = tly_sys__ioctl(fd, PERF_EVENT_IOC_ID, (unsigned long)&id);
	if (err)
		return err;
	ids = realloc(t->ids, (t->nr_ids + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	t->ids = ids;
	t->ids[t->nr_ids++] = (struct top_id){ .id = id, .ev = ev };
	return 0;
}

static int map_ring(struct top *t, int fd)
{
	struct top_ring *r = realloc(t->rings, (t->nr_rings + 1) * sizeof(*r));
	struct tally_ring *ring = NULL;
	size_t want = t->ring_pages;
	int err;

	if (!r)
		return -ENOMEM;
	t->rings = r;
	for (;;) {
		err = tally_ring__mmap(&ring, fd, t->ring_pages, true);
		if (err != -EPERM || t->ring_pages == 1)
			break;
		t->ring_pages /= 2;
	}
	if (err == -EPERM) {
		cli_error("cannot map even a one-page ring buffer: the locked-memory limit is "
			  "used up (see 'ulimit -l' and /proc/sys/kernel/perf_event_mlock_kb)");
		return err;
	}
	if (err) {
		cli_error("cannot map the ring buffer: %s", strerror(-err));
		return err;
	}
	if (t->ring_pages != want)
		cli_warn("the locked-memory limit refused %zu pages per ring; using %zu "
			 "(raise 'ulimit -l' or /proc/sys/kernel/perf_event_mlock_kb, or pass "
			 "-m %zu to choose)", want, t->ring_pages, t->ring_pages);
	t->rings[t->nr_rings++] = (struct top_ring){ .ring = ring, .fd = fd };
	return 0;
}

/* Watching one's own tasks at perf_event_paranoid 2 allows user space only: like perf,
 * retry such an event as :u rather than fail (system-wide stays an error: it needs
 * CAP_PERFMON either way). */
static bool fallback_to_user_only(struct top *t, struct top_event *e, int err)
{
	char *name;

	if (err != -EACCES || t->system_wide || e->attr.exclude_kernel)
		return false;
	e->attr.exclude_kernel = 1;
	e->attr.exclude_hv = 1;
	if (asprintf(&name, "%s%su", e->name, strchr(e->name, ':') ? "" : ":") < 0)
		return false;
	free(e->name);
	e->name = name;
	if (verbose)
		cli_warn("kernel samples are not allowed here (perf_event_paranoid): sampling "
			 "user space only (%s)", name);
	return true;
}

static int open_one(struct top *t, size_t e, pid_t tid, int cpu, bool first)
{
	struct top_event *ev = &t->ev[e];
	struct perf_event_attr a;
	int fd;

	for (;;) {
		a = ev->attr;
		apply_policy(t, &a, first);
		fd = tly_sys__perf_event_open(&a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0 || !(fallback_to_cpu_clock(ev, fd) ||
				 fallback_to_user_only(t, ev, fd)))
			break;
	}
	if (fd >= 0)
		ev->attr = a;
	return fd;
}

static int open_events(struct top *t)
{
	bool first_fd = true;

	for (size_t c = 0; c < t->cpus->nr; c++) {
		int cpu = t->cpus->cpu[c];
		int cpu_ring = -1;	/* the fd owning this CPU's ring */

		for (size_t th = 0; th < t->threads->nr; th++) {
			pid_t tid = t->threads->tid[th];
			int ring_fd = cpu == -1 ? -1 : cpu_ring;

			for (size_t e = 0; e < t->nr_ev; e++) {
				int fd = open_one(t, e, tid, cpu, e == 0), err;

				if (fd == -ENODEV && cpu >= 0 && t->o->cpu_list) {
					cli_error("CPU %d is not online (see "
						  "/sys/devices/system/cpu/online)", cpu);
					return fd;
				}
				if (fd == -ENODEV && cpu >= 0)
					break;	/* went offline since we listed them */
				if (fd < 0) {
					struct cli_open_ctx ctx = {
						.system_wide = t->system_wide,
						.cpu = cpu,
						.pid = tid,
						.exclude_kernel = t->ev[e].attr.exclude_kernel,
					};

					if (fd == -ESRCH && !t->system_wide) {
						cli_error("thread %d went away while being attached",
							  (int)tid);
						return fd;
					}
					cli_open_error(t->ev[e].name, fd, &ctx);
					return fd;
				}
				err = push_fd(t, fd, e);
				if (err) {
					tly_sys__close(fd);
					cli_error("cannot set up event %s: %s", t->ev[e].name,
						  strerror(-err));
					return err;
				}
				if (ring_fd < 0) {
					err = map_ring(t, fd);
					if (err)
						return err;
					ring_fd = fd;
					if (cpu != -1)
						cpu_ring = fd;
				} else {
					err = tly_sys__ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT,
							     (unsigned long)ring_fd);
					if (err) {
						cli_error("cannot share the ring buffer of CPU %d: %s",
							  cpu, strerror(-err));
						return err;
					}
				}
				first_fd = false;
			}
		}
	}
	if (first_fd) {
		cli_error("no CPU could be sampled (all offline?)");
		return -ENODEV;
	}
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct top_id *)a)->id, y = ((const struct top_id *)b)->id;

	return x < y ? -1 : x > y;
}

static size_t event_of(const struct top *t, uint64_t id)
{
	size_t lo = 0, hi = t->nr_ids;

	if (t->nr_ev == 1)
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->ids[mid].id == id)
			return t->ids[mid].ev;
		if (t->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

static int synth_cb(void *arg, const struct perf_event_header *hdr)
{
	struct top *t = arg;

	tally_session__process(t->session, hdr);
	return 0;
}

/* What ran before we started: threads, their maps, the kernel and its modules. */
static int synthesize(struct top *t)
{
	struct tally_synth_opts so = { .id_hdr_size = tally_synth__id_hdr_size(&t->ev[0].attr) };
	int err = 0, ret;

	if (t->system_wide) {
		err = tally_synth__all(&so, synth_cb, t);
	} else if (t->o->pid) {
		char **pids = strlist_parse(t->o->pid, NULL);

		if (!pids)
			return -ENOMEM;
		for (size_t i = 0; pids[i]; i++) {
			ret = tally_synth__process((pid_t)atoi(pids[i]), &so, synth_cb, t);
			if (ret && ret != -ESRCH && !err)
				err = ret;
		}
		strlist_free(pids);
	} else {
		for (size_t i = 0; i < t->threads->nr; i++) {
			ret = tally_synth__thread(t->threads->tid[i], &so, synth_cb, t);
			if (ret && ret != -ESRCH && !err)
				err = ret;
		}
	}
	/* Modules get their maps; the kernel itself needs none: the session names kernel
	 * addresses from /proc/kallsyms when no kernel map was seen, which spares a second
	 * pass over the ~200k lines of kallsyms (tally_synth__kernel_map) at start-up. */
	tally_synth__modules(&so, synth_cb, t);
	return err;
}

int top__open(struct top *t, const struct top_opts *o)
{
	struct tally_session_opts sopts = { 0 };
	int err;

	/* the caller zeroed t and set the sort keys */
	t->o = o;
	t->hide_kernel = o->hide_kernel;
	t->hide_user = o->hide_user;
	t->children = o->children < 0 ? o->callgraph : o->children;
	t->ring_pages = o->mmap_pages ? o->mmap_pages : TOP_DEFAULT_PAGES;

	t->freq = o->count ? o->freq : capped_freq(o->freq);
	err = parse_events(t);
	if (err)
		return err == -ENOMEM ? (cli_error("out of memory"), err) : err;

	if (o->pid || o->tid) {
		pid_t bad = 0;

		if (o->pid)
			err = tally_threadmap__from_pids(o->pid, &t->threads, &bad);
		else
			err = tally_threadmap__parse_tids(o->tid, &t->threads);
		if (err == -ESRCH) {
			cli_error("no such process: %d", (int)bad);
			return err;
		}
		if (err) {
			cli_error("bad %s list '%s'", o->pid ? "pid" : "tid", o->pid ? o->pid : o->tid);
			return err;
		}
	} else {
		t->system_wide = true;
		err = tally_threadmap__single(-1, &t->threads);
		if (err)
			return err;
	}
	if (o->cpu_list) {
		size_t bad = 0;

		struct tally_cpumap *online = NULL;

		err = tally_cpumap__parse(o->cpu_list, &t->cpus, &bad);
		if (err) {
			cli_error("bad CPU list '%s' at position %zu", o->cpu_list, bad);
			return err;
		}
		if (tally_cpumap__online(&online) == 0) {
			for (size_t i = 0; i < t->cpus->nr && !err; i++) {
				if (tally_cpumap__idx(online, t->cpus->cpu[i]) < 0) {
					char buf[256];

					tally_cpumap__format(online, buf, sizeof(buf));
					cli_error("CPU %d is not online (online: %s)",
						  t->cpus->cpu[i], buf);
					err = -ENODEV;
				}
			}
			tally_cpumap__delete(online);
			if (err)
				return err;
		}
	} else {
		/* per-task events too are opened per CPU: the kernel maps no ring for an
		 * inherited event on "any CPU", and inherit is what follows new threads */
		err = tally_cpumap__online(&t->cpus);
	}
	if (err) {
		cli_error("cannot read the CPU list: %s", strerror(-err));
		return err;
	}

	sopts.no_symbols = false;
	err = tally_session__new(&t->session, &sopts);
	if (err) {
		cli_error("cannot create the session: %s", strerror(-err));
		return err;
	}
	err = open_events(t);
	if (err)
		return err;
	for (size_t e = 0; e < t->nr_ev; e++) {
		tally_sample_layout__from_attr(&t->ev[e].layout, &t->ev[e].attr);
		err = hists__init_shared(&t->ev[e].hists, t->keys, t->nr_keys, &t->pool);
		if (err) {
			cli_error("out of memory");
			return err;
		}
		t->ev[e].hists.callchains = o->callgraph;
		t->ev[e].hists.caller = true;	/* chains are appended root first */
	}
	qsort(t->ids, t->nr_ids, sizeof(*t->ids), id_cmp);
	err = synthesize(t);
	if (err)
		cli_warn("could not read all running processes from /proc (%s): some samples "
			 "may show [unknown]", strerror(-err));
	return 0;
}

void top__close(struct top *t)
{
	for (size_t i = 0; i < t->nr_rings; i++)
		tally_ring__delete(t->rings[i].ring);
	for (size_t i = 0; i < t->nr_fds; i++)
		tly_sys__close(t->fds[i]);
	for (size_t e = 0; e < t->nr_ev; e++) {
		hists__exit(&t->ev[e].hists);
		free(t->ev[e].name);
	}
	free(t->ev);
	strpool__exit(&t->pool);
	free(t->fds);
	free(t->ids);
	free(t->rings);
	tally_session__delete(t->session);
	frames__exit(&t->frames);
	free(t->batch);
	free(t->recs);
	tally_cpumap__delete(t->cpus);
	tally_threadmap__delete(t->threads);
	memset(t, 0, sizeof(*t));
}

/* ---- draining ---- */

static int batch_add(struct top *t, const struct perf_event_header *h)
{
	const struct tally_sample_layout *l = &t->ev[0].layout;
	struct top_rec *r;
	uint64_t time = 0;

	if (t->batch_len + h->size > t->batch_cap) {
		size_t cap = t->batch_cap ? t->batch_cap : 1 << 16;
		char *b;

		while (cap < t->batch_len + h->size)
			cap *= 2;
		b = realloc(t->batch, cap);
		if (!b)
			return -ENOMEM;
		t->batch = b;
		t->batch_cap = cap;
	}
	if (t->nr_recs == t->cap_recs) {
		size_t cap = t->cap_recs ? t->cap_recs * 2 : 1024;

		r = realloc(t->recs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->recs = r;
		t->cap_recs = cap;
	}
	if (h->type == PERF_RECORD_SAMPLE) {
		struct tally_sample s;

		if (tally_sample__parse(l, h, &s) == 0)
			time = s.time;
	} else {
		struct tally_sample_id sid;

		if (tally_sample_id__parse(l, h, &sid) == 0 && sid.has_time)
			time = sid.time;
	}
	r = &t->recs[t->nr_recs];
	r->time = time;
	r->seq = t->nr_recs;
	r->off = t->batch_len;
	memcpy(t->batch + t->batch_len, h, h->size);
	t->batch_len += h->size;
	t->nr_recs++;
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct top_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void frame_of(struct top *t, const struct tally_addr_loc *l, struct cc_frame *f)
{
	f->dso_key = l->dso ? strpool__intern(&t->pool, tally_dso__name(l->dso)) : NULL;
	f->dso = l->dso;
	f->sym = l->sym;
	f->ip = l->sym || !l->dso ? l->addr : l->dso_addr;
}

static const char *dso_display_name(const struct tally_dso *d)
{
	const char *n;

	if (!d)
		return "[unknown]";
	n = tally_dso__short_name(d);
	/* a live kernel is shown as perf top shows it */
	if (tally_dso__is_kernel(d) && n && !strcmp(n, "[kernel.kallsyms]"))
		return "[kernel]";
	return n ? n : "[unknown]";
}

static void fill_entry(struct top *t, struct hists *h, const struct tally_sample *s,
		       const struct tally_addr_loc *loc, struct hist_entry *tmpl)
{
	const char *comm = loc->thread ? tally_thread__comm(loc->thread) : NULL;

	memset(tmpl, 0, sizeof(*tmpl));
	tmpl->comm = hists__comm(h, comm ? comm : "[unknown]");
	tmpl->thread = loc->thread;
	tmpl->pid = (int32_t)s->pid;
	tmpl->tid = (int32_t)s->tid;
	tmpl->cpu = (int32_t)s->cpu;
	tmpl->dso = loc->dso;
	tmpl->dso_name = dso_display_name(loc->dso);
	tmpl->dso_key = strpool__intern(&t->pool, tmpl->dso_name);
	tmpl->sym = loc->sym;
	tmpl->ip = loc->sym || !loc->dso ? loc->addr : loc->dso_addr;
	tmpl->level = cpumode_level(loc->cpumode);
}

/* -g: every function on the chain gets the sample in its children period and the
 * chain from the outermost caller down to it in its call graph. */
static int add_callchain(struct top *t, struct hists *h, const struct tally_sample *s,
			 struct hist_entry *self, uint64_t period)
{
	struct cc_frame fr[256];
	struct hist_entry *seen[256];
	size_t n, nseen = 0;
	int err = frames__resolve(&t->frames, t->session, s, t->o->max_stack);

	if (err)
		return err;
	n = t->frames.nr < 256 ? t->frames.nr : 256;
	/* caller first, as the callers view prints it */
	for (size_t i = 0; i < n; i++)
		frame_of(t, &t->frames.v[n - 1 - i], &fr[i]);
	if (!t->children) {
		if (n)
			return cc_append(&self->chain, NULL, fr, n, period);
		return 0;
	}
	self->period_acc += period;
	self->nr_samples_acc++;
	if (n > self->max_depth)
		self->max_depth = (uint32_t)n;
	seen[nseen++] = self;
	if (n)
		err = cc_append(&self->chain, NULL, fr, n, period);
	/* frames[0] is the sampled ip itself: its entry is self */
	for (size_t i = 1; i < n && !err; i++) {
		const struct tally_addr_loc *loc = &t->frames.v[i];
		struct hist_entry tmpl, *e;
		bool dup = false;

		fill_entry(t, h, s, loc, &tmpl);
		e = tmpl.comm && tmpl.dso_key ? hists__findnew(h, &tmpl) : NULL;
		if (!e)
			return -ENOMEM;
		for (size_t k = 0; k < nseen; k++)
			dup |= seen[k] == e;
		if (dup)
			continue;	/* recursion: count a function once per sample */
		if (nseen < 256)
			seen[nseen++] = e;
		e->period_acc += period;
		e->nr_samples_acc++;
		if (n - i > e->max_depth)
			e->max_depth = (uint32_t)(n - i);
		err = cc_append(&e->chain, NULL, fr, n - i, period);
	}
	return err;
}

static int add_sample(struct top *t, const struct perf_event_header *hdr)
{
	struct tally_sample s;
	struct tally_addr_loc loc;
	struct hist_entry tmpl, *e;
	struct top_event *ev;
	struct hists *h;
	uint8_t cpumode = hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	uint64_t period;
	size_t idx;

	if (tally_sample__parse(&t->ev[0].layout, hdr, &s))
		return 0;
	idx = event_of(t, s.identifier);
	if (idx == SIZE_MAX)
		return 0;
	ev = &t->ev[idx];
	h = &ev->hists;
	period = s.period ? s.period : 1;
	ev->interval_samples++;
	t->total_samples++;
	if (cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL)
		ev->interval_kernel++;
	tally_session__resolve(t->session, (pid_t)s.pid, (pid_t)s.tid, cpumode, s.ip, &loc);
	loc.cpumode = cpumode;
	fill_entry(t, h, &s, &loc, &tmpl);
	e = tmpl.comm && tmpl.dso_key ? hists__findnew(h, &tmpl) : NULL;
	if (!e)
		return -ENOMEM;
	e->period += period;
	e->nr_samples++;
	h->total_period += period;
	h->nr_samples++;
	h->filtered_period += period;
	h->nr_filtered_samples++;
	if (t->o->callgraph)
		return add_callchain(t, h, &s, e, period);
	return 0;
}

int top__drain(struct top *t)
{
	int err = 0;

	t->batch_len = 0;
	t->nr_recs = 0;
	for (size_t i = 0; i < t->nr_rings; i++) {
		struct tally_ring *r = t->rings[i].ring;
		const struct perf_event_header *h;
		struct tally_ring_stats before, after;
		int ret;

		tally_ring__stats(r, &before);
		while ((ret = tally_ring__read(r, &h)) == 1) {
			err = batch_add(t, h);
			if (err)
				break;
		}
		if (ret < 0)
			tally_ring__skip_all(r);
		tally_ring__consume(r);
		tally_ring__stats(r, &after);
		t->lost_interval += after.lost - before.lost;
		t->lost += after.lost - before.lost;
		if (err)
			return err;
	}
	qsort(t->recs, t->nr_recs, sizeof(*t->recs), rec_cmp);
	for (size_t i = 0; i < t->nr_recs && !err; i++) {
		const struct perf_event_header *h = (const void *)(t->batch + t->recs[i].off);

		if (h->type == PERF_RECORD_SAMPLE)
			err = add_sample(t, h);
		else
			tally_session__process(t->session, h);
	}
	return err;
}

void top__end_interval(struct top *t)
{
	for (size_t e = 0; e < t->nr_ev; e++) {
		t->ev[e].shown_samples = t->ev[e].interval_samples;
		t->ev[e].shown_kernel = t->ev[e].interval_kernel;
		t->ev[e].interval_samples = t->ev[e].interval_kernel = 0;
	}
	t->lost_shown = t->lost_interval;
	t->lost_interval = 0;
}

/* ---- decay ---- */

/* Decay a call graph; branches that reach zero are freed, so a long run with -g
 * keeps only the chains still being sampled. */
static void decay_chain(struct cc_node *n, bool zero)
{
	uint32_t kept = 0, nr = n->nr_kids;
	struct cc_node *first = NULL;

	n->hits = zero ? 0 : n->hits * 7 / 8;
	n->cumul = zero ? 0 : n->cumul * 7 / 8;
	for (uint32_t i = 0; i < nr; i++) {
		struct cc_node *k = cc_kid(n, i);

		decay_chain(k, zero);
		if (k->cumul || k->hits) {
			if (nr > 1)
				n->kids[kept] = k;
			if (!kept++)
				first = k;
		} else {
			cc_root_free(k);	/* its subtree (nodes are malloc'd: no arena) */
			free(k);
		}
	}
	if (nr > 1 && kept <= 1) {	/* back to the direct kid (or none) */
		free(n->kids);
		n->one = first;
	} else if (nr == 1 && !kept) {
		n->one = NULL;
	}
	n->nr_kids = kept;
}

static uint64_t decayed(uint64_t v, bool zero)
{
	return zero ? 0 : v * 7 / 8;
}

/* Decay every entry; entries that reached zero leave the table (a fresh table is
 * built from the survivors, moving their call graphs over). */
static int decay_hists(struct hists *h, bool zero)
{
	struct hists fresh;
	uint64_t total = 0, nr = 0;
	int err = hists__init_shared(&fresh, h->keys, h->nr_keys, h->pool);

	if (err)
		return err;
	fresh.callchains = h->callchains;
	fresh.caller = h->caller;
	for (size_t i = 0; i < h->cap; i++) {
		struct hist_entry *e = h->table[i], tmpl, *n;

		if (!e)
			continue;
		e->period = decayed(e->period, zero);
		e->nr_samples = decayed(e->nr_samples, zero);
		e->period_acc = decayed(e->period_acc, zero);
		e->nr_samples_acc = decayed(e->nr_samples_acc, zero);
		if (!e->period && !e->period_acc)
			continue;
		tmpl = *e;	/* strings live in the shared pool: no re-interning */
		n = hists__findnew(&fresh, &tmpl);
		if (!n) {
			hists__exit(&fresh);
			return -ENOMEM;
		}
		n->period = e->period;
		n->nr_samples = e->nr_samples;
		n->period_acc = e->period_acc;
		n->nr_samples_acc = e->nr_samples_acc;
		decay_chain(&e->chain, zero);
		/* move the call graph: the new entry's root is empty */
		cc_root_free(&n->chain);
		n->chain = e->chain;
		cc_root_init(&e->chain);
		total += n->period;
		nr += n->nr_samples;
	}
	fresh.total_period = fresh.filtered_period = total;
	fresh.nr_samples = fresh.nr_filtered_samples = nr;
	hists__exit(h);
	*h = fresh;
	return 0;
}

void top__decay(struct top *t, bool zero)
{
	for (size_t e = 0; e < t->nr_ev; e++) {
		if (decay_hists(&t->ev[e].hists, zero))
			cli_warn("out of memory while decaying samples");
	}
	t->nr_sorted = 0;	/* the tables were rebuilt */
}

int top__sort(struct top *t)
{
	int err = hists__sort(&t->ev[t->cur].hists, t->children);

	t->nr_sorted = err ? 0 : t->ev[t->cur].hists.nr;
	return err;
}
