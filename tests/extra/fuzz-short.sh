#!/usr/bin/env bash
# The short, bounded fuzz pass of `make check` (scripts/check.sh runs it with
# PLAIN_BUILD ASAN_BUILD after the two suites). Two parts:
#   1. replay: every seed input and every checked-in regression input through each
#      target's replay driver of the ASan+UBSan build (fast, deterministic);
#   2. libFuzzer: each target for FUZZ_SHORT_SECONDS (default 15) in a clang build
#      ($FUZZ_BUILD, default build-fuzz, set up by scripts/fuzz.sh when missing).
# Prints ok/not ok/skip lines and appends "P F S" to $TALLY_TOTALS. Bounded: about
# 5 targets x 15 s plus a one-time build, well under 3 minutes.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
asan=${2:-${1:?usage: fuzz-short.sh PLAIN_BUILD ASAN_BUILD}}
secs=${FUZZ_SHORT_SECONDS:-15}
fuzz_build=${FUZZ_BUILD:-$top/build-fuzz}
pass=0 fail=0 skip=0
ok()   { echo "ok   [fuzz] $*"; pass=$((pass + 1)); }
bad()  { echo "FAIL [fuzz] $*"; fail=$((fail + 1)); }
skp()  { echo "skip [fuzz] $*"; skip=$((skip + 1)); }
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
log=$(mktemp -d "${TMPDIR:-/tmp}/tally-fuzz.XXXXXX")
trap 'rm -rf "$log"' EXIT

targets=()
for src in "$top"/tests/fuzz/fuzz-*.c; do
	n=$(basename "$src" .c); targets+=("${n#fuzz-}")
done

# 1. Replay seeds and regressions under ASan+UBSan: the meson tests fuzz-replay-NAME of
# the ASan build, run as meson runs them (tests/run-one.sh).
for t in "${targets[@]}"; do
	drv="$asan/tests/fuzz/fuzz-replay-$t"
	if [ ! -x "$drv" ]; then
		skp "replay $t (not built: its library API is not there yet)"
		continue
	fi
	if "$top/tests/run-one.sh" "$asan" fuzz-replay "$t" >"$log/$t.replay" 2>&1; then
		ok "replay $t: $(tail -1 "$log/$t.replay")"
	else
		bad "replay $t (rc=$?)"; grep -E 'ERROR|SUMMARY|runtime error|#[0-9] |seed corpus' "$log/$t.replay" | head -10 | sed 's/^/    | /'
	fi
done

# 2. A short libFuzzer run per target.
if ! command -v clang >/dev/null 2>&1; then
	skp "libFuzzer pass (clang absent: apt-get install clang libclang-rt-14-dev)"
else
	"$top/scripts/fuzz.sh" "$fuzz_build" "$secs" >"$log/fuzz.out" 2>&1
	for t in "${targets[@]}"; do
		if grep -q "^fuzz.sh: $t: not built" "$log/fuzz.out"; then
			skp "libFuzzer $t (not built: its library API is not there yet)"
		elif line=$(grep "^fuzz.sh: $t: .* runs, no finding" "$log/fuzz.out"); then
			ok "libFuzzer $t ${secs}s: ${line#fuzz.sh: $t: }"
		elif grep -q "^FINDING in $t " "$log/fuzz.out"; then
			bad "libFuzzer $t found a crash:"; sed -n "/^FINDING in $t /,/^fuzz.sh/p" "$log/fuzz.out" | head -10 | sed 's/^/    | /'
		else
			bad "libFuzzer $t did not run"; tail -5 "$log/fuzz.out" | sed 's/^/    | /'
		fi
	done
fi

if [ -n "${TALLY_TOTALS:-}" ]; then echo "$pass $fail $skip" >>"$TALLY_TOTALS"; fi
echo "[fuzz] $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
