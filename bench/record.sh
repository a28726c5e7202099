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

# run TOOL FREQ OUT: prints "wall cpu_recorder size cpu_workload"
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
print('%.4f %.4f %d %.4f' % (wall, max(total - work, 0.0), os.path.getsize(out), work))
EOF
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.10g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# FILE: "samples sample_bytes callchain_entries", read by perf itself (report -D): each
# record's size is the [0x..] after its offset, each SAMPLE's callchain length the FP chain nr.
samplestats() {
	perf report -D -i "$1" 2>/dev/null | python3 -c '
import re, sys
n = b = c = 0
rec = re.compile(r"^\d+ 0x[0-9a-f]+ \[(0x[0-9a-f]+)\]: PERF_RECORD_SAMPLE")
for line in sys.stdin:
    m = rec.match(line)
    if m:
        n += 1
        b += int(m.group(1), 16)
    elif line.startswith("... FP chain: nr:"):
        c += int(line.split(":")[-1])
print(n, b, c)'
}

# Per run, per tool: wall cpu size workcpu samples sample_bytes chain_entries
: >"$tmp/tally" ; : >"$tmp/perf"
for i in $(seq "$RUNS"); do
	m=$(measure "$TALLY" 10000 "$tmp/t.data" "$HOT" "$SECS") || exit 1
	echo "$m $(samplestats "$tmp/t.data")" >>"$tmp/tally"
	m=$(measure perf 10000 "$tmp/p.data" "$HOT" "$SECS") || exit 1
	echo "$m $(samplestats "$tmp/p.data")" >>"$tmp/perf"
done
col() { awk -v c="$2" '{ print $c }' "$1" | median; }
# per FILE EXPR: median over runs of an awk expression of the columns above
per() { awk '$5 > 0 { printf "%.1f\n", '"$2"' }' "$1" | median; }
tw=$(col "$tmp/tally" 1); tc=$(col "$tmp/tally" 2); ts=$(col "$tmp/tally" 3); tn=$(col "$tmp/tally" 5)
pw=$(col "$tmp/perf" 1); pc=$(col "$tmp/perf" 2); ps=$(col "$tmp/perf" 3); pn=$(col "$tmp/perf" 5)
# samples per second of workload CPU (10000 = every tick of the 10 kHz cpu-clock stored)
trate=$(per "$tmp/tally" '$5 / $4'); prate=$(per "$tmp/perf" '$5 / $4')
tb=$(per "$tmp/tally" '$3 / $5'); pb=$(per "$tmp/perf" '$3 / $5')
# bytes of everything but SAMPLE records: header, attrs, side-band records, features
tf=$(per "$tmp/tally" '$3 - $6'); pf=$(per "$tmp/perf" '$3 - $6')
# mean SAMPLE record, and its size without the callchain entries (the record layout)
tm=$(per "$tmp/tally" '$6 / $5'); pm=$(per "$tmp/perf" '$6 / $5')
tl=$(per "$tmp/tally" '($6 - 8 * $7) / $5'); pl=$(per "$tmp/perf" '($6 - 8 * $7) / $5')
tk=$(per "$tmp/tally" '$7 / $5'); pk=$(per "$tmp/perf" '$7 / $5')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# Lost samples at 20 kHz, as perf report counts them from each file: LOST_SAMPLES records
# ("Total Lost Samples") and LOST records (ring overruns). perf's run is only for reference.
lost20() { # TOOL NAME: prints "samples lost lost_records samples_per_workload_cpu_second"
	local m work samples lost chunks
	m=$(measure "$1" 20000 "$tmp/$2.data" "$HOT" "$SECS") || return 1
	work=$(echo "$m" | awk '{ print $4 }')
	lost=$(perf report -i "$tmp/$2.data" --stdio 2>/dev/null | sed -n 's/^# Total Lost Samples: //p' | head -1)
	chunks=$(perf report -i "$tmp/$2.data" --stats 2>/dev/null | awk '/LOST events:/ { print $3; exit }')
	samples=$(perf report -i "$tmp/$2.data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
	echo "${samples:-0} ${lost:-?} ${chunks:-0} $(awk -v n="${samples:-0}" -v w="$work" 'BEGIN { if (w > 0) printf "%.0f", n / w; else print "?" }')"
}
r=$(lost20 "$TALLY" l) || exit 1
read -r l_n l_lost l_chunks l_rate <<<"$r"
r=$(lost20 perf pl) || exit 1
read -r lp_n lp_lost lp_chunks lp_rate <<<"$r"

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
echo "| samples per workload CPU second | $trate | $prate | $(ratio "$trate" "$prate") |"
echo "| file bytes per sample (size / samples) | $tb | $pb | $(ratio "$tb" "$pb") |"
echo "| bytes outside SAMPLE records | $tf | $pf | $(ratio "$tf" "$pf") |"
echo "| mean SAMPLE record (bytes) | $tm | $pm | $(ratio "$tm" "$pm") |"
echo "| callchain entries per sample | $tk | $pk | $(ratio "$tk" "$pk") |"
echo "| SAMPLE record without its callchain (bytes) | $tl | $pl | $(ratio "$tl" "$pl") |"
echo
echo "Targets: wall ≤ 1.00, recorder CPU ≤ 0.50, size ≤ 1.00. The raw file size is samples"
echo "× mean SAMPLE record + the bytes outside SAMPLE records. The number of samples is the"
echo "workload's CPU time × 10 kHz (the cpu-clock period is fixed at 100 µs): a recorder that"
echo "takes less CPU from the workload, or a quieter machine during its run, gives a longer"
echo "file of the same run. The mean SAMPLE record depends on the callchain depth, i.e. on"
echo "how many ticks hit the kernel (interrupts, softirqs) rather than user code, which is"
echo "the machine's doing. So the size figures that are the recorder's own are the bytes"
echo "outside SAMPLE records and the SAMPLE record without its callchain; file bytes per"
echo "sample is the raw size normalised per sample."
echo
echo "At 20 kHz (\`tally record -F 20000 -g\`, ${SECS}s): $l_n samples, lost samples: $l_lost,"
echo "LOST records: $l_chunks; $l_rate samples per workload CPU second (perf record in the same"
echo "conditions: $lp_n samples, lost $lp_lost, LOST records $lp_chunks, $lp_rate per workload CPU second)."
echo "Ticks the kernel's 50 µs hrtimer does not deliver are not counted as lost by either tool."
