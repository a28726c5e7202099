/*
 * Typed views of perf records, as the kernel writes them into the ring buffer and
 * perf.data stores them. One decoder serves every reader (report, script, evlist,
 * top, record's own post-processing): it never copies payloads, it points into the
 * record, and it checks every length against the record's size.
 */
#ifndef TALLY_RECORD_H
#define TALLY_RECORD_H

#include <tally/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a decoder needs to know about the event a record belongs to. */
struct tally_sample_layout {
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t sample_regs_user;	/* for PERF_SAMPLE_REGS_USER */
	uint64_t sample_regs_intr;
	uint64_t branch_sample_type;
	bool sample_id_all;
};

/* Fill a layout from an attr. */
TALLY_API void tally_sample_layout__from_attr(struct tally_sample_layout *l,
					      const struct perf_event_attr *attr);

/* The sample_id trailer of non-sample records (sample_id_all) / sample fields. */
struct tally_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu, res;
	uint64_t identifier;
	bool has_tid, has_time, has_id, has_stream_id, has_cpu;
};

struct tally_read_value {
	uint64_t value;
	uint64_t id;
	uint64_t lost;
};

/* A decoded PERF_RECORD_SAMPLE. Pointers point into the record. */
struct tally_sample {
	uint64_t type;			/* sample_type it was decoded with */
	uint16_t misc;			/* header.misc: PERF_RECORD_MISC_USER/KERNEL/… */
	uint64_t identifier;
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu;
	uint64_t period;
	/* PERF_SAMPLE_READ */
	struct {
		uint64_t time_enabled, time_running;
		uint64_t nr;			/* 1 unless PERF_FORMAT_GROUP */
		const void *values;		/* GROUP: nr entries, stride bytes each;
						 * NULL without GROUP (see `single`) */
		size_t stride;
		bool has_id, has_lost;		/* which fields the entries carry */
		struct tally_read_value single;	/* the value without PERF_FORMAT_GROUP */
	} read;	/* use tally_sample__read_value() rather than the raw fields */
	/* PERF_SAMPLE_CALLCHAIN: ips[nr], including PERF_CONTEXT_* markers */
	uint64_t callchain_nr;
	const uint64_t *callchain;
	/* PERF_SAMPLE_RAW */
	uint32_t raw_size;
	const void *raw;
	/* PERF_SAMPLE_BRANCH_STACK */
	uint64_t branch_nr;
	uint64_t branch_hw_idx;
	const struct perf_branch_entry *branches;
	/* PERF_SAMPLE_REGS_USER / REGS_INTR */
	uint64_t user_regs_abi;
	const uint64_t *user_regs;	/* popcount(sample_regs_user) values */
	uint64_t intr_regs_abi;
	const uint64_t *intr_regs;
	/* PERF_SAMPLE_STACK_USER */
	uint64_t user_stack_size;	/* bytes reserved in the record */
	const void *user_stack;
	uint64_t user_stack_dyn_size;	/* bytes actually valid */
	uint64_t weight;		/* WEIGHT or WEIGHT_STRUCT (full u64) */
	uint64_t data_src;
	uint64_t transaction;
	uint64_t phys_addr;
	uint64_t cgroup;
	uint64_t data_page_size;
	uint64_t code_page_size;
	uint32_t aux_size;
	const void *aux;
	uint64_t user_regs_mask;	/* which registers user_regs holds (the attr's
					 * sample_regs_user), 0 without them */
};

/* Decode a PERF_RECORD_SAMPLE. hdr->size bytes at hdr must be readable.
 * 0, or -EINVAL when the record is shorter than its fields say (never reads past it). */
TALLY_API int tally_sample__parse(const struct tally_sample_layout *l,
				  const struct perf_event_header *hdr, struct tally_sample *out);
/* Would tally_sample__parse accept this record? The same answer, without decoding it
 * (a reader checking every sample before handing it out). 0 or -EINVAL. */
TALLY_API int tally_sample__check(const struct tally_sample_layout *l,
				  const struct perf_event_header *hdr);

/* The period a sample counts for, as perf counts it: its PERIOD field, else the attr's
 * fixed sample_period, else 1. */
TALLY_API uint64_t tally_sample__period(const struct tally_sample *s,
					const struct perf_event_attr *attr);

/* Was the sample recorded with --call-graph dwarf, and does it carry what unwinding
 * needs: the user registers (64-bit ABI) and some bytes of user stack? (perf's test
 * before it unwinds.) */
TALLY_API bool tally_sample__has_user_stack(const struct tally_sample *s);

/* Entry I (0 … read.nr-1) of a PERF_SAMPLE_READ group, or the single value.
 * 0, or -ENOENT when the sample has no such entry. */
TALLY_API int tally_sample__read_value(const struct tally_sample *s, uint64_t i,
				       struct tally_read_value *v);

/* Kernel or guest kernel cpumode: the addresses the kernel's maps and symbols hold. */
static inline bool tally_cpumode_is_kernel(uint8_t cpumode)
{
	return cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL;
}

/* A call-chain entry that is a PERF_CONTEXT_* marker: sets *cpumode to the cpumode of
 * the entries after it and returns 1, or -1 for an unknown marker (the chain is
 * corrupt); 0 for an address. */
TALLY_API int tally_chain_context(uint64_t entry, uint8_t *cpumode);

/* Decode the sample_id trailer of a non-sample record (needs l->sample_id_all).
 * 0, -ENOENT when the layout has no trailer, -EINVAL when it does not fit. */
TALLY_API int tally_sample_id__parse(const struct tally_sample_layout *l,
				     const struct perf_event_header *hdr,
				     struct tally_sample_id *out);

/* Size in bytes of the sample_id trailer for this layout (0 without sample_id_all). */
TALLY_API size_t tally_sample_id__size(const struct tally_sample_layout *l);

/* Where the event id sits, to find the attr of a record before decoding it:
 * PERF_SAMPLE_IDENTIFIER makes it the first u64 of a sample / last u64 of a trailer.
 * Returns 0 and sets *id, or -ENOENT if this layout carries no id. */
TALLY_API int tally_record__peek_id(const struct tally_sample_layout *l,
				    const struct perf_event_header *hdr, uint64_t *id);

/* Name of a record type ("SAMPLE", "MMAP2", "FINISHED_ROUND", …) or NULL if unknown. */
TALLY_API const char *tally_record__type_name(uint32_t type);

#ifdef __cplusplus
}
#endif
#endif
