#!/usr/bin/env bash
# make run: the main job on the bundled demo workload, build/workloads/hot (a CPU burner
# that spends 75% of its time in hot_a and 25% in hot_b, through a shared `spin` loop).
# Shows: what the machine can count, counting the workload, recording it with call
# chains, and reading the recording back (report, script, evlist). Files go to a
# temporary directory that is removed at the end.
set -eu
B=$(cd "${1:-build}" && pwd)
T=$B/tally
HOT=$B/workloads/hot
work=$(mktemp -d "${TMPDIR:-/tmp}/tally-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

step() { printf '\n== %s ==\n' "$*"; }

step "tally list sw (software events this machine can count; 'tally list' shows all)"
"$T" list sw

step "tally stat -- hot 0.5 (perf stat's default set; hardware events are <not supported> without a PMU)"
"$T" stat -- "$HOT" 0.5

step "tally stat -e task-clock,page-faults,context-switches -x, -r 3 -- hot 0.1 (CSV, 3 runs)"
"$T" stat -e task-clock,page-faults,context-switches -x, -r 3 -- "$HOT" 0.1

step "tally record -g -F 2000 -o demo.data -- hot 0.5"
"$T" record -g -F 2000 -o "$work/demo.data" -- "$HOT" 0.5

step "tally report --stdio --no-children --sort comm,dso,sym (the time is in spin, called from hot_a and hot_b)"
"$T" report --stdio --no-children -g none --sort comm,dso,sym -i "$work/demo.data" | head -30

step "tally report --stdio -g caller (callers: hot_a ~75%, hot_b ~25%)"
"$T" report --stdio --no-children -g caller --percent-limit 20 -i "$work/demo.data" | sed -n '/^#/!p' | head -30

step "tally script | head (perf script's format; pipe it into stackcollapse-perf.pl)"
"$T" script -i "$work/demo.data" | head -12

step "tally evlist -v"
"$T" evlist -v -i "$work/demo.data"

if command -v perf >/dev/null 2>&1; then
	step "perf 6.1 reads tally's file: perf report --stdio --sort sym"
	perf report --stdio --no-children -g none --sort sym -q -i "$work/demo.data" 2>/dev/null | head -8
fi
