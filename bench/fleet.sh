#!/usr/bin/env bash
# What continuous profiling with tally costs one host (docs/fleet.md): a minute of
# tally record -a -g at the rates continuous profilers use (19 and 99 Hz per CPU), the
# recorder's CPU time and the bytes it writes, then tally data convert --to-pprof on
# the segment: its CPU time and the bytes a host would push. The host is this machine
# as it is (other work running: that is the load being profiled).
# Usage: bench/fleet.sh BUILD_DIR [SECONDS]
set -u
B=$(cd "${1:-build}" && pwd)
SECS=${2:-60}
TALLY=$B/tally
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

echo "## continuous profiling cost per host (bench/fleet.sh)"
echo
echo "One segment of ${SECS} s per rate, system-wide with call graphs (\`tally record -a -g -F RATE\`),"
echo "$(nproc) CPUs, on this machine with whatever else it was running. CPU seconds are user+sys"
echo "of the tally process; per-minute figures scale the segment to 60 s. Processes started:"
echo "FORK records in the segment (the side-band that fills most of perf.data)."
echo
echo "| rate | samples | processes started | record CPU s | record CPU % of one CPU | perf.data bytes/min | convert CPU s | pprof bytes/min | build-ids hit |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for hz in 19 99; do
	/usr/bin/time -f '%U %S' -o "$W/rec.t" "$TALLY" record -q -a -g -F "$hz" -o "$W/seg.data" \
		--timeout $((SECS * 1000)) >/dev/null 2>&1
	read -r ru rs <"$W/rec.t"
	"$TALLY" report -i "$W/seg.data" --stats >"$W/stats" 2>/dev/null
	n=$(awk '/SAMPLE events:/ {print $3; exit}' "$W/stats")
	forks=$(awk '/ FORK events:/ {print $3; exit}' "$W/stats")
	/usr/bin/time -f '%U %S' -o "$W/conv.t" "$TALLY" data convert -f -i "$W/seg.data" \
		--to-pprof "$W/seg.pb.gz" --label host="$(hostname)" >/dev/null 2>&1
	read -r cu cs <"$W/conv.t"
	ids=$("$TALLY" buildid-list -i "$W/seg.data" 2>/dev/null | wc -l)
	awk -v hz="$hz" -v n="$n" -v ru="$ru" -v rs="$rs" -v cu="$cu" -v cs="$cs" -v secs="$SECS" \
		-v db="$(stat -c %s "$W/seg.data")" -v pb="$(stat -c %s "$W/seg.pb.gz")" -v ids="$ids" -v forks="${forks:-0}" 'BEGIN {
		r = ru + rs
		printf "| %d Hz | %d | %d | %.2f | %.2f%% | %.0f | %.2f | %.0f | %d |\n", hz, n, forks, r,
			100 * r / secs, db * 60 / secs, cu + cs, pb * 60 / secs, ids
	}'
done
