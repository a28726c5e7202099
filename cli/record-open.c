/*
 * tally record: the events' attrs, configured as perf record configures them, and the
 * fds and rings they are opened into.
 *
 * The library's sampler (tally/sampler.h) opens one fd per (thread, CPU, event); per CPU
 * (or per thread with --per-thread) the first fd gets a ring and the others are
 * redirected into it, so a pass over the rings sees every record once. The default
 * event is cycles; where there is no hardware PMU it falls back to cpu-clock as perf
 * does (the sampler's fallback policy; this file names the events and says so).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <tally/cpumap.h>
#include <tally/sampler.h>
#include <tally/synth.h>

#include "cmd.h"
#include "open-error.h"
#include "record.h"
#include "target.h"

#define DEFAULT_FREQ	4000
#define DEFAULT_PAGES	128	/* 512 KiB per ring, perf's default for root */
#define DWARF_STACK	8192
/* x86_64 user registers perf copies for DWARF unwinding: all but the segment
 * registers ds/es/fs/gs (bits 12-15); other arches: their perf_regs mask. */
#if defined(__x86_64__)
#define DWARF_REGS_MASK	0xff0fffULL
#elif defined(__aarch64__)
#define DWARF_REGS_MASK	((1ULL << 33) - 1)
#else
#define DWARF_REGS_MASK	0ULL
#endif

void record_opts__init(struct record_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->freq = DEFAULT_FREQ;
	o->stack_size = DWARF_STACK;
}

void record_opts__exit(struct record_opts *o)
{
	tally_evlist__delete(o->evlist);
	o->evlist = NULL;
	tally_evlist__delete(o->switch_output_ev);
	o->switch_output_ev = NULL;
	for (size_t i = 0; i < o->nr_filters; i++)
		free(o->filters[i]);
	free(o->filters);
	free(o->uid_pids);
	o->uid_pids = NULL;
	for (size_t i = 0; o->cgroups && i < o->evlist_cap_cgroups; i++)
		free((char *)o->cgroups[i]);
	free(o->cgroups);
	o->cgroups = NULL;
	o->filters = NULL;
	o->nr_filters = 0;
	free(o->ranges);
	o->ranges = NULL;
	o->nr_ranges = 0;
}

/* One event string into *L (made on first use); the first new event's index into
 * *FIRST. 0 or -1 (perf's parse error printed, or one naming OPT). */
static int parse_into(struct tally_evlist **l, const char *str, size_t *first, const char *opt)
{
	struct tally_parse_error perr;
	char msg[1024];
	int err;

	if (!*l && tally_evlist__new(l)) {
		cli_error("out of memory");
		return -1;
	}
	memset(&perr, 0, sizeof(perr));
	*first = tally_evlist__nr(*l);
	err = tally_evlist__add(*l, str, &perr);
	if (err) {
		if (perr.msg[0] && tally_parse_error__format(&perr, str, msg, sizeof(msg)) >= 0)
			fprintf(stderr, "%s\n", msg);
		else
			cli_error("%s '%s': %s", opt, str, strerror(-err));
		return -1;
	}
	return 0;
}

int record_opts__add_event(struct record_opts *o, const char *str)
{
	return parse_into(&o->evlist, str, &o->last_spec, "-e");
}

int record_opts__add_switch_event(struct record_opts *o, const char *str)
{
	size_t first;

	return parse_into(&o->switch_output_ev, str, &first, "--switch-output-event");
}

/* The filters of the last -e's events, all tracepoints (else OPT's message): set to
 * FILTER, or with AND_ALSO joined to what they had as perf joins them. 0 or -1. */
