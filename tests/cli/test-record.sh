# tally record: files that perf 6.1 reads as its own (perf is the oracle).
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
have_perf || { skip "record: perf-read files (perf absent)"; exit 0; }

# Profile with a known answer: 75% hot_a, 25% hot_b, frame-pointer chains through main.
"$TALLY" record -g -F 5000 -o g.data "$HOT" 1 2>err; rc=$?
check "record -g exits 0" test $rc -eq 0
check "summary: woken up" grep -q '^\[ tally record: Woken up [0-9]* times to write data \]$' err
check "summary: captured" grep -Eq '^\[ tally record: Captured and wrote [0-9.]+ MB g.data \([0-9]+ samples\) \]$' err
perf evlist -v -i g.data >ev 2>&1; rc=$?
check "perf evlist -v accepts the file" test $rc -eq 0
check "attr as perf record sets it" grep -q 'sample_type: IP|TID|TIME|CALLCHAIN|PERIOD, read_format: ID|LOST, disabled: 1, inherit: 1, mmap: 1, comm: 1, freq: 1, enable_on_exec: 1, task: 1' ev
perf report -i g.data --stdio >rep 2>&1
check "perf report: no lost samples at 5 kHz" grep -q '^# Total Lost Samples: 0$' rep
pct() { awk -v s="$1" '$NF == s && $2 ~ /%$/ { sub("%", "", $1); print int($1 + 0.5); exit }' rep; }
a=$(pct hot_a); b=$(pct hot_b)
if [ -n "$a" ] && [ -n "$b" ] && [ "$a" -ge 70 ] && [ "$a" -le 80 ] && [ "$b" -ge 20 ] && [ "$b" -le 30 ]; then
	ok "perf report: hot_a ${a}% / hot_b ${b}% (75/25 +-5)"
else
	fail "perf report: hot_a '${a}'% / hot_b '${b}'% (want 75/25 +-5)"; sed -n 1,30p rep
fi
perf script -i g.data 2>/dev/null >scr
check "perf script: chains spin -> hot_a -> main" \
	awk '/spin\+/ { s = NR } /hot_a\+/ && s == NR - 1 { h = NR } /main\+/ && h == NR - 1 { found = 1 } END { exit !found }' scr
perf buildid-list -i g.data >bid 2>&1
check "BUILD_ID feature names the workload" grep -q " $HOT\$" bid
perf report --header-only -I -i g.data >hdr 2>&1
for f in "hostname :" "os release :" "arch :" "nrcpus online :" "cpudesc :" "cpuid :" "total memory :" \
	 "cmdline : .*tally record -g" "event : name = " "sibling threads :" "pmu mappings:" "time of first sample :"; do
	check "header feature: $f" grep -q "^# $f" hdr
done

