/*
 * tally report -D and --stats: every record as perf report -D dumps it (offset, size,
 * type, a hex dump, the decoded sample or side-band fields), and the record counts per
 * type and per event.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tally/data.h>
#include <tally/format.h>
#include <tally/record.h>
#include <tally/session.h>

#include "cmd.h"
#include "record-text.h"
#include "report.h"
#include "script-trace.h"

static void hexdump(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	printf(".\n. ... raw event: size %zu bytes\n", len);
	for (size_t i = 0; i < len; i += 16) {
		printf(".  %04zx: ", i);
		for (size_t j = 0; j < 16; j++) {
			if (i + j < len)
				printf(" %02x", p[i + j]);
			else
				printf("   ");
		}
		printf("  ");
		for (size_t j = 0; j < 16; j++) {
			if (i + j < len)
				putchar(p[i + j] >= 32 && p[i + j] < 127 ? p[i + j] : '.');
			else
				putchar(' ');
		}
		putchar('\n');
	}
}

void report__dump_record(struct report *r, const struct perf_event_header *hdr,
			const struct tally_record_ctx *ctx)
{
	const struct tally_data_event *ev = ctx->evidx >= 0 ?
		tally_data__event(r->data, (size_t)ctx->evidx) : NULL;
	struct tally_sample_id sid = { 0 };
	uint64_t t = 0;

	printf("\n%#" PRIx64 "@%s [%#x]: event: %u\n", ctx->file_offset, r->o->input,
	       hdr->size, hdr->type);
	hexdump(hdr, hdr->size);
	if (ev && hdr->type != PERF_RECORD_SAMPLE && hdr->type < 64 &&
	    !tally_sample_id__parse(&ev->layout, hdr, &sid) && sid.has_time)
		t = sid.time;
	if (hdr->type == PERF_RECORD_SAMPLE && ev) {
		struct tally_sample s;

		if (tally_sample__parse(&ev->layout, hdr, &s) == 0) {
			printf("\n%" PRIu64 " %#" PRIx64 " [%#x]: PERF_RECORD_SAMPLE(IP, %#x): "
			       "%u/%u: %#" PRIx64 " period: %" PRIu64 " addr: %#" PRIx64 "\n",
			       s.time, ctx->file_offset, hdr->size, hdr->misc, s.pid, s.tid,
			       s.ip, s.period, s.addr);
			if (s.type & PERF_SAMPLE_CALLCHAIN) {
				printf("... FP chain: nr:%" PRIu64 "\n", s.callchain_nr);
				for (uint64_t i = 0; i < s.callchain_nr; i++)
					printf(".....  %2" PRIu64 ": %016" PRIx64 "\n", i,
					       s.callchain[i]);
			}
			return;
		}
	}
	printf("\n%" PRIu64 " %#" PRIx64 " [%#x]: ", t, ctx->file_offset, hdr->size);
	record_text(stdout, hdr);
}

/* perf 6.1's record types, in its --stats order: the kernel's 1..21, its own 64..82 */
static bool stats_type(unsigned t)
{
	return (t >= 1 && t <= 21) || (t >= 64 && t <= 82);
}

void report__print_stats(struct report *r)
{
	bool all = !r->o->skip_empty;

	printf("\nAggregated stats:\n");
	printf("%16s events: %10" PRIu64 "\n", "TOTAL", r->nr_records);
	for (unsigned t = 0; t < 128; t++) {
		const char *name = tally_record__type_name(t);

		if (!r->type_counts[t] && !(all && stats_type(t) && name))
			continue;
		printf("%16s events: %10" PRIu64 "  (%4.1f%%)\n", name ? name : "UNKNOWN",
		       r->type_counts[t],
		       r->nr_records ? 100.0 * (double)r->type_counts[t] / (double)r->nr_records : 0.0);
	}
	/* perf: per event its samples and lost samples, those without either left out
	 * (--no-skip-empty: a header alone) */
	for (size_t i = 0; i < r->nr_ev; i++) {
		const struct tally_data_event *ev = tally_data__event(r->data, i);

		if (!all && !r->nr_samples_seen[i] && !r->lost_samples_ev[i])
			continue;
		printf("%s stats:\n", ev->name ? ev->name : "unknown");
		if (r->nr_samples_seen[i])
			printf("%16s events: %10" PRIu64 "\n", "SAMPLE", r->nr_samples_seen[i]);
		if (r->lost_samples_ev[i])
			printf("%16s events: %10" PRIu64 "\n", "LOST_SAMPLES", r->lost_samples_ev[i]);
	}
}