static int set_filters(struct record_opts *o, const char *filter, bool and_also,
		       const char *opt)
{
	size_t nr = tally_evlist__nr(o->evlist);
	char **f;

	if (o->last_spec >= nr) {
		cli_error("%s option should follow a -e tracepoint option", opt);
		return -1;
	}
	for (size_t i = o->last_spec; i < nr; i++) {
		const struct tally_event *ev = tally_evlist__event(o->evlist, i);

		if (ev->attr.type != PERF_TYPE_TRACEPOINT) {
			cli_error("%s: %s is not a tracepoint (tally sets tracepoint filters; "
				  "address filters are for HW tracers)", opt, ev->name);
			return -1;
		}
	}
	f = realloc(o->filters, nr * sizeof(*f));
	if (!f)
		goto nomem;
	for (size_t i = o->nr_filters; i < nr; i++)
		f[i] = NULL;
	o->filters = f;
	o->nr_filters = nr;
	for (size_t i = o->last_spec; i < nr; i++) {
		char *n;

		if (and_also && f[i]) {
			if (asprintf(&n, "(%s) && (%s)", f[i], filter) < 0)
				goto nomem;
		} else if (!(n = strdup(filter))) {
			goto nomem;
		}
		free(f[i]);
		f[i] = n;
	}
	return 0;
nomem:
	cli_error("out of memory");
	return -1;
}

int record_opts__add_filter(struct record_opts *o, const char *filter)
{
	return set_filters(o, filter, false, "--filter");
}

int record_opts__add_cgroups(struct record_opts *o, const char *names)
{
	size_t nr = tally_evlist__nr(o->evlist), n0 = o->nr_cgroups;
	const char *p = names;

	if (!nr) {
		cli_error("-G/--cgroup: must define events before cgroups (-e before -G)");
		return -1;
	}
	if (!o->cgroups && !(o->cgroups = calloc(nr, sizeof(*o->cgroups))))
		goto nomem;
	if (o->evlist_cap_cgroups < nr) {
		const char **c = realloc(o->cgroups, nr * sizeof(*c));

		if (!c)
			goto nomem;
		for (size_t i = o->evlist_cap_cgroups; i < nr; i++)
			c[i] = NULL;
		o->cgroups = c;
	}
	o->evlist_cap_cgroups = nr;
	for (;;) {
		size_t n = strcspn(p, ",");

		if (n && o->nr_cgroups < nr) {
			free((char *)o->cgroups[o->nr_cgroups]);
			if (!(o->cgroups[o->nr_cgroups] = strndup(p, n)))
				goto nomem;
		}
		o->nr_cgroups++;	/* empty names count too, as perf's */
		if (!p[n])
			break;
		p += n + 1;
	}
	/* one name: every event (perf) */
	for (size_t i = 1; o->nr_cgroups == 1 && n0 == 0 && i < nr; i++)
		if (o->cgroups[0] && !(o->cgroups[i] = strdup(o->cgroups[0])))
			goto nomem;
	return 0;
nomem:
	cli_error("out of memory");
	return -1;
}

int record_opts__exclude_perf(struct record_opts *o)
{
	char filter[64];

	snprintf(filter, sizeof(filter), "common_pid != %d", (int)getpid());
	return set_filters(o, filter, true, "--exclude-perf");
}

static uint64_t max_sample_rate(void)
{
	int64_t v;

	if (tally_sysctl__read("perf_event_max_sample_rate", &v) || v <= 0)
		return 100000;
	return (uint64_t)v;
}

static int add_event(struct record *r, const struct perf_event_attr *attr, const char *name,
		     int leader, int nr_members, const char *group_name)
{
	struct record_event *e = realloc(r->ev, (r->nr_ev + 1) * sizeof(*e));

	if (!e)
		return -1;
	r->ev = e;
	e = &r->ev[r->nr_ev];
	memset(e, 0, sizeof(*e));
	e->attr = *attr;
	e->name = strdup(name ? name : "");
	e->group_name = group_name ? strdup(group_name) : NULL;
	e->leader = leader;
	e->nr_members = nr_members;
	e->tracepoint = attr->type == PERF_TYPE_TRACEPOINT;
	e->cgroup_fd = -1;
	r->nr_ev++;
	return e->name ? 0 : -1;
}