# The attrs perf record builds, option by option (perf's ksymbol/bpf_event side-band
# bits aside: tally does not ask for BPF side-band), per-event call-graph=, max-stack=
# and stack-size= terms over a global -g/--call-graph included, and the events whose
# default period is 1 (mem: breakpoints, bpf-output) unless -c/-F say otherwise.
for opts in "" "-g" "-d" "-R" "--sample-cpu" "-T" "-c 100000" "-F 1000" "--switch-events" \
	    "--no-inherit" "--per-thread" "-e cpu-clock,task-clock" "-e {cpu-clock,task-clock}" \
	    "-e cpu-clock:u" "-e cpu-clock,sched:sched_process_exec" "--call-graph dwarf,4096" \
	    "-e cpu-clock -g -e task-clock" "-e {cpu-clock,task-clock}:S" \
	    "-g -e cpu-clock -e task-clock/call-graph=dwarf,max-stack=10/ -e page-faults/call-graph=no/ -e cs/max-stack=5/ -e minor-faults/call-graph=fp/" \
	    "--call-graph dwarf -e cpu-clock -e task-clock/call-graph=fp/" "-g -e cpu-clock/stack-size=4096/" \
	    "-e cpu-clock/call-graph=dwarf,stack-size=4096/" "-e mem:0x1000:w" "-e bpf-output" \
	    "-e bpf-output,cpu-clock" "-e mem:0x1000 -F 100" "-e bpf-output -c 5" \
	    "--all-user" "--all-kernel" "--all-kernel -e cpu-clock,task-clock:u" \
	    "--period" "--period -c 10000" "--sample-identifier" \
	    "--sample-identifier -e cpu-clock,task-clock" "--running-time" \
	    "--kernel-callchains -g" "--user-callchains -g" "--user-callchains --kernel-callchains -g" \
	    "--transaction" "--phys-data" "--data-page-size" "--code-page-size" "-W" \
	    "--phys-data --data-page-size --code-page-size -g" "--user-regs" "--user-regs=ax,bx,ip" \
	    "--intr-regs=ax,sp" "-I" "--call-graph dwarf --user-regs=ax" "--no-samples" "-n -c 1000" \
	    "-e cpu-clock:k" "-e cpu-clock:h" "-e cpu-clock:kp" "-e cpu-clock:kG" "-e cpu-clock:uH" \
	    "-D 10" "-D -1" "-D 1-2" "-D 10 -a" "--no-buffering" "-s" "-s --no-inherit" \
	    "--group -e cpu-clock,task-clock,page-faults" "-P -c 10000" "--mmap-flush=4096" \
	    "--affinity=cpu" "--affinity=node" "-r 10" "--synth=no" "--synth=task" \
	    "--timestamp-boundary" "--proc-map-timeout 100" "--num-thread-synthesize 2" \
	    "--vmlinux /proc/self/exe" "--namespaces" "--namespaces -D 10" "--buildid-mmap" "--all-cgroups" \
	    "--all-cgroups -D 10"; do
	rm -f pa.data ta.data	# a failed recording compares nothing stale
	# (perf, the oracle, gets a second try: once in a long run on a loaded machine its
	# recording of true failed)
	# shellcheck disable=SC2086
	if ! perf record -q --no-bpf-event $opts -o pa.data true 2>pa.err &&
	   ! perf record -q --no-bpf-event $opts -o pa.data true 2>pa.err; then
		skip "attrs as perf record '$opts' (perf record itself failed: $(head -1 pa.err))"
		continue
	fi
	# shellcheck disable=SC2086
	"$TALLY" record -q $opts -o ta.data true 2>ta.err
	want=$(perf evlist -v -i pa.data 2>&1 | sed 's/, ksymbol: 1//; s/, bpf_event: 1//')
	got=$(perf evlist -v -i ta.data 2>&1)
	if [ -n "$want" ] && [ "$want" = "$got" ]; then ok "attrs as perf record '$opts'"
	else
		fail "attrs as perf record '$opts'"; printf '  perf : %s\n  tally: %s\n' "$want" "$got"
		[ -s ta.err ] && head -3 ta.err | sed 's/^/  tally record said: /'
	fi
done

# --all-user with --all-kernel: perf refuses the pair (and so compared no attrs above)
perf record --all-user --all-kernel -o pex.data true >/dev/null 2>pex.err; p=$?
"$TALLY" record --all-user --all-kernel -o tex.data true >/dev/null 2>tex.err; t=$?
check "--all-user with --all-kernel: perf's error and status ($p), no file" \
	eval 'test $p -ne 0 && test $t -eq $p && test "$(head -1 tex.err)" = "$(head -1 pex.err)" && test ! -e tex.data'

# Pipe mode straight into perf.
"$TALLY" record -q -o - "$HOT" 0.3 2>err | perf report -i - --stdio >prep 2>&1
check "perf report -i - reads the pipe stream" grep -Eq '%  hot +hot +\[\.\] spin' prep
# stdout being a pipe selects pipe mode by itself, as in perf.
"$TALLY" record -q "$HOT" 0.2 2>/dev/null | perf script -i - >pscr 2>&1
check "stdout pipe implies -o -" grep -q 'cpu-clock\|cycles' pscr

