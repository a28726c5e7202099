#!/usr/bin/env bash
# Runs the whole suite against one build directory and prints one line per test:
#   unit tests (cmocka programs build/tests/test-*), counted per test case;
#   CLI tests (tests/cli/*.sh), each reporting ok/not ok/skip lines through lib.sh.
# The tests are the ones registered with meson (tests/meson.build), each run through
# tests/run-one.sh as `meson test` runs it; a test program or script that is not
# registered is a failure. (The fuzz replays are registered too: tests/extra/fuzz-short.sh
# runs the ASan build's.)
# Usage: tests/run.sh BUILD_DIR [LABEL]. Appends "P F S" totals to $TALLY_TOTALS if set.
set -u
BUILD=$(cd "${1:?build dir}" && pwd)
LABEL=${2:-$(basename "$BUILD")}
TOP=$(cd "$(dirname "$0")/.." && pwd)
pass=0 fail=0 skip=0
log=$(mktemp -d "${TMPDIR:-/tmp}/tally-tests.XXXXXX")
trap 'rm -rf "$log"' EXIT

note() { printf '%s\n' "$*"; }

# The registered tests, "KIND NAME" per line in meson's order (the arguments meson
# passes to run-one.sh).
if ! meson introspect --tests "$BUILD" >"$log/tests.json" 2>"$log/introspect.err"; then
	note "FAIL [$LABEL] meson introspect --tests $BUILD:"; sed 's/^/    | /' "$log/introspect.err"
	fail=1
fi
python3 -c '
import json, sys
for t in json.load(open(sys.argv[1])):
    cmd = t["cmd"]
    if len(cmd) == 4 and cmd[0].endswith("/run-one.sh"):
        print(cmd[2], cmd[3])
' "$log/tests.json" >"$log/registered" 2>/dev/null || true
registered() { grep -qx "$1 $2" "$log/registered"; }

for t in "$BUILD"/tests/test-* "$TOP"/tests/cli/test-*.sh; do
	[ -f "$t" ] || continue
	case $t in
	*.sh) kind=cli name=$(basename "$t" .sh) ;;
	*) [ -x "$t" ] || continue; kind=unit name=$(basename "$t") ;;
	esac
	if ! registered "$kind" "$name"; then
		note "FAIL [$LABEL] $kind/$name: not registered with meson (tests/meson.build)"
		fail=$((fail + 1))
	fi
done

while read -r kind name; do
	[ "$kind" = unit ] || continue
	out="$log/$name.out"
	"$TOP/tests/run-one.sh" "$BUILD" unit "$name" >"$out" 2>&1 </dev/null
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
done <"$log/registered"

while read -r kind name; do
	[ "$kind" = cli ] || continue
	out="$log/$name.out"
	"$TOP/tests/run-one.sh" "$BUILD" cli "$name" >"$out" 2>&1 </dev/null
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
done <"$log/registered"

if [ -n "${TALLY_TOTALS:-}" ]; then echo "$pass $fail $skip" >>"$TALLY_TOTALS"; fi
echo "[$LABEL] $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