/*
 * The call-graph=, max-stack= and stack-size= terms of one event, applied over the
 * global -g/--call-graph as perf 6.1 applies them (evsel__apply_config_terms): any of
 * them replaces the global setting for this event; max-stack alone means frame
 * pointers; stack-size alone (no call-graph) records no chain; "no" records none. The
 * global setting is taken back only in its sample bits (the regs and stack sizes it set
 * stay in the attr, as in perf's files). sample_max_stack is the term's value (0 if
 * none), dwarf also samples addresses.
 */
static void per_event_call_graph(struct record *r, size_t i, const struct tally_event *src)
{
	const struct record_opts *o = r->o;
	struct perf_event_attr *a = &r->ev[i].attr;
	const char *mode = src->call_graph;
	bool dwarf;

	if (!mode && !src->stack_size && !src->max_stack)
		return;
	if (!mode && src->max_stack)
		mode = "fp";
	if (o->callchain) {
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
		if (o->dwarf)
			a->sample_type &= ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
	}
	if (!mode || !strcmp(mode, "no"))
		return;
	dwarf = !strcmp(mode, "dwarf");
	a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	a->sample_max_stack = (uint16_t)src->max_stack;
	if (dwarf) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
				  PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC;
		a->sample_regs_user |= DWARF_REGS_MASK;
		a->sample_stack_user = src->stack_size ? (src->stack_size + 7) & ~7u : DWARF_STACK;
		a->exclude_callchain_user = 1;
		a->mmap_data = i == 0;	/* perf: only on the event that tracks mmaps */
	}
}

/* --all-user, --all-kernel and the call-chain sides: over what each event asked for,
 * last, as perf. */
static void config_modes(const struct record_opts *o, struct perf_event_attr *a)
{
	/* (the options exclude each other, as perf's) */
	if (o->all_user) {
		a->exclude_kernel = 1;
		a->exclude_user = 0;
	}
	if (o->all_kernel) {
		a->exclude_kernel = 0;
		a->exclude_user = 1;
	}
	if (a->sample_type & PERF_SAMPLE_CALLCHAIN) {
		if (o->kernel_callchains)
			a->exclude_callchain_user = 1;
		if (o->user_callchains)
			a->exclude_callchain_kernel = 1;
	}
}

/* -c/-F: the sampling period or frequency (the event string did not choose one). */
static void config_rate(const struct record_opts *o, struct perf_event_attr *a)
{
	/* the parser's period (1 for tracepoints, mem: breakpoints, bpf-output) is a
	 * default that only -c/-F replace, as in perf */
	if (!a->freq && a->sample_period && !o->period && !o->freq_set) {
		;
	} else if (o->period) {
		a->freq = 0;
		a->sample_period = o->period;
	} else {
		a->freq = 1;
		a->sample_freq = o->freq;
	}
}

/* The sample fields options ask for. */
static void config_sample_fields(const struct record_opts *o, struct perf_event_attr *a)
{
	if (o->sample_identifier)
		a->sample_type |= PERF_SAMPLE_IDENTIFIER;
	if (o->transaction)
		a->sample_type |= PERF_SAMPLE_TRANSACTION;
	if (o->phys_data)
		a->sample_type |= PERF_SAMPLE_PHYS_ADDR;
	if (o->data_page_size)
		a->sample_type |= PERF_SAMPLE_DATA_PAGE_SIZE;
	if (o->code_page_size)
		a->sample_type |= PERF_SAMPLE_CODE_PAGE_SIZE;
	if (o->weight)
		a->sample_type |= PERF_SAMPLE_WEIGHT_STRUCT;
	if (o->all_cgroups)
		a->sample_type |= PERF_SAMPLE_CGROUP;
	if (o->user_regs) {
		/* with DWARF chains perf samples the given registers and the stack and
		 * instruction pointers the unwinder needs (x86-64: SP, IP) */
		bool dwarf = a->sample_type & PERF_SAMPLE_STACK_USER;

		a->sample_type |= PERF_SAMPLE_REGS_USER;
		a->sample_regs_user = o->user_regs | (dwarf ? (1ull << 7) | (1ull << 8) : 0);
	}
	if (o->intr_regs) {
		a->sample_type |= PERF_SAMPLE_REGS_INTR;
		a->sample_regs_intr = o->intr_regs;
	}
}

