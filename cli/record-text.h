/*
 * perf 6.1's text of a side-band record (COMM, FORK/EXIT, MMAP/MMAP2, SWITCH, LOST,
 * KSYMBOL, BPF_EVENT, NAMESPACES, CGROUP, TEXT_POKE; other types by name), shared by report -D and script's
 * --show-*-events.
 */
#ifndef TALLY_CLI_RECORD_TEXT_H
#define TALLY_CLI_RECORD_TEXT_H

#include <stdio.h>

#include <linux/perf_event.h>

struct tally_session;

/* "PERF_RECORD_NAME" and its fields, as perf_event__fprintf, and a newline. */
void record_text(FILE *fp, const struct perf_event_header *hdr);
/* The same, with the kernel symbol of a TEXT_POKE's address looked up in s (NULL: not
 * named). */
void record_text_in(FILE *fp, const struct perf_event_header *hdr, struct tally_session *s);

#endif