# Compression.
"$TALLY" record -q -z -o z.data "$HOT" 0.3
perf report -i z.data --header-only >zh 2>&1
check "-z: COMPRESSED feature" grep -q '^# compressed : Zstd, level = 1' zh
perf report -i z.data --stdio --stats >zs 2>&1
check "-z: perf decompresses the records" grep -Eq 'COMPRESSED events: +[1-9]' zs
perf report -i z.data --stdio >zr 2>&1
check "-z: profile readable" grep -Eq '%  hot +hot +\[\.\] spin' zr

# Two events: ids let perf tell them apart.
"$TALLY" record -q -e cpu-clock,task-clock -o two.data "$HOT" 0.3
perf evlist -i two.data >ev2 2>&1
check "two events listed" test "$(cat ev2)" = "$(printf 'cpu-clock\ntask-clock')"
perf report -i two.data --stdio >r2 2>&1
check "samples of both events" test "$(grep -c "^# Samples: .* of event '\(cpu\|task\)-clock'" r2)" -eq 2
"$TALLY" record -q -e '{cpu-clock,task-clock}' -o grp.data "$HOT" 0.2
check "group: perf evlist -g shows it" grep -q '^{cpu-clock,task-clock}$' <(perf evlist -g -i grp.data 2>&1)

# Tracepoints: TRACING_DATA lets perf decode the raw fields.
if have_tracepoint sched:sched_process_exec; then
	"$TALLY" record -q -e sched:sched_process_exec -o tp.data -- sh -c '/bin/true; /bin/true'
	perf script -i tp.data >tps 2>&1
	check "tracepoint: perf script decodes fields" grep -q 'sched:sched_process_exec: filename=/bin/true pid=' tps
	"$TALLY" record -q -e sched:sched_process_exec -o - -- sh -c '/bin/true; /bin/true' 2>/dev/null |
		perf script -i - >tpp 2>&1
	check "tracepoint in pipe mode" grep -q 'filename=/bin/true' tpp
else
	skip "tracepoints (tracefs not readable)"
fi

# DWARF call graphs: perf unwinds the copied stacks through libc.
"$TALLY" record -q --call-graph dwarf -o dw.data "$HOT" 0.3
perf evlist -v -i dw.data >dwe 2>&1
check "dwarf: regs and stack as perf" grep -q 'exclude_callchain_user: 1, .*sample_regs_user: 0xff0fff, sample_stack_user: 8192' dwe
perf script -i dw.data 2>/dev/null >dws
check "dwarf: perf unwinds through libc" grep -q '__libc_start_call_main+.*libc.so' dws
check "dwarf: and through hot_a" grep -q 'hot_a+' dws

# System-wide, stopped by SIGINT.
"$TALLY" record -a -o a.data 2>aerr & pid=$!
# (interrupted once it writes past its first header, its events open: on a loaded
# machine an ASan build takes seconds to get there)
for _ in $(seq 300); do [ "$(stat -c %s a.data 2>/dev/null || echo 0)" -gt 4096 ] && break; sleep 0.1; done
sleep 0.5; kill -INT $pid; wait $pid; rc=$?
check "-a stopped by SIGINT exits 0" test $rc -eq 0
perf report -i a.data --stdio --sort comm >ar 2>&1; rc=$?
check "-a file readable" test $rc -eq 0
check "-a has samples" grep -q '^# Samples: ' ar
check "-a samples carry the cpu" grep -q 'sample_type: IP|TID|TIME|CPU|PERIOD' <(perf evlist -v -i a.data)

# System-wide while a command runs (the events cannot wait for its exec).
"$TALLY" record -q -a -o aw.data "$HOT" 0.3
check "-a -- cmd: the command's samples" grep -Eq '%  hot +hot +\[\.\] spin' <(perf report -i aw.data --stdio 2>/dev/null)

# An existing process: synthesized COMM/MMAP2 let perf name it.
"$HOT" 2 & hp=$!
sleep 0.2
"$TALLY" record -q -p $hp -o p.data --timeout 400
perf report -i p.data --stdio >pr 2>&1
check "-p: perf resolves the running process" grep -Eq '%  hot +hot +\[\.\] spin' pr
kill $hp 2>/dev/null; wait $hp 2>/dev/null

