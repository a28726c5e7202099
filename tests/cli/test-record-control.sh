# tally record --control fd:CTL[,ACK] | fifo:CTL[,ACK] against perf 6.1: the acks each
# command gets (perf's 5 bytes "ack\n\0"; snapshot acked, an unknown word not), the
# lines on stderr (Events enabled/disabled, Event NAME enabled, evlist [-F|-g|-v]),
# -D -1 with samples only between 'enable' and 'disable', 'stop' ending the recording
# and the command, and the usage errors. A small python driver writes the commands,
# reads the acks and notes the times around them.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "record --control (python3 absent)"; exit 0; }

cat >drive.py <<'EOF2'
import os, select, sys, time
# drive.py CTL ACK CMD...: each command, then what came back on ACK within 5 s ("sleepN"
# waits N s); "times" gets CLOCK_MONOTONIC ns before each command is sent and after its
# ack; then the file "done" ends the workload
c, a = os.open(sys.argv[1], os.O_WRONLY), os.open(sys.argv[2], os.O_RDONLY)
with open('times', 'w') as t:
    for cmd in sys.argv[3:]:
        if cmd.startswith('sleep'):
            time.sleep(float(cmd[5:]))
            continue
        t.write('%s sent %d\n' % (cmd, time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
        os.write(c, (cmd + '\n').encode())
        wait = 0.3 if cmd in ('bogus', '') else 5
        got = os.read(a, 100) if select.select([a], [], [], wait)[0] else b'(none)'
        t.write('%s acked %d\n' % (cmd, time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
        print('%r -> %r' % (cmd, got))
open('done', 'w').close()
EOF2
# workloads that run until the driver is done: idle, and busy
IDLE=(sh -c 'until [ -e done ]; do sleep 0.05; done')
BUSY=(sh -c 'until [ -e done ]; do :; done')
CMDS=(enable ping disable 'enable cs' 'disable cs' bogus evlist 'evlist -F' 'evlist -g'
      snapshot stop)

# run WHO OUT ARGS...: WHO's record -o OUT.data with --control fifo:ctl,ack and ARGS,
# driven by CMDS; the acks in OUT.acks, stderr in OUT.err, the exit status in OUT.rc
run() {
	local who=$1 out=$2
	shift 2
	rm -f ctl ack done && mkfifo ctl ack || return 1
	if [ "$who" = perf ]; then
		perf record -o "$out.data" --control fifo:ctl,ack "$@" 2>"$out.err" &
	else
		"$TALLY" record -o "$out.data" --control fifo:ctl,ack "$@" 2>"$out.err" &
	fi
	timeout 60 python3 drive.py ctl ack "${CMDS[@]}" >"$out.acks"
	wait $!
	echo $? >"$out.rc"
}
# stderr without the summary lines ("[ perf record: ...")
lines() { grep -v '^\[ [a-z]* record: ' "$1"; }

run tally t -D -1 -e cs,task-clock -- "${IDLE[@]}"
for c in "${CMDS[@]}"; do	# every command acked but the unknown word
	if [ "$c" = bogus ]; then echo "'$c' -> b'(none)'"; else echo "'$c' -> b'ack\\n\\x00'"; fi
done >want.acks
check "acks: 5 bytes each, snapshot too, none for an unknown word" cmp -s want.acks t.acks
printf '%s\n' "Events disabled" "Events enabled" "Events disabled" "Event cs enabled" \
	"Event cs disabled" cs task-clock dummy:HG "cs: sample_freq=4000" \
	"task-clock: sample_freq=4000" "dummy:HG: sample_period=1" cs task-clock dummy:HG >want.err
check "stderr: perf's lines for each command" test "$(lines t.err)" = "$(cat want.err)"
check "'stop' ended the recording: a whole file (its events named by its features)" \
	test "$("$TALLY" evlist -i t.data 2>&1 | tr '\n' ' ')" = "cs task-clock dummy:HG "

# samples only between 'enable' and 'disable' (sample times on CLOCK_MONOTONIC, -k)
CMDS=(sleep0.3 enable sleep0.5 disable sleep0.3 stop)
run tally s -D -1 -k mono -e task-clock -- "${BUSY[@]}"
"$TALLY" script -i s.data -F time --ns 2>/dev/null | tr -d ' :.' >s.times
lo=$(awk '$1 == "enable" && $2 == "sent" { print $3 }' times)
hi=$(awk '$1 == "disable" && $2 == "acked" { print $3 }' times)
check "-D -1: samples only between 'enable' and 'disable' ($(wc -l <s.times) samples)" \
	awk -v lo="$lo" -v hi="$hi" 'BEGIN { bad = 0 } $1 < lo || $1 > hi { bad++ }
		END { exit !(NR > 0 && !bad) }' s.times
CMDS=(sleep0.3 stop)
run tally n -D -1 -e task-clock -- "${BUSY[@]}"
check "-D -1 and no 'enable': no sample" test "$("$TALLY" script -i n.data 2>/dev/null | wc -l)" = 0

rm -f ctl ack done && mkfifo ctl ack
"$TALLY" record -o f.data --control fd:7,8 -e task-clock -- "${IDLE[@]}" 2>f.err 7<>ctl 8<>ack &
timeout 60 python3 drive.py ctl ack ping >f.acks
wait $!
check "fd:CTL,ACK: inherited descriptors work the same" \
	test "$(cat f.acks)" = "'ping' -> b'ack\\n\\x00'" -a -s f.data
CMDS=(enable disable)
run tally q -q -D -1 -e task-clock -- "${IDLE[@]}"
check "-q: acks, and nothing on stderr" test ! -s q.err -a "$(wc -l <q.acks)" = 2

bad=""
for c in bogus fd: fifo: fd:abc fifo:/nonexistent/ctl fifo:ctl,/nonexistent/ack; do
	rm -f ctl && mkfifo ctl
	"$TALLY" record -o x.data --control "$c" -e cs true >/dev/null 2>err </dev/null; rc=$?
	{ [ $rc -eq 129 ] && grep -q -- "--control" err; } || bad="$bad '$c'(rc $rc: $(head -1 err))"
done
check "bad --control arguments: usage error 129 naming the option${bad:+:$bad}" test -z "$bad"

have_perf || { skip "record --control vs perf (perf absent)"; exit 0; }
CMDS=(enable ping disable 'enable cs' 'disable cs' bogus evlist 'evlist -F' 'evlist -g'
      'enable nosuch' snapshot stop)
run perf p -D -1 -e cs,task-clock -- "${IDLE[@]}"
run tally t -D -1 -e cs,task-clock -- "${IDLE[@]}"
check "acks as perf's" cmp -s p.acks t.acks
if [ "$(lines p.err)" = "$(lines t.err)" ]; then
	ok "stderr as perf's (but the summary)"
else
	fail "stderr as perf's (but the summary)"
	diff <(lines p.err) <(lines t.err) | head -10 | sed 's/^/# /'
fi
check "'stop': the command's exit status, as perf's ($(cat p.rc))" test "$(cat p.rc)" = "$(cat t.rc)"
CMDS=(sleep0.3 enable sleep0.5 disable sleep0.3 stop)
run perf ps -D -1 -k mono -e task-clock -- "${BUSY[@]}"
perf script -i ps.data -F time --ns 2>/dev/null | tr -d ' :.' >ps.times
lo=$(awk '$1 == "enable" && $2 == "sent" { print $3 }' times)
hi=$(awk '$1 == "disable" && $2 == "acked" { print $3 }' times)
check "perf too: samples only between 'enable' and 'disable' (the oracle of the test above)" \
	awk -v lo="$lo" -v hi="$hi" 'BEGIN { bad = 0 } $1 < lo || $1 > hi { bad++ }
		END { exit !(NR > 0 && !bad) }' ps.times
for c in bogus fd: fifo: fd:abc fifo:/nonexistent/ctl; do
	perf record -o x.data --control "$c" -e cs true >/dev/null 2>&1 </dev/null; prc=$?
	"$TALLY" record -o x.data --control "$c" -e cs true >/dev/null 2>&1 </dev/null; trc=$?
	check "--control $c refused as perf (exit $prc, tally $trc)" test $prc -eq $trc
done
