# tally top in batch mode (--stdio --iterations): the hot workload's hot function on
# top with the right comm and dso, system-wide and per process, call graphs, events,
# processes that start and exec while top runs, option errors, SIGINT, a closed pipe;
# perf top as the oracle for the top entry when perf is present.
. "$(dirname "$0")/lib.sh"

HOT="$TALLY_BUILD/workloads/hot"
# top cuts its lines to the window: 25 x 80 when stdout is no terminal. A system-wide
# table on a busy machine (the suite's other tests) can have a dso column wide enough to
# push a row's symbol past column 80 ("363:hot  hot  ...  [.] " with spin cut off):
# the same 25 rows, 1000 columns.
export LINES=25 COLUMNS=1000

"$TALLY" top -h >out; rc=$?
check "top -h exits 0" test $rc -eq 0
check "top -h shows usage" grep -q 'Usage: tally top' out

bad() {	# NAME EXPECTED-MESSAGE ARGS...
	local name=$1 msg=$2; shift 2
	"$TALLY" top "$@" >/dev/null 2>err </dev/null; local rc=$?
	if [ $rc -ne 0 ] && grep -q -- "$msg" err; then ok "$name"; else fail "$name (rc=$rc: $(cat err))"; fi
}
bad "top -d 0 is refused" "refresh delay" --stdio -d 0
bad "top --sort with an unknown key" "unknown sort key 'nope'" --stdio --sort dso,nope
bad "top -m must be a power of two" "power-of-two" --stdio -m 3
bad "top -p of a missing process" "no such process" --stdio -p 999999999
bad "top with a stray argument" "unexpected argument" --stdio ls
bad "top -K -U hides everything" "hide everything" --stdio -K -U
bad "top --tui without a terminal" "needs a terminal" --tui
bad "top -C of a CPU that is not there" "is not online" --stdio -C 4095
bad "top -e with a bad event" "event syntax\|unknown\|parse" --stdio -e nosuchevent:zz

# Can we sample system-wide here at all?
if ! "$TALLY" top --stdio -d 0.1 --iterations 1 >/dev/null 2>err; then
	skip "top sampling (cannot open events: $(head -1 err))"
	exit 0
fi

# wait_for CMD...: until CMD holds, checked every 0.1 s for up to 60 s (a loaded machine
# may take long to start a process; nothing here is timed). 1 when it never held.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
# running PID FILE: process PID runs FILE (it has exec'd it)
running() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$2")" ]; }
# table_has FILE N RE: FILE holds N tables or more, and the Nth has a line matching RE
table_has() { awk -v n="$2" '/PerfTop:/ { k++ } k == n' "$1" 2>/dev/null | grep -q -- "$3"; }

# (long enough to outlive every check below on a loaded machine; the trap ends it)
"$HOT" 300 & HP=$!
trap 'kill $HP 2>/dev/null; rm -rf "$TMP"' EXIT
wait_for running $HP "$HOT"
# check_top NAME FILE CHECK ARGS...: tally top --stdio --iterations 1 ARGS into FILE
# (its errors into err), the refresh delay doubled from 0.5 s up to 8 s until CHECK
# (eval'd) holds: on a loaded machine a short window can hold too few samples for the
# shares a check looks at. When it never held: what top said the last time.
check_top() {
	local n=$1 f=$2 c=$3 d rc
	shift 3
	for d in 0.5 1 2 4 8; do
		"$TALLY" top --stdio -d $d --iterations 1 "$@" >"$f" 2>err; rc=$?
		[ $rc -eq 0 ] && eval "$c" && { ok "$n"; return; }
	done
	fail "$n (rc $rc)"
	{ head -3 err; head -6 "$f"; } | sed 's/^/# /'
}

# The last table of a --stdio run: the rows after the last header.
last_table() { awk '/PerfTop:/ { n = 0; delete r; next } /^---/ { next } NF { r[n++] = $0 } END { for (i = 0; i < n; i++) print r[i] }' "$1"; }

