#!/usr/bin/env bash
# Runs ONE test of the suite with the environment every test expects, and prints its
# output. It is what meson registers (tests/meson.build: `meson test -C build test-report`
# runs one test) and what tests/run.sh calls for each registered test, so a test sees the
# same world either way:
#   TALLY, TALLY_BUILD, TALLY_TOP  the binary, build and source tree under test;
#   HOME                           an empty directory of its own (no ~/.debug or
#                                  .perfconfig left by perf or an earlier test);
#   LSAN/ASAN/UBSAN_OPTIONS        the suppressions and abort-on-error of `make check`;
#   a time limit                   300 s for a unit test, 600 s for a CLI test.
# Usage: tests/run-one.sh BUILD_DIR unit|cli|fuzz-replay NAME
#   unit NAME         the cmocka program BUILD_DIR/tests/NAME (e.g. test-hist);
#   cli NAME          tests/cli/NAME.sh (e.g. test-report);
#   fuzz-replay NAME  BUILD_DIR/tests/fuzz/fuzz-replay-NAME over its seed corpus and
#                     checked-in regressions.
# Exit status: the test's own; a CLI test that printed a "not ok" line fails even when
# its script exited 0.
set -u
BUILD=$(cd "${1:?usage: run-one.sh BUILD_DIR KIND NAME}" && pwd)
kind=${2:?kind}
name=${3:?name}
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TALLY="$BUILD/tally" TALLY_BUILD="$BUILD" TALLY_TOP="$TOP"
export CMOCKA_MESSAGE_OUTPUT=stdout
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$TOP/tests/lsan.supp:print_suppressions=0}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
home=$(mktemp -d "${TMPDIR:-/tmp}/tally-home.XXXXXX") || exit 1
trap 'rm -rf "$home"' EXIT
export HOME=$home

case $kind in
unit)
	timeout 300 "$BUILD/tests/$name" 2>&1
	;;
cli)
	out=$home/.out
	timeout 600 bash "$TOP/tests/cli/$name.sh" >"$out" 2>&1
	rc=$?
	cat "$out"
	if [ $rc = 0 ] && grep -q '^not ok ' "$out"; then rc=1; fi
	exit $rc
	;;
fuzz-replay)
	inputs=()
	for d in "$TOP/tests/fuzz/corpus/$name" "$TOP/tests/fuzz/regressions/$name"; do
		[ -d "$d" ] && inputs+=("$d")
	done
	if [ ${#inputs[@]} -eq 0 ]; then echo "no seed corpus for $name"; exit 1; fi
	timeout 120 "$BUILD/tests/fuzz/fuzz-replay-$name" "${inputs[@]}" 2>&1
	;;
*)
	echo "run-one.sh: unknown kind '$kind' (unit, cli or fuzz-replay)" >&2
	exit 2
	;;
esac
