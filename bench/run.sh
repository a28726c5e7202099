#!/usr/bin/env bash
# make bench: runs every bench/*.sh (each compares tally and perf side by side in one
# run and prints a Markdown section), then writes bench/RESULTS.md from their output.
set -u
B=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
	echo "# Benchmark results"
	echo
	echo "Written by \`make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs,"
	echo "$(perf --version 2>/dev/null || echo 'perf: absent'), tally $("$B/tally" --version | awk '{print $3}')."
	echo "Every figure is a median over several runs of tally and perf in the same run."
	echo
} >"$out"
status=0
for s in "$here"/*.sh; do
	case "$(basename "$s")" in run.sh | lib.sh) continue ;; esac
	echo "== $(basename "$s")" >&2
	if ! bash "$s" "$B" >>"$out"; then
		echo "bench: $(basename "$s") failed" >&2
		status=1
	fi
	echo >>"$out"
done
cp "$out" "$here/RESULTS.md"
cat "$here/RESULTS.md"
exit $status
