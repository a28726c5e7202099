/*
 * libtally: the user side of the Linux performance-counter subsystem.
 *
 * Include this umbrella header to get the whole public API. Conventions shared by
 * every module:
 *   - functions return 0 (or a count) on success and -errno on failure;
 *   - constructors return the object through an out-parameter;
 *   - every tally_X__delete(NULL) is a no-op; __delete frees what __new made, __exit
 *     empties what the caller holds in place (after __init or a fill);
 *   - the library never prints, exits or aborts; errors are for the caller to show.
 */
#ifndef TALLY_TALLY_H
#define TALLY_TALLY_H

#include <tally/api.h>

#define TALLY_VERSION_MAJOR 0
#define TALLY_VERSION_MINOR 1
#define TALLY_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version string, e.g. "0.1.0". */
TALLY_API const char *tally_version(void);

#ifdef __cplusplus
}
#endif

#include <tally/cpumap.h>
#include <tally/counter.h>
#include <tally/topology.h>
#include <tally/format.h>
#include <tally/record.h>
#include <tally/data.h>
#include <tally/session.h>
#include <tally/buildid.h>
#include <tally/buildid-cache.h>
#include <tally/perfconfig.h>
#include <tally/jitdump.h>
#include <tally/callchain.h>
#include <tally/hist.h>
#include <tally/sample-memo.h>
#include <tally/stat.h>
#include <tally/ring.h>
#include <tally/sampler.h>
#include <tally/writer.h>
#include <tally/synth.h>
#include <tally/selfmon.h>
#include <tally/event.h>
#include <tally/tracefs.h>
#include <tally/pmu.h>
#include <tally/disasm.h>
#include <tally/srcline.h>
#include <tally/listing.h>
#include <tally/annotate.h>
#include <tally/diff.h>
#include <tally/flame.h>
#include <tally/convert.h>

#endif
