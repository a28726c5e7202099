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

#include "attr-names.h"
#include "cmd.h"
#include "open-error.h"
#include "target.h"
#include "top.h"

#include <tally/event.h>
#include <tally/sampler.h>
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
	e->leader = (int)t->nr_ev;
	e->nr_members = 1;
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
	for (size_t i = 0; i < tally_evlist__nr(list) && !err; i++) {
		const struct tally_event *ev = tally_evlist__event(list, i);

		err = add_event(t, &ev->attr, ev->name, ev->period_set || ev->freq_set);
		if (!err) {
			t->ev[i].leader = ev->leader;
			t->ev[i].nr_members = ev->nr_members;
		}
	}
	tally_evlist__delete(list);
	return err;
}

/* The groups: -e's {a,b}, or with --group every event in the first one's (as perf's
 * evlist__set_leader). Either shows perf's group view. */
static void set_groups(struct top *t)
{
	if (t->o->group && t->nr_ev > 1) {
		for (size_t i = 0; i < t->nr_ev; i++) {
			t->ev[i].leader = 0;
			t->ev[i].nr_members = 1;
		}
		t->ev[0].nr_members = (int)t->nr_ev;
	}
	for (size_t i = 0; i < t->nr_ev; i++)
		if (t->ev[i].leader == (int)i && t->ev[i].nr_members > 1)
			t->group_view = true;
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
		/* as perf top: the side-band of new cgroups and namespaces (no sort key
		 * shows them yet; the session keeps them) */
		a->cgroup = t->o->all_cgroups;
		a->namespaces = t->o->namespaces;
	}
	if (t->o->all_cgroups)
		a->sample_type |= PERF_SAMPLE_CGROUP;
}

/* The sampler asks before each fallback: the changed event is named as perf top names
 * it. */
static bool fallback_cb(void *arg, struct tally_sampler *s, size_t ev, enum tally_fallback kind,
			int err)
{
	struct top *t = arg;
	struct top_event *e = &t->ev[ev];
	struct perf_event_attr *a = tally_sampler__attr(s, ev);
	char *name = NULL;

	switch (kind) {
	case TALLY_FALLBACK_CPU_CLOCK:
		/* Hardware cycles do not open without a PMU (VMs): sample cpu-clock instead,
		 * as record and perf do. */
		a->precise_ip = 0;
		name = strdup(a->exclude_kernel ? "cpu-clock:u" : "cpu-clock");
		if (verbose)
			cli_warn("cycles does not open here (%s): sampling cpu-clock instead",
				 strerror(-err));
		break;
	case TALLY_FALLBACK_USER_ONLY:
		/* Watching one's own tasks at perf_event_paranoid 2 allows user space only:
		 * like perf, retry such an event as :u rather than fail (system-wide stays an
		 * error: it needs CAP_PERFMON either way). */
		if (err != -EACCES || t->system_wide)
			return false;
		if (asprintf(&name, "%s%su", e->name, strchr(e->name, ':') ? "" : ":") < 0)
			return false;
		if (verbose)
			cli_warn("kernel samples are not allowed here (perf_event_paranoid): sampling "
				 "user space only (%s)", name);
		break;
	default:
		return true;
	}
	if (!name)
		return false;
	free(e->name);
	e->name = name;
	return true;
}

/* Why the sampler could not open, in top's words. */
static void open_error(const struct top *t, const struct tally_sampler_error *w)
{
	const char *name = w->ev >= 0 ? t->ev[w->ev].name : "?";
	struct cli_open_ctx ctx = {
		.system_wide = t->system_wide,
		.cpu = w->cpu,
		.pid = w->tid,
		.exclude_kernel = w->ev >= 0 && t->ev[w->ev].attr.exclude_kernel,
	};

	if (w->err == -ENODEV && w->cpu >= 0)
		cli_error("CPU %d is not online (see /sys/devices/system/cpu/online)", w->cpu);
	else if (w->err == -ESRCH && !t->system_wide)
		cli_error("thread %d went away while being attached", (int)w->tid);
	else if (w->err == -ENOMEM)
		cli_error("cannot set up event %s: %s", name, strerror(-w->err));
	else
		cli_open_error(name, w->err, &ctx);
}

