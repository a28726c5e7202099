/*
 * perf's configuration files, read the way perf 6.1 reads them, so that settings a perf
 * user made (`perf config buildid.dir=...`, `record.build-id = no-cache`) hold for tally
 * too.
 *
 * The files: $PERF_CONFIG alone when it is set; otherwise /etc/perfconfig (unless
 * $PERF_CONFIG_NOSYSTEM is true) and then ~/.perfconfig (unless $PERF_CONFIG_NOGLOBAL
 * is true; ignored when another user owns it, as perf does), a later setting winning.
 * The syntax is git's: "[section]" or "[section "sub"]" headers, "name = value" lines,
 * '#' and ';' comments, double quotes and backslash escapes in values. Reading a file
 * stops at its first line that does not parse (perf says "bad config file line N").
 */
#ifndef TALLY_PERFCONFIG_H
#define TALLY_PERFCONFIG_H

#include <tally/api.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The value of KEY ("section.name", or "section.sub.name"; compared without regard to
 * case) into BUF (LEN bytes). A name without "= value" reads as "true". 0, -ENOENT (not
 * set anywhere), -ENAMETOOLONG (BUF too small). */
TALLY_API int tally_perf_config_get(const char *key, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
