#!/usr/bin/env bash
# The bench corpus: perf.data files recorded by perf 6.1 the way users record them, for
# bench/report.sh to time tally report/script against perf on. Nothing multi-MB is
# checked in: the files are made here, once, into a directory that later runs reuse
# (delete it, or change CORPUS_VERSION, to record afresh).
#
#   small    perf record -g, one process (Python), ~7k samples at perf's default 4 kHz
#   cxx      perf record -g, C++ in libstdc++ (std::sort, std::map, std::ostringstream)
#   large    perf record -g -c 50000 (20 kHz), the C++ program for 15 s: ~300k samples
#   sys      perf record -a -g while gcc, g++, python and ls -lR run
#   million  perf record -g -c 20000 (50 kHz), the C++ program for 22 s: 1M+ samples
#
# large and million profile the C++ program, not the Python one: perf report -g on
# 300k samples of work.py took 74 s and 11.8 GB of memory here (tally: 2.3 s, 125 MB),
# and a million of them would not fit in this machine's memory at all.
#   dwarf    perf record --call-graph dwarf, the C++ program (8 KiB of stack per sample)
#   empty    perf record of true at a period it never reaches: headers, no samples
#            (what start-up costs)
#
# Usage: bench/corpus.sh BUILD_DIR [DIR]  (default DIR: BUILD_DIR/bench-corpus); prints
# DIR on stdout once every file is there. Needs perf, g++ and /usr/bin/python3; a file
# whose recording fails is left out (report.sh says so).
set -u
B=$(cd "${1:-build}" && pwd)
C=${2:-$B/bench-corpus}
here=$(cd "$(dirname "$0")" && pwd)
CORPUS_VERSION=3
PY=/usr/bin/python3

mkdir -p "$C" || exit 1
if [ "$(cat "$C/VERSION" 2>/dev/null)" != "$CORPUS_VERSION" ]; then
	rm -f "$C"/*.data "$C"/*.log
	echo "$CORPUS_VERSION" >"$C/VERSION"
fi

# rec NAME PERF-RECORD-ARGS... -- CMD...: records NAME.data unless it is there
rec() {
	local name=$1
	shift
	[ -s "$C/$name.data" ] && return 0
	echo "corpus: recording $name.data" >&2
	if ! perf record -q -o "$C/$name.tmp" "$@" >"$C/$name.log" 2>&1 || [ ! -s "$C/$name.tmp" ]; then
		echo "corpus: recording $name.data failed (see $C/$name.log)" >&2
		rm -f "$C/$name.tmp"
		return 1
	fi
	mv "$C/$name.tmp" "$C/$name.data"
}

if [ ! -x "$C/stl" ] || [ "$here/stl.cpp" -nt "$C/stl" ]; then
	g++ -O2 -g -fno-omit-frame-pointer -o "$C/stl" "$here/stl.cpp" >&2 || echo "corpus: g++ cannot build stl.cpp" >&2
fi

rec small -g -- "$PY" "$here/work.py" 1.8
[ -x "$C/stl" ] && rec cxx -g -- "$C/stl" 4
[ -x "$C/stl" ] && rec large -e cpu-clock -c 50000 -g -- "$C/stl" 15
# system-wide: a compiler (gcc's driver, cc1, as, ld; g++'s cc1plus), Python and a
# directory walk, each a few times, while everything else on the machine runs too
rec sys -a -g -- sh -c "
	cd '$C' && for i in 1 2; do
		gcc -O2 -g -c -o /dev/null '$here/read-cost.c' -I'$here/../include' >/dev/null 2>&1
		g++ -O1 -c -o /dev/null '$here/stl.cpp' >/dev/null 2>&1
		'$PY' '$here/work.py' 1 >/dev/null 2>&1
		ls -lR /usr/share /usr/lib >/dev/null 2>&1
	done"
[ -x "$C/stl" ] && rec million -e cpu-clock -c 20000 -g -- "$C/stl" 22
[ -x "$C/stl" ] && rec dwarf --call-graph dwarf -- "$C/stl" 1.5
rec empty -e cpu-clock -c 1000000000 -- true
echo "$C"
