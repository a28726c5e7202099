/*
 * perf 6.1's text of a side-band record (COMM, FORK/EXIT, MMAP/MMAP2, SWITCH, LOST,
 * KSYMBOL, BPF_EVENT; other types by name), shared by report -D and script's
 * --show-*-events.
 */
#ifndef TALLY_CLI_RECORD_TEXT_H
#define TALLY_CLI_RECORD_TEXT_H

#include <stdio.h>

#include <linux/perf_event.h>

/* "PERF_RECORD_NAME" and its fields, as perf_event__fprintf, and a newline. */
void record_text(FILE *fp, const struct perf_event_header *hdr);

#endif
