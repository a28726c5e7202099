/*
 * Reader internals shared with other library files.
 */
#ifndef TALLY_INTERNAL_DATA_H
#define TALLY_INTERNAL_DATA_H

#include <linux/perf_event.h>

/* perf's name for an event without EVENT_DESC ("cpu-clock", "cycles:u"); malloc'd. */
char *tly_event_name(const struct perf_event_attr *a);

#endif
