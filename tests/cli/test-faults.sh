# Faults: disk full during record, the workload killed by a signal, record stopped by
# SIGINT/SIGTERM, `report | head` (EPIPE), an unwritable output path, an existing output
# renamed to .old. A recording must never be lost silently, nor left looking complete
# when it is not.
. "$(dirname "$0")/lib.sh"

HOT="$TALLY_BUILD/workloads/hot"
have_cmd() { [ -x "$TALLY" ] && ! "$TALLY" "$1" -h 2>&1 | grep -q "is not a tally command"; }
sanitizer_re='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:'

# "complete": header says where the data ends, it ends inside the file, and features follow.
complete() {
	python3 - "$1" <<'EOF'
import struct, sys, os
raw = open(sys.argv[1], 'rb').read()
if len(raw) < 104 or raw[:8] != b'PERFILE2':
    sys.exit(1)
size, = struct.unpack_from('<Q', raw, 8)
if size == 16:      # pipe layout: nothing in it claims completeness
    sys.exit(1)
doff, dsize = struct.unpack_from('<QQ', raw, 40)
sys.exit(0 if dsize > 0 and doff + dsize <= len(raw) else 1)
EOF
}
# A file is fine when it is complete and readable without warnings, or when it does not
# claim to be complete (readers will say it was cut short).
readable_clean() {
	if have_cmd report; then
		timeout 60 "$TALLY" report -i "$1" --stdio >rep.out 2>rep.err || return 1
	elif have_perf; then
		timeout 60 perf report -i "$1" --stdio >rep.out 2>rep.err || return 1
	else
		: >rep.err
	fi
	! grep -Eqi 'truncat|cut short|missing|warning|properly terminated' rep.err
}

if ! have_cmd record; then
	skip "faults: tally record (command not built yet)"
