#!/usr/bin/env bash
# tally report / tally script against perf report / perf script on the same files, in one
# run: a ~200k-sample single-process -g file and a system-wide -a -g file with many dsos
# and kernel samples, both recorded by perf. Prints a Markdown section: median wall time
# of N runs, the speedup (perf / tally) and peak RSS of each side.
# Usage: bench/report.sh BUILD_DIR [RUNS]
set -u
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-7}
TALLY=$B/tally
HOT=$B/workloads/hot

echo "## report and script (bench/report.sh)"
echo
if ! command -v perf >/dev/null 2>&1; then
	echo "perf is absent: nothing to compare against."
	exit 0
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# 1. single process, call graphs: cpu-clock every 50 us for 16 s = ~200k samples
perf record -q -e cpu-clock -c 50000 -g -o "$W/proc.data" "$HOT" 16 >/dev/null 2>&1
# 2. system-wide with call graphs while a mix of programs runs (many dsos, kernel time)
perf record -q -a -g -e cpu-clock -c 250000 -o "$W/sys.data" -- sh -c '
	for i in 1 2 3; do
		find /usr/lib -name "*.so*" >/dev/null 2>&1
		python3 -c "import json, zlib; [zlib.compress(json.dumps(list(range(20000))).encode()) for _ in range(40)]" 2>/dev/null
		gzip -c /usr/bin/perf >/dev/null 2>&1
		ls -lR /usr/share >/dev/null 2>&1
		perl -e "my \$s = 0; \$s += \$_ for 1..2000000" 2>/dev/null
	done' >/dev/null 2>&1

nsamples() { perf report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}'; }

. "$(dirname "$0")/lib.sh"

echo "Median of $RUNS runs, perf's and tally's alternating, output to /dev/null. Wall seconds, CPU seconds (user+sys, less"
echo "sensitive to a busy machine), peak RSS in KiB."
echo
echo "| file | samples | command | perf wall | tally wall | speedup | perf CPU | tally CPU | CPU speedup | perf RSS | tally RSS | RSS ratio |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
fail=0
for f in proc sys; do
	d=$W/$f.data
	[ -s "$d" ] || { echo "| $f | recording failed | | | | | | | | | | |"; fail=1; continue; }
	n=$(nsamples "$d")
	for c in report script; do
		if [ $c = report ]; then
			pa=(perf report --stdio -i "$d"); ta=("$TALLY" report --stdio -i "$d")
		else
			pa=(perf script -i "$d"); ta=("$TALLY" script -i "$d")
		fi
		read -r pt pc pm tt tc tm < <(pair)
		rr=$(awk -v p="$pm" -v t="$tm" 'BEGIN { if (p > 0) printf "%.2f", t / p; else print "-" }')
		echo "| $f | $n | $c --stdio | $pt | $tt | $(ratio "$pt" "$tt") | $pc | $tc | $(ratio "$pc" "$tc") | $pm | $tm | $rr |" |
			sed 's/script --stdio/script/'
	done
done
echo
echo "Targets: speedup >= 5x (aim 10x), tally RSS <= 0.5 x perf RSS."
exit $fail
