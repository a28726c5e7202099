/*
 * perf's names of perf_event_attr's fields and of its bits, by bit number (see
 * attr-names.h).
 */
#include <inttypes.h>
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

const char *attr_bits_text(enum attr_bits_field field, uint64_t v, char *buf, size_t len)
{
	const char *const *names = field == ATTR_SAMPLE_TYPE ? sample_type_names :
				   field == ATTR_READ_FORMAT ? read_format_names : branch_names;
	size_t nr = field == ATTR_SAMPLE_TYPE ? sizeof(sample_type_names) / sizeof(char *) :
		    field == ATTR_READ_FORMAT ? sizeof(read_format_names) / sizeof(char *) :
		    sizeof(branch_names) / sizeof(char *);
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

/* How a field's value is written. */
enum attr_kind { DEC, HEX, INT, SAMPLE_BITS, READ_BITS, BRANCH_BITS };

struct attr_field {
	const char *name;
	uint64_t v;
	enum attr_kind kind;
};

static void field_text(const struct attr_field *f, char *buf, size_t len)
{
	switch (f->kind) {
	case DEC:
		snprintf(buf, len, "%" PRIu64, f->v);
		break;
	case HEX:
		snprintf(buf, len, "%#" PRIx64, f->v);
		break;
	case INT:
		snprintf(buf, len, "%d", (int)f->v);
		break;
	case SAMPLE_BITS:
		attr_bits_text(ATTR_SAMPLE_TYPE, f->v, buf, len);
		break;
	case READ_BITS:
		attr_bits_text(ATTR_READ_FORMAT, f->v, buf, len);
		break;
	case BRANCH_BITS:
		attr_bits_text(ATTR_BRANCH_SAMPLE_TYPE, f->v, buf, len);
		break;
	}
}

void attr_fields(const struct perf_event_attr *a, uint64_t config3, uint32_t size,
		 attr_field_fn *fn, void *arg)
{
	const struct attr_field fields[] = {
		{ "type", a->type, DEC }, { "size", size, DEC }, { "config", a->config, HEX },
		{ "{ sample_period, sample_freq }", a->sample_period, DEC },
		{ "sample_type", a->sample_type, SAMPLE_BITS },
		{ "read_format", a->read_format, READ_BITS },
		{ "disabled", a->disabled, DEC }, { "inherit", a->inherit, DEC },
		{ "pinned", a->pinned, DEC }, { "exclusive", a->exclusive, DEC },
		{ "exclude_user", a->exclude_user, DEC }, { "exclude_kernel", a->exclude_kernel, DEC },
		{ "exclude_hv", a->exclude_hv, DEC }, { "exclude_idle", a->exclude_idle, DEC },
		{ "mmap", a->mmap, DEC }, { "comm", a->comm, DEC }, { "freq", a->freq, DEC },
		{ "inherit_stat", a->inherit_stat, DEC }, { "enable_on_exec", a->enable_on_exec, DEC },
		{ "task", a->task, DEC }, { "watermark", a->watermark, DEC },
		{ "precise_ip", a->precise_ip, DEC }, { "mmap_data", a->mmap_data, DEC },
		{ "sample_id_all", a->sample_id_all, DEC }, { "exclude_host", a->exclude_host, DEC },
		{ "exclude_guest", a->exclude_guest, DEC },
		{ "exclude_callchain_kernel", a->exclude_callchain_kernel, DEC },
		{ "exclude_callchain_user", a->exclude_callchain_user, DEC },
		{ "mmap2", a->mmap2, DEC }, { "comm_exec", a->comm_exec, DEC },
		{ "use_clockid", a->use_clockid, DEC }, { "context_switch", a->context_switch, DEC },
		{ "write_backward", a->write_backward, DEC }, { "namespaces", a->namespaces, DEC },
		{ "ksymbol", a->ksymbol, DEC }, { "bpf_event", a->bpf_event, DEC },
		{ "aux_output", a->aux_output, DEC }, { "cgroup", a->cgroup, DEC },
		{ "text_poke", a->text_poke, DEC }, { "build_id", a->build_id, DEC },
		{ "inherit_thread", a->inherit_thread, DEC },
		{ "remove_on_exec", a->remove_on_exec, DEC }, { "sigtrap", a->sigtrap, DEC },
		{ "{ wakeup_events, wakeup_watermark }", a->wakeup_events, DEC },
		{ "bp_type", a->bp_type, DEC }, { "{ bp_addr, config1 }", a->bp_addr, HEX },
		{ "{ bp_len, config2 }", a->bp_len, HEX }, { "config3", config3, HEX },
		{ "branch_sample_type", a->branch_sample_type, BRANCH_BITS },
		{ "sample_regs_user", a->sample_regs_user, HEX },
		{ "sample_stack_user", a->sample_stack_user, DEC },
		{ "clockid", (uint64_t)(uint32_t)a->clockid, INT },
		{ "sample_regs_intr", a->sample_regs_intr, HEX },
		{ "aux_watermark", a->aux_watermark, DEC },
		{ "sample_max_stack", a->sample_max_stack, DEC },
		{ "aux_sample_size", a->aux_sample_size, DEC }, { "sig_data", a->sig_data, DEC },
	};
	char buf[512];

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (!fields[i].v)
			continue;
		field_text(&fields[i], buf, sizeof(buf));
		fn(arg, fields[i].name, buf);
	}
}

/* One line of evlist -v: the FILE, and whether an item is on it yet. */
struct attr_line {
	FILE *f;
	bool first;
};

static void line_item(void *arg, const char *name, const char *value)
{
	struct attr_line *l = arg;

	fprintf(l->f, "%s %s: %s", l->first ? ":" : ",", name, value);
	l->first = false;
}

void attr_fprintf(FILE *f, const struct perf_event_attr *a, uint32_t size, uint64_t config3,
		  bool *first)
{
	struct attr_line l = { f, *first };

	attr_fields(a, config3, size, line_item, &l);
	*first = l.first;
}

static void block_field(void *f, const char *name, const char *value)
{
	fprintf(f, "  %-32s %s\n", name, value);
}

void attr_block_fprintf(FILE *f, const struct perf_event_attr *a, uint64_t config3)
{
	static const char line[] = "------------------------------------------------------------\n";

	fputs(line, f);
	fputs("perf_event_attr:\n", f);
	attr_fields(a, config3, a->size, block_field, f);
	fputs(line, f);
}
