# Helpers shared by the bench scripts that time tally and perf side by side (source it
# after setting W, a scratch directory, and RUNS).

# one CMD...: prints "wall_s cpu_s maxrss_kb" for one run (output discarded); the wall
# clock in ns (tally's runs take tens of ms: /usr/bin/time's 10 ms steps are too coarse)
one() {
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$W/t" "$@" >/dev/null 2>/dev/null
	t1=$(date +%s%N)
	awk -v ns=$((t1 - t0)) '{printf "%.3f %.2f %s\n", ns / 1e9, $1 + $2, $3}' "$W/t"
}
# median of a column: median FILE COLUMN
median_of() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# RUNS alternating runs of perf's command (array pa) and tally's (array ta), so both see
# the same machine; prints "perf_wall perf_cpu perf_rss tally_wall tally_cpu tally_rss"
# (medians, each column on its own)
pair() {
	: >"$W/p.runs"
	: >"$W/t.runs"
	for _ in $(seq "$RUNS"); do
		one "${pa[@]}" >>"$W/p.runs"
		one "${ta[@]}" >>"$W/t.runs"
	done
	for f in p t; do
		for c in 1 2 3; do median_of "$W/$f.runs" $c; done
	done | paste -sd' '
}
ratio() { awk -v p="$1" -v t="$2" 'BEGIN { if (t > 0) printf "%.1fx", p / t; else print "inf" }'; }
