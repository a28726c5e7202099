#!/usr/bin/env bash
# Cost of one counter read: tally_selfmon__read() vs a bare read() on the same fd
# (task-clock, a software event), and the rdpmc fast path where the machine has one.
# Prints a Markdown section for bench/RESULTS.md. Usage: bench/read-cost.sh BUILD_DIR
set -u
B=$(cd "${1:-build}" && pwd)
prog="$B/bench/read-cost"
if [ ! -x "$prog" ]; then
	echo "read-cost: $prog not built" >&2
	exit 1
fi
out=$("$prog" "${READ_COST_READS:-200000}" "${READ_COST_ROUNDS:-9}") || {
	echo "read-cost: $prog failed" >&2
	exit 1
}
last=$(printf '%s\n' "$out" | tail -1)
tally=$(printf '%s\n' "$last" | sed -n 's/^tally_read_ns=\([0-9.]*\) .*/\1/p')
raw=$(printf '%s\n' "$last" | sed -n 's/.* raw_read_ns=\([0-9.]*\) .*/\1/p')
ratio=$(printf '%s\n' "$last" | sed -n 's/.* ratio=\([0-9.]*\)$/\1/p')
if [ -z "$tally" ] || [ -z "$raw" ] || [ -z "$ratio" ]; then
	echo "read-cost: unexpected output: $last" >&2
	exit 1
fi
rdpmc=$(printf '%s\n' "$out" | grep '^rdpmc' | head -1)
echo "## Counter read cost (bench/read-cost)"
echo
echo "One read of a self-monitoring task-clock counter (software event: always a read()"
echo "system call), through libtally and bare on the same fd; median of alternating rounds."
echo
echo "| path | ns per read |"
echo "|---|---|"
echo "| tally_selfmon__read | $tally |"
echo "| bare read() | $raw |"
case $rdpmc in
rdpmc_read_ns=*)
	echo "| rdpmc fast path (instructions) | $(printf '%s' "$rdpmc" | sed 's/^rdpmc_read_ns=\([0-9.]*\).*/\1/') |" ;;
esac
echo
echo "Ratio tally / bare read(): **$ratio** (target ≤ 1.10)."
case $rdpmc in
rdpmc_read_ns=*) ;;
*) echo; echo "Fast path (rdpmc) on real hardware: not available on this VM (${rdpmc#rdpmc: not available on this machine: })." ;;
esac
echo
echo '```'
printf '%s\n' "$last"
echo '```'
