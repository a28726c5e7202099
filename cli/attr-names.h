/*
 * Names of perf_event_attr's bit fields (sample_type, read_format, branch_sample_type)
 * as perf prints them: one table for evlist -v, report --header and parse-events; and
 * the attr dump of evlist -v.
 */
#ifndef TALLY_CLI_ATTR_NAMES_H
#define TALLY_CLI_ATTR_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/perf_event.h>

enum attr_bits_field { ATTR_SAMPLE_TYPE, ATTR_READ_FORMAT, ATTR_BRANCH_SAMPLE_TYPE };

/* "IP|TID|TIME", unnamed bits as one hex number at the end ("IP|0x80000000"); "" for 0.
 * Returns buf. */
const char *attr_bits_text(enum attr_bits_field field, uint64_t v, char *buf, size_t len);
/* perf's attr dump (evlist -v, record's and stat's --control 'evlist -v'): every
 * non-zero field in struct order, " type: 1, size: 128, ...", the first item after ":"
 * and the others after "," while *first says none is on the line yet (then updated).
 * SIZE: the attr size to show (as stored); CONFIG3 past the 128 bytes of the attr. */
void attr_fprintf(FILE *f, const struct perf_event_attr *a, uint32_t size, uint64_t config3,
		  bool *first);

#endif
