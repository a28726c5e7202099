/*
 * The record decoder: typed views of PERF_RECORD_SAMPLE and of the sample_id
 * trailer of other records. Nothing is copied: pointers point into the record,
 * and every field is checked against header.size before it is read.
 */
#include <errno.h>
#include <string.h>

#include <tally/record.h>

#include "internal/util.h"

void tally_sample_layout__from_attr(struct tally_sample_layout *l,
				    const struct perf_event_attr *attr)
{
	memset(l, 0, sizeof(*l));
	l->sample_type = attr->sample_type;
	l->read_format = attr->read_format;
	l->sample_regs_user = attr->sample_regs_user;
	l->sample_regs_intr = attr->sample_regs_intr;
	l->branch_sample_type = attr->branch_sample_type;
	l->sample_id_all = attr->sample_id_all;
}

/* A bounds-checked cursor over a record's payload. */
struct cursor {
	const unsigned char *p, *end;
	int bad;
};

static const void *take(struct cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	const void *r = c->p;
	c->p += n;
	return r;
}

static uint64_t u64(struct cursor *c)
{
	const void *p = take(c, 8);
	uint64_t v = 0;
	if (p)
		memcpy(&v, p, 8);
	return v;
}

/* Two u32 stored in one u64 slot (pid/tid, cpu/res). */
static void u32pair(struct cursor *c, uint32_t *a, uint32_t *b)
{
	const unsigned char *p = take(c, 8);
	*a = *b = 0;
	if (p) {
		memcpy(a, p, 4);
		memcpy(b, p + 4, 4);
	}
}

static size_t read_value_stride(uint64_t rf)
{
	return 8 * (1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST));
}

/* PERF_SAMPLE_READ's values, as read_format lays them out. */
static int parse_read(struct cursor *c, uint64_t rf, struct tally_sample *s)
{
	s->read.has_id = rf & PERF_FORMAT_ID;
	s->read.has_lost = rf & PERF_FORMAT_LOST;
	if (rf & PERF_FORMAT_GROUP) {
		s->read.nr = u64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			s->read.time_enabled = u64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			s->read.time_running = u64(c);
		s->read.stride = read_value_stride(rf);
		if (s->read.nr > (uint64_t)(c->end - c->p) / s->read.stride)
			return -EINVAL;
		s->read.values = take(c, s->read.nr * s->read.stride);
	} else {
		s->read.nr = 1;
		s->read.single.value = u64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
			s->read.time_enabled = u64(c);
		if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
			s->read.time_running = u64(c);
		if (rf & PERF_FORMAT_ID)
			s->read.single.id = u64(c);
		if (rf & PERF_FORMAT_LOST)
			s->read.single.lost = u64(c);
	}
	return 0;
}

/* The user registers and the user stack copy (for DWARF unwinding). */
static int parse_user(struct cursor *c, const struct tally_sample_layout *l,
		      struct tally_sample *s)
{
	uint64_t t = l->sample_type;