/* perf record's evsel configuration for event I (see perf evlist -v of perf's files). */
static void config_event(struct record *r, size_t i, const struct tally_event *src)
{
	const struct record_opts *o = r->o;
	struct record_event *e = &r->ev[i];
	struct perf_event_attr *a = &e->attr;
	bool leader = e->leader == (int)i;
	bool sample_addr = o->sample_addr || (o->callchain && o->dwarf);
	bool user_rate = src && (src->period_set || src->freq_set);
	const struct tally_event *lead = tally_evlist__event(r->o->evlist, (size_t)e->leader);
	bool sample_read = lead && (lead->sample_read || (src && src->sample_read));

	a->size = sizeof(*a) < TALLY_ATTR_SIZE_MAX_COMPAT ? sizeof(*a) : TALLY_ATTR_SIZE_MAX_COMPAT;
	a->sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	if (!o->per_thread || o->sample_time)
		a->sample_type |= PERF_SAMPLE_TIME;
	if (src && src->time == 0)
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_TIME;
	if (r->nr_ev > 1)
		a->sample_type |= PERF_SAMPLE_ID;
	if (o->system_wide || o->sample_cpu || o->raw || e->tracepoint)
		a->sample_type |= PERF_SAMPLE_CPU;
	if (o->raw || e->tracepoint)
		a->sample_type |= PERF_SAMPLE_RAW;
	if (o->callchain) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		if (o->dwarf) {
			a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
			a->sample_regs_user = DWARF_REGS_MASK;
			a->sample_stack_user = src && src->stack_size ? src->stack_size : o->stack_size;
			a->exclude_callchain_user = 1;
		}
	}
	if (sample_addr) {
		a->sample_type |= PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC;
		a->mmap_data = 1;
	}
	if (src)
		per_event_call_graph(r, i, src);
	if (!user_rate)
		config_rate(o, a);
	if (a->freq || o->sample_period)
		a->sample_type |= PERF_SAMPLE_PERIOD;
	config_sample_fields(o, a);
	if (o->no_samples)
		a->sample_period = 0;	/* perf keeps freq: no sample ever comes */
	if (o->no_buffering) {
		a->watermark = 0;
		a->wakeup_events = 1;
	}
	a->read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
	/* -s: the kernel adds each exiting thread's counts (READ records) */
	a->inherit_stat = o->inherit_stat;
	if (o->running_time || o->inherit_stat)
		a->read_format |= PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	if (sample_read) {
		/* :S leader sampling: the leader's samples carry the whole group's counts;
		 * members only count. The kernel cannot inherit PERF_SAMPLE_READ events. */
		a->sample_type |= PERF_SAMPLE_READ;
		if (r->ev[e->leader].nr_members > 1)
			a->read_format |= PERF_FORMAT_GROUP;
		if (!leader) {
			a->freq = 0;
			a->sample_period = 0;	/* sample_type keeps PERIOD, as the leader's */
		}
	}
	a->disabled = leader;
	/* A command's own events start at its exec; CPU-wide events (-a -- cmd) have no
	 * task to exec and are enabled when the command is started. */
	a->enable_on_exec = leader && r->wl_target && !o->delay_ms &&
			    !o->nr_ranges;
	if (!(src && src->inherit_set))
		a->inherit = !o->no_inherit && !o->per_thread && !sample_read;
	if (i == 0) {
		a->mmap = 1;
		a->comm = 1;
		a->task = 1;
		a->mmap2 = 1;
		a->comm_exec = 1;
		a->context_switch = o->switch_events;
		a->namespaces = o->namespaces;
		a->build_id = o->buildid_mmap;
		a->cgroup = o->all_cgroups;
	} else {
		a->mmap_data = 0;
	}
	a->sample_id_all = 1;
	if (o->use_clockid) {
		a->use_clockid = 1;
		a->clockid = o->clockid;
	}
	/* exclude_guest stays as the event string made it (perf: set by default and by
	 * u or p, not by k or h alone); the default event keeps what
	 * tally_event__default_cycles decided */
	config_modes(o, a);
}