"$TALLY" top --stdio -d 0.5 --iterations 3 -K --sort comm,dso,sym >sw 2>err; rc=$?
check "top --stdio --iterations 3 exits 0" test $rc -eq 0
check "top prints one table per refresh" test "$(grep -c 'PerfTop:' sw)" -eq 3
check "top header names the target and the CPUs" grep -q '(all, [0-9]* CPUs\?)' sw
top=$(last_table sw | head -1)
if [[ $top =~ %\ +hot\ +hot\ +\[\.\]\ spin ]]; then ok "system-wide: hot's hot function on top with comm hot and dso hot"
else fail "system-wide: hot's hot function on top with comm hot and dso hot (got '$top')"; cat sw; fi
check "-K hides kernel symbols" bash -c "! grep -q '\[k\]' sw"
check "no ANSI clear when stdout is not a terminal" bash -c "! grep -q $'\e' sw"

"$TALLY" top --stdio -d 0.5 --iterations 2 -p $HP >pid 2>err; rc=$?
check "top -p exits 0" test $rc -eq 0
check "top -p header names the pid" grep -q "(target_pid: $HP)" pid
top=$(last_table pid | head -1)
if [[ $top =~ %\ +hot\ +\[\.\]\ spin$ ]]; then ok "top -p: spin in hot on top"
else fail "top -p: spin in hot on top (got '$top')"; fi

"$TALLY" top --stdio -d 0.5 --iterations 2 -p $HP -g >cg 2>err; rc=$?
check "top -g exits 0" test $rc -eq 0
top=$(last_table cg | head -1)
if [[ $top =~ %\ +[0-9.]+%\ +(hot|libc.so.6)\ +\[\.\] ]]; then ok "top -g shows children and self columns"
else fail "top -g shows children and self columns (got '$top')"; fi
check "top -g shows the callers of spin" grep -q -- '---.*main\|main$' cg

"$TALLY" top --stdio -d 0.3 --iterations 1 -p $HP -e task-clock -n >ev 2>err; rc=$?
check "top -e task-clock exits 0" test $rc -eq 0
check "top -e task-clock names the event" grep -q '4000Hz task-clock\]' ev

# A process that starts and execs while top runs (after its first table): resolved by
# its new image. top is stopped (SIGINT) two tables after the exec. At 250 Hz in 2 MiB
# rings: a slow (ASan) top on a loaded machine must not lose the exec's COMM and MMAP.
"$TALLY" top --stdio -d 0.5 -K -F 250 -m 512 --sort pid,dso,sym >ex 2>err & TP=$!
wait_for table_has ex 1 .
(exec "$HOT" 300) & EP=$!
wait_for running $EP "$HOT"
n=$(grep -c PerfTop: ex)
wait_for eval '[ "$(grep -c PerfTop: ex)" -ge $((n + 2)) ]'
kill -INT $TP; wait $TP; rc=$?
kill $EP; wait $EP 2>/dev/null
check "top while a process execs exits 0" test $rc -eq 0
if last_table ex | grep -Eq "^ +[0-9.]+% +$EP:hot +hot +\[\.\] spin"; then ok "exec'd process resolved by its new comm and dso"
else fail "exec'd process resolved by its new comm and dso"; last_table ex | grep -E "^ +[0-9.]+% +$EP:|^ +[0-9.]+% +[0-9]+:bash" | head -5; sed 's/^/# /' err | head -5; fi

# perf top's filters and columns: --comms/--dsos/--symbols keep the samples they name,
# --percentage relative makes the kept ones 100%, --show-total-period adds periods
"$TALLY" top --stdio -d 0.4 --iterations 1 -a --symbols spin --dsos hot --comms hot \
	--percentage relative --show-total-period -n >flt 2>err; rc=$?
rows=$(last_table flt)
check "top --comms/--dsos/--symbols: only hot's spin rows (rc $rc)" \
	eval 'test $rc -eq 0 && test -n "$rows" && ! grep -Ev "hot +\[\.\] spin$" <<<"$rows" | grep -q .'
