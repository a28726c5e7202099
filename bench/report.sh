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

# one CMD...: prints "wall_s cpu_s maxrss_kb" for one run (output discarded); the wall
# clock in ns (tally's runs take tens of ms: /usr/bin/time's 10 ms steps are too coarse)
one() {
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$W/t" "$@" >/dev/null 2>/dev/null
	t1=$(date +%s%N)
	awk -v ns=$((t1 - t0)) '{printf "%.3f %.2f %s\n", ns / 1e9, $1 + $2, $3}' "$W/t"
}
# median of a column: median FILE COLUMN
median_of() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# RUNS alternating runs of perf's command (array pa) and tally's (array ta), so both see
# the same machine; prints "perf_wall perf_cpu perf_rss tally_wall tally_cpu tally_rss"
# (medians, each column on its own)
pair() {
	: >"$W/p.runs"
	: >"$W/t.runs"
	for _ in $(seq "$RUNS"); do
		one "${pa[@]}" >>"$W/p.runs"
		one "${ta[@]}" >>"$W/t.runs"
	done
	for f in p t; do
		for c in 1 2 3; do median_of "$W/$f.runs" $c; done
	done | paste -sd' '
}
ratio() { awk -v p="$1" -v t="$2" 'BEGIN { if (t > 0) printf "%.1fx", p / t; else print "inf" }'; }

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
