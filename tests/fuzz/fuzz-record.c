/*
 * Fuzz target: the record decoder (lib/format/record.c).
 *
 * Input: a 33-byte layout prefix, then the record payload.
 *   u64 sample_type, u64 read_format, u64 sample_regs_user, u64 sample_regs_intr,
 *   u8 flags (bit 0: sample_id_all, bit 1: decode as a non-sample record's trailer,
 *             bits 2-7: record type for the trailer case)
 * The record is rebuilt in an exact-size heap buffer with header.size = 8 + payload, so
 * the sanitizer sees any read past the record. Every pointer the decoder returns is read
 * to its full claimed length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/record.h>

#define PREFIX 33

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += c[i];
	sink += s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tally_sample_layout l;
	uint8_t flags;

	if (size < PREFIX)
		return 0;
	memset(&l, 0, sizeof(l));
	memcpy(&l.sample_type, data, 8);
	memcpy(&l.read_format, data + 8, 8);
	memcpy(&l.sample_regs_user, data + 16, 8);
	memcpy(&l.sample_regs_intr, data + 24, 8);
	flags = data[32];
	l.sample_id_all = flags & 1;

	size_t payload = size - PREFIX;
	if (payload > 0xffff - sizeof(struct perf_event_header))
		payload = 0xffff - sizeof(struct perf_event_header);
	size_t rec_size = sizeof(struct perf_event_header) + payload;
	struct perf_event_header *hdr = malloc(rec_size);
	if (!hdr)
		return 0;
	hdr->type = (flags & 2) ? (uint32_t)(flags >> 2) : PERF_RECORD_SAMPLE;
	hdr->misc = 0;
	hdr->size = (uint16_t)rec_size;
	memcpy(hdr + 1, data + PREFIX, payload);

	uint64_t id;
	if (tally_record__peek_id(&l, hdr, &id) == 0)
		sink += id;
	const char *name = tally_record__type_name(hdr->type);
	if (name)
		touch(name, strlen(name));
	sink += tally_sample_id__size(&l);

	if (hdr->type == PERF_RECORD_SAMPLE) {
		struct tally_sample s;
		if (tally_sample__parse(&l, hdr, &s) == 0) {
			if (s.callchain)
				touch(s.callchain, s.callchain_nr * sizeof(uint64_t));
			if (s.raw)
				touch(s.raw, s.raw_size);
			if (s.branches)
				touch(s.branches, s.branch_nr * sizeof(*s.branches));
			if (s.user_regs)
				touch(s.user_regs, (size_t)__builtin_popcountll(l.sample_regs_user) * 8);
			if (s.intr_regs)
				touch(s.intr_regs, (size_t)__builtin_popcountll(l.sample_regs_intr) * 8);
			if (s.user_stack)
				touch(s.user_stack, s.user_stack_size);
			if (s.aux)
				touch(s.aux, s.aux_size);
			if (s.read.values)
				touch(s.read.values, s.read.nr * s.read.stride);
			/* Every entry the sample claims, and one past the end. */
			struct tally_read_value v;
			uint64_t n = s.read.nr < 4096 ? s.read.nr : 4096;
			for (uint64_t i = 0; i <= n; i++)
				if (tally_sample__read_value(&s, i, &v) == 0)
					sink += v.value + v.id + v.lost;
		}
	} else {
		struct tally_sample_id sid;
		if (tally_sample_id__parse(&l, hdr, &sid) == 0)
			sink += sid.pid + sid.tid + sid.time + sid.id + sid.cpu;
	}
	free(hdr);
	return 0;
}