/* -D: as perf, a dummy event takes the side-band (mmap, comm, task) from the first
 * event, so what happens while the events are disabled is still known. It starts with
 * the command's exec, or at once for other targets, and -D never disables it. */
static int add_tracking_dummy(struct record *r)
{
	const struct record_opts *o = r->o;
	struct perf_event_attr d = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY };
	struct perf_event_attr *a, *first;

	if (add_event(r, &d, "dummy:HG", (int)r->nr_ev, 1, NULL))
		return -1;
	first = &r->ev[0].attr;	/* after the realloc */
	r->ev[r->nr_ev - 1].tracking = true;
	a = &r->ev[r->nr_ev - 1].attr;
	a->size = first->size;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 (first->sample_type & (PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
						 PERF_SAMPLE_CGROUP));
	a->sample_period = 1;
	a->read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
	/* perf: enabled at once for CPU-wide targets, else at exec (tally enables it at
	 * the start for -p/-t, which never exec) */
	a->disabled = !o->system_wide;
	a->inherit = !o->no_inherit && !o->per_thread;
	a->enable_on_exec = !o->system_wide;
	a->mmap = a->comm = a->task = a->mmap2 = a->comm_exec = 1;
	a->context_switch = first->context_switch;
	a->namespaces = first->namespaces;
	a->build_id = first->build_id;
	a->cgroup = first->cgroup;
	a->sample_id_all = 1;
	a->use_clockid = first->use_clockid;
	a->clockid = first->clockid;
	first->mmap = first->comm = first->task = first->mmap2 = first->comm_exec = 0;
	first->context_switch = first->namespaces = first->build_id = first->cgroup = 0;
	return 0;
}

int record__setup_events(struct record *r)
{
	struct record_opts *o = r->o;
	struct tally_evlist *l = o->evlist;
	size_t i;

	if (o->freq_max) {
		o->freq = max_sample_rate();
		if (!o->quiet)
			fprintf(stderr, "info: Using a maximum frequency rate of %" PRIu64 " Hz\n",
				o->freq);
	} else if (o->freq_set && o->freq > max_sample_rate()) {
		uint64_t max = max_sample_rate();

		if (o->strict_freq) {	/* perf's words */
			fprintf(stderr, "error: Maximum frequency rate (%" PRIu64 " Hz) exceeded.\n"
				"       Please use -F freq option with a lower value or consider\n"
				"       tweaking /proc/sys/kernel/perf_event_max_sample_rate.\n", max);
			return -1;
		}

		if (!o->quiet)
			fprintf(stderr, "warning: Maximum frequency rate (%" PRIu64 " Hz) exceeded, "
				"throttling from %" PRIu64 " Hz to %" PRIu64 " Hz.\n"
				"The limit can be raised via /proc/sys/kernel/perf_event_max_sample_rate.\n",
				max, o->freq, max);
		o->freq = max;
	}
	if (!tally_evlist__nr(l)) {
		struct perf_event_attr a;

		tally_event__default_cycles(&a);
		if (add_event(r, &a, "cycles:P", 0, 1, NULL))
			goto nomem;
	} else {
		for (i = 0; i < tally_evlist__nr(l); i++) {
			const struct tally_event *ev = tally_evlist__event(l, i);

			if (ev->call_graph && !strcmp(ev->call_graph, "lbr")) {
				cli_error("%s: call-graph=lbr needs a hardware PMU with LBR; use fp or "
					  "dwarf", ev->name);
				return -1;
			}
			if (ev->tool != TALLY_TOOL_NONE) {
				cli_error("%s cannot be sampled: it is a tool event counted by stat",
					  ev->name);
				return -1;
			}
			if (add_event(r, &ev->attr, ev->name, ev->leader, ev->nr_members,
				      ev->group_name))
				goto nomem;
			r->ev[r->nr_ev - 1].filter = i < o->nr_filters ? o->filters[i] : NULL;
			if (i < o->evlist_cap_cgroups && o->cgroups[i] &&
			    (r->ev[r->nr_ev - 1].cgroup_fd = cli_cgroup_open(o->cgroups[i], "-G")) < 0)
				return -1;
		}
	}
	if (o->group && r->nr_ev > 1) {
		/* --group: the first event leads all the others, as perf's evlist__set_leader */
		for (i = 0; i < r->nr_ev; i++)
			r->ev[i].leader = 0;
		r->ev[0].nr_members = (int)r->nr_ev;
	}
	for (i = 0; i < r->nr_ev; i++)
		config_event(r, i, tally_evlist__event(l, i));
	if ((o->delay_ms || o->nr_ranges) && add_tracking_dummy(r))
		goto nomem;
	return 0;
nomem:
	cli_error("out of memory");
	return -1;
}

