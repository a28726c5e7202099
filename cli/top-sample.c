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

/* The user registers a dwarf unwind needs: x86_64's general registers, ip and sp
 * (perf's mask, without the segment registers). */
#if defined(__x86_64__)
#define TOP_DWARF_REGS 0xff0fffULL
#elif defined(__aarch64__)
#define TOP_DWARF_REGS ((1ULL << 33) - 1)
#else
#define TOP_DWARF_REGS 0ULL
#endif

static void apply_policy(struct top *t, struct perf_event_attr *a, bool first)
{
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (t->o->callgraph)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (t->o->callgraph && t->o->dwarf) {
		/* as perf top --call-graph dwarf: the kernel's chain, the user part unwound
		 * from the registers and stack copied with each sample */
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = TOP_DWARF_REGS;
		a->sample_stack_user = t->o->stack_size ? t->o->stack_size : 8192;
		a->exclude_callchain_user = 1;
	}
	a->sample_id_all = 1;
	a->disabled = 0;
	a->inherit = !t->system_wide && !t->o->no_inherit;
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

					/* -u watches many processes: one may end meanwhile */
					if (fd == -ESRCH && t->o->uid)
						break;
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

/* A histogram per event: the sort keys of -s, call graphs with -g (caller first, as
 * the callers view prints them), decayed between refreshes. The live kernel shows as
 * perf top shows it. */
static int hists_new(struct top *t)
{
	struct tally_hists_opts ho = {
		.keys = t->keys,
		.nr_keys = t->nr_keys,
		.callchains = t->o->callgraph,
		.children = t->children && t->o->callgraph,
		.caller = true,
		.trees = t->o->callgraph ? TALLY_TREES_BUILD : TALLY_TREES_NONE,
		.max_stack = t->o->max_stack,
		.decay = true,
		.kernel_name = "[kernel]",
		.filter = &t->filter,
	};

	return tally_hists__new(&t->hists, t->session, t->nr_ev, &ho);
}

/* Take pid out of the comma list (in place). Whether it was there and others remain. */
static bool drop_pid(char *list, pid_t pid)
{
	char word[16];
	size_t n = (size_t)snprintf(word, sizeof(word), "%d", (int)pid);

	for (char *p = list; *p; p += strcspn(p, ","), p += *p == ',') {
		if (strncmp(p, word, n) || (p[n] && p[n] != ','))
			continue;
		memmove(p, p + n + (p[n] == ','), strlen(p + n + (p[n] == ',')) + 1);
		if (p > list && !*p)
			p[-1] = '\0';	/* it was the last: drop its comma too */
		return list[0] != '\0';
	}
	return false;
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

		/* -u: a process of the user that ended since the list was made is left out */
		while (o->pid && (err = tally_threadmap__from_pids(o->pid, &t->threads, &bad)) ==
					 -ESRCH && o->uid_pids && drop_pid(o->uid_pids, bad))
			;
		if (!o->pid)
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
	/* as perf, --ignore-vmlinux passes over -k's file */
	sopts.kallsyms = o->kallsyms ? o->kallsyms : o->ignore_vmlinux ? NULL : o->vmlinux;
	if (sample_filter_make(&o->filter, &t->filter)) {
		cli_error("out of memory");
		return -ENOMEM;
	}
	err = tally_session__new(&t->session, &sopts);
	if (err) {
		cli_error("cannot create the session: %s", strerror(-err));
		return err;
	}
	/* as perf top: inlined functions in the frames unwound from dwarf stacks */
	tally_session__set_inline(t->session, TALLY_INLINE_UNWOUND);
	err = open_events(t);
	if (err)
		return err;
	for (size_t e = 0; e < t->nr_ev; e++)
		tally_sample_layout__from_attr(&t->ev[e].layout, &t->ev[e].attr);
	err = hists_new(t);
	if (err) {
		cli_error("out of memory");
		return err;
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
	for (size_t e = 0; e < t->nr_ev; e++)
		free(t->ev[e].name);
	free(t->ev);
	tally_hists__delete(t->hists);
	sample_filter_free(&t->filter);
	free(t->fds);
	free(t->ids);
	free(t->rings);
	tally_session__delete(t->session);
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

static int add_sample(struct top *t, const struct perf_event_header *hdr)
{
	uint8_t cpumode = hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	struct tally_sample s;
	struct top_event *ev;
	size_t idx;

	if (tally_sample__parse(&t->ev[0].layout, hdr, &s))
		return 0;
	idx = event_of(t, s.identifier);
	if (idx == SIZE_MAX)
		return 0;
	ev = &t->ev[idx];
	ev->interval_samples++;
	t->total_samples++;
	if (tally_cpumode_is_kernel(cpumode))
		ev->interval_kernel++;
	return tally_hists__add_sample(t->hists, idx, &s, s.period ? s.period : 1);
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

void top__decay(struct top *t, bool zero)
{
	if (tally_hists__decay(t->hists, zero))
		cli_warn("out of memory while decaying samples");
}

int top__sort(struct top *t)
{
	return tally_hist__sort(top__hist(t), t->children);
}