	if (t & PERF_SAMPLE_REGS_USER) {
		s->user_regs_abi = u64(c);
		if (s->user_regs_abi) {
			s->user_regs = take(c, 8 * (size_t)__builtin_popcountll(l->sample_regs_user));
			s->user_regs_mask = l->sample_regs_user;
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		s->user_stack_size = u64(c);
		if (s->user_stack_size > (uint64_t)(c->end - c->p))
			return -EINVAL;
		s->user_stack = take(c, s->user_stack_size);
		if (s->user_stack_size) {
			s->user_stack_dyn_size = u64(c);
			if (s->user_stack_dyn_size > s->user_stack_size)
				s->user_stack_dyn_size = s->user_stack_size;
		}
	}
	return 0;
}

int tally_sample__parse(const struct tally_sample_layout *l,
			const struct perf_event_header *hdr, struct tally_sample *s)
{
	uint64_t t = l->sample_type;
	struct cursor c;

	memset(s, 0, sizeof(*s));
	if (hdr->size < sizeof(*hdr))
		return -EINVAL;
	c.p = (const unsigned char *)(hdr + 1);
	c.end = (const unsigned char *)hdr + hdr->size;
	c.bad = 0;
	s->type = t;
	s->misc = hdr->misc;

	if (t & PERF_SAMPLE_IDENTIFIER)
		s->identifier = s->id = u64(&c);
	if (t & PERF_SAMPLE_IP)
		s->ip = u64(&c);
	if (t & PERF_SAMPLE_TID)
		u32pair(&c, &s->pid, &s->tid);
	if (t & PERF_SAMPLE_TIME)
		s->time = u64(&c);
	if (t & PERF_SAMPLE_ADDR)
		s->addr = u64(&c);
	if (t & PERF_SAMPLE_ID)
		s->id = u64(&c);
	if (t & PERF_SAMPLE_STREAM_ID)
		s->stream_id = u64(&c);
	if (t & PERF_SAMPLE_CPU) {
		uint32_t res;
		u32pair(&c, &s->cpu, &res);
	}
	if (t & PERF_SAMPLE_PERIOD)
		s->period = u64(&c);
	if ((t & PERF_SAMPLE_READ) && parse_read(&c, l->read_format, s))
		return -EINVAL;
	if (t & PERF_SAMPLE_CALLCHAIN) {
		s->callchain_nr = u64(&c);
		if (s->callchain_nr > (uint64_t)(c.end - c.p) / 8)
			return -EINVAL;
		s->callchain = take(&c, s->callchain_nr * 8);
	}
	if (t & PERF_SAMPLE_RAW) {
		const void *p = take(&c, 4);
		if (p)
			memcpy(&s->raw_size, p, 4);
		s->raw = take(&c, s->raw_size);
		/* The kernel pads size+data to a u64 boundary. */
		size_t pad = (8 - ((4 + (size_t)s->raw_size) & 7)) & 7;
		take(&c, pad);
	}
	if (t & PERF_SAMPLE_BRANCH_STACK) {
		s->branch_nr = u64(&c);
		if (l->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			s->branch_hw_idx = u64(&c);
		size_t es = sizeof(struct perf_branch_entry);
		if (s->branch_nr > (uint64_t)(c.end - c.p) / es)
			return -EINVAL;
		s->branches = take(&c, s->branch_nr * es);
	}
	if (parse_user(&c, l, s))
		return -EINVAL;
	if (t & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT))
		s->weight = u64(&c);
	if (t & PERF_SAMPLE_DATA_SRC)
		s->data_src = u64(&c);
	if (t & PERF_SAMPLE_TRANSACTION)
		s->transaction = u64(&c);
	if (t & PERF_SAMPLE_REGS_INTR) {
		s->intr_regs_abi = u64(&c);
		if (s->intr_regs_abi)
			s->intr_regs = take(&c, 8 * (size_t)__builtin_popcountll(l->sample_regs_intr));
	}
	if (t & PERF_SAMPLE_PHYS_ADDR)
		s->phys_addr = u64(&c);
	if (t & PERF_SAMPLE_CGROUP)
		s->cgroup = u64(&c);
	if (t & PERF_SAMPLE_DATA_PAGE_SIZE)
		s->data_page_size = u64(&c);
	if (t & PERF_SAMPLE_CODE_PAGE_SIZE)
		s->code_page_size = u64(&c);
	if (t & PERF_SAMPLE_AUX) {
		uint64_t sz = u64(&c);
		if (sz > (uint64_t)(c.end - c.p))
			return -EINVAL;
		s->aux_size = (uint32_t)sz;
		s->aux = take(&c, sz);
	}
	return c.bad ? -EINVAL : 0;
}

/* Fields of 8 bytes each before the call chain, and after the last variable field. */
#define FIXED_BEFORE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		      PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | \
		      PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define FIXED_AFTER (PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION | \
		     PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP | \
		     PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE)
/* Fields whose size the record itself gives (besides the call chain). */
#define VARIABLE (PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | \
		  PERF_SAMPLE_STACK_USER | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_AUX)

