/*
 * perf's names of perf_event_attr's bits, by bit number (see attr-names.h).
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
