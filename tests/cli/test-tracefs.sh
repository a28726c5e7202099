# tracefs mounted on demand, as perf does: on a fresh boot neither tracefs nor debugfs is
# mounted, and tracepoints must work all the same (stat, record + script, list), or,
# for a user who may not mount, fail saying why. Each case runs in its own mount
# namespace with tracefs unmounted, so it depends on nothing an earlier test or perf
# mounted, and changes nothing outside.
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null 2>&1 || ! unshare -m true 2>/dev/null; then
	skip "tracefs mounted on demand (needs root and unshare -m)"
	exit 0
fi
# unmounted CMD...: CMD in a private mount namespace without tracefs or debugfs
unmounted() {
	unshare -m --propagation private sh -c '
		umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null
		umount /sys/kernel/debug 2>/dev/null
		if [ -e /sys/kernel/tracing/events ]; then echo "tracefs still mounted" >&2; exit 99; fi
		exec "$@"' sh "$@"
}

unmounted "$TALLY" stat -x, -e sched:sched_switch -- "$HOT" --sleeps 5 >st.out 2>st.err; rc=$?
if [ $rc = 99 ]; then skip "tracefs mounted on demand (cannot unmount tracefs here)"; exit 0; fi
check "stat -e sched:sched_switch with tracefs unmounted: counts (rc $rc: $(head -c 200 st.err | tr '\n' ' '))" \
	eval 'test $rc -eq 0 && grep -Eq "^[1-9][0-9]*,,sched:sched_switch," st.err'

unmounted "$TALLY" record -q -e sched:sched_switch -o tp.data -- "$HOT" --sleeps 5 >/dev/null 2>rec.err; rc=$?
check "record -e sched:sched_switch with tracefs unmounted (rc $rc: $(head -c 200 rec.err | tr '\n' ' '))" test $rc -eq 0
"$TALLY" script -i tp.data >tp.out 2>&1
check "script decodes the recording's tracepoints (TRACING_DATA written)" grep -q 'sched:sched_switch: .*prev_comm=' tp.out

unmounted "$TALLY" list sched:sched_switch >ls.out 2>ls.err
check "list sched:sched_switch with tracefs unmounted" grep -q 'sched:sched_switch *\[Tracepoint event\]' ls.out

if command -v setpriv >/dev/null 2>&1 && chmod 711 "$TMP" && as_nobody test -x "$TMP" &&
   pub=$(pub_copy "$TALLY"); then
	unmounted "${NOBODY[@]}" --bounding-set=-all "$pub/tally" stat -e sched:sched_switch true \
		>/dev/null 2>np.err; rc=$?
	check "a user who may not mount tracefs: nonzero exit (perf: 129)" test $rc -eq 129
	check "a user who may not mount tracefs: says mounting needs root ($(head -c 300 np.err | tr '\n' ' '))" \
		grep -q 'tracefs is not mounted and mounting it on /sys/kernel/tracing needs root (CAP_SYS_ADMIN)' np.err
else
	skip "tracefs mount refused to a user (needs setpriv and a temp dir nobody can enter)"
fi
