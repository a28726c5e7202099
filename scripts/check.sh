#!/usr/bin/env bash
# The whole suite: once on the normal build, once under ASan+UBSan, then one total line.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
totals=$(mktemp)
trap 'rm -f "$totals"' EXIT
export TALLY_TOTALS=$totals
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0}
"$top/tests/run.sh" "$1" plain
"$top/tests/run.sh" "$2" asan
for extra in "$top"/tests/extra/*.sh; do
	[ -f "$extra" ] && bash "$extra" "$1" "$2"
done
awk '{p+=$1; f+=$2; s+=$3} END {printf "%d passed, %d failed, %d skipped\n", p, f, s; exit (f>0)}' "$totals"
