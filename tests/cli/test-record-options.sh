# tally record's options of issue 16 beyond the attrs (test-record.sh compares those with
# perf's): what each does to the file, or to the recorder, against perf 6.1 where perf
# shows the same thing, and the refusals.
. "$(dirname "$0")/lib.sh"

have_perf || { skip "record options against perf (perf absent)"; exit 0; }
HOT=$TALLY_BUILD/workloads/hot

# --synth: which side-band of the processes already running is synthesized (-a): the
# kernel map always; task: COMM and FORK without maps; mmap, all: with the maps; no:
# none. Seen on a process of the test's that runs all along (nothing else it does).
sleep 60 & S=$!
# has FILE: "comm" / "mmap" for the synthesized records of $S in FILE
has() { perf script -i "$1" --show-task-events --show-mmap-events 2>/dev/null | awk -v p=$S '
	/PERF_RECORD_COMM/ && index($0, ": sleep:" p "/") { c = 1 }
	/PERF_RECORD_MMAP2 / && index($0, " " p "/" p ":") { m = 1 }
	END { printf "%s%s", c ? "comm" : "-", m ? "+mmap" : "" }'; }
for s in no task mmap all; do
	"$TALLY" record -q --synth=$s -a -o s-$s.data -- true 2>/dev/null
	perf record -q --synth=$s -a -o ps-$s.data -- true 2>/dev/null
	t=$(has s-$s.data); p=$(has ps-$s.data)
	check "--synth=$s: $t of a running process (perf: $p)" test "$t" = "$p"
done
# --namespaces: NAMESPACES records (the kernel's, and one synthesized for each running
# thread: here the same process's as perf synthesizes it)
"$TALLY" record -q --namespaces -p $S -o ns.data -- sleep 0.1 2>/dev/null
perf record -q --namespaces -p $S -o pns.data -- sleep 0.1 2>/dev/null
nsof() { perf script -i "$1" --show-namespace-events 2>/dev/null | grep -A2 "NAMESPACES $S/$S " | tail -n +2; }
check "--namespaces: a running process's NAMESPACES as perf synthesizes it" \
	test -n "$(nsof ns.data)" -a "$(nsof ns.data)" = "$(nsof pns.data)"
check "--namespaces: tally script reads it" grep -q "NAMESPACES $S/$S" \
	<("$TALLY" script -i ns.data --show-namespace-events 2>/dev/null)
# --buildid-mmap: build-ids in the MMAP2 records (the kernel's, the running process's
# maps), no BUILD_ID feature; the same ids as perf's
"$TALLY" record -q --buildid-mmap -p $S -o bm.data -- sleep 0.1 2>/dev/null
perf record -q --buildid-mmap -p $S -o pbm.data -- sleep 0.1 2>/dev/null
ids() { perf script -i "$1" --show-mmap-events 2>/dev/null |
	grep -oE "PERF_RECORD_MMAP2 (-1/0|$S/$S): .*<[0-9a-f]+>\]: .*" | sed -E 's/\[0x.*</</' | sort -u; }
check "--buildid-mmap: the maps' build-ids ($(ids bm.data | wc -l)) as perf's" \
	test -n "$(ids bm.data)" -a "$(ids bm.data)" = "$(ids pbm.data)"
check "--buildid-mmap: no BUILD_ID feature, as perf" \
	grep -q "missing features:.* BUILD_ID" <(perf report --header-only -i bm.data 2>/dev/null)
kill $S
check "--synth=no: the kernel map is still there" grep -q 'kernel.kallsyms' <(perf script -i s-no.data --show-mmap-events 2>/dev/null)
"$TALLY" record -q --synth=bogus -o x.data true 2>err; rc=$?
check "--synth=bogus: usage error (129), as perf" test $rc = 129 -a -n "$(grep 'Invalid synth option: bogus' err)"

# -u: the processes of a user (another user's busy loop), not the command's
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	"${NOBODY[@]}" sh -c 'while :; do :; done' & spin=$!
	# the user's process exists once setpriv has dropped to it (a loaded machine
	# takes its time)
	for _ in $(seq 100); do
		[ "$(stat -c %u /proc/$spin 2>/dev/null)" = 65534 ] && break
		sleep 0.1
	done
	"$TALLY" record -q -u 65534 -o u.data -- sleep 0.3 2>err; rc=$?
	[ $rc = 0 ] || sed 's/^/# /' err
	perf record -q -u 65534 -o pu.data -- sleep 0.3 2>/dev/null
	kill $spin; wait $spin 2>/dev/null
	check "-u: exit 0" test $rc = 0
	check "-u: samples of the user's process only" \
		test "$(perf script -i u.data -F pid 2>/dev/null | sort -u | tr -d ' ')" = "$spin"
	check "-u: perf finds the same process" \
		test "$(perf script -i pu.data -F pid 2>/dev/null | sort -u | tr -d ' ')" = "$spin"
	want=$(perf evlist -v -i pu.data 2>&1 | sed 's/, ksymbol: 1//; s/, bpf_event: 1//')
	check "-u: attrs as perf's (no enable_on_exec)" test "$want" = "$(perf evlist -v -i u.data 2>&1)"
	"$TALLY" record -q -u no-such-user-x -o x.data true 2>err; rc=$?
	check "-u no-such-user: usage error naming it" test $rc = 129 -a -n "$(grep "no user 'no-such-user-x'" err)"
else
	skip "-u: needs root and setpriv"
fi

# -p with a command: the command only sets the duration, the events follow the process
"$HOT" 3 & hot=$!
"$TALLY" record -q -p $hot -o p.data -- sleep 0.3 2>err; rc=$?
kill $hot; wait $hot 2>/dev/null
check "-p PID -- cmd: exit 0 (perf accepts it too)" test $rc = 0
check "-p PID -- cmd: samples of PID only" test "$(perf script -i p.data -F pid 2>/dev/null | sort -u | tr -d ' ')" = "$hot"

# --exclude-perf: the recorder's own scheduling is not in the tracepoint samples (its pid
# is known: the shell that execs it writes it down first)
sw() { sh -c 'echo $$ >rec.pid; exec "$@"' sh "$TALLY" record -q -a -e sched:sched_switch "$@" \
	-- sleep 0.3 2>err; }
sw --exclude-perf -o x.data; rc=$?
check "--exclude-perf: exit 0" test $rc = 0
check "--exclude-perf: no sched_switch of tally itself" \
	test -z "$(perf script -i x.data -F pid 2>/dev/null | tr -d ' ' | grep -x "$(cat rec.pid)")"
sw -o x.data
check "without it: tally's own switches are there" \
	test -n "$(perf script -i x.data -F pid 2>/dev/null | tr -d ' ' | grep -x "$(cat rec.pid)")"
"$TALLY" record -q -e cpu-clock --exclude-perf -o x.data true 2>err; rc=$?
check "--exclude-perf after a non-tracepoint: refused (129), as perf" test $rc = 129 -a -n "$(grep -- '--exclude-perf' err)"

# -s: the kernel's counts of every exiting child (READ records), read by perf report -T
kids=(sh -c '/bin/true; /bin/true; exec "$0" 0.1' "$HOT")
"$TALLY" record -q -s -o st.data -- "${kids[@]}" 2>/dev/null
perf record -q -s -o pst.data -- "${kids[@]}" 2>/dev/null
reads() { perf script -D -i "$1" 2>/dev/null | grep -c 'PERF_RECORD_READ'; }
check "-s: READ records of the exited children ($(reads st.data))" test "$(reads st.data)" -gt 0
check "-s: as many READ records as perf writes ($(reads pst.data))" test "$(reads st.data)" = "$(reads pst.data)"

# --group: one group of every event (GROUP_DESC), as perf
"$TALLY" record -q --group -e cpu-clock,task-clock -o g.data true
perf record -q --group -e cpu-clock,task-clock -o pg.data true
check "--group: perf evlist -g shows the group perf makes" test "$(perf evlist -g -i g.data)" = "$(perf evlist -g -i pg.data)"

# --affinity=cpu: the reader runs on the CPU of the ring it reads (one ring: -C 1)
if [ "$(nproc)" -ge 2 ]; then
	# the recorder sets it at its first pass over the rings: the command waits for it
	"$TALLY" record -q --affinity=cpu -C 1 -o af.data -- sh -c 'for i in $(seq 300); do
		grep -q "list:.1$" /proc/$PPID/status && break; sleep 0.1; done
		grep Cpus_allowed_list /proc/$PPID/status' >aff 2>&1
	check "--affinity=cpu: the recorder runs on CPU 1 while it reads CPU 1's ring" grep -q 'Cpus_allowed_list:.1$' aff
else
	skip "--affinity: one CPU"
fi
"$TALLY" record -q --affinity=socket -o x.data true 2>err; rc=$?
check "--affinity=socket: usage error" test $rc = 129

# -r: the recorder runs SCHED_FIFO, the command does not (as perf)
"$TALLY" record -q -r 10 -o r.data -- sh -c 'chrt -p $PPID; chrt -p $$' >rt 2>&1
check "-r 10: the recorder runs SCHED_FIFO 10" grep -q "policy: SCHED_FIFO" rt
check "-r 10: the command does not" grep -q "policy: SCHED_OTHER" rt

# --mmap-flush: rings are written when they hold that much, and at the end all of it
"$TALLY" record -q --mmap-flush=64K -F 1000 -o mf.data "$HOT" 0.2 2>/dev/null
check "--mmap-flush=64K: the samples (less than 64K) are written at the end" \
	test "$(perf script -i mf.data 2>/dev/null | wc -l)" -gt 5
"$TALLY" record -q --mmap-flush=lots -o x.data true 2>/dev/null; rc=$?
check "--mmap-flush=lots: usage error" test $rc = 129

# --vmlinux: the file must exist (perf: "Invalid file")
"$TALLY" record -q --vmlinux /no/such/vmlinux -o x.data true 2>err; rc=$?
check "--vmlinux of a missing file: one line, exit 1" test $rc = 1 -a "$(wc -l <err)" = 1

# (--aio and --debuginfod: tests/cli/test-record-aio.sh, test-record-debuginfod.sh)

# --all-cgroups: CGROUP records of every cgroup (synthesized, perf's order) and the
# cgroup id in each sample; a workload in a cgroup the test makes is charged to it
cgmnt=$(awk '$3 == "cgroup" && $4 ~ /(^|,)perf_event(,|$)/ { print $2; exit }' /proc/mounts)
[ -n "$cgmnt" ] || cgmnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
cg=tally-rec-$$
if [ "$(id -u)" = 0 ] && [ -n "$cgmnt" ] && mkdir "$cgmnt/$cg" 2>/dev/null; then
	inside=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1" 0.3' "$cgmnt/$cg" "$HOT")
	"$TALLY" record -q --all-cgroups -o cg.data -- "${inside[@]}" 2>/dev/null
	perf record -q --all-cgroups -o pcg.data -- "${inside[@]}" 2>/dev/null
	cgs() { perf script -i "$1" --show-cgroup-events 2>/dev/null | grep '0.000000: PERF_RECORD_CGROUP'; }
	check "--all-cgroups: the cgroups synthesized as perf's ($(cgs cg.data | wc -l))" \
		test -n "$(cgs cg.data)" -a "$(cgs cg.data)" = "$(cgs pcg.data)"
	top_cg() { perf report -i "$1" -s cgroup --stdio 2>/dev/null | awk '/%/ { print $2; exit }'; }
	check "--all-cgroups: the workload's samples in its cgroup ($(top_cg cg.data)), as perf's" \
		test "$(top_cg cg.data)" = "/$cg" -a "$(top_cg pcg.data)" = "/$cg"
	"$TALLY" record -q --all-cgroups --synth=task -o cgn.data true 2>/dev/null
	check "--all-cgroups --synth=task: no CGROUP synthesized, as perf" test -z "$(cgs cgn.data)"
	# -G: only what runs in the cgroup is sampled (-a), as perf
	inside=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1" 3' "$cgmnt/$cg" "$HOT")
	"${inside[@]}" & inpid=$!
	while ! grep -qx "$inpid" "$cgmnt/$cg/cgroup.procs" 2>/dev/null && kill -0 $inpid 2>/dev/null; do
		sleep 0.05
	done
	"$TALLY" record -q -a -e cpu-clock -G "$cg" -o G.data -- sleep 0.3 2>err; rc=$?
	perf record -q -a -e cpu-clock -G "$cg" -o pG.data -- sleep 0.3 2>/dev/null
	kill $inpid; wait $inpid 2>/dev/null
	pids() { perf script -i "$1" -F pid 2>/dev/null | tr -d ' ' | sort -u | tr '\n' ' '; }
	check "-G $cg: only the cgroup's process sampled ($(pids G.data)), as perf ($(pids pG.data))" \
		test $rc = 0 -a "$(pids G.data)" = "$inpid " -a "$(pids pG.data)" = "$inpid "
	"$TALLY" record -q -e cpu-clock -G "$cg" -o x.data -- true 2>err; rc=$?
	check "-G without -a: usage error, as perf" test $rc = 129
	"$TALLY" record -q -a -G "$cg" -o x.data -- true 2>err; rc=$?
	check "-G before any -e: usage error, as perf" test $rc = 129
	"$TALLY" record -q -a -e cpu-clock -G no-such-cg-x -o x.data -- true 2>err; rc=$?
	check "-G of a missing cgroup: one line, exit 1" test $rc = 1 -a "$(wc -l <err)" = 1
	rmdir "$cgmnt/$cg"
else
	skip "--all-cgroups: no cgroup hierarchy to make a cgroup in (needs root)"
fi

