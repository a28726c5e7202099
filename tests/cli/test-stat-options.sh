# perf stat options of issue 16 beyond the cgroup and control ones: -S/--sync, -g/--group,
# --scale/--no-scale against perf 6.1, and the options tally refuses: one line saying
# what is missing (on this machine, or on a fake sysfs that has the PMU), exit 1.
. "$(dirname "$0")/lib.sh"

# refused: one line, exit 1, never "unknown option"; what is missing, read from sysfs
bad=""
for a in "-T" "--transaction" "--topdown" "--td-level 1" "--smi-cost" "--iostat" "--iostat=list" \
	 "--cputype core" "--hybrid-merge" "-M IPC" "--metrics=IPC" "--metric-no-group" \
	 "--metric-no-merge" "--percore-show-thread"; do
	# shellcheck disable=SC2086
	"$TALLY" stat $a -e cs true >out 2>err </dev/null; rc=$?
	{ [ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ] && ! grep -qi unknown err && [ ! -s out ]; } ||
		bad="$bad '$a'(rc $rc: $(head -c 100 err))"
done
check "refused stat options: one line, exit 1${bad:+:$bad}" test -z "$bad"
FS=$TMP/sysfs/bus/event_source/devices
mkdir -p "$FS/software"
"$TALLY" stat --sysfs "$TMP/sysfs" --topdown true 2>err
check "--topdown without a cpu PMU says so" grep -q "needs the cpu PMU's topdown events.*has no cpu PMU" err
mkdir -p "$FS/cpu/events"
"$TALLY" stat --sysfs "$TMP/sysfs" --topdown true 2>err
check "--topdown with a cpu PMU lacking the events names them" grep -q "cpu PMU has no events/slots" err
touch "$FS/cpu/events/slots"
"$TALLY" stat --sysfs "$TMP/sysfs" --topdown true 2>err; rc=$?
check "--topdown where the events exist: tally's own limit, still exit 1" \
	test $rc -eq 1 -a -n "$(grep 'but tally does not use them yet' err)"

# -S: sync() before each run, as perf (seen with strace)
if command -v strace >/dev/null; then
	n=$(strace -f -e trace=sync "$TALLY" stat -S -r 3 -e cs true 2>&1 >/dev/null | grep -c '^sync()\|] sync()')
	check "-S: one sync() per run (3 with -r 3: $n)" test "$n" -eq 3
	n=$(strace -f -e trace=sync "$TALLY" stat -e cs true 2>&1 >/dev/null | grep -c 'sync()')
	check "without -S: no sync()" test "$n" -eq 0
else
	skip "-S seen with strace (strace absent)"
fi

"$TALLY" stat -x, -g -e cs,faults,task-clock true 2>g.csv
check "-g: one group, read together (the same time running for all)" \
	test "$(cut -d, -f4 g.csv | sort -u | wc -l)" -eq 1
"$TALLY" stat -x, --no-scale -e cs,task-clock true 2>n.csv
check "--no-scale: counts printed" grep -q ",task-clock," n.csv

have_perf || { skip "stat -g, --no-scale, -S vs perf (perf absent)"; exit 0; }
for f in std csv json; do
	case $f in std) fmt=() ;; csv) fmt=(-x,) ;; json) fmt=(-j) ;; esac
	stat_compare "$f: -g with software events" $f "${fmt[@]}" -g -e cs,faults,task-clock true
	stat_compare "$f: --no-scale" $f "${fmt[@]}" --no-scale -e cs,task-clock true
	stat_compare "$f: --scale -S" $f "${fmt[@]}" --scale -S -e cs,task-clock true
done
if command -v strace >/dev/null; then
	# group_fd of each perf_event_open: -1 for the leader, the leader's fd for the others
	groups() { strace -f -e trace=perf_event_open "$@" 2>&1 >/dev/null |
		   grep -o 'perf_event_open(.*) = [0-9]*' | sed 's/.*}, //' |
		   awk -F', ' '{print ($3 == -1) ? "lead" : "member"}' |
		   tr '\n' ' '; }
	p=$(groups perf stat -g -e cs,faults,task-clock true)
	t=$(groups "$TALLY" stat -g -e cs,faults,task-clock true)
	check "-g: leader and members opened as perf opens them ($t)" test "$p" = "$t" -a -n "$t"
fi

# --metric-only: the same bytes as perf 6.1 on this machine (its metrics here are rates
# and CPUs utilized, left out, and hardware events, empty cells), timestamps masked
mo() { "$@" 2>&1 >/dev/null | grep -v "seconds" | sed -E 's/[0-9]+\.[0-9]{9}/TS/'; }
bad=""
for f in "" "-x," "-j"; do
	for m in "" "-A -a" "--per-socket -a" "--per-core -a" "--per-node -a" "-C 1" \
		 "-I 100 --interval-count 1 -a"; do
		for ev in "cs,task-clock,cycles,instructions" "branch-misses,cs"; do
			# shellcheck disable=SC2086
			mo perf stat --metric-only $f $m -e $ev -- sleep 0.1 >p.txt
			# shellcheck disable=SC2086
			mo "$TALLY" stat --metric-only $f $m -e $ev -- sleep 0.1 >t.txt
			# perf 6.1 stops after the header of -j -A when the first event is not
			# supported; tally prints the lines
			[ "$f $m $ev" = "-j -A -a branch-misses,cs" ] && continue
			cmp -s p.txt t.txt || bad="$bad [$f $m -e $ev]"
		done
	done
done
check "--metric-only: perf's bytes in std, CSV, JSON and each aggregation${bad:+; differs:$bad}" \
	test -z "$bad"
mo perf stat --metric-only -x, -a -I 100 --interval-count 3 -e cs,cycles >p.txt
mo "$TALLY" stat --metric-only -x, -a -I 100 --interval-count 3 -e cs,cycles >t.txt
check "--metric-only -I: header once, a line per interval, as perf" cmp -s p.txt t.txt
bad=""
for a in "-r 2" "--per-thread -a"; do
	# shellcheck disable=SC2086
	perf stat --metric-only $a -e cs true >/dev/null 2>&1; prc=$?
	# shellcheck disable=SC2086
	"$TALLY" stat --metric-only $a -e cs true >/dev/null 2>err; trc=$?
	{ [ $prc -ne 0 ] && [ $trc -eq 129 ] && grep -q "metric-only is not supported with" err; } ||
		bad="$bad '$a'(perf $prc, tally $trc)"
done
check "--metric-only with -r or --per-thread: refused like perf${bad:+:$bad}" test -z "$bad"
