#!/usr/bin/env bash
# tally top against perf top: CPU time (user + system) each spends watching the same
# load (the hot workload) system-wide for the same interval, same refresh (-d 1) and
# the same default sampling (4000 Hz, cpu-clock where there is no PMU). Runs alternate
# tally, perf, tally, perf ... and the Markdown section shows every pair and the
# median ratio. The goal: tally's CPU time at most half of perf's. Each run includes
# start-up (both read /proc/kallsyms and the symbols of what runs), so short intervals
# weigh start-up more; 10 s is a short look at a busy machine.
# Usage: bench/top.sh BUILD_DIR [RUNS] [SECONDS]   (defaults: 5 runs of 10 s)
set -u
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-5}
SECS=${3:-10}
TALLY=$B/tally
HOT=$B/workloads/hot

echo "## top (bench/top.sh)"
echo
if ! command -v perf >/dev/null 2>&1; then
	echo "perf is absent: nothing to compare against."
	exit 0
fi
W=$(mktemp -d)
# stdin for both: a FIFO opened read-write never has data and never ends, so perf top's
# key reader waits quietly (at EOF it would spin through its key menu).
mkfifo "$W/keys"
"$HOT" $(((SECS + 1) * RUNS * 2 + 5)) & HP=$!
trap 'kill $HP 2>/dev/null; rm -rf "$W"' EXIT
sleep 0.5

# cpu CMD...: user+system seconds of CMD run for SECS seconds, ended by SIGINT.
cpu() {
	/usr/bin/time -f '%U %S' -o "$W/t" timeout -s INT "$SECS" "$@" \
		<>"$W/keys" >/dev/null 2>"$W/err"
	# time notes timeout's status 124 on a line of its own: the figures are the last
	tail -1 "$W/t" | awk 'NF == 2 { printf "%.2f\n", $1 + $2 }'

}

echo "System-wide, $SECS s per run, -d 1, hot workload running; CPU = user + system time of"
echo "the profiler (and its threads), from /usr/bin/time. Median of $RUNS alternating pairs."
echo
echo "| run | perf top CPU s | tally top CPU s | tally / perf |"
echo "|---:|---:|---:|---:|"
ratios=()
for i in $(seq "$RUNS"); do
	t=$(cpu "$TALLY" top --stdio -d 1)
	if [ -z "$t" ]; then echo "| $i | | tally top failed: $(head -1 "$W/err") | |"; continue; fi
	p=$(cpu perf top --stdio -d 1)
	if [ -z "$p" ]; then echo "| $i | perf top failed: $(head -1 "$W/err") | | |"; continue; fi
	r=$(awk -v t="$t" -v p="$p" 'BEGIN { if (p > 0) printf "%.3f", t / p; else print "n/a" }')
	ratios+=("$r")
	echo "| $i | $p | $t | $r |"
done
echo
if [ ${#ratios[@]} -eq 0 ]; then
	echo "No complete pair: no result."
	exit 1
fi
med=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
verdict=$(awk -v m="$med" 'BEGIN { print (m <= 0.5 ? "meets" : "misses") }')
echo "Median tally / perf CPU time: **$med** ($verdict the goal of at most 0.5)."
