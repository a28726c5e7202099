/*
 * perf_event_attr as perf prints it: the names of its fields, in struct order, and of
 * the bits of sample_type, read_format and branch_sample_type. One table for evlist -v
 * (and --control's evlist -v), report --header and parse-events, which differ only in
 * how they lay out a field.
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

/* Receives one field: its name as perf prints it ("{ sample_period, sample_freq }") and
 * its value as text ("4000", "0x1", "IP|TID"). */
typedef void attr_field_fn(void *arg, const char *name, const char *value);

/* perf's attr dump: @fn for every non-zero field of @a in struct order (type 0, a
 * hardware event, is not shown either), config3 (which a 6.1 <linux/perf_event.h> lacks)
 * after { bp_len, config2 }. The size shown is @size: a file's attr size, or a->size. */
void attr_fields(const struct perf_event_attr *a, uint64_t config3, uint32_t size,
		 attr_field_fn *fn, void *arg);
/* That dump as evlist -v (and record's and stat's --control 'evlist -v') print it:
 * " type: 1, size: 128, ...", the first item after ":" and the others after "," while
 * *first says none is on the line yet (then updated). */
void attr_fprintf(FILE *f, const struct perf_event_attr *a, uint32_t size, uint64_t config3,
		  bool *first);
/* That dump as perf_event_attr__fprintf() lays it out (parse-events, top -vv): a rule,
 * "perf_event_attr:", a "  name   value" line per field, a rule. */
void attr_block_fprintf(FILE *f, const struct perf_event_attr *a, uint64_t config3);

#endif
