#!/usr/bin/env bash
# valgrind memcheck on a sample of CLI runs (list, stat, record, report, script (also
# unwinding --call-graph dwarf samples), evlist,
# annotate, diff, buildid-list, buildid-cache, archive, inject)
# of the plain build: no invalid reads/writes, no uses of uninitialised values, no
# definite leaks. scripts/check.sh runs it with PLAIN_BUILD ASAN_BUILD after the suites.
# Prints ok/FAIL/skip lines and appends "P F S" to $TALLY_TOTALS. Bounded: each run has a
# 90 s limit; the whole pass takes well under 3 minutes.
set -u
plain=$(cd "${1:?usage: valgrind.sh PLAIN_BUILD [ASAN_BUILD]}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
tally="$plain/tally" hot="$plain/workloads/hot"
pass=0 fail=0 skip=0
ok()  { echo "ok   [valgrind] $*"; pass=$((pass + 1)); }
bad() { echo "FAIL [valgrind] $*"; fail=$((fail + 1)); }
skp() { echo "skip [valgrind] $*"; skip=$((skip + 1)); }
finish() {
	if [ -n "${TALLY_TOTALS:-}" ]; then echo "$pass $fail $skip" >>"$TALLY_TOTALS"; fi
	echo "[valgrind] $pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ]
	exit
}
work=$(mktemp -d "${TMPDIR:-/tmp}/tally-vg.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

if ! command -v valgrind >/dev/null 2>&1; then skp "memcheck (valgrind absent: apt-get install valgrind)"; finish; fi
if [ -f "$plain/.asan" ] || nm "$tally" 2>/dev/null | grep -q __asan_init; then
	skp "memcheck ($plain is a sanitizer build; valgrind needs the plain one)"; finish
fi
have_cmd() { ! "$tally" "$1" -h 2>&1 | grep -q "is not a tally command"; }

# NAME CMD...: run CMD under memcheck; errors (exit 99) or a crash fail the test, and so
# does an exit status other than $want_rc when that is set.
want_rc=""
vg() {
	local name=$1; shift
	timeout 90 valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite --show-leak-kinds=definite \
		--trace-children=no --log-file="$work/vg.log" "$@" >"$work/vg.out" 2>"$work/vg.err"
	local rc=$?
	if [ $rc -eq 99 ] || grep -q 'ERROR SUMMARY: [1-9]\|Invalid \|uninitialised\|definitely lost' "$work/vg.log"; then
		bad "$name: memcheck errors"; grep -E -m12 'Invalid|uninitialised|definitely|  (at|by) ' "$work/vg.log" | sed 's/^/    | /'
	elif [ $rc -eq 124 ]; then
		bad "$name: timed out under valgrind"
	elif [ $rc -ge 128 ]; then
		bad "$name: killed by signal $((rc - 128))"
	elif [ -n "$want_rc" ] && [ "$rc" != "$want_rc" ]; then
		bad "$name: exit $rc, expected $want_rc"; sed 's/^/    | /' "$work/vg.err" | head -5
	else
		ok "$name (exit $rc)"
	fi
}

vg "list" "$tally" list
if have_cmd stat; then
	vg "stat -e task-clock,page-faults" "$tally" stat -e task-clock,page-faults -- "$hot" 0.05
	vg "stat -a (error path or system-wide)" "$tally" stat -a -e task-clock -- true
	vg "stat -x, -r 2" "$tally" stat -x, -r 2 -e task-clock -- true
else
	skp "stat (command not built yet)"
fi
input=""
if have_cmd record; then
	vg "record -g" "$tally" record -q -g -e task-clock -c 1000000 -o vg.data -- "$hot" 0.1
	[ -s vg.data ] && input=vg.data
else
	skp "record (command not built yet)"
fi
# The readers also get perf 6.1's own files (file mode and -z).
for f in "$input" "$top/tests/fuzz/corpus/data/perf61-task-clock-g.data" "$top/tests/fuzz/corpus/data/perf61-zstd.data"; do
	[ -n "$f" ] || continue
	rm -f in.data
	if ! cp "$f" in.data; then bad "input $f is missing"; continue; fi
	for cmd in report script evlist; do
		if ! have_cmd $cmd; then continue; fi
		extra=(); [ $cmd = report ] && extra=(--stdio)
		want_rc=0 vg "$cmd -i $(basename "$f")" "$tally" $cmd -i in.data "${extra[@]}"
	done
done
for cmd in report script evlist; do have_cmd $cmd || skp "$cmd (command not built yet)"; done
# DWARF unwinding (libdw's CFI over copied stacks) in script and report
if have_cmd record && [ -x "$plain/workloads/unwind" ] &&
	"$tally" record -q --call-graph dwarf -e task-clock -c 1000000 -o dw.data -- \
		"$plain/workloads/unwind" 40 >/dev/null 2>&1 && [ -s dw.data ]; then
	want_rc=0 vg "script -i dw.data (--call-graph dwarf)" "$tally" script -i dw.data
	want_rc=0 vg "report -i dw.data (--call-graph dwarf)" "$tally" report -i dw.data --stdio
else
	skp "script/report of a --call-graph dwarf recording (tally record or workloads/unwind failed)"
fi
# annotate (capstone, libdw) and diff on tally's own recording, whose binary is here
if [ -n "$input" ] && have_cmd annotate && have_cmd diff; then
	want_rc=0 vg "annotate -l -i vg.data" "$tally" annotate -l -i "$input"
	want_rc=0 vg "diff -p -F vg.data vg.data" "$tally" diff -p -F "$input" "$input"
fi
# the build-id commands, in a HOME of their own: the cache record filled, the list,
# the archive, inject's rewriting (build-ids, jitted code)
if [ -n "$input" ] && have_cmd inject; then
	HOME=$work/home; export HOME; mkdir -p "$HOME"
	want_rc=0 vg "record (filling the build-id cache)" "$tally" record -q -e task-clock -o bc.data -- "$hot" 0.05
	want_rc=0 vg "buildid-list -H" "$tally" buildid-list -H -i bc.data
	want_rc=0 vg "buildid-cache -a -l" "$tally" buildid-cache -a "$hot" -l
	want_rc=0 vg "archive" "$tally" archive bc.data
	want_rc=0 vg "inject -b" "$tally" inject -b -i bc.data -o bc-inj.data
	if [ -x "$plain/workloads/jitdemo" ]; then
		"$tally" record -q -k monotonic -e task-clock -o jit.data "$plain/workloads/jitdemo" 0.05 "$work" >/dev/null 2>&1
		want_rc=0 vg "inject --jit" "$tally" inject --jit -i jit.data -o jit-inj.data
	fi
fi
# A damaged file: error paths free what they allocated.
if have_cmd report; then
	if head -c 3000 "$top/tests/fuzz/corpus/data/perf61-task-clock-g.data" >cut.data; then
		vg "report -i (cut short)" "$tally" report -i cut.data --stdio
	else
		bad "input perf61-task-clock-g.data is missing"
	fi
fi
finish