/* Map one ring per CPU, smaller when the locked-memory limit refuses the size. */
static int map_rings(struct top *t)
{
	size_t want = t->ring_pages;
	int err = tally_sampler__mmap(t->sampler, &t->ring_pages);

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
	return 0;
}

static int open_events(struct top *t)
{
	struct tally_sampler_opts so = {
		.fallbacks = TALLY_FALLBACK_NOFILE | TALLY_FALLBACK_USER_ONLY |
			     TALLY_FALLBACK_CPU_CLOCK,
		.fallback = fallback_cb,
		.arg = t,
		/* a CPU of -C that is offline is an error; others went offline since */
		.skip_offline = !t->o->cpu_list,
		/* -u watches many processes: one may end meanwhile */
		.skip_exited = t->o->uid != NULL,
	};
	struct tally_sampler_error w;
	int err = tally_sampler__new(&t->sampler, t->cpus, t->threads, &so);

	for (size_t e = 0; !err && e < t->nr_ev; e++) {
		struct perf_event_attr a = t->ev[e].attr;

		apply_policy(t, &a, e == 0);
		/* a group starts once complete (as perf's): a member that joins a running
		 * leader of another software clock (task-clock under cpu-clock, system
		 * wide) got no samples at all */
		a.disabled = t->ev[e].leader == (int)e && t->ev[e].nr_members > 1;
		err = tally_sampler__add(t->sampler, &a,
					 t->ev[e].leader == (int)e ? -1 : t->ev[e].leader, NULL, NULL);
		if (!err && t->cgroup_fds)
			err = tally_sampler__set_cgroup(t->sampler, e, t->cgroup_fds[e]);
	}
	if (err) {
		cli_error("out of memory");
		return err;
	}
	err = tally_sampler__open(t->sampler, &w);
	for (size_t e = 0; e < t->nr_ev; e++)
		t->ev[e].attr = *tally_sampler__attr(t->sampler, e);
	if (err) {
		open_error(t, &w);
		return err;
	}
	if (!tally_sampler__nr_fds(t->sampler)) {
		cli_error("no CPU could be sampled (all offline?)");
		return -ENODEV;
	}
	if (t->group_view && (err = tally_sampler__enable(t->sampler))) {
		cli_error("cannot enable the event groups: %s", strerror(-err));
		return err;
	}
	for (size_t e = 0; e < t->nr_ev && verbose >= 2; e++)	/* as perf top -vv */
		attr_block_fprintf(stderr, &t->ev[e].attr, 0);
	return map_rings(t);
}

static size_t event_of(const struct top *t, uint64_t id)
{
	const struct tally_sampler_fd *f;

	if (t->nr_ev == 1)
		return 0;
	f = tally_sampler__fd_of_id(t->sampler, id);
	return f ? (size_t)f->ev : SIZE_MAX;
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
		/* as report: the chains are there with -g (children mode too) */
		.ignore_callees = t->o->callgraph ? t->o->ignore_callees : NULL,
	};

	return tally_hists__new(&t->hists, t->session, t->nr_ev, &ho);
}