# Threads that existed before the recording keep their names (worker-0, worker-1), with
# -p and with -a, in tally's reports and in perf's, as in perf's own recordings.
# (hot outlives the three recordings even when ASan makes tally's slow: killed after them)
"$HOT" --threads 2 10 & hp=$!
for _ in $(seq 100); do [ "$(ls /proc/$hp/task 2>/dev/null | wc -l)" -ge 3 ] && break; sleep 0.02; done
workers=$(ls /proc/$hp/task | grep -vx "$hp" | tr '\n' ' ')
"$TALLY" record -q -p $hp -o pt.data --timeout 300
"$TALLY" record -q -a -o at.data --timeout 300
perf record -q -N -p $hp -o ppt.data -- sleep 0.3 >/dev/null 2>&1
kill $hp 2>/dev/null; wait $hp 2>/dev/null
# comms TOOL FILE: "comm name-in-pid-column" of the worker threads' rows (perf's pid key
# shows the thread: "tid:comm")
comms() { "$1" report --stdio -q --sort comm,pid -i "$2" 2>/dev/null | awk -v w=" $workers" '$3 ~ /^[0-9]+:/ { split($3, t, ":"); if (index(w, " " t[1] " ")) print $2, t[2] }' | sort -u; }
for f in pt:-p at:-a; do
	c=$(comms "$TALLY" ${f%:*}.data | tr '\n' ';')
	check "record ${f#*:}: threads keep their names in tally's report ($c)" \
		test "$c" = "worker-0 worker-0;worker-1 worker-1;"
	check "record ${f#*:}: and in perf's" test "$(comms perf ${f%:*}.data | tr '\n' ';')" = "$c"
done
# perf's own -p recording, the oracle for the names: under load a worker may get no
# sample in 0.3 s, so each row it has must carry the thread's name
pc=$(comms perf ppt.data | tr '\n' ';')
if [ -n "$pc" ]; then
	check "perf's own -p recording names them alike ($pc)" \
		eval 'comms perf ppt.data | awk "\$1 != \$2 || \$1 !~ /^worker-[01]\$/ { bad = 1 } END { exit bad }"'
else
	skip "perf's own -p recording has no worker rows (a loaded machine)"
fi

# Lost samples: a 1-page ring at 50 kHz with call chains usually overflows. When it does,
# the summary and perf agree on the count.
"$TALLY" record -m 1 -F 50000 -g -o lost.data "$HOT" 0.5 2>lerr
n=$(sed -n 's/^\[ tally record: Lost \([0-9]*\) samples.*/\1/p' lerr)
if [ -n "$n" ]; then
	check "lost samples: perf counts what the summary says" \
		grep -q "^# Total Lost Samples: $n\$" <(perf report -i lost.data --stdio 2>/dev/null)
else
	check "no loss reported: perf agrees" grep -q '^# Total Lost Samples: 0$' <(perf report -i lost.data --stdio 2>/dev/null)
fi

# Threads, CPUs, per-thread rings.
"$HOT" 2 & hp=$!
sleep 0.2
"$TALLY" record -q -t $hp -o t.data --timeout 300
check "-t: the thread's samples" grep -Eq '%  hot +hot +\[\.\] spin' <(perf report -i t.data --stdio 2>/dev/null)
kill $hp 2>/dev/null; wait $hp 2>/dev/null
"$TALLY" record -q -C 0 -o c.data --timeout 300
check "-C 0: only CPU 0" test "$(perf script -F cpu -i c.data 2>/dev/null | sort -u | tr -d ' []')" = 000
"$TALLY" record -q --per-thread -o pt.data "$HOT" 0.2
check "--per-thread: readable" grep -Eq '%  hot +hot +\[\.\] spin' <(perf report -i pt.data --stdio 2>/dev/null)

# perf.data.old like perf.
"$TALLY" record -q "$HOT" 0.1 >/dev/null && "$TALLY" record -q "$HOT" 0.1 >/dev/null
check "existing perf.data kept as perf.data.old" test -s perf.data.old