/* perf's name for the cpu-clock it samples instead of cycles: it keeps precise_ip and
 * shows the modifiers (cpu-clock:ppp, with H where exclude_guest is set, uh after the
 * user-only fallback or --all-user, kh with --all-kernel). */
static void fallback_name(const struct perf_event_attr *a, char *buf, size_t len)
{
	bool ex = a->exclude_kernel || a->exclude_user || a->exclude_hv;

	if (a->precise_ip != 3) {
		snprintf(buf, len, "cpu-clock");
		return;
	}
	/* perf's modifiers: the modes not excluded (k, u, h) when some are */
	snprintf(buf, len, "cpu-clock:%s%s%sppp%s", ex && !a->exclude_kernel ? "k" : "",
		 ex && !a->exclude_user ? "u" : "", ex && !a->exclude_hv ? "h" : "",
		 a->exclude_guest ? "H" : "");
}

static int parse_pid_list(const char *list, struct tally_threadmap **out, bool tids)
{
	pid_t bad = 0;
	int err = tids ? tally_threadmap__parse_tids(list, out)
		       : tally_threadmap__from_pids(list, out, &bad);

	if (err) {
		if (err == -ESRCH || err == -ENOENT)
			cli_error("%s %s: no such %s", tids ? "-t" : "-p", bad ? "" : list,
				  tids ? "thread" : "process");
		else
			cli_error("%s '%s': expected a comma-separated list of ids (%s)",
				  tids ? "-t" : "-p", list, strerror(-err));
		return -1;
	}
	return 0;
}

/* -u: the threads of the user's processes; one that ended meanwhile is left out */
static int uid_threads(struct record *r)
{
	pid_t bad;
	int err = cli_pids_threads(r->o->uid_pids, true, &r->threads, &bad);

	if (err == -ESRCH)
		cli_error("-u/--uid %s: every process of the user has exited", r->o->uid);
	else if (err)
		cli_error("-u/--uid %s: cannot read the threads of its processes: %s", r->o->uid,
			  strerror(-err));
	return err ? -1 : 0;
}

static int setup_targets(struct record *r)
{
	struct record_opts *o = r->o;
	size_t bad = 0;
	int err;

	if (o->per_thread && !o->system_wide) {
		err = tally_cpumap__any(&r->cpus);
	} else if (o->cpu_list) {
		err = tally_cpumap__parse(o->cpu_list, &r->cpus, &bad);
		if (err) {
			cli_error("-C '%s': not a CPU list (e.g. 0-3,5) at position %zu", o->cpu_list,
				  bad);
			return -1;
		}
	} else {
		err = tally_cpumap__online(&r->cpus);
	}
	if (err) {
		cli_error("cannot read the list of CPUs: %s", strerror(-err));
		return -1;
	}
	if (o->system_wide)
		err = tally_threadmap__single(-1, &r->threads);
	else if (r->wl_target)
		err = tally_threadmap__single(r->wl.pid, &r->threads);
	else if (o->uid_pids)
		return uid_threads(r);
	else if (parse_pid_list(o->pid_list ? o->pid_list : o->tid_list, &r->threads, !o->pid_list))
		return -1;
	if (err) {
		cli_error("out of memory");
		return -1;
	}
	return 0;
}

