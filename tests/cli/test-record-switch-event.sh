# tally record --switch-output-event EVENT against perf 6.1: each occurrence of EVENT
# cuts the output as --switch-output=signal's SIGUSR2 does (perf.data.<stamp> files,
# each readable alone), EVENT itself is not recorded, and it is seen system-wide as
# perf's side-band is (a process other than the command triggers it).
# The event is syscalls:sys_enter_getsid, which next to nothing on a machine calls; a
# stray caller could only add a cut, so the counts below are lower bounds where others
# could interfere and exact where only the test's own calls are in the window.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "record --switch-output-event (python3 absent)"; exit 0; }
EV=syscalls:sys_enter_getsid
have_tracepoint $EV || { skip "record --switch-output-event ($EV absent)"; exit 0; }

# the command: getsid(), then wait until the cut shows as a file in the directory, twice
cat >cut.py <<'EOF2'
import glob, os, sys, time
for n in (1, 2):
    os.getsid(0)
    t = time.time()
    while len(glob.glob(sys.argv[1] + '.data.*')) < n and time.time() - t < 20:
        sum(range(10000))
EOF2
# run WHO NAME ARGS...: WHO records into NAME.data with --switch-output-event and ARGS
run() {
	local who=$1 out=$2
	shift 2
	if [ "$who" = perf ]; then
		perf record -o "$out.data" --switch-output-event $EV "$@" 2>"$out.err"
	else
		"$TALLY" record -o "$out.data" --switch-output-event $EV "$@" 2>"$out.err"
	fi
}
# events FILES...: the events each file lists, one file a line
events() { for f in "$@"; do "$TALLY" evlist -i "$f" 2>&1 | tr '\n' ' '; echo; done; }

run tally t -e task-clock -- python3 cut.py t
set -- t.data.*
check "two occurrences in the command: two cuts and the last file ($# files)" test $# -ge 3
check "each file reads alone, with the recorded event only" \
	test "$(events "$@" | sort -u)" = "task-clock "
check "each cut said as with SIGUSR2: a Dump line" \
	test "$(grep -c '^\[ tally record: Dump t.data.[0-9]* \]$' t.err)" -ge 2
check "perf's summary line for the cut files" grep -q '^\[ tally record: Captured and wrote .* MB t.data.<timestamp> \]$' t.err

# with --switch-output=TIME too (perf 6.1 drops the time then; tally keeps both)
run tally h --switch-output=1h -e task-clock -- python3 cut.py h
set -- h.data.*
check "--switch-output=1h as well: the event still cuts ($# files)" test $# -ge 3

# a process that is not the command triggers it too (perf's side-band is system-wide)
rm -f go
(until [ -e go ]; do sleep 0.05; done; python3 -c 'import os; os.getsid(0)'; touch gone) &
run tally o -e task-clock -- sh -c 'touch go; until [ -e gone ]; do sleep 0.05; done; sleep 0.3'
wait
set -- o.data.*
check "another process's occurrence cuts the file ($# files)" test $# -ge 2

# SIGUSR2 still cuts (the option implies --switch-output=signal)
"$TALLY" record -o s.data --switch-output-event $EV -e task-clock -- \
	sh -c 'sleep 0.3; kill -USR2 $PPID; sleep 0.5' 2>s.err
set -- s.data.*
check "SIGUSR2 cuts too ($# files)" test $# -ge 2

"$TALLY" record -o x.data --switch-output-event nosuch true >/dev/null 2>err; rc=$?
check "a bad event: perf's parse error, usage error 129 (rc $rc)" \
	eval '[ $rc -eq 129 ] && grep -q "event syntax error" err'

have_perf || { skip "record --switch-output-event vs perf (perf absent)"; exit 0; }
run perf p -e task-clock -- python3 cut.py p
set -- p.data.*
check "perf: the same command cuts as often ($# files)" test $# -ge 3
check "perf reads tally's files: the same events" \
	test "$(for f in t.data.*; do perf evlist -i "$f" 2>/dev/null; done | sort -u)" = task-clock
perf record -o x.data --switch-output-event nosuch true >/dev/null 2>&1; prc=$?
check "a bad event: perf's exit status too ($prc)" test $prc -eq 129
