#!/usr/bin/env bash
# Start-up cost of counting: `tally stat -e task-clock true` against
# `perf stat -e task-clock true`, interleaved in one run, median wall time of N runs
# each (default 21); and the same tally linked with the static archive instead of
# libtally.so (bench/tally-static, built here on demand), to say what the shared
# library costs at start-up. Prints a Markdown section for bench/RESULTS.md.
# Usage: bench/stat.sh BUILD_DIR
set -u
B=$(cd "${1:-build}" && pwd)
T="$B/tally"
N=${STAT_BENCH_RUNS:-21}
if [ ! -x "$T" ]; then
	echo "stat bench: $T not built" >&2
	exit 1
fi
if ! command -v perf >/dev/null 2>&1; then
	echo "## tally stat start-up (bench/stat.sh)"
	echo
	echo "perf is absent: no comparison."
	exit 0
fi
# One timed run in microseconds, including fork/exec of the tool. $EPOCHREALTIME
# (bash 5) costs no process, so nothing but the tool is inside the measurement.
run_us() {
	local t0 t1
	t0=${EPOCHREALTIME/[.,]/}
	"$@" >/dev/null 2>&1
	t1=${EPOCHREALTIME/[.,]/}
	echo $(( t1 - t0 ))
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
S="$B/bench/tally-static"
ninja -C "$B" bench/tally-static >/dev/null 2>&1 || S=
tf=$(mktemp); pf=$(mktemp); sf=$(mktemp)
trap 'rm -f "$tf" "$pf" "$sf"' EXIT
# warm-up: page cache, dynamic linker
run_us "$T" stat -e task-clock true >/dev/null
run_us perf stat -e task-clock true >/dev/null
[ -n "$S" ] && run_us "$S" stat -e task-clock true >/dev/null
for _ in $(seq "$N"); do
	run_us "$T" stat -e task-clock true >>"$tf"
	run_us perf stat -e task-clock true >>"$pf"
	[ -n "$S" ] && run_us "$S" stat -e task-clock true >>"$sf"
done
tm=$(median <"$tf"); pm=$(median <"$pf")
ratio=$(awk -v t="$tm" -v p="$pm" 'BEGIN {printf "%.2f", t / p}')
echo "## tally stat start-up (bench/stat.sh)"
echo
echo "\`stat -e task-clock true\`: wall time of the whole command (fork, open, count,"
echo "print), median of $N interleaved runs each. Target: tally at most 0.5 x perf."
echo
echo "| tool | median wall time (us) |"
echo "|------|----------------------:|"
echo "| tally | $tm |"
echo "| perf | $pm |"
[ -n "$S" ] && echo "| tally, static archive (no libtally.so) | $(median <"$sf") |"
echo
echo "Ratio tally/perf: **$ratio** ($(awk -v r="$ratio" 'BEGIN {print (r <= 0.5) ? "meets" : "misses"}') the 0.5 target)."
if [ -n "$S" ]; then
	sm=$(median <"$sf")
	echo
	echo "build/tally links libtally.so: loading it costs $(awk -v t="$tm" -v s="$sm" \
		'BEGIN {d = t - s; printf "%+d us (%+.1f%%)", d, 100 * d / s}') against the same"
	echo "command linked with the static archive (bench/tally-static)."
fi
