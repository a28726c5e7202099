#!/usr/bin/env bash
# Runs the whole suite against one build directory and prints one line per test:
#   unit tests (cmocka programs build/tests/test-*), counted per test case;
#   CLI tests (tests/cli/*.sh), each reporting ok/not ok/skip lines through lib.sh.
# Usage: tests/run.sh BUILD_DIR [LABEL]. Appends "P F S" totals to $TALLY_TOTALS if set.
set -u
BUILD=$(cd "${1:?build dir}" && pwd)
LABEL=${2:-$(basename "$BUILD")}
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TALLY="$BUILD/tally" TALLY_BUILD="$BUILD" TALLY_TOP="$TOP"
export CMOCKA_MESSAGE_OUTPUT=stdout
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$TOP/tests/lsan.supp:print_suppressions=0}
pass=0 fail=0 skip=0
log=$(mktemp -d "${TMPDIR:-/tmp}/tally-tests.XXXXXX")
trap 'rm -rf "$log"' EXIT

note() { printf '%s\n' "$*"; }

for t in "$BUILD"/tests/test-*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	name=$(basename "$t")
	out="$log/$name.out"
	# an empty HOME of its own (no ~/.debug left by perf or another test), as CLI tests
	mkdir -p "$log/home-$name"
	HOME="$log/home-$name" timeout 300 "$t" >"$out" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$out" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' "$out" | tail -1)
	s=$(grep -c '^\[  SKIPPED \]' "$out")
	p=${p:-0}; f=${f:-0}
	s=$((s > 0 ? s / 2 : 0))	# cmocka prints each skipped test twice (inline and summary)
	if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi	# crashed or timed out
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$f" != 0 ]; then
		note "FAIL [$LABEL] unit/$name (rc=$rc)"; sed 's/^/    | /' "$out" | tail -40
	else
		note "ok   [$LABEL] unit/$name: $p passed${s:+, $s skipped}"
	fi
done

for t in "$TOP"/tests/cli/test-*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	out="$log/$name.out"
	timeout 600 bash "$t" >"$out" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$out"); f=$(grep -c '^not ok ' "$out"); s=$(grep -c '^skip ' "$out")
	if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; echo "not ok - $name exited $rc" >>"$out"; fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$f" != 0 ]; then
		note "FAIL [$LABEL] cli/$name: $p passed, $f failed"; grep -v '^ok ' "$out" | sed 's/^/    | /' | tail -60
	else
		note "ok   [$LABEL] cli/$name: $p passed, $s skipped"
		grep '^skip ' "$out" | sed 's/^/    /'
	fi
done

if [ -n "${TALLY_TOTALS:-}" ]; then echo "$pass $fail $skip" >>"$TALLY_TOTALS"; fi
echo "[$LABEL] $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
