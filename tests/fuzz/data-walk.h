/*
 * Shared by fuzz-data.c and fuzz-data-pipe.c: open a buffer with tally_data__open_mem and
 * use every part of the reader API a command would, decoding each record with the
 * record decoder, reading every payload byte the decoder points at.
 */
#ifndef FUZZ_DATA_WALK_H
#define FUZZ_DATA_WALK_H

#include <stdint.h>
#include <string.h>

#include <tally/data.h>
#include <tally/format.h>
#include <tally/record.h>

static volatile uint64_t walk_sink;

static void walk_touch(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += c[i];
	walk_sink += s;
}

struct walk_arg {
	struct tally_data *d;
	unsigned long n;
};

static int walk_record(void *arg, const struct perf_event_header *hdr,
		       const struct tally_record_ctx *ctx)
{
	struct walk_arg *w = arg;
	struct tally_data *d = w->d;

	walk_touch(hdr, hdr->size);	/* the reader promises hdr->size readable bytes */
	walk_sink += ctx->file_offset;
	int idx = tally_data__event_of(d, hdr);
	if (idx != ctx->evidx && hdr->type < 64)
		walk_sink++;
	if (ctx->evidx >= 0 && (size_t)ctx->evidx < tally_data__nr_events(d)) {
		const struct tally_data_event *ev = tally_data__event(d, (size_t)ctx->evidx);
		if (hdr->type == PERF_RECORD_SAMPLE) {
			struct tally_sample s;
			if (tally_sample__parse(&ev->layout, hdr, &s) == 0) {
				if (s.callchain)
					walk_touch(s.callchain, s.callchain_nr * 8);
				if (s.raw)
					walk_touch(s.raw, s.raw_size);
				if (s.branches)
					walk_touch(s.branches, s.branch_nr * sizeof(*s.branches));
				if (s.user_stack)
					walk_touch(s.user_stack, s.user_stack_size);
			}
		} else if (hdr->type < 64) {
			struct tally_sample_id sid;
			if (tally_sample_id__parse(&ev->layout, hdr, &sid) == 0)
				walk_sink += sid.tid + sid.time;
		}
	}
	/* Bounded work per input: stop after many records like a consumer that gives up. */
	return ++w->n > 200000;
}

static void walk_data(const uint8_t *buf, size_t len)
{
	struct tally_data *d = NULL;
	struct tally_data_error err;

	if (tally_data__open_mem(&d, buf, len, &err) < 0) {
		walk_touch(err.msg, strnlen(err.msg, sizeof(err.msg)));
		return;
	}
	walk_sink += tally_data__is_pipe(d) + tally_data__file_size(d);
	for (size_t i = 0; i < tally_data__nr_events(d); i++) {
		const struct tally_data_event *ev = tally_data__event(d, i);
		if (!ev)
			continue;
		if (ev->name)
			walk_touch(ev->name, strlen(ev->name));
		if (ev->ids)
			walk_touch(ev->ids, ev->nr_ids * sizeof(*ev->ids));
		walk_sink += (uint64_t)ev->leader + (uint64_t)ev->nr_members;
	}
	for (int f = 0; f < 256; f++) {
		const void *p;
		size_t n;
		if (tally_data__feature(d, f, &p, &n) == 0 && p)
			walk_touch(p, n);
		const char *s = tally_data__feature_string(d, f);
		if (s)
			walk_touch(s, strlen(s));
	}
	for (unsigned flags = 0; flags < 4; flags++) {
		struct walk_arg w = { .d = d };
		int rc = tally_data__for_each(d, flags, walk_record, &w, &err);
		if (rc < 0)
			walk_touch(err.msg, strnlen(err.msg, sizeof(err.msg)));
		walk_sink += tally_data__truncated(d) + tally_data__nr_unknown_records(d);
	}
	tally_data__delete(d);
}

#endif
