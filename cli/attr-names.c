/*
 * perf's names of perf_event_attr's bits, by bit number, and its dump of an attr
 * (see attr-names.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "attr-names.h"

static const char *const sample_type_names[] = {
	"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD", "STREAM_ID",
	"RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT", "DATA_SRC", "IDENTIFIER",
	"TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX", "CGROUP", "DATA_PAGE_SIZE",
	"CODE_PAGE_SIZE", "WEIGHT_STRUCT",
};
static const char *const read_format_names[] = {
	"TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING", "ID", "GROUP", "LOST",
};
static const char *const branch_names[] = {
	"USER", "KERNEL", "HV", "ANY", "ANY_CALL", "ANY_RETURN", "IND_CALL", "ABORT_TX",
	"IN_TX", "NO_TX", "COND", "CALL_STACK", "IND_JUMP", "CALL", "NO_FLAGS", "NO_CYCLES",
	"TYPE_SAVE", "HW_INDEX", "PRIV_SAVE",
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const char *attr_bits_text(enum attr_bits_field field, uint64_t v, char *buf, size_t len)
{
	const char *const *names = field == ATTR_SAMPLE_TYPE ? sample_type_names :
				   field == ATTR_READ_FORMAT ? read_format_names : branch_names;
	size_t nr = field == ATTR_SAMPLE_TYPE ? N(sample_type_names) :
		    field == ATTR_READ_FORMAT ? N(read_format_names) : N(branch_names);
	size_t n = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < nr && n < len; i++) {
		if (!(v & (1ULL << i)))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "", names[i]);
		v &= ~(1ULL << i);
	}
	if (v && n < len)
		snprintf(buf + n, len - n, "%s%#" PRIx64, n ? "|" : "", v);
	return buf;
}

/* One line of the dump: the FILE, and whether an item is on it yet. */
struct attr_line {
	FILE *f;
	bool first;
};

/* One " name: value" item of the -v line. */
static void item(struct attr_line *l, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void item(struct attr_line *l, const char *name, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(l->f, "%s %s: %s", l->first ? ":" : ",", name, buf);
	l->first = false;
}

static void bits(struct attr_line *l, const char *name, uint64_t v, enum attr_bits_field field)
{
	char buf[512];

	if (v)
		item(l, name, "%s", attr_bits_text(field, v, buf, sizeof(buf)));
}

#define U(field) do { if (a->field) item(&l, #field, "%" PRIu64, (uint64_t)a->field); } while (0)
#define X(name, field) do { if (a->field) item(&l, name, "%#" PRIx64, (uint64_t)a->field); } while (0)

void attr_fprintf(FILE *f, const struct perf_event_attr *a, uint32_t size, uint64_t config3,
		  bool *first)
{
	struct attr_line l = { f, *first };

	item(&l, "type", "%u", a->type);
	item(&l, "size", "%u", size);
	X("config", config);
	if (a->sample_period)
		item(&l, "{ sample_period, sample_freq }", "%" PRIu64, (uint64_t)a->sample_period);
	bits(&l, "sample_type", a->sample_type, ATTR_SAMPLE_TYPE);
	bits(&l, "read_format", a->read_format, ATTR_READ_FORMAT);
	U(disabled); U(inherit); U(pinned); U(exclusive); U(exclude_user); U(exclude_kernel);
	U(exclude_hv); U(exclude_idle); U(mmap); U(comm); U(freq); U(inherit_stat);
	U(enable_on_exec); U(task); U(watermark); U(precise_ip); U(mmap_data);
	U(sample_id_all); U(exclude_host); U(exclude_guest); U(exclude_callchain_kernel);
	U(exclude_callchain_user); U(mmap2); U(comm_exec); U(use_clockid); U(context_switch);
	U(write_backward); U(namespaces); U(ksymbol); U(bpf_event); U(aux_output); U(cgroup);
	U(text_poke); U(build_id); U(inherit_thread); U(remove_on_exec); U(sigtrap);
	if (a->wakeup_events)
		item(&l, "{ wakeup_events, wakeup_watermark }", "%u", a->wakeup_events);
	U(bp_type);
	X("{ bp_addr, config1 }", bp_addr);
	X("{ bp_len, config2 }", bp_len);
	if (config3)
		item(&l, "config3", "%#" PRIx64, config3);
	bits(&l, "branch_sample_type", a->branch_sample_type, ATTR_BRANCH_SAMPLE_TYPE);
	X("sample_regs_user", sample_regs_user);
	U(sample_stack_user);
	if (a->clockid)
		item(&l, "clockid", "%d", a->clockid);
	X("sample_regs_intr", sample_regs_intr);
	U(aux_watermark);
	U(sample_max_stack);
	U(aux_sample_size);
	U(sig_data);
	*first = l.first;
}