else
	# --- workload killed by a signal: the recording up to then is kept, complete.
	"$TALLY" record -q -e task-clock -o killed.data -- sh -c "$HOT 0.2; kill -KILL \$\$" >out 2>err
	rc=$?
	check "record: workload killed by SIGKILL does not crash tally (rc=$rc)" test $rc -ne 134 -a $rc -ne 139
	check "record: workload killed: no sanitizer report" bash -c "! grep -Eq '$sanitizer_re' err"
	if [ -f killed.data ] && complete killed.data && readable_clean killed.data; then
		ok "record: workload killed: perf.data complete and readable"
	else
		fail "record: workload killed: perf.data complete and readable"; head -3 err rep.err 2>/dev/null | sed 's/^/    /'
	fi

	# --- tally record stopped by SIGINT / SIGTERM: writes a complete file and stops the workload.
	for sig in INT TERM; do
		rm -f sig.data
		set -m	# background jobs keep SIGINT (non-interactive shells ignore it otherwise)
		"$TALLY" record -q -e task-clock -o sig.data -- "$HOT" 30 >out 2>err &
		pid=$!
		set +m
		for _ in $(seq 100); do [ -s sig.data ] && break; sleep 0.1; done
		sleep 0.3
		kill -"$sig" "$pid"
		# hang guard: record must stop (it is killed hard after 30 s; no timing asserted)
		for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid"; rc=$?
		check "record: SIG$sig stops record without a crash (rc=$rc)" test $rc -ne 137 -a $rc -ne 134 -a $rc -ne 139
		if [ -f sig.data ] && complete sig.data && readable_clean sig.data; then
			ok "record: SIG$sig: perf.data complete and readable"
		else
			fail "record: SIG$sig: perf.data complete and readable"; head -3 err rep.err 2>/dev/null | sed 's/^/    /'
		fi
		check "record: SIG$sig: workload stopped too" bash -c "! pgrep -f '^$HOT 30\$' >/dev/null"
	done

	# --- existing output renamed to .old (as perf does), unless it is empty.
	echo previous >perf.data
	"$TALLY" record -q -e task-clock -- "$HOT" 0.05 >out 2>err
	check "record: existing perf.data renamed to perf.data.old" grep -qx previous perf.data.old
	check "record: new perf.data written" complete perf.data
	if have_perf; then
		mkdir -p p && (cd p && echo previous >perf.data && perf record -q -e task-clock -- "$HOT" 0.05 >/dev/null 2>&1)
		check "record: .old behaviour matches perf" grep -qx previous p/perf.data.old
	else
		skip "record: .old behaviour against perf (perf absent)"
	fi

	# --- unwritable output paths: one actionable message naming the path, nonzero exit.
	"$TALLY" record -q -e task-clock -o /nonexistent-dir/x.data -- true >out 2>err; rc=$?
	check "record: output in a missing directory fails" test $rc -ne 0 -a $rc -lt 126
	check "record: the message names the path and the reason" \
		grep -q '/nonexistent-dir/x.data.*No such file or directory' err
	mkdir ro && chmod 0555 ro
	if [ "$(id -u)" -ne 0 ]; then
		"$TALLY" record -q -e task-clock -o ro/x.data -- true >out 2>err; rc=$?
		check "record: unwritable directory fails with a message" test $rc -ne 0 -a -s err
		check "record: ... saying permission denied" grep -qi 'permission denied' err
	fi
	# /proc refuses new files even to root.
	"$TALLY" record -q -e task-clock -o /proc/tally-test.data -- true >out 2>err; rc=$?
	check "record: output in /proc fails with a message" test $rc -ne 0 -a $rc -lt 126 -a -s err

	# --- disk full: a 256 KiB tmpfs fills up during the recording.
	if [ "$(id -u)" -ne 0 ]; then
		skip "record: disk full (needs root to mount a small tmpfs)"
	elif ! { mkdir -p small && mount -t tmpfs -o size=256k tmpfs small; } 2>/dev/null; then
		skip "record: disk full (mount -t tmpfs not permitted here)"
	else
		trap 'umount "$TMP/small" 2>/dev/null; rm -rf "$TMP"' EXIT
		timeout 120 "$TALLY" record -e task-clock -c 10000 -g -o small/perf.data -- "$HOT" 2 >out 2>err
		rc=$?
		check "record: disk full exits nonzero (rc=$rc)" test $rc -ne 0 -a $rc -ne 124 -a $rc -lt 126
		check "record: disk full says so" grep -Eqi 'no space left|disk full|ENOSPC' err
		check "record: disk full: no sanitizer report" bash -c "! grep -Eq '$sanitizer_re' err"
		# Either the file does not claim to be complete (readers say it was cut short), or
		# its header describes exactly the complete records it holds and it reads cleanly.
		if [ -f small/perf.data ] && complete small/perf.data; then
			check "record: disk full leaves a consistent, readable prefix" readable_clean small/perf.data
		else
			ok "record: disk full leaves no file that claims to be complete"
		fi
		umount small
	fi
fi

# --- stat output file faults.
if have_cmd stat; then
	"$TALLY" stat -e task-clock -o /nonexistent-dir/stat.txt -- true >out 2>err; rc=$?
	check "stat: -o in a missing directory fails" test $rc -ne 0 -a $rc -lt 126
	check "stat: the message names the path" grep -q '/nonexistent-dir/stat.txt' err
else
	skip "faults: tally stat (command not built yet)"
fi

# --- `report | head` / `script | head`: no error spew when the reader goes away (EPIPE).
have_input=0
if have_cmd record && "$TALLY" record -q -e task-clock -c 20000 -o many.data -- "$HOT" 0.3 >/dev/null 2>&1; then
	have_input=1
elif have_perf && perf record -q -e task-clock -c 20000 -o many.data -- "$HOT" 0.3 >/dev/null 2>&1; then
	have_input=1
fi
for cmd in script report; do
	if ! have_cmd "$cmd"; then skip "faults: tally $cmd | head (command not built yet)"; continue; fi
	if [ $have_input = 0 ]; then skip "faults: tally $cmd | head (no recording: neither tally nor perf record worked)"; continue; fi
	extra=(); [ "$cmd" = report ] && extra=(--stdio --sort sym,dso,pid)
	"$TALLY" "$cmd" -i many.data "${extra[@]}" 2>err | head -1 >/dev/null
	rc=${PIPESTATUS[0]}
	check "$cmd | head: exits quietly (rc=$rc)" test $rc -eq 0 -o $rc -eq 141 -o $rc -eq 1
	if [ -s err ]; then fail "$cmd | head: no error spew on EPIPE"; head -3 err | sed 's/^/    /'; else ok "$cmd | head: no error spew on EPIPE"; fi
done