check "top --percentage relative: the kept rows make 100%" \
	awk '{ s += $1 } END { exit !(s > 99.9 && s < 100.1) }' <<<"$rows"
check "top --show-total-period -n: samples and period columns (period = samples x 250000)" \
	awk '$3 != $2 * 250000 { bad = 1 } END { exit bad || !NR }' <<<"$rows"
"$TALLY" top --stdio -d 0.3 --iterations 1 -a --comms nosuchcomm >flt 2>err; rc=$?
check "top --comms of nothing: no rows" eval 'test $rc -eq 0 && test -z "$(last_table flt)"'
"$TALLY" top --stdio -d 0.3 --iterations 1 -p $HP --percentage bogus 2>err >/dev/null; rc=$?
check "top --percentage bogus: refused, 129" test $rc -eq 129

"$TALLY" top --stdio -d 0.3 --iterations 1 -t $HP -C 0,1 >tid 2>err; rc=$?
check "top -t -C exits 0" test $rc -eq 0
check "top -t -C header names the tid and the CPUs" grep -q "(target_tid: $HP, CPUs: 0,1)" tid

# The mlock limit: without CAP_IPC_LOCK and with a tiny ulimit -l, a big -m is cut down
# with a warning (or, when other processes of this user hold the budget, refused with
# the limit named); never a bare EPERM.
if [ "$(id -u)" = 0 ] && command -v capsh >/dev/null 2>&1; then
	capsh --drop=cap_ipc_lock -- -c "ulimit -l 64; exec '$TALLY' top --stdio -d 0.3 --iterations 1 -p $HP -m 4M" >ml 2>mlerr; rc=$?
	if { [ $rc -eq 0 ] && grep -q 'locked-memory limit refused .* pages per ring; using' mlerr; } ||
	   { [ $rc -ne 0 ] && grep -q 'locked-memory limit is used up' mlerr; }; then
		ok "mlock limit: smaller ring with a warning, or a clear refusal"
	else
		fail "mlock limit: smaller ring with a warning, or a clear refusal (rc=$rc: $(cat mlerr))"
	fi
else
	skip "mlock limit (needs root and capsh)"
fi

# Decay: after the process ends its entries fade but stay (7/8 per refresh); with -z
# they are gone at the next refresh. The process ends once top's first table is out.
# decay_run FILE ARGS...: top -p of a fresh hot, 4 tables 1 s apart, into FILE; hot
# ended after the first table. Sets rc.
decay_run() {
	local f=$1 dp tp
	shift
	"$HOT" 300 & dp=$!
	wait_for running $dp "$HOT"
	"$TALLY" top --stdio -d 1 --iterations 4 -p $dp "$@" >"$f" 2>err & tp=$!
	wait_for table_has "$f" 1 .
	kill $dp; wait $dp 2>/dev/null
	wait $tp; rc=$?
}
decay_run decay
check "top -p of a process that exits meanwhile exits 0" test $rc -eq 0
check "decayed entries stay after the process exits" table_has decay 4 '\[\.\] spin'
decay_run zero -z
check "top -z exits 0" test $rc -eq 0
check "-z: the first table has the process" table_has zero 1 '\[\.\] spin'
check "-z: the last table is empty once it exited" eval '! table_has zero 4 "\[[.k]\]"'

# -F above the kernel's maximum is lowered to it with a warning, as perf does.
if max=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null) && [ "$max" -gt 0 ]; then
	"$TALLY" top --stdio -d 0.2 --iterations 1 -p $HP -F $((max + 1)) >fq 2>fqerr; rc=$?
	check "-F above the maximum still runs" test $rc -eq 0
	check "-F above the maximum is lowered with a warning" grep -q "sampling at $max Hz" fqerr
	check "-F above the maximum: the header shows the rate used" grep -q "\[${max}Hz " fq
fi

