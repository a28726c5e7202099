#!/usr/bin/env bash
# tally report / tally script against perf report / perf script on every file of the
# bench corpus (bench/corpus.sh: perf 6.1 recordings the way users make them: a small
# and a large -g profile of one process, C++ in libstdc++, system-wide -a -g, a million
# samples, --call-graph dwarf). Prints a Markdown section: per file and command, the
# median wall time and CPU time of RUNS alternating runs, the speedup (perf / tally), the
# peak RSS of each side and their ratio, and the floor no reader can go under: the time
# to read the file once (cat FILE > /dev/null, page cache warm). tally's timed runs find
# the symbol table caches its first report of the file made (docs/report.md); that first
# report is timed on its own too, with an empty build-id cache (1st run).
# Usage: bench/report.sh BUILD_DIR [RUNS]   (files whose perf run takes over 15 s: 3 runs)
set -u
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-5}
TALLY=$B/tally
here=$(cd "$(dirname "$0")" && pwd)

echo "## report and script (bench/report.sh)"
echo
if ! command -v perf >/dev/null 2>&1; then
	echo "perf is absent: nothing to compare against."
	exit 0
fi
C=$(bash "$here/corpus.sh" "$B") || { echo "bench corpus: cannot make it"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
. "$here/lib.sh"

nsamples() { "$TALLY" report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}'; }

echo "Corpus: bench/corpus.sh (recorded once by perf $(perf --version | awk '{print $3}'), cached in the build directory)."
echo "Median of $RUNS runs (3 for a file whose perf run takes over 15 s), perf's and tally's alternating,"
echo "output to /dev/null. Wall and CPU (user+sys) seconds, peak RSS in KiB. Floor: wall seconds to"
echo "read the file once (cat, page cache warm), the least any reader of it takes. 1st run: tally's"
echo "wall seconds with an empty build-id cache (no symbol table caches yet, kallsyms from /proc)."
echo
echo "| file | samples | MB | command | perf wall | tally wall | speedup | perf CPU | tally CPU | CPU speedup | perf RSS | tally RSS | RSS ratio | floor | tally 1st run |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
fail=0
: >"$W/summary"
for f in small large cxx sys million dwarf; do
	d=$C/$f.data
	[ -s "$d" ] || { echo "| $f | not recorded (see $C/$f.log) | | | | | | | | | | | | | |"; fail=1; continue; }
	n=$(nsamples "$d")
	mb=$(awk -v b="$(stat -c %s "$d")" 'BEGIN { printf "%.1f", b / 1048576 }')
	# the floor: reading the file, median of RUNS
	: >"$W/cat.runs"
	for _ in $(seq "$RUNS"); do one cat "$d" >>"$W/cat.runs"; done
	floor=$(median_of "$W/cat.runs" 1)
	for c in report script; do
		if [ $c = report ]; then
			pa=(perf report --stdio -i "$d"); ta=("$TALLY" report --stdio -i "$d")
		else
			pa=(perf script -i "$d"); ta=("$TALLY" script -i "$d")
		fi
		runs=$RUNS
		rm -rf "$W/cold" && mkdir "$W/cold"
		read -r first _ _ < <(PERF_BUILDID_DIR=$W/cold one "${ta[@]}")
		one "${ta[@]}" >/dev/null	# the caches of the user's own build-id cache
		read -r w _ _ < <(one "${pa[@]}")
		awk -v w="$w" 'BEGIN { exit !(w > 15) }' && runs=3
		read -r pt pc pm tt tc tm < <(RUNS=$runs pair)
		rr=$(awk -v p="$pm" -v t="$tm" 'BEGIN { if (p > 0) printf "%.2f", t / p; else print "-" }')
		[ $c = report ] && c="report --stdio"
		echo "| $f | $n | $mb | $c | $pt | $tt | $(ratio "$pt" "$tt") | $pc | $tc | $(ratio "$pc" "$tc") | $pm | $tm | $rr | $floor | $first |"
		echo "$f|$c|$(ratio "$pt" "$tt")|$rr|$tt|$floor" >>"$W/summary"
	done
done
echo
echo "Targets: speedup >= 10x and RSS ratio <= 0.25 on every file."
if [ -s "$C/empty.data" ]; then
	# start-up: a file with headers and no sample (both print an error and exit)
	pa=(perf report --stdio -i "$C/empty.data"); ta=("$TALLY" report --stdio -i "$C/empty.data")
	read -r pt _ pm tt _ tm < <(pair)
	echo
	echo "Start-up: \`report --stdio\` of a file without samples (bench/corpus.sh's empty.data): tally"
	echo "$(awk -v t="$tt" 'BEGIN { printf "%.1f", t * 1000 }') ms and $tm KiB, perf $(awk -v t="$pt" 'BEGIN { printf "%.1f", t * 1000 }') ms and $pm KiB (wall, peak RSS; median of $RUNS)."
fi
if [ -s "$C/dwarf.data" ]; then
	# perf report resolves inlined frames through addr2line processes it starts; the
	# CPU column (rusage) misses the ones it does not wait for: perf stat counts them
	cpu_tree() { perf stat -x, -e task-clock -o "$W/stat" -- "$@" >/dev/null 2>&1; awk -F, '/task-clock/ { printf "%.2f", $1 / 1000 }' "$W/stat"; }
	echo
	echo "On the dwarf file perf report and script start addr2line processes for inlined frames;"
	echo "the CPU columns miss those perf does not wait for. CPU of the whole process tree"
	echo "(perf stat's task-clock, one run each): perf report --stdio $(cpu_tree perf report --stdio -i "$C/dwarf.data") s,"
	echo "tally $(cpu_tree "$TALLY" report --stdio -i "$C/dwarf.data") s; perf script $(cpu_tree perf script -i "$C/dwarf.data") s,"
	echo "tally $(cpu_tree "$TALLY" script -i "$C/dwarf.data") s."
fi
echo
# the worst file of each measure, for the README
sort -t'|' -k3 -g "$W/summary" | head -1 |
	awk -F'|' '{ printf "Slowest against perf: %s, %s: %s (tally %s s, reading the file alone %s s).\n", $1, $2, $3, $5, $6 }'
echo
sort -t'|' -k4 -gr "$W/summary" | head -1 |
	awk -F'|' '{ printf "Largest RSS against perf: %s, %s: %s of perf'"'"'s.\n", $1, $2, $4 }'
exit $fail
