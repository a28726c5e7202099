#!/usr/bin/env bash
# Runs every libFuzzer target for a set time: scripts/fuzz.sh [BUILD_DIR] [SECONDS] [TARGET...]
#   BUILD_DIR  a clang build with -Dfuzz=true (set up here if missing; default build-fuzz)
#   SECONDS    per target (default 120)
# Working corpora live in BUILD_DIR/fuzz-corpus/NAME (seeded from tests/fuzz/corpus/NAME
# and tests/fuzz/regressions/NAME); findings go to BUILD_DIR/fuzz-findings/NAME/.
# New crashing inputs should be minimised and checked in under tests/fuzz/regressions/NAME.
# Exit status: 0 when no target found anything, 1 otherwise.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-fuzz}
secs=${2:-120}
shift $(( $# >= 2 ? 2 : $# ))

if [ ! -f "$build/build.ninja" ]; then
	if ! command -v clang >/dev/null 2>&1; then
		echo "fuzz.sh: clang is needed for libFuzzer (apt-get install clang libclang-rt-14-dev)" >&2
		exit 1
	fi
	CC=clang meson setup "$build" "$top" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debug >/dev/null || exit 1
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for src in "$top"/tests/fuzz/fuzz-*.c; do
		n=$(basename "$src" .c); targets+=("${n#fuzz-}")
	done
fi
# Only targets whose API exists are defined in the build; build those.
avail=()
for t in "${targets[@]}"; do
	if ninja -C "$build" -t targets all 2>/dev/null | grep -q "^tests/fuzz/fuzz-$t:"; then
		avail+=("$t")
	else
		echo "fuzz.sh: $t: not built (its library API is not there yet)" >&2
	fi
done
[ ${#avail[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets to run" >&2; exit 1; }
bl=(); for t in "${avail[@]}"; do bl+=("tests/fuzz/fuzz-$t"); done
ninja -C "$build" -j2 "${bl[@]}" >/dev/null || ninja -C "$build" -j2 "${bl[@]}" || exit 1

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
found=0
for t in "${avail[@]}"; do
	corpus="$build/fuzz-corpus/$t" findings="$build/fuzz-findings/$t"
	mkdir -p "$corpus" "$findings"
	seeds=()
	for d in "$top/tests/fuzz/corpus/$t" "$top/tests/fuzz/regressions/$t"; do
		[ -d "$d" ] && seeds+=("$d")
	done
	dict=()
	[ -f "$top/tests/fuzz/dict/$t.dict" ] && dict=("-dict=$top/tests/fuzz/dict/$t.dict")
	log="$findings/last.log"
	echo "fuzz.sh: $t for ${secs}s" >&2
	"$build/tests/fuzz/fuzz-$t" "$corpus" "${seeds[@]}" "${dict[@]}" \
		-max_total_time="$secs" -timeout=30 -rss_limit_mb=1024 -max_len=65536 \
		-artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1
	rc=$?
	runs=$(sed -n "s/^stat::number_of_executed_units: *//p" "$log" | tail -1)
	if [ $rc -ne 0 ]; then
		found=1
		echo "FINDING in $t (rc=$rc), artifacts in $findings:" >&2
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -8 >&2
	else
		echo "fuzz.sh: $t: ${runs:-?} runs, no finding" >&2
	fi
	echo "$(date -u +%FT%TZ) $t ${secs}s rc=$rc runs=${runs:-?}" >>"$build/fuzz-history.log"
done
exit $found