# Privileges (root only): an unprivileged user at perf_event_paranoid >= 2 gets the
# paranoid/CAP_PERFMON explanation for system-wide top, and for its own process a
# user-space-only profile (the event retried as :u, like perf).
if can_drop_root && pub=$(pub_copy "$TALLY" "$HOT"); then
	as_nobody "$pub/tally" top --stdio -d 0.2 --iterations 1 >/dev/null 2>perm; rc=$?
	check "unprivileged system-wide top fails" test $rc -ne 0
	check "unprivileged system-wide top explains paranoid and CAP_PERFMON" \
		grep -q 'perf_event_paranoid is .*CAP_PERFMON' perm
	"${NOBODY[@]}" "$pub/hot" 300 & UP=$!	# setpriv execs: $! is hot itself
	wait_for running $UP "$pub/hot"
	as_nobody "$pub/tally" top --stdio -d 0.4 --iterations 1 -p $UP >own 2>ownerr; rc=$?
	kill $UP 2>/dev/null
	check "unprivileged top -p of its own process exits 0 ($(head -c 300 ownerr))" test $rc -eq 0
	check "unprivileged top -p samples user space only (:u)" grep -q 'Hz [a-z-]*:u\]' own
	check "unprivileged top -p shows spin" grep -q '\[\.\] spin' own
else
	skip "unprivileged top (needs root, setpriv, perf_event_paranoid >= 2 and a temp dir nobody can enter)"
fi

# -c: a fixed period shows in the header instead of a frequency.
"$TALLY" top --stdio -d 0.3 --iterations 1 -p $HP -c 100000 >cnt 2>err
check "top -c shows the period" grep -q '\[100000 [a-z-]*\]' cnt

# SIGINT ends a run cleanly (sent once the first table is out: top runs by then).
"$TALLY" top --stdio -d 0.3 >int 2>err & TP=$!
wait_for table_has int 1 .
kill -INT $TP; wait $TP; rc=$?
check "SIGINT ends top with status 0" test $rc -eq 0

# A reader that goes away: top notices at the next refresh and ends quietly.
timeout 10 bash -c "'$TALLY' top --stdio -d 0.2 -p $HP 2>perr | head -1 >/dev/null"; rc=$?
check "top | head ends without hanging" test $rc -ne 124
check "top | head prints no error" test ! -s perr
[ -s perr ] && sed "s/^/# perr: /" perr

# Oracle: perf top agrees on the top entry of the hot process.
if have_perf && ! asan_build; then
	timeout -s INT 3 perf top --stdio -d 1 -p $HP < <(sleep 5) >ptop 2>/dev/null
	p=$(tr -d '\033' <ptop | sed 's/\[H\[2J//' | awk '/%/ && /\[\.\]/ { print $2, $4; exit }')
	t=$(last_table pid | awk '/%/ { print $2, $4; exit }')
	if [ -n "$p" ] && [ "$p" = "$t" ]; then ok "perf top agrees on the top entry ($t)"
	elif [ -z "$p" ]; then skip "perf top oracle (perf top printed no table)"
	else fail "perf top agrees on the top entry (perf: '$p', tally: '$t')"; fi
else
	skip "perf top oracle (perf absent or ASan build)"
fi

# --fields: the row's columns in their order (the keys among them sort)
"$TALLY" top --stdio -d 0.4 --iterations 1 -p $HP --fields sym,overhead,sample >fld 2>err
check "top --fields sym,overhead,sample: symbol, percent, samples in that order" \
	eval 'last_table fld | grep -Eq "^  \[\.\] spin +[0-9.]+% +[0-9]+$" &&
	      ! last_table fld | grep -Evq "^  \[[.k]\] .* +[0-9.]+% +[0-9]+$"'
bad "top --fields with an unknown field" "unknown field 'nope'" --stdio --fields sym,nope
bad "top --fields without a sort key" "at least one sort key" --stdio --fields overhead
# --count-filter N: only rows with more than N samples
"$TALLY" top --stdio -d 0.4 --iterations 1 -p $HP -n --count-filter 3 >cf 2>err
check "top --count-filter 3: every row has more than 3 samples" \
	eval 'last_table cf | grep -q spin && last_table cf | awk "{ if (\$2 <= 3) exit 1 }"'
