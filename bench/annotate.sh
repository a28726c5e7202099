#!/usr/bin/env bash
# tally annotate / tally diff against perf annotate --stdio / perf diff on the same files,
# in one run: a recording of a mix of programs (the hot workload, ls, gzip, find, perl:
# libc and ld.so functions with their debuginfo, kernel samples) made by perf. perf
# annotate runs objdump for every function; tally disassembles with capstone in process.
# Prints a Markdown section: median wall time of N runs, the speedup (perf / tally) and
# peak RSS of each side. Usage: bench/annotate.sh BUILD_DIR [RUNS]
set -u
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-5}
TALLY=$B/tally
HOT=$B/workloads/hot

echo "## annotate and diff (bench/annotate.sh)"
echo
if ! command -v perf >/dev/null 2>&1 || ! command -v objdump >/dev/null 2>&1; then
	echo "perf (or the objdump it runs) is absent: nothing to compare against."
	exit 0
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"

mix() {
	perf record -q -e cpu-clock -c 100000 -o "$1" -- sh -c "
		$HOT $2
		ls -lR /usr/share >/dev/null 2>&1
		gzip -c /usr/bin/perf >/dev/null 2>&1
		find /usr/lib -name '*.so*' >/dev/null 2>&1
		perl -e 'my \$s = 0; \$s += \$_ for 1..1000000' 2>/dev/null" >/dev/null 2>&1
}
mix "$W/old.data" 1
mix "$W/new.data" 2

nsamples() { perf report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}'; }

echo "Median of $RUNS runs, perf's and tally's alternating, output to /dev/null. Wall seconds, CPU seconds (user+sys),"
echo "peak RSS in KiB. Functions: how many perf annotate lists (kernel ones it cannot: no vmlinux here)."
echo
echo "| command | samples | functions | perf wall | tally wall | speedup | perf CPU | tally CPU | CPU speedup | perf RSS | tally RSS |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
fail=0
for d in "$W/old.data" "$W/new.data"; do
	[ -s "$d" ] || { echo "| recording failed | | | | | | | | | | |"; exit 1; }
done
n=$(nsamples "$W/new.data")
nf=$(perf annotate --stdio -i "$W/new.data" 2>/dev/null | grep -c 'Source code & Disassembly')
pa=(perf annotate --stdio -i "$W/new.data"); ta=("$TALLY" annotate --stdio -i "$W/new.data")
read -r pt pc pm tt tc tm < <(pair)
echo "| annotate --stdio | $n | $nf | $pt | $tt | $(ratio "$pt" "$tt") | $pc | $tc | $(ratio "$pc" "$tc") | $pm | $tm |"
awk -v p="$pt" -v t="$tt" 'BEGIN { exit !(t > 0 && p / t >= 10) }' || fail=1
pa=(perf diff "$W/old.data" "$W/new.data"); ta=("$TALLY" diff "$W/old.data" "$W/new.data")
read -r pt pc pm tt tc tm < <(pair)
echo "| diff (2 files) | $n | | $pt | $tt | $(ratio "$pt" "$tt") | $pc | $tc | $(ratio "$pc" "$tc") | $pm | $tm |"
echo
echo "Target: annotate speedup >= 10x."
exit $fail
