# Helpers for CLI tests: source it, then call ok/fail/skip with a test name.
# Every test script prints "ok - NAME", "not ok - NAME" or "skip - NAME (reason)".
# $TALLY is the binary under test, $TALLY_TOP the source tree, $TALLY_BUILD the build.
set -u
: "${TALLY:?run through tests/run.sh or set TALLY}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tally-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1

ok()   { echo "ok - $*"; }
fail() { echo "not ok - $*"; }
skip() { echo "skip - $*"; }
# check NAME CMD...: ok if CMD succeeds.
check() { local n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }
have_perf() { command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1; }
# Under ASan builds, tests that time things or run perf-heavy comparisons may skip.
asan_build() { [ -f "$TALLY_BUILD/.asan" ]; }
