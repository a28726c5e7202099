/*
 * tally record --switch-output-event EVENT: events that are not recorded, whose every
 * occurrence cuts the output file as SIGUSR2 does with --switch-output=signal (which
 * the option implies), as perf 6.1. Like perf's side-band evlist they are opened for
 * record's target as perf builds it from the options alone: the -p/-t/-u threads, else
 * every task (pid -1), on the -C CPUs or all online ones; so with a command they see
 * the whole system, as perf's do. Each has sample period 1 unless it says otherwise (a
 * tracepoint's default; perf leaves a software event at period 0, which never
 * samples) and wakes the poll at every record. perf reads them on a thread of their
 * own; tally polls their rings with the others, which cuts at the same point: the
 * next pass of the recording loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <tally/cpumap.h>
#include <tally/event.h>
#include <tally/ring.h>
#include <tally/sampler.h>

#include "cmd.h"
#include "open-error.h"
#include "record.h"
#include "target.h"

#define SB_PAGES	4	/* enough to hold the records between two polls */

static int sb_targets(struct record *r, struct tally_cpumap **cpus,
		      const struct tally_threadmap **threads)
{
	const struct record_opts *o = r->o;
	int err;

	*threads = r->threads;
	if (!o->pid_list && !o->tid_list) {
		err = tally_threadmap__single(-1, &r->sb_threads);
		if (err)
			return err;
		*threads = r->sb_threads;
	}
	if (o->cpu_list)
		return tally_cpumap__parse(o->cpu_list, cpus, NULL);
	return tally_cpumap__online(cpus);
}

static int sb_add(struct record *r)
{
	const struct tally_evlist *l = r->o->switch_output_ev;

	for (size_t i = 0; i < tally_evlist__nr(l); i++) {
		struct perf_event_attr a = tally_evlist__event(l, i)->attr;
		int err;

		if (!a.sample_period && !a.freq)
			a.sample_period = 1;
		a.disabled = 0;
		a.inherit = 0;
		a.watermark = 1;
		a.wakeup_watermark = 1;	/* every record wakes the poll */
		a.sample_id_all = 1;
		err = tally_sampler__add(r->sb, &a, -1, NULL, NULL);
		if (err)
			return err;
	}
	return 0;
}

int record_sideband__open(struct record *r)
{
	const struct tally_threadmap *threads;
	struct tally_sampler_opts so = { .fallbacks = TALLY_FALLBACK_NOFILE, .skip_offline = true,
					 .skip_exited = true };
	struct tally_sampler_error w;
	size_t pages = SB_PAGES;
	int err;

	if (!r->o->switch_output_ev)
		return 0;
	err = sb_targets(r, &r->sb_cpus, &threads);
	if (!err)
		err = tally_sampler__new(&r->sb, r->sb_cpus, threads, &so);
	if (!err)
		err = sb_add(r);
	if (err) {
		cli_error("--switch-output-event: %s", strerror(-err));
		return -1;
	}
	err = tally_sampler__open(r->sb, &w);
	if (err) {
		struct cli_open_ctx ctx = { w.tid < 0, w.cpu, w.tid, false, 0 };

		cli_open_error(tally_evlist__event(r->o->switch_output_ev, w.ev)->name, err, &ctx);
		return -1;
	}
	err = tally_sampler__mmap(r->sb, &pages);
	if (err) {
		cli_error("--switch-output-event: cannot map its ring buffers: %s", strerror(-err));
		return -1;
	}
	return 0;
}

size_t record_sideband__nr_rings(const struct record *r)
{
	return r->sb ? tally_sampler__nr_rings(r->sb) : 0;
}

int record_sideband__fd(const struct record *r, size_t i)
{
	return tally_ring__fd(tally_sampler__ring(r->sb, i));
}

bool record_sideband__hit(struct record *r)
{
	bool hit = false;

	for (size_t i = 0; i < record_sideband__nr_rings(r); i++) {
		struct tally_ring *ring = tally_sampler__ring(r->sb, i);
		const struct perf_event_header *h;
		int rc;

		while ((rc = tally_ring__read(ring, &h)) == 1)
			hit = true;
		if (rc < 0)
			tally_ring__skip_all(ring);
		tally_ring__consume(ring);
	}
	return hit;
}

void record_sideband__close(struct record *r)
{
	tally_sampler__delete(r->sb);
	r->sb = NULL;
	tally_cpumap__delete(r->sb_cpus);
	r->sb_cpus = NULL;
	tally_threadmap__delete(r->sb_threads);
	r->sb_threads = NULL;
}