/* Not allowed to sample the kernel (perf_event_paranoid > 1, no CAP_PERFMON): record
 * user space only, as perf does, and say so once. Every event that samples the kernel
 * changes (the sampler then sets exclude_kernel on the failing one, as on the rest). */
static bool exclude_kernel_fallback(struct record *r, struct tally_sampler *s, int err)
{
	int64_t paranoid = 0;
	bool changed = false;
	size_t i;

	if ((err != -EACCES && err != -EPERM) ||
	    tally_sysctl__read("perf_event_paranoid", &paranoid) || paranoid <= 1)
		return false;
	for (i = 0; i < r->nr_ev; i++) {
		struct record_event *e = &r->ev[i];
		struct perf_event_attr *a = tally_sampler__attr(s, i);
		char name[64];
		bool renamed;

		if (a->exclude_kernel)
			continue;
		/* the cpu-clock fallback is renamed as perf does; other events keep theirs */
		fallback_name(a, name, sizeof(name));
		renamed = !strcmp(e->name, name);
		a->exclude_kernel = 1;	/* perf 6.1 sets just this bit */
		changed = true;
		if (renamed) {
			fallback_name(a, name, sizeof(name));
			free(e->name);
			e->name = strdup(name);
			if (!e->name)
				return false;
		}
	}
	if (changed && !r->o->quiet)
		fprintf(stderr, "tally record: kernel.perf_event_paranoid=%d: recording user space "
			"only (like :u); run as root or with CAP_PERFMON to include the kernel\n",
			(int)paranoid);
	return changed;
}

/* cycles is not there (no hardware PMU): cpu-clock, as perf does. */
static bool cpu_clock_fallback(struct record *r, struct record_event *e,
			       const struct perf_event_attr *a)
{
	char name[64];

	fallback_name(a, name, sizeof(name));
	if (!r->o->quiet)
		fprintf(stderr, "tally record: '%s' is not supported here (no hardware PMU): "
			"sampling cpu-clock instead\n", e->name);
	free(e->name);
	e->name = strdup(name);
	r->fell_back = true;
	return e->name != NULL;
}

/* The sampler asks before each fallback: the user-space-only and cpu-clock ones apply
 * only to the first open (perf's order), the first one not with -a. */
static bool fallback_cb(void *arg, struct tally_sampler *s, size_t ev, enum tally_fallback kind,
			int err)
{
	struct record *r = arg;
	bool first = tally_sampler__nr_fds(s) == 0;

	switch (kind) {
	case TALLY_FALLBACK_NO_KERNEL:
		return first && !r->o->system_wide && exclude_kernel_fallback(r, s, err);
	case TALLY_FALLBACK_CPU_CLOCK:
		return first && cpu_clock_fallback(r, &r->ev[ev], tally_sampler__attr(s, ev));
	default:
		return true;
	}
}

