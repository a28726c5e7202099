#!/bin/sh
# Re-record the binary test inputs with perf 6.1 (and tally) and regenerate what the
# tests compare them with. Run from the project root after `make`:
#
#     tests/data/regen.sh [BUILD]
#
# Writes
#   tests/data/perf/*.data          fixtures read by test-data, test-session, test-report,
#                                   test-script, test-evlist (described in its README)
#   tests/data/perf/COUNTS          "FILE SAMPLES MMAP2 COMM" from `perf report -D`
#   tests/data/perf/symfs/          the workload they ran, at the path they name
#   tests/data/report/*.comm-dso    perf report --sort comm,dso on each fixture
#   tests/fuzz/corpus/data/*.data, tests/fuzz/corpus/data-pipe/*.data
#                                   fuzz seeds and the inputs of damage.py
# The outputs are checked in; the tests never re-record them.
set -eu
build=${1:-build}
top=$(pwd)
tally=$top/$build/tally
[ -x "$top/$build/workloads/hot" ] && [ -x "$tally" ] || { echo "regen.sh: build first (make)" >&2; exit 1; }
command -v perf >/dev/null || { echo "regen.sh: needs perf 6.1 (apt install linux-perf)" >&2; exit 1; }

fix=$top/tests/data/perf
exp=$top/tests/data/report
seeds=$top/tests/fuzz/corpus
mkdir -p "$fix" "$exp" "$seeds/data" "$seeds/data-pipe"
work=$(mktemp -d)
# The workload runs from a fixed path, and that binary ships beside the fixtures
# (tests/data/perf/symfs/tmp/tally-fixture/hot) so that reports on them resolve its
# symbols on any machine with --symfs tests/data/perf/symfs, without the build tree or
# a ~/.debug cache. Debug info is left out; the symbol table and .eh_frame stay.
hotdir=/tmp/tally-fixture
hot=$hotdir/hot
mkdir -p "$hotdir"
objcopy --strip-debug "$top/$build/workloads/hot" "$hot"
trap 'rm -rf "$work" "$hotdir"' EXIT
cd "$work"

rec() { perf record -q -N "$@" 2>/dev/null; }
rec -F 1000 -o plain.data "$hot" 0.1
rec -F 1000 -g -o callchain.data "$hot" 0.1
rec -F 1000 -z -o zstd.data "$hot" 0.1
perf record -q -N -F 1000 -o - "$hot" 0.1 >pipe.data 2>/dev/null
rec -F 1000 -e cpu-clock -e task-clock -e sched:sched_switch -o multi.data "$hot" 0.1
rec -F 1000 -e '{cpu-clock,task-clock}' -o group.data "$hot" 0.1
rec -F 200 --call-graph dwarf,1024 -o dwarf.data "$hot" 0.1
rec -F 1000 -a -g -o system.data sleep 0.1

: >COUNTS
for f in plain callchain zstd pipe multi group dwarf system; do
	chmod 644 $f.data
	cp $f.data "$fix/"
	perf report -D -i $f.data 2>/dev/null >dump
	s=$(grep -c 'PERF_RECORD_SAMPLE' dump || true)
	m=$(grep -c 'PERF_RECORD_MMAP2' dump || true)
	c=$(grep -c 'PERF_RECORD_COMM' dump || true)
	echo "$f.data $s $m $c" >>COUNTS
	[ $f = dwarf ] && continue
	perf report --stdio --no-children -g none --sort comm,dso -q -i $f.data \
		>"$exp/$f.comm-dso" 2>/dev/null
done
cp COUNTS "$fix/COUNTS"
rm -rf "$fix/symfs"
mkdir -p "$fix/symfs$hotdir"
cp "$hot" "$fix/symfs$hot"

# Fuzz seeds / damage.py inputs: small files in each layout, from perf and from tally.
rec -F 500 -e task-clock -g -o "$seeds/data/perf61-task-clock-g.data" "$hot" 0.05
rec -F 500 -z -o "$seeds/data/perf61-zstd.data" "$hot" 0.05
rec -F 500 -e cpu-clock -e task-clock -o "$seeds/data/perf61-two-events.data" "$hot" 0.05
perf record -q -N -F 500 -o - "$hot" 0.05 >"$seeds/data-pipe/perf61-pipe.data" 2>/dev/null
"$tally" record -q -F 500 -e task-clock -g -o "$seeds/data/tally-task-clock-g.data" "$hot" 0.05 2>/dev/null
"$tally" record -q -F 500 -z -o "$seeds/data/tally-zstd.data" "$hot" 0.05 2>/dev/null
"$tally" record -q -F 500 -o - "$hot" 0.05 >"$seeds/data-pipe/tally-pipe.data" 2>/dev/null
chmod 644 "$seeds"/data/*.data "$seeds"/data-pipe/*.data
cat "$fix/COUNTS"
