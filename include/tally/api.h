/*
 * TALLY_API marks a declaration as part of libtally's public interface. The library is
 * compiled with -fvisibility=hidden, so a function is exported only when its public
 * declaration carries this mark; lib/libtally.map then names each exported symbol (the
 * ABI version node) and tests/cli/test-exports.sh checks that the headers, the map and
 * `nm -D libtally.so` agree. Every public header includes this one.
 */
#ifndef TALLY_API_H
#define TALLY_API_H

#if defined(__GNUC__) || defined(__clang__)
#define TALLY_API __attribute__((visibility("default")))
#else
#define TALLY_API
#endif

#endif
