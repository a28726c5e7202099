# tally record: option and target errors give one actionable message and exit nonzero;
# the file tally reads back itself (no perf needed).
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot

"$TALLY" record 2>err; rc=$?
check "nothing to record: nonzero" test $rc -ne 0
check "nothing to record: says what to give" grep -q 'give a command, -p PID, -t TID, -u USER or -a' err

"$TALLY" record -e 'cpu-clock:zz' true 2>err; rc=$?
check "bad event: nonzero" test $rc -ne 0
check "bad event: perf-style syntax error" grep -q "event syntax error" err

"$TALLY" record -m 3 true 2>err; rc=$?
check "-m not a power of two: nonzero" test $rc -ne 0 && grep -q 'power of two' err

"$TALLY" record -o m.data -m 300K true 2>err; rc=$?
check "-m SIZE rounded up to a power of two pages" grep -q 'rounding mmap pages size to 524288 bytes (128 pages)' err

"$TALLY" record -F max -o fm.data true 2>err; rc=$?
check "-F max: the kernel's maximum rate, said" grep -q "info: Using a maximum frequency rate of $(cat /proc/sys/kernel/perf_event_max_sample_rate) Hz" err

max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
"$TALLY" record -F $((max * 2)) -o fx.data true 2>err; rc=$?
check "-F above the kernel's maximum: throttled with perf's warning" \
	grep -q "warning: Maximum frequency rate ($max Hz) exceeded, throttling from $((max * 2)) Hz to $max Hz." err

"$TALLY" record -c 100 -F 100 true 2>err; rc=$?
check "-c with -F refused" test $rc -ne 0

"$TALLY" record --call-graph dwarf,70000 true 2>err; rc=$?
check "--call-graph dwarf size checked" grep -q 'stack size must be 1..65528 bytes' err

"$TALLY" record --call-graph lbr true 2>err; rc=$?
check "--call-graph lbr explained" grep -q 'LBR' err

"$TALLY" record -o x.data -- /nonexistent/cmd 2>err; rc=$?
check "missing command: nonzero" test $rc -ne 0
check "missing command: named" grep -q "/nonexistent/cmd" err
check "missing command: no empty file left" test ! -e x.data

"$TALLY" record -p 999999999 -o y.data 2>err; rc=$?
check "no such process: nonzero" test $rc -ne 0

"$TALLY" record -o /nonexistent-dir/f.data true 2>err; rc=$?
check "unwritable output: nonzero" test $rc -ne 0
check "unwritable output: named" grep -q "cannot open /nonexistent-dir/f.data" err

# The workload's exit status is tally's.
"$TALLY" record -q -o f.data false; rc=$?
check "workload exit status passed through" test $rc -eq 1

"$TALLY" record -q -o q.data "$HOT" 0.1 2>err; rc=$?
check "-q: quiet" test $rc -eq 0 -a ! -s err

# SIGTERM finishes the file like SIGINT.
"$TALLY" record -a -o term.data 2>err & pid=$!
for _ in $(seq 50); do [ -s term.data ] && break; sleep 0.1; done
sleep 0.2; kill -TERM $pid; wait $pid; rc=$?
check "SIGTERM: exits 0" test $rc -eq 0
check "SIGTERM: summary" grep -q 'Captured and wrote' err
size=$(od -An -t u8 -j 48 -N 8 term.data | tr -d ' ')
check "SIGTERM: header describes the data" test "${size:-0}" -gt 0

# --timeout stops a system-wide recording by itself.
"$TALLY" record -a --timeout 300 -o t.data 2>err; rc=$?
check "--timeout ends -a" test $rc -eq 0
check "--timeout: summary" grep -q 'Captured and wrote' err

# A killed recorder leaves a header that says "no data" rather than a complete-looking file.
"$TALLY" record -o k.data "$HOT" 2 2>/dev/null & pid=$!
# Kill it once it is recording (the file's header is written before the workload starts).
for _ in $(seq 50); do [ -s k.data ] && break; sleep 0.1; done
sleep 0.2; kill -KILL $pid; wait $pid 2>/dev/null
size=$(od -An -t u8 -j 48 -N 8 k.data | tr -d ' ')
check "killed mid-way: header data size is 0" test "$size" = 0

# Unprivileged (perf_event_paranoid 2, no CAP_PERFMON): user space only, like perf; -a is
# refused with the paranoid level explained.
if can_drop_root && pub=$(pub_copy "$TALLY" "$HOT"); then
	mkdir nob; chmod 777 nob
	as_nobody "$pub/tally" record -o nob/u.data "$pub/hot" 0.2 2>err; rc=$?
	check "unprivileged: records user space" test $rc -eq 0 -a -s nob/u.data
	check "unprivileged: says so" grep -q 'perf_event_paranoid=[0-9]*: recording user space only' err
	as_nobody bash -c 'ulimit -l 0; exec "$0" record -m 1024 -o nob/m.data "$1" 0.2' "$pub/tally" "$pub/hot" 2>err; rc=$?
	check "mlock limit: smaller rings instead of failing" test $rc -eq 0
	check "mlock limit: explained" grep -q 'the mlock limit (perf_event_mlock_kb = [0-9]* kB per CPU, RLIMIT_MEMLOCK = 0 kB) refuses rings of 1024 pages: using [0-9]* pages' err
	as_nobody "$pub/tally" record -a -o nob/a.data true 2>err; rc=$?
	check "unprivileged -a: nonzero" test $rc -ne 0
	check "unprivileged -a: paranoid explained" grep -q 'perf_event_paranoid is [0-9]* and this process does not have CAP_PERFMON' err
else
	skip "unprivileged fallbacks (needs root, setpriv, perf_event_paranoid >= 2 and a temp dir nobody can enter)"
fi

# One fd per event, CPU and thread: a low soft limit is raised to the hard one; a low hard
# limit is explained.
evs=cpu-clock,task-clock,page-faults,minor-faults,context-switches,cpu-migrations
(ulimit -Sn 12; exec "$TALLY" record -q -o fd1.data -e $evs "$HOT" 0.1) 2>err; rc=$?
check "low soft fd limit raised" test $rc -eq 0
(ulimit -n 12; exec "$TALLY" record -q -o fd2.data -e $evs "$HOT" 0.1) 2>err; rc=$?
check "low hard fd limit: nonzero" test $rc -ne 0
check "low hard fd limit: explained" grep -q 'too many open files' err