static int open_events(struct record *r)
{
	struct tally_sampler_opts so = {
		.fallbacks = TALLY_FALLBACK_NOFILE | TALLY_FALLBACK_NO_LOST |
			     TALLY_FALLBACK_NO_KERNEL | TALLY_FALLBACK_CPU_CLOCK,
		.fallback = fallback_cb,
		.arg = r,
		.skip_offline = r->o->system_wide,	/* a CPU that went offline */
		.skip_exited = !r->wl_target,		/* a thread that exited */
	};
	struct tally_sampler_error w;
	size_t i;
	int err;

	err = tally_sampler__new(&r->sampler, r->cpus, r->threads, &so);
	for (i = 0; !err && i < r->nr_ev; i++) {
		const struct record_event *e = &r->ev[i];

		err = tally_sampler__add(r->sampler, &e->attr, e->leader == (int)i ? -1 : e->leader,
					 e->filter, NULL);
		if (!err && e->cgroup_fd >= 0)
			err = tally_sampler__set_cgroup(r->sampler, i, e->cgroup_fd);
	}
	if (err) {
		cli_error("out of memory");
		return -1;
	}
	err = tally_sampler__open(r->sampler, &w);
	/* what was opened, fallbacks included, is what the file describes */
	for (i = 0; i < r->nr_ev; i++)
		r->ev[i].attr = *tally_sampler__attr(r->sampler, i);
	if (err && w.filter) {
		/* --filter, as perf */
		cli_error("failed to set filter \"%s\" on event %s with %d (%s)", r->ev[w.ev].filter,
			  r->ev[w.ev].name, -err, strerror(-err));
		return -1;
	}
	if (err == -ENOMEM) {
		cli_error("out of memory");
		return -1;
	}
	if (err) {
		/* Per-task fds are opened per CPU only to get per-CPU rings: for the message
		 * it is a per-task open. */
		struct cli_open_ctx ctx = { r->o->system_wide, w.tid >= 0 ? -1 : w.cpu, w.tid,
					    r->ev[w.ev].attr.exclude_kernel };

		cli_open_error(r->ev[w.ev].name, err, &ctx);
		return -1;
	}
	if (!tally_sampler__nr_fds(r->sampler)) {
		cli_error("no event could be opened: the target threads exited or no CPU is online");
		return -1;
	}
	return 0;
}

static void explain_mlock(size_t pages, size_t got)
{
	int64_t kb = 0;
	struct rlimit rl;
	char lim[64] = "unknown";

	tally_sysctl__read("perf_event_mlock_kb", &kb);
	if (!getrlimit(RLIMIT_MEMLOCK, &rl)) {
		if (rl.rlim_cur == RLIM_INFINITY)
			snprintf(lim, sizeof(lim), "unlimited");
		else
			snprintf(lim, sizeof(lim), "%llu kB", (unsigned long long)rl.rlim_cur / 1024);
	}
	if (got)
		fprintf(stderr, "tally record: the mlock limit (perf_event_mlock_kb = %" PRId64
			" kB per CPU, RLIMIT_MEMLOCK = %s) refuses rings of %zu pages: using %zu pages "
			"per ring (-m %zu)\n", kb, lim, pages, got, got);
	else
		cli_error("cannot map even a 1-page ring buffer: the mlock limit "
			  "(perf_event_mlock_kb = %" PRId64 " kB, RLIMIT_MEMLOCK = %s) is used up. "
			  "Raise /proc/sys/kernel/perf_event_mlock_kb or `ulimit -l`, record fewer "
			  "CPUs (-C), or run with CAP_IPC_LOCK", kb, lim);
}


int record__open(struct record *r)
{
	size_t want = r->o->mmap_pages ? r->o->mmap_pages : DEFAULT_PAGES;
	size_t pages = want;
	int err;

	if (setup_targets(r) || open_events(r))
		return -1;
	err = tally_sampler__mmap(r->sampler, &pages);
	if (err == -EPERM) {
		explain_mlock(pages, 0);
		return -1;
	}
	if (err) {
		cli_error("cannot map the ring buffer (%zu pages): %s", pages, strerror(-err));
		return -1;
	}
	if (pages != want && !r->o->quiet)
		explain_mlock(want, pages);
	r->mmap_pages = pages;
	return 0;
}

void record__close(struct record *r)
{
	size_t i;

	tally_sampler__delete(r->sampler);
	r->sampler = NULL;
	for (i = 0; i < r->nr_ev; i++) {
		free(r->ev[i].name);
		free(r->ev[i].group_name);
		if (r->ev[i].cgroup_fd >= 0)
			close(r->ev[i].cgroup_fd);
	}
	free(r->ev);
	r->ev = NULL;
	r->nr_ev = 0;
	tally_cpumap__delete(r->cpus);
	r->cpus = NULL;
	tally_threadmap__delete(r->threads);
	r->threads = NULL;
}
