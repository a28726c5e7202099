/*
 * Tracepoint fields for script: parse the TRACING_DATA of a perf.data (perf's
 * "tracing0.6" layout: header page, event format files, kallsyms, printk formats,
 * saved cmdlines) into a libtraceevent handle, then format raw samples with it (script's
 * lines, report's "Trace output" column).
 */
#ifndef TALLY_CLI_SCRIPT_TRACE_H
#define TALLY_CLI_SCRIPT_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tally/data.h>

struct script_trace;

/* 0, -ENOENT (no TRACING_DATA), -EINVAL (damaged) or -ENOMEM. */
int script_trace__new(struct script_trace **out, struct tally_data *d);
void script_trace__delete(struct script_trace *t);
/* Parse TRACING_DATA bytes directly (for tests and pipe streams). */
int script_trace__parse(struct script_trace **out, const void *buf, size_t len);
/* Print the event's fields as its print format says (nothing if t is NULL). */
void script_trace__print(struct script_trace *t, FILE *fp, int cpu, const void *raw,
			 uint32_t size);

/* The same text as a string (malloc'd), or NULL (t NULL, no record, no memory). */
char *script_trace__format(struct script_trace *t, int cpu, const void *raw, uint32_t size);
/* The same, or with fields every field as " name=value" (perf's --raw-trace: no print
 * format, no plugins). */
char *script_trace__format_as(struct script_trace *t, int cpu, const void *raw, uint32_t size,
			      bool fields);

/* The value of number field NAME of the tracepoint record RAW (SIZE bytes). 0, -ENOENT
 * (no such field, or it does not fit), -EINVAL. */
int script_trace__field(struct script_trace *t, const void *raw, uint32_t size,
			const char *name, uint64_t *val);

/* The field names of the tracepoint with this id (attr.config), comma-separated, as perf
 * evlist --trace-fields prints them. 0, or -ENOENT (t NULL, no such format, no fields). */
int script_trace__field_names(struct script_trace *t, uint64_t id, char *buf, size_t len);

#endif