int tally_sample__check(const struct tally_sample_layout *l,
			const struct perf_event_header *hdr)
{
	uint64_t t = l->sample_type, rf = l->read_format;
	size_t len, before, after;

	if ((t & VARIABLE) || ((t & PERF_SAMPLE_READ) && (rf & PERF_FORMAT_GROUP))) {
		struct tally_sample s;

		return tally_sample__parse(l, hdr, &s);
	}
	if (hdr->size < sizeof(*hdr))
		return -EINVAL;
	len = hdr->size - sizeof(*hdr);
	before = 8 * (size_t)__builtin_popcountll(t & FIXED_BEFORE);
	if (t & PERF_SAMPLE_READ)
		before += 8 * (1 + !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
			       !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING) + !!(rf & PERF_FORMAT_ID) +
			       !!(rf & PERF_FORMAT_LOST));
	after = 8 * ((size_t)__builtin_popcountll(t & FIXED_AFTER) +
		     !!(t & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)));
	if (t & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr;

		if (len < before + 8)
			return -EINVAL;
		memcpy(&nr, (const unsigned char *)(hdr + 1) + before, 8);
		len -= before + 8;
		if (nr > len / 8)
			return -EINVAL;
		return len - 8 * nr >= after ? 0 : -EINVAL;
	}
	return len >= before + after ? 0 : -EINVAL;
}

uint64_t tally_sample__period(const struct tally_sample *s, const struct perf_event_attr *attr)
{
	if (s->type & PERF_SAMPLE_PERIOD)
		return s->period;
	if (!attr->freq && attr->sample_period)
		return attr->sample_period;
	return 1;
}

int tally_sample__read_value(const struct tally_sample *s, uint64_t i,
			     struct tally_read_value *v)
{
	memset(v, 0, sizeof(*v));
	if (!(s->type & PERF_SAMPLE_READ) || i >= s->read.nr)
		return -ENOENT;
	if (!s->read.values) {
		*v = s->read.single;
		return 0;
	}
	const unsigned char *p = (const unsigned char *)s->read.values + i * s->read.stride;
	size_t words = s->read.stride / 8;
	memcpy(&v->value, p, 8);
	/* GROUP entries: value, [id], [lost]; stride tells which are present. */
	if (s->read.has_id && words >= 2)
		memcpy(&v->id, p + 8, 8);
	if (s->read.has_lost)
		memcpy(&v->lost, p + 8 * (words - 1), 8);
	return 0;
}

size_t tally_sample_id__size(const struct tally_sample_layout *l)
{
	if (!l->sample_id_all)
		return 0;
	uint64_t t = l->sample_type;
	return 8 * (!!(t & PERF_SAMPLE_TID) + !!(t & PERF_SAMPLE_TIME) + !!(t & PERF_SAMPLE_ID) +
		    !!(t & PERF_SAMPLE_STREAM_ID) + !!(t & PERF_SAMPLE_CPU) +
		    !!(t & PERF_SAMPLE_IDENTIFIER));
}

int tally_sample_id__parse(const struct tally_sample_layout *l,
			   const struct perf_event_header *hdr, struct tally_sample_id *out)
{
	uint64_t t = l->sample_type;
	size_t n = tally_sample_id__size(l);
	struct cursor c;

	memset(out, 0, sizeof(*out));
	if (!n)
		return -ENOENT;
	if (hdr->size < sizeof(*hdr) + n)
		return -EINVAL;
	c.end = (const unsigned char *)hdr + hdr->size;
	c.p = c.end - n;
	c.bad = 0;
	if (t & PERF_SAMPLE_TID) {
		u32pair(&c, &out->pid, &out->tid);
		out->has_tid = true;
	}
	if (t & PERF_SAMPLE_TIME) {
		out->time = u64(&c);
		out->has_time = true;
	}
	if (t & PERF_SAMPLE_ID) {
		out->id = u64(&c);
		out->has_id = true;
	}
	if (t & PERF_SAMPLE_STREAM_ID) {
		out->stream_id = u64(&c);
		out->has_stream_id = true;
	}
	if (t & PERF_SAMPLE_CPU) {
		u32pair(&c, &out->cpu, &out->res);
		out->has_cpu = true;
	}
	if (t & PERF_SAMPLE_IDENTIFIER) {
		out->identifier = out->id = u64(&c);
		out->has_id = true;
	}
	return c.bad ? -EINVAL : 0;
}