# A file-size limit (EFBIG, like ENOSPC) stops recording; the header describes the
# complete records written and perf reads them without complaint. (A fixed amount of
# CPU work, sampled every 10 us of it: ~30000 samples, well over the 64 KiB however
# little CPU a loaded machine gives it per second.)
(ulimit -f 64; exec "$TALLY" record -q -e cpu-clock -c 10000 -o lim.data \
	"$TALLY_BUILD/workloads/unwind" 100) 2>lerr; rc=$?
check "write error: nonzero exit" test $rc -ne 0
check "write error: explained" grep -q 'writing lim.data failed: File too large' lerr
perf report -i lim.data --stdio >lr 2>&1; rc=$?
check "write error: file still valid for perf" grep -q "^# Samples: " lr
check "write error: no termination warning" bash -c "! grep -qi 'properly terminated' lr"

# --filter: the tracepoint filter of the -e before it, set on every fd as perf sets it
if "$TALLY" record -q -e sched:sched_switch --filter 'prev_comm == "hot"' -a -o tf.data \
	-- "$HOT" --sleeps 10 >/dev/null 2>err; then
	# the tracepoint's own prev_comm field (the task's name the kernel saw), not the
	# sample's thread name: other tests' "hot" processes forked by a tally or perf
	# may be named by the side-band as they were before their exec (a race perf's
	# synthesis before enabling shares)
	"$TALLY" script -F trace -i tf.data 2>/dev/null | awk '{print $1}' | sort | uniq -c >tf.comms
	check "record --filter: only the switches the filter keeps ($(tr -s ' \n' ' ' <tf.comms))" \
		eval 'test "$(awk "{print \$2}" tf.comms)" = prev_comm=hot'
else
	skip "record --filter (system-wide tracepoints cannot be recorded here: $(head -1 err))"
fi
"$TALLY" record --filter x -o tf.data true >/dev/null 2>err; rc=$?
check "record --filter before any -e: refused, 129" eval 'test $rc -eq 129 && grep -q "should follow a -e" err'
"$TALLY" record -e cpu-clock --filter x -o tf.data true >/dev/null 2>err; rc=$?
check "record --filter after a non-tracepoint: refused, 129" eval 'test $rc -eq 129 && grep -q "not a tracepoint" err'
perf record -q -e sched:sched_switch --filter 'nosuch == 1' -o pf.data true >/dev/null 2>perr
"$TALLY" record -q -e sched:sched_switch --filter 'nosuch == 1' -o tf.data true >/dev/null 2>err; rc=$?
check "record --filter the kernel rejects: perf's message (rc $rc)" \
	eval 'test $rc -ne 0 && grep -qF "$(head -1 perr)" err'

# --dry-run: the options and events parsed, nothing recorded; what tally cannot do refused
"$TALLY" record --dry-run -e cpu-clock -o dry.data true >/dev/null 2>err; rc=$?
check "record --dry-run: exit 0, no file (rc $rc)" eval 'test $rc -eq 0 && test ! -e dry.data'
"$TALLY" record --dry-run -e nosuchevent -o dry.data true >/dev/null 2>err; rc=$?
check "record --dry-run with a bad event: refused" test $rc -ne 0
bad=""
for o in --off-cpu -b "-j any" --snapshot --aux-sample --kcore --threads --overwrite; do
	# shellcheck disable=SC2086
	"$TALLY" record $o -o ref.data true >out 2>err; rc=$?
	{ [ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ] && [ ! -e ref.data ]; } || bad="$bad '$o'(rc=$rc)"
done
check "record: options tally cannot honour are refused in one line${bad:+:$bad}" test -z "$bad"
perf record -F 200000 --strict-freq -o sf.data true >/dev/null 2>perr; p=$?
"$TALLY" record -F 200000 --strict-freq -o sf.data true >/dev/null 2>err; rc=$?
check "record --strict-freq above the maximum: perf's error (rc $rc, perf $p)" \
	eval 'test $rc -ne 0 && test $p -ne 0 && diff -q perr err'
"$TALLY" record --user-regs=foo -o sf.data true >/dev/null 2>err; rc=$?
check "record --user-regs with an unknown register: refused, 129" \
	eval 'test $rc -eq 129 && grep -q "unknown register .foo." err'
