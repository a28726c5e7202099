# tally stat -G/--cgroup and --for-each-cgroup against perf 6.1: two cgroups made for the
# test under the perf_event hierarchy (one idle, one running a busy loop), removed at the
# end. Shapes of std, CSV and JSON lines with the cgroup column, which events get which
# cgroup (-G lists, a single name, empty names), --for-each-cgroup's order with names and
# with patterns, metrics kept per cgroup, and the usage errors.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "stat cgroups (python3 absent)"; exit 0; }
HOT="$TALLY_BUILD/workloads/hot"

MNT=$(perf_event_cgroup_root)
CG=tally-test-$$
if [ -z "$MNT" ] || ! mkdir "$MNT/$CG" 2>/dev/null; then
	skip "stat cgroups (no writable perf_event cgroup hierarchy; needs root)"
	exit 0
fi
mkdir "$MNT/$CG/idle" "$MNT/$CG/busy" "$MNT/$CG/busy/sub"
# pinned: -A shows it counted on CPU 0 only, in perf and tally alike
# (600 s, ended by the cleanup: the test may take minutes on a loaded machine)
taskset -c 0 "$HOT" 600 & hp=$!
echo $hp >"$MNT/$CG/busy/cgroup.procs"
cleanup() {
	kill $hp 2>/dev/null; wait $hp 2>/dev/null
	rmdir "$MNT/$CG/busy/sub" "$MNT/$CG/busy" "$MNT/$CG/idle" "$MNT/$CG" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
I=$CG/idle B=$CG/busy

# what tally prints with and without perf: cgroup names in CSV field 4, events in 3
"$TALLY" stat -x, -a -e cpu-clock,cs,faults -G ",$I" --timeout 100 2>t.csv
check "-G ,CG: the first event has none, the second the cgroup, the third none" \
	test "$(cut -d, -f3,4 t.csv | tr '\n' ' ')" = "cpu-clock, cs,$I faults, "
"$TALLY" stat -x, -a -e cpu-clock,cs -G "$B" --timeout 100 2>t.csv
check "-G with one cgroup: every event counts in it" \
	test "$(cut -d, -f3,4 t.csv | tr '\n' ' ')" = "cpu-clock,$B cs,$B "
check "-G busy cgroup: counted, with a metric" \
	grep -q "^[0-9.]*,msec,cpu-clock,$B,[0-9]*,100.00,[0-9.]*,CPUs utilized" t.csv
"$TALLY" stat -x, -a -e cpu-clock --for-each-cgroup "$B,$I," --timeout 100 2>t.csv
check "--for-each-cgroup names: in the order given, empty is the root '/'" \
	test "$(cut -d, -f4 t.csv | tr '\n' ' ')" = "$B $I / "
"$TALLY" stat -x, -a -e cpu-clock,cs --for-each-cgroup "^$CG/[ib]" --timeout 100 2>t.csv
check "--for-each-cgroup pattern: every match, events repeated per cgroup" \
	test "$(cut -d, -f3,4 t.csv | sort | tr '\n' ' ')" = \
	"cpu-clock,$B cpu-clock,$B/sub cpu-clock,$I cs,$B cs,$B/sub cs,$I "
check "--for-each-cgroup: not-counted in the idle cgroup" grep -q "^<not counted>,msec,cpu-clock,$I," t.csv
check "--for-each-cgroup: metrics per cgroup (busy cs per busy cpu-clock)" \
	grep -q ",cs,$B,[0-9]*,100.00,[0-9.]*,[KM]*/sec" t.csv

bad=""
while read -r want args; do
	# shellcheck disable=SC2086
	"$TALLY" stat $args true >/dev/null 2>err; rc=$?
	[ $rc -eq "$want" ] || bad="$bad '$args'(rc $rc)"
	head -1 err | grep -qi "cgroup" || bad="$bad '$args'(message: $(head -1 err))"
done <<EOF
129 -a -G $I
129 -a -e cs -G $I,$I
129 -a -e cs -G $CG/nosuch
129 -e cs -G $I
129 -a -e cs -G $I --for-each-cgroup $I
129 -a -e cs --for-each-cgroup $CG/nosuch
129 -a -e cs --for-each-cgroup $CG/nosuch.*
EOF
check "cgroup usage errors exit 129 and say what is wrong${bad:+:$bad}" test -z "$bad"

have_perf || { skip "stat cgroups vs perf (perf absent)"; exit 0; }

# -A -G BUSY: a line per CPU with the cgroup, CPU 1 <not counted> (the busy task is
# pinned to CPU 0), as perf's. (tally's CPU 0 line used to come out <not counted> now
# and then: it enabled the events through an interrupt on CPU 0, where perf moves to
# each CPU to enable its events; docs/stat.md, "Cgroups".)
"$TALLY" stat -x, -A -a -e cpu-clock -G "$B" -- sleep 0.1 2>t.csv
check "-A -G BUSY: a line per CPU, each with the cgroup" \
	test "$(cut -d, -f1,4,5 t.csv | tr '\n' ' ')" = "CPU0,cpu-clock,$B CPU1,cpu-clock,$B "
check "-A -G BUSY: the idle CPU 1 not counted" grep -q "^CPU1,<not counted>,msec,cpu-clock,$B," t.csv
for f in std csv json; do
	case $f in std) fmt=() ;; csv) fmt=(-x,) ;; json) fmt=(-j) ;; esac
	stat_compare "$f: -G ,IDLE with events outside any cgroup" $f "${fmt[@]}" -a \
		-e cpu-clock,cs,faults -G ",$I" -- sleep 0.1
	stat_compare "$f: -G BUSY,IDLE" $f "${fmt[@]}" -a -e cpu-clock,cs -G "$B,$I" -- sleep 0.1
	stat_compare "$f: -A -G BUSY" $f "${fmt[@]}" -A -a -e cpu-clock -G "$B" -- sleep 0.1
	stat_compare "$f: --for-each-cgroup BUSY,IDLE" $f "${fmt[@]}" -a -e cpu-clock,cs \
		--for-each-cgroup "$B,$I" -- sleep 0.1
	stat_compare "$f: --for-each-cgroup with default events" $f "${fmt[@]}" -a \
		--for-each-cgroup "$I" -- sleep 0.1
done
for p in "^$CG/" "$CG/[ib]" "$CG/busy,$CG/.*" "$CG/busy,"; do
	perf stat -x, -a -e cs --for-each-cgroup "$p" -- sleep 0.01 2>p.out
	"$TALLY" stat -x, -a -e cs --for-each-cgroup "$p" -- sleep 0.01 2>t.out
	check "--for-each-cgroup '$p': the cgroups perf expands, in its order" \
		test "$(cut -d, -f3,4 p.out)" = "$(cut -d, -f3,4 t.out)"
done
for a in "-a -G $I" "-a -e cs -G $I,$I" "-a -e cs -G $CG/nosuch" \
	 "-a -e cs -G $I --for-each-cgroup $I" "-a -e cs --for-each-cgroup $CG/nosuch.*"; do
	# shellcheck disable=SC2086
	perf stat $a true >/dev/null 2>&1; prc=$?
	# shellcheck disable=SC2086
	"$TALLY" stat $a true >/dev/null 2>&1; trc=$?
	check "refused like perf: $a (perf $prc, tally $trc)" test $prc -ne 0 -a $trc -ne 0
done
