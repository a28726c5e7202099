#!/usr/bin/env bash
# tally record vs perf record on a CPU-bound workload (BUILD/workloads/hot), same run,
# alternating: wall time, CPU time of the recorder process itself, file size, and lost
# samples at 20 kHz. Prints a Markdown section for bench/RESULTS.md.
# Usage: bench/record.sh BUILD_DIR   (RECORD_RUNS=5 RECORD_SECS=2 by default)
#
# Recorder CPU time: wait4() of the recorder gives the CPU time of the recorder and of
# everything it waited for (the workload). The workload runs as `bash -c 'hot N; times'`:
# bash's `times` prints the CPU time of that subtree (bash + hot), which is subtracted.
# What remains is the recorder's own work: setup, draining rings, writing, finishing
# (perf's includes its build-id pass, which perf does by default).
set -u
B=$(cd "${1:-build}" && pwd)
HOT=$B/workloads/hot
TALLY=$B/tally
RUNS=${RECORD_RUNS:-5}
SECS=${RECORD_SECS:-2}
if ! command -v perf >/dev/null 2>&1; then
	echo "## tally record vs perf record"
	echo
	echo "perf is not installed: nothing to compare."
	exit 0
fi
for f in "$HOT" "$TALLY"; do
	[ -x "$f" ] || { echo "record.sh: $f not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run TOOL FREQ OUT: prints "wall cpu_recorder size"
measure() {
	python3 - "$@" <<'EOF'
import os, sys, time, subprocess
tool, freq, out, hot, secs = sys.argv[1:6]
cmd = [tool, 'record', '-q', '-F', freq, '-g', '-o', out, '--',
       'bash', '-c', '"$0" "$1"; times', hot, secs]
r, w = os.pipe()
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(w, 1)
    devnull = os.open('/dev/null', os.O_WRONLY)
    os.dup2(devnull, 2)
    os.execvp(cmd[0], cmd)
os.close(w)
data = b''
while True:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    data += chunk
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
if status != 0:
    sys.exit('recorder failed: %s status %d' % (tool, status))
def secs_of(tok):            # bash times: 0m1.234s
    m, s = tok.rstrip('s').split('m')
    return int(m) * 60 + float(s)
work = 0.0
for line in data.decode().splitlines():
    toks = line.split()
    if len(toks) == 2 and 'm' in toks[0]:
        work += secs_of(toks[0]) + secs_of(toks[1])
total = ru.ru_utime + ru.ru_stime
print('%.4f %.4f %d' % (wall, max(total - work, 0.0), os.path.getsize(out)))
EOF
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.4f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

: >"$tmp/tally" ; : >"$tmp/perf"
nsamples() { perf report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }'; }
for i in $(seq "$RUNS"); do
	m=$(measure "$TALLY" 10000 "$tmp/t.data" "$HOT" "$SECS") || exit 1
	echo "$m $(nsamples "$tmp/t.data")" >>"$tmp/tally"
	m=$(measure perf 10000 "$tmp/p.data" "$HOT" "$SECS") || exit 1
	echo "$m $(nsamples "$tmp/p.data")" >>"$tmp/perf"
done
col() { awk -v c="$2" '{ print $c }' "$1" | median; }
per() { awk '$4 > 0 { printf "%.1f\n", $3 / $4 }' "$1" | median; }
tw=$(col "$tmp/tally" 1); tc=$(col "$tmp/tally" 2); ts=$(col "$tmp/tally" 3); tn=$(col "$tmp/tally" 4); tb=$(per "$tmp/tally")
pw=$(col "$tmp/perf" 1); pc=$(col "$tmp/perf" 2); ps=$(col "$tmp/perf" 3); pn=$(col "$tmp/perf" 4); pb=$(per "$tmp/perf")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# Lost samples at 20 kHz, as perf report counts them from tally's file.
"$TALLY" record -q -F 20000 -g -o "$tmp/l.data" "$HOT" "$SECS" 2>/dev/null
lost=$(perf report -i "$tmp/l.data" --stdio 2>/dev/null | sed -n 's/^# Total Lost Samples: //p' | head -1)
chunks=$(perf report -i "$tmp/l.data" --stats 2>/dev/null | awk '/LOST events:/ { print $3; exit }')
samples=$(perf report -i "$tmp/l.data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')

echo "## tally record vs perf record (bench/record.sh)"
echo
echo "\`record -F 10000 -g\` of \`workloads/hot $SECS\` (CPU-bound), median of $RUNS alternating runs each."
echo "Recorder CPU = CPU time of the recorder process itself (workload subtracted)."
echo
echo "| | tally | perf | tally / perf |"
echo "|---|---|---|---|"
echo "| wall time (s) | $tw | $pw | $(ratio "$tw" "$pw") |"
echo "| recorder CPU (s) | $tc | $pc | $(ratio "$tc" "$pc") |"
echo "| file size (bytes) | $ts | $ps | $(ratio "$ts" "$ps") |"
echo "| samples in the file | $tn | $pn | $(ratio "$tn" "$pn") |"
echo "| file bytes per sample | $tb | $pb | $(ratio "$tb" "$pb") |"
echo
echo "Targets: wall ≤ 1.00, recorder CPU ≤ 0.50, size ≤ 1.00. The recorder that keeps up"
echo "better stores more samples of the same run, so bytes per sample is the fair size figure."
echo
echo "At 20 kHz (\`tally record -F 20000 -g\`, ${SECS}s): ${samples:-?} samples, lost samples: ${lost:-?}, LOST records: ${chunks:-0}."
