# tally stat --control fd:CTL[,ACK] | fifo:CTL[,ACK] against perf 6.1: the acks each
# command gets (perf's 5 bytes "ack\n\0", none for snapshot or an unknown word), the
# lines on stderr (Events enabled/disabled, Event NAME enabled, evlist's names, the
# unknown-event message), -D -1 leaving events disabled until 'enable', and the usage
# errors. A small python driver writes the commands and reads the acks.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "stat --control (python3 absent)"; exit 0; }
HOT="$TALLY_BUILD/workloads/hot"

cat >drive.py <<'EOF'
import os, select, sys
# drive.py CTL ACK CMD...: each command, then what came back on ACK within 5 s; then
# the file "done" ends the workload (stat holds the FIFOs open until then)
c, a = os.open(sys.argv[1], os.O_WRONLY), os.open(sys.argv[2], os.O_RDONLY)
for cmd in sys.argv[3:]:
    os.write(c, (cmd + '\n').encode())
    wait = 0.3 if cmd in ('snapshot', 'bogus', '') else 5
    got = os.read(a, 100) if select.select([a], [], [], wait)[0] else b'(none)'
    print('%r -> %r' % (cmd, got))
open('done', 'w').close()
EOF
# workloads that run until the driver is done: idle, and busy
IDLE=(sh -c 'until [ -e done ]; do sleep 0.05; done')
BUSY=(sh -c 'until [ -e done ]; do :; done')
CMDS=(enable ping disable 'enable cs' 'disable cs' bogus evlist stop snapshot 'enable nosuch')

# run WHO OUT ARGS...: WHO's stat with --control fifo:ctl,ack and ARGS, driven by CMDS;
# the acks in OUT.acks, stderr in OUT.err
run() {
	local who=$1 out=$2
	shift 2
	rm -f ctl ack done && mkfifo ctl ack || return 1
	if [ "$who" = perf ]; then
		perf stat --control fifo:ctl,ack "$@" 2>"$out.err" &
	else
		"$TALLY" stat --control fifo:ctl,ack "$@" 2>"$out.err" &
	fi
	timeout 60 python3 drive.py ctl ack "${CMDS[@]}" >"$out.acks"
	wait $!
}
before_report() { sed '/Performance counter stats/,$d' "$1" | grep -v '^$'; }

run tally t -D -1 -e cs,task-clock -- "${IDLE[@]}"
cat >want.acks <<'EOF'
'enable' -> b'ack\n\x00'
'ping' -> b'ack\n\x00'
'disable' -> b'ack\n\x00'
'enable cs' -> b'ack\n\x00'
'disable cs' -> b'ack\n\x00'
'bogus' -> b'(none)'
'evlist' -> b'ack\n\x00'
'stop' -> b'ack\n\x00'
'snapshot' -> b'(none)'
'enable nosuch' -> b'ack\n\x00'
EOF
check "acks: 5 bytes each, none for snapshot or an unknown word" cmp -s want.acks t.acks
printf '%s\n' "Events disabled" "Events enabled" "Events disabled" "Event cs enabled" \
	"Event cs disabled" cs task-clock "failed: can't find 'nosuch' event" >want.err
check "stderr: perf's lines for each command" test "$(before_report t.err)" = "$(cat want.err)"

"$TALLY" stat -D -1 -e task-clock -x, -- "$HOT" 0.2 2>t.csv
check "-D -1 without --control: never enabled, <not counted>" grep -q "^<not counted>,msec,task-clock" t.csv
CMDS=(enable)
run tally e -D -1 -x, -e task-clock -- "${BUSY[@]}"
check "-D -1, then 'enable': counted" grep -q "^[0-9.]*,msec,task-clock," e.err
rm -f ctl ack done && mkfifo ctl ack
"$TALLY" stat --control fd:7,8 -D -1 -x, -e task-clock -- "${BUSY[@]}" 2>f.err 7<>ctl 8<>ack &
timeout 60 python3 drive.py ctl ack enable >f.acks
wait $!
check "fd:CTL,ACK: inherited descriptors work the same" \
	test "$(cat f.acks)" = "'enable' -> b'ack\\n\\x00'" -a -n "$(grep '^[0-9.]*,msec,task-clock' f.err)"
run tally q --quiet -D -1 -e task-clock -- "${IDLE[@]}"
check "--quiet: acks, and nothing on stderr" test ! -s q.err -a "$(cat q.acks)" = "'enable' -> b'ack\\n\\x00'"

bad=""
for c in bogus fd: fifo: fd:abc fd:99 fifo:/nonexistent/ctl fifo:ctl,/nonexistent/ack; do
	rm -f ctl && mkfifo ctl
	"$TALLY" stat --control "$c" -e cs true >/dev/null 2>err </dev/null; rc=$?
	{ [ $rc -eq 129 ] && grep -q -- "--control" err; } || bad="$bad '$c'(rc $rc: $(head -1 err))"
done
check "bad --control arguments: usage error 129 naming the option${bad:+:$bad}" test -z "$bad"

have_perf || { skip "stat --control vs perf (perf absent)"; exit 0; }
CMDS=(enable ping disable 'enable cs' 'disable cs' bogus evlist stop snapshot 'enable nosuch')
run perf p -D -1 -e cs,task-clock -- "${IDLE[@]}"
run tally t -D -1 -e cs,task-clock -- "${IDLE[@]}"
check "acks as perf's" cmp -s p.acks t.acks
check "stderr before the report as perf's" test "$(before_report p.err)" = "$(before_report t.err)"
for c in bogus fd: fifo: fd:abc fifo:/nonexistent/ctl; do
	perf stat --control "$c" -e cs true >/dev/null 2>&1 </dev/null; prc=$?
	"$TALLY" stat --control "$c" -e cs true >/dev/null 2>&1 </dev/null; trc=$?
	check "--control $c refused as perf (exit $prc, tally $trc)" test $prc -eq $trc
done
