/*
 * Names of perf_event_attr's bit fields (sample_type, read_format, branch_sample_type)
 * as perf prints them: one table for evlist -v, report --header and parse-events.
 */
#ifndef TALLY_CLI_ATTR_NAMES_H
#define TALLY_CLI_ATTR_NAMES_H

#include <stddef.h>
#include <stdint.h>

enum attr_bits_field { ATTR_SAMPLE_TYPE, ATTR_READ_FORMAT, ATTR_BRANCH_SAMPLE_TYPE };

/* "IP|TID|TIME", unnamed bits as one hex number at the end ("IP|0x80000000"); "" for 0.
 * Returns buf. */
const char *attr_bits_text(enum attr_bits_field field, uint64_t v, char *buf, size_t len);

#endif