# -u: the user's processes (hot is one of ours), named in the header as perf does
me=$(id -un)
check_top "top -u $me: the header names the user, hot's spin is sampled" uid \
	'grep -q "(uid: $me" uid && last_table uid | grep -q "hot  *\[\.\] spin"' -u "$me" --comms hot
bad "top -u of a user that does not exist" "no user 'nosuchuser'" --stdio -u nosuchuser
bad "top -u of a user without processes" "runs no process" --stdio -u 4242
bad "top -u and -p exclude each other" "exclude each other" --stdio -u "$me" -p $HP
# accepted: --force, -k with --ignore-vmlinux, --demangle-kernel, --no-bpf-event,
# --num-thread-synthesize, --proc-map-timeout (tally synthesizes on one thread, reads
# every map, and never asks for BPF events)
"$TALLY" top --stdio -d 0.3 --iterations 1 -p $HP --force -k /nonexistent --ignore-vmlinux \
	--demangle-kernel --no-bpf-event --num-thread-synthesize 2 --proc-map-timeout 100 >acc 2>err
check "top: --force, --ignore-vmlinux, --demangle-kernel, --no-bpf-event, --num-thread-synthesize, --proc-map-timeout accepted" \
	eval 'last_table acc | grep -q spin && ! grep -q nonexistent err'
# --realtime: SCHED_FIFO, or one line saying why it could not be had
"$TALLY" top --stdio -d 0.3 --iterations 1 -p $HP -r 5 >rt 2>err; rc=$?
check "top --realtime 5 runs, or says why SCHED_FIFO was refused (rc $rc)" \
	eval '{ [ $rc -eq 0 ] && last_table rt | grep -q spin; } || { [ $rc -eq 1 ] && grep -q SCHED_FIFO err; }'
"$TALLY" top --dump-symtab >/dev/null 2>err; rc=$?
check "top --dump-symtab refused in one line (rc $rc)" eval '[ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ]'

# --hierarchy: one level per sort key, each indented 3 deeper, the key after the
# overhead column (padded but on the last level). Compared with perf top's table: the
# column of each line's '%' and what follows it (the percentages themselves differ).
"$TALLY" top --stdio -d 0.5 --iterations 1 -p $HP --hierarchy >hi 2>err; rc=$?
shape2() { awk '{ p = index($0, "%"); print p, substr($0, p + 1) }' | head -2; }
check "top --hierarchy: hot, then its spin one level deeper (rc $rc)" \
	test "$(last_table hi | shape2)" = "$(printf '10      hot          \n13      [.] spin')"
if have_perf && ! asan_build; then
	timeout -s INT 3 perf top --stdio -d 1 -p $HP --hierarchy < <(sleep 5) >phi 2>/dev/null
	p=$(tr -d '\033' <phi | sed 's/\[H\[2J//' | grep -E '^ +[0-9.]+%' | shape2)
	if [ -z "$p" ]; then skip "perf top --hierarchy oracle (perf top printed no table)"
	else check "top --hierarchy: the levels as perf top prints them" \
		test "$(last_table hi | shape2)" = "$p"; fi
fi
"$TALLY" top --stdio -d 0.5 --iterations 1 -p $HP --hierarchy -s comm,dso,sym -n >hi3 2>err
check "top --hierarchy -s comm,dso,sym -n: three levels with samples" \
	eval 'last_table hi3 | head -3 | awk "NR == 1 && / hot +\$/ { a = 1 } NR == 2 && /^   .* hot +\$/ { b = 1 }
		NR == 3 && /^      .*[0-9]+ +\[\.\] spin\$/ { c = 1 } END { exit !(a && b && c) }"'
bad "top --hierarchy with --fields: perf's error" "cannot be used together" --stdio --hierarchy --fields sym
bad "top --hierarchy with -K: not implemented, said" "not implemented" --stdio --hierarchy -K
"$TALLY" top --stdio -d 0.5 --iterations 1 -p $HP --hierarchy -g >hig 2>err
check "top --hierarchy -g: no children column (as perf), callers under the entries" \
	eval 'last_table hig | head -3 | awk "NR == 1 && /^ +[0-9.]+% +hot +\$/ { a = 1 } NR == 2 && /spin\$/ { b = 1 }
		NR == 3 && /^ +\|\$/ { c = 1 } END { exit !(a && b && c) }"'