int tally_record__peek_id(const struct tally_sample_layout *l,
			  const struct perf_event_header *hdr, uint64_t *id)
{
	uint64_t t = l->sample_type;
	size_t off;

	if (hdr->type == PERF_RECORD_SAMPLE) {
		if (t & PERF_SAMPLE_IDENTIFIER)
			off = sizeof(*hdr);
		else if (t & PERF_SAMPLE_ID)
			off = sizeof(*hdr) + 8 * (!!(t & PERF_SAMPLE_IP) + !!(t & PERF_SAMPLE_TID) +
						  !!(t & PERF_SAMPLE_TIME) + !!(t & PERF_SAMPLE_ADDR));
		else
			return -ENOENT;
	} else {
		if (!l->sample_id_all || hdr->type >= 64 /* user records have no trailer */)
			return -ENOENT;
		if (t & PERF_SAMPLE_IDENTIFIER)
			off = 8;
		else if (t & PERF_SAMPLE_ID)
			off = 8 * (1 + !!(t & PERF_SAMPLE_STREAM_ID) + !!(t & PERF_SAMPLE_CPU));
		else
			return -ENOENT;
		if (hdr->size < sizeof(*hdr) + off)
			return -EINVAL;
		off = hdr->size - off;
	}
	if (off + 8 > hdr->size)
		return -EINVAL;
	memcpy(id, (const unsigned char *)hdr + off, 8);
	return 0;
}

static const char *const kernel_names[] = {
	[PERF_RECORD_MMAP] = "MMAP",
	[PERF_RECORD_LOST] = "LOST",
	[PERF_RECORD_COMM] = "COMM",
	[PERF_RECORD_EXIT] = "EXIT",
	[PERF_RECORD_THROTTLE] = "THROTTLE",
	[PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
	[PERF_RECORD_FORK] = "FORK",
	[PERF_RECORD_READ] = "READ",
	[PERF_RECORD_SAMPLE] = "SAMPLE",
	[PERF_RECORD_MMAP2] = "MMAP2",
	[PERF_RECORD_AUX] = "AUX",
	[PERF_RECORD_ITRACE_START] = "ITRACE_START",
	[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
	[PERF_RECORD_SWITCH] = "SWITCH",
	[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
	[PERF_RECORD_NAMESPACES] = "NAMESPACES",
	[PERF_RECORD_KSYMBOL] = "KSYMBOL",
	[PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
	[PERF_RECORD_CGROUP] = "CGROUP",
	[PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
	[21] = "AUX_OUTPUT_HW_ID",
};

/* perf's short names for its user-space records. */
static const char *const user_names[] = {
	"ATTR", "EVENT_TYPE", "TRACING_DATA", "BUILD_ID", "FINISHED_ROUND", "ID_INDEX",
	"AUXTRACE_INFO", "AUXTRACE", "AUXTRACE_ERROR", "THREAD_MAP", "CPU_MAP",
	"STAT_CONFIG", "STAT", "STAT_ROUND", "EVENT_UPDATE", "TIME_CONV", "FEATURE",
	"COMPRESSED", "FINISHED_INIT", "COMPRESSED2",
};

const char *tally_record__type_name(uint32_t type)
{
	if (type < TLY_ARRAY_SIZE(kernel_names))
		return kernel_names[type];
	if (type >= 64 && type - 64 < TLY_ARRAY_SIZE(user_names))
		return user_names[type - 64];
	return NULL;
}

int tally_chain_context(uint64_t entry, uint8_t *cpumode)
{
	if (entry < PERF_CONTEXT_MAX)
		return 0;
	switch (entry) {
	case PERF_CONTEXT_HV:
		*cpumode = PERF_RECORD_MISC_HYPERVISOR;
		return 1;
	case PERF_CONTEXT_KERNEL:
		*cpumode = PERF_RECORD_MISC_KERNEL;
		return 1;
	case PERF_CONTEXT_USER:
		*cpumode = PERF_RECORD_MISC_USER;
		return 1;
	case PERF_CONTEXT_GUEST_KERNEL:
		*cpumode = PERF_RECORD_MISC_GUEST_KERNEL;
		return 1;
	case PERF_CONTEXT_GUEST_USER:
		*cpumode = PERF_RECORD_MISC_GUEST_USER;
		return 1;
	default:
		return -1;
	}
}

bool tally_sample__has_user_stack(const struct tally_sample *s)
{
	const uint64_t both = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;

	return (s->type & both) == both && s->user_regs && s->user_stack &&
	       s->user_stack_dyn_size && s->user_regs_abi == PERF_SAMPLE_REGS_ABI_64;
}