/* The threads to watch: -p/-t/-u's, else every thread (system wide). */
static int top_threads(struct top *t, const struct top_opts *o)
{
	int err = 0;

	if (o->pid || o->tid) {
		pid_t bad = 0;

		/* -u: a process of the user that ended since the list was made is left out */
		if (o->uid_pids)
			err = cli_pids_threads(o->uid_pids, true, &t->threads, &bad);
		else if (o->pid)
			err = tally_threadmap__from_pids(o->pid, &t->threads, &bad);
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
	return 0;
}

/* The CPUs to open on: -C's, which must be online, else every online CPU. */
static int top_cpus(struct top *t, const struct top_opts *o)
{
	int err;

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
	return 0;
}

/* -G: the n-th cgroup name for the n-th event (empty: none), one name for all, as
 * perf's; only system-wide. 0 or -errno (message printed). */
static int top_cgroups(struct top *t, const struct top_opts *o)
{
	size_t nr = 0;

	while (o->cgroups && o->cgroups[nr])
		nr++;
	if (!nr)
		return 0;
	if (!t->system_wide) {
		cli_error("-G/--cgroup: cgroup monitoring is only available in system-wide mode");
		return -EINVAL;
	}
	t->cgroup_fds = malloc(t->nr_ev * sizeof(*t->cgroup_fds));
	if (!t->cgroup_fds) {
		cli_error("out of memory");
		return -ENOMEM;
	}
	for (size_t e = 0; e < t->nr_ev; e++)
		t->cgroup_fds[e] = -1;
	for (size_t e = 0; e < t->nr_ev; e++) {
		const char *name = o->cgroups[nr == 1 ? 0 : e < nr ? e : nr];

		if (name && *name && (t->cgroup_fds[e] = cli_cgroup_open(name, "-G")) < 0)
			return -ENOENT;
	}
	return 0;
}

/* --switch-on/--switch-off: events of -e, by the name top shows (perf's evswitch) */
static int top_evswitch(struct top *t, const struct top_opts *o)
{
	const char *name[2] = { o->switch_on, o->switch_off };
	int idx[2] = { -1, -1 };

	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; name[k] && i < t->nr_ev && idx[k] < 0; i++)
			if (!strcmp(t->ev[i].name, name[k]))
				idx[k] = (int)i;
		if (name[k] && idx[k] < 0) {
			cli_error("--switch-%s: no event '%s' among top's events (give it with -e)",
				  k ? "off" : "on", name[k]);
			return -EINVAL;
		}
	}
	evswitch_set(&t->sw, idx[0], idx[1], o->show_on_off);
	return 0;
}

int top__open(struct top *t, const struct top_opts *o)
{
	struct tally_session_opts sopts = { 0 };
	int err;

	/* the caller zeroed t and set the sort keys */
	t->o = o;
	t->hide_kernel = o->hide_kernel;
	t->hide_user = o->hide_user;
	/* perf: --hierarchy turns the children mode off */
	t->children = !o->hierarchy && (o->children < 0 ? o->callgraph : o->children);
	t->ring_pages = o->mmap_pages ? o->mmap_pages : TOP_DEFAULT_PAGES;

	t->freq = o->count ? o->freq : capped_freq(o->freq);
	err = parse_events(t);
	if (err)
		return err == -ENOMEM ? (cli_error("out of memory"), err) : err;
	set_groups(t);
	if (o->group_sort_idx && !t->group_view)
		cli_warn("--group-sort-idx %d: no event group to sort (make one with --group or "
			 "-e '{a,b}'): rows sorted as usual", o->group_sort_idx);
	err = top_evswitch(t, o);
	if (err)
		return err;

	err = top_threads(t, o);
	if (!err)
		err = top_cpus(t, o);
	if (!err)
		err = top_cgroups(t, o);
	if (err)
		return err;

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
	err = synthesize(t);
	if (err)
		cli_warn("could not read all running processes from /proc (%s): some samples "
			 "may show [unknown]", strerror(-err));
	return 0;
}

void top__close(struct top *t)
{
	tally_sampler__delete(t->sampler);
	for (size_t e = 0; e < t->nr_ev; e++) {
		free(t->ev[e].name);
		if (t->cgroup_fds && t->cgroup_fds[e] >= 0)
			close(t->cgroup_fds[e]);
	}
	free(t->cgroup_fds);
	free(t->ev);
	tally_hists__delete(t->hists);
	sample_filter_free(&t->filter);
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
	if (evswitch_discard(&t->sw, (int)idx))
		return 0;	/* as perf top: not counted either */
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
	for (size_t i = 0; i < tally_sampler__nr_rings(t->sampler); i++) {
		struct tally_ring *r = tally_sampler__ring(t->sampler, i);
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
	if (t->nr_recs)		/* none yet: recs may be NULL, which qsort must not get */
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
	struct tally_hist *h = top__hist(t);
	size_t nm = top__nr_members(t);

	/* the members have rows the last link did not see (and decay dropped the links) */
	tally_hist__unlink_members(h);
	for (size_t k = 1; k < nm; k++)
		if (tally_hist__link_member(h, tally_hists__hist(t->hists, t->cur + k), k, nm))
			return -ENOMEM;
	if (nm > 1 && t->o->group_sort_idx > 0)
		tally_hist__group_sort_idx(h, (size_t)t->o->group_sort_idx);
	if (t->o->hierarchy)
		return tally_hist__sort_hierarchy(h);
	return tally_hist__sort(h, t->children);
}
