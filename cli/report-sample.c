/*
 * tally report's one pass over the records: side-band records build the session
 * (threads, maps), each sample goes to its event's histogram in the library
 * (tally_hists__add_sample: filters, resolving, self and children entries, call-chain
 * trees); -D dumps every record first, --stats only counts them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <tally/data.h>
#include <tally/hist.h>
#include <tally/record.h>
#include <tally/session.h>

#include "cmd.h"
#include "report.h"

static int add_sample(struct report *r, int evidx, const struct perf_event_header *hdr)
{
	const struct tally_data_event *ev = tally_data__event(r->data, (size_t)evidx);
	struct tally_sample smp;

	if (tally_sample__parse(&ev->layout, hdr, &smp))
		return 0;	/* a damaged sample is skipped, like perf does */
	return tally_hists__add_sample(r->hists, (size_t)evidx, &smp,
				       tally_sample__period(&smp, &ev->attr));
}

int report__on_record(void *arg, const struct perf_event_header *hdr,
		     const struct tally_record_ctx *ctx)
{
	struct report *r = arg;
	int evidx = ctx->evidx;

	if (exiting)
		return -EINTR;
	r->nr_records++;
	if (hdr->type < 128)
		r->type_counts[hdr->type]++;
	if (r->o->dump_raw)
		report__dump_record(r, hdr, ctx);
	if (hdr->type != PERF_RECORD_SAMPLE) {
		uint64_t lost = record_lost_samples(hdr);

		r->lost_samples += lost;
		if (lost && evidx >= 0 && (size_t)evidx < r->nr_ev)
			r->lost_samples_ev[evidx] += lost;
		if (r->o->dump_raw || r->o->stats)
			return 0;	/* counted and shown: no threads, maps or symbols */
		if (hdr->type == PERF_RECORD_READ && r->o->show_threads &&
		    report__read_value(r, hdr, evidx))
			return -ENOMEM;
		return tally_session__process(r->session, hdr) == -ENOMEM ? -ENOMEM : 0;
	}
	if (evidx < 0 && r->nr_ev == 1)
		evidx = 0;
	if (evidx < 0 || (size_t)evidx >= r->nr_ev)
		return 0;
	r->nr_samples_seen[evidx]++;
	if (!r->o->dump_raw && !r->o->stats && evswitch_discard(&r->sw, evidx))
		return 0;
	if (r->o->dump_raw || r->o->stats)
		return 0;
	return add_sample(r, evidx, hdr);
}
