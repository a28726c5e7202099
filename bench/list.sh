#!/usr/bin/env bash
# tally list vs perf list: wall time of the full listing and of a glob ('sched:*'),
# alternating runs in one session, median of LIST_RUNS (default 9). Output goes to
# /dev/null (perf list also prints metrics, which tally does not have: its full
# listing does more work). Prints a Markdown section for bench/RESULTS.md.
# Usage: bench/list.sh BUILD_DIR
set -u
B=$(cd "${1:-build}" && pwd)
TALLY=$B/tally
RUNS=${LIST_RUNS:-9}
[ -x "$TALLY" ] || { echo "list.sh: $TALLY not built" >&2; exit 1; }
if ! command -v perf >/dev/null 2>&1; then
	echo "## tally list vs perf list"
	echo
	echo "perf is not installed: nothing to compare."
	exit 0
fi

# ms TOOL ARGS...: wall milliseconds of one run
ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000 ))
}
median() { sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) / 1000 }'; }

row() {
	local label=$1; shift
	local t=() p=()
	for _ in $(seq "$RUNS"); do
		t+=("$(ms "$TALLY" list "$@")")
		p+=("$(ms perf list "$@")")
	done
	local tm pm
	tm=$(printf '%s\n' "${t[@]}" | median)
	pm=$(printf '%s\n' "${p[@]}" | median)
	echo "| $label | $tm | $pm | $(awk -v a="$pm" -v b="$tm" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') |"
}

echo "## tally list vs perf list (bench/list.sh)"
echo
echo "Wall time in ms, median of $RUNS alternating runs, output to /dev/null."
echo "Tracepoints: $("$TALLY" list --raw-dump tracepoint | wc -w)."
echo
echo "| listing | tally ms | perf ms | perf / tally |"
echo "|---|---|---|---|"
row "full list"
row "'sched:*'" 'sched:*'
row "sw" sw