# --switch-on/--switch-off (perf's evswitch): hot never execs, so with the exec
# tracepoint as the on switch nothing counts, and as the off switch everything does
"$TALLY" top --stdio -d 0.4 --iterations 1 -p $HP -e cpu-clock -e sched:sched_process_exec \
	--switch-on sched:sched_process_exec >son 2>err; rc=$?
check "top --switch-on of an event that never comes: nothing counted (rc $rc)" \
	eval '[ $rc -eq 0 ] && grep -q "PerfTop: *0 irqs/sec" son && [ -z "$(last_table son)" ]'
"$TALLY" top --stdio -d 0.4 --iterations 1 -p $HP -e cpu-clock -e sched:sched_process_exec \
	--switch-off sched:sched_process_exec --show-on-off-events >soff 2>err
check "top --switch-off of an event that never comes: hot's spin counted" \
	eval 'last_table soff | grep -q "hot  *\[\.\] spin"'
bad "top --switch-on of an event top does not sample" "no event 'nope'" --stdio --switch-on nope
# --ignore-callees: with -g, a sample in spin called by hot_a or hot_b is hot_a's or
# hot_b's own (their callees leave the chain), as perf's
check_top "top --ignore-callees 'hot_[ab]': hot_a and hot_b are the two first rows" ic \
	'test "$(last_table ic | grep -E "^ +[0-9.]+%  " | head -2 | grep -oE "hot_[ab]$" | sort | tr "\n" " ")" = "hot_a hot_b "' \
	-p $HP -g --no-children --ignore-callees 'hot_[ab]'
bad "top --ignore-callees with a bad regex" "invalid regex" --stdio --ignore-callees '('
"$TALLY" top --stdio -d 0.3 --iterations 1 -p $HP --raw-trace >rtr 2>err
check "top --raw-trace accepted (no trace key to print raw)" eval 'last_table rtr | grep -q spin'
# -w/--column-widths: each column at its width, keys cut to it (report's printer, as
# perf top and perf report share theirs)
"$TALLY" top --stdio -d 0.4 --iterations 1 -p $HP -w 9,2,6 >cw 2>err
check "top -w 9,2,6: hot's spin as '  ho  [.] sp' after a 9-wide percent" \
	eval 'last_table cw | head -1 | grep -Eq "^  [ 0-9.]{8}%  ho  \[\.\] sp$"'
bad "top -w with --hierarchy: not implemented, said" "not implemented" --stdio -w 5 --hierarchy
bad "top -w of no widths" "not a list of widths" --stdio -w x
# -G/--cgroup: system-wide, only what runs in the cgroup (one the test makes)
cgmnt=$(perf_event_cgroup_root)
cg=tally-top-$$
if [ "$(id -u)" = 0 ] && [ -n "$cgmnt" ] && mkdir "$cgmnt/$cg" 2>/dev/null; then
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1" 30' "$cgmnt/$cg" "$HOT" & inpid=$!
	while ! grep -qx "$inpid" "$cgmnt/$cg/cgroup.procs" 2>/dev/null && kill -0 $inpid 2>/dev/null; do
		sleep 0.05
	done
	"$TALLY" top --stdio -d 0.4 --iterations 1 -G "$cg" -n --sort pid >tcg 2>err; rc=$?
	kill $inpid; wait $inpid 2>/dev/null
	check "top -G $cg: only the cgroup's process (rc $rc)" \
		eval '[ $rc -eq 0 ] && [ -n "$(last_table tcg)" ] && ! last_table tcg | grep -v " $inpid:hot"'
	rmdir "$cgmnt/$cg"
else
	skip "top -G: no cgroup hierarchy to make a cgroup in (needs root)"
fi
bad "top -G with -p: system-wide only" "only available in system-wide mode" --stdio -G x -p $HP
