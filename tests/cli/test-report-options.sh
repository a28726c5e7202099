# tally report's options of issue 16 that show something other than the profile, or
# shape its text: -T/--threads (with --pretty), --tasks, --mmaps, -t/--field-separator
# and the options refused or accepted on this kind of file. Each is compared byte for
# byte with perf 6.1's report of the same file (the random "Tip" line left out), on
# recordings whose every line both tools print alike whatever was sampled.
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
FIX=$TALLY_TOP/tests/data/perf

# same NAME FILE OPTION...: perf report and tally report of FILE with OPTIONs, equal
# but for perf's random tip
same() {
	local n=$1 f=$2; shift 2
	perf report -i "$f" "$@" 2>/dev/null | grep -v '^# (Tip: ' >p.out
	"$TALLY" report -i "$f" "$@" 2>t.err | grep -v '^# (Tip: ' >t.out
	if [ -s p.out ] && cmp -s p.out t.out; then
		ok "$n"
	else
		fail "$n"; diff p.out t.out | head -10 | sed 's/^/# /'; head -3 t.err | sed 's/^/# /'
	fi
}

# --- without perf: what can be checked on tally's own recording ------------------------
"$TALLY" record -q -o own.data -- sh -c "$HOT 0.1 & $HOT 0.1; wait" >/dev/null 2>&1
if [ -s own.data ]; then
	"$TALLY" report -i own.data --tasks >tasks.out 2>tasks.err
	check "--tasks: perf's heading, then the idle thread first" \
		eval 'sed -n 1p tasks.out | grep -qx "#      pid      tid     ppid  comm" &&
		      sed -n 2p tasks.out | grep -qx "         0        0       -1 |swapper"'
	# the two hot processes are children of the shell, one level deeper
	check "--tasks: forked processes under their parent, one level deeper" \
		test "$(grep -c '^ .* |  *hot$' tasks.out)" -ge 2 -a "$(grep -c '| hot$' tasks.out)" -ge 2
	"$TALLY" report -i own.data --mmaps >mmaps.out 2>&1
	check "--mmaps: hot's executable map under its task" \
		grep -Eq "^ {32,}[0-9a-f]+-[0-9a-f]+ r-xp [0-9a-f]{8} [0-9]+ $HOT\$" mmaps.out
	"$TALLY" report -i own.data --stdio -T >T.out 2>&1
	check "-T: the PID/TID table after the report (no READ records: empty)" \
		eval 'tail -1 T.out | grep -qx "# PID  TID"'
else
	skip "tally record failed here: no own recording for --tasks/--mmaps/-T"
fi

have_perf || { skip "report options vs perf report (perf absent)"; exit 0; }

# a shell that forks two processes (FORK records, parents), counted per thread (-s:
# READ records for -T), with call chains
perf record -q -s -g -F 1000 -o forks.data -- sh -c "$HOT 0.1 & $HOT 0.1; wait" >/dev/null 2>&1
perf record -q -F 1000 -o plain.data "$HOT" 0.1 >/dev/null 2>&1
# --call-graph dwarf records data maps (anonymous memory keeps perf's //anon)
for f in forks.data plain.data "$FIX/dwarf.data" "$FIX/system.data"; do
	[ -s "$f" ] || { fail "perf record made $f"; continue; }
	b=${f##*/}
	same "--tasks on $b as perf's" "$f" --tasks
	same "--mmaps on $b as perf's" "$f" --mmaps
done
same "-T: the per-thread counts of READ records as perf's" forks.data --stdio -T
same "-T --pretty raw as perf's (one line, as perf 6.1)" forks.data --stdio -T --pretty raw
same "--threads without READ records as perf's" plain.data --stdio --threads -q

# -t: values at their narrowest, keys padded, the separator's character inside a name
# made a '.' ("hot" with -t o), no rule under the names; a group's columns too
same "-t , on a plain file as perf's" plain.data --stdio -t , -n --show-total-period -s pid,cpu,dso,sym
same "-t o: the separator inside names made a '.', as perf" plain.data --stdio -t o -s comm,dso,sym
same "-t '|' with call chains (children) as perf's" forks.data --stdio -t '|' -s comm,dso
same "-t : -g none --no-children as perf's" forks.data --stdio -t : -g none --no-children -s comm,dso
same "-t , on an event group as perf's" "$FIX/group.data" --stdio -t , -s comm,dso -n
for bad in "." ""; do
	"$TALLY" report -i plain.data -t "$bad" >/dev/null 2>err; rc=$?
	check "-t '$bad' refused in one line (rc $rc)" eval '[ $rc -eq 129 ] && grep -q "field-separator" err'
done

# -p/--parent, the parent key and -x/--exclude-other: the first function of the chain
# (in its order: caller with children, callee without) matching the regex, [other]
# without; -x hides the rows without one (they keep their place among ties, as perf's).
# With --percentage relative the graph's branches stay shares of all samples, as perf's
for a in "-p ^main\$|^hot_" "-p ^main\$|^hot_ -x --no-children" "-p ^main\$ -x -s comm,dso" \
	 "-s parent,sym -p ^_start|^hot_b -G" "-x -p sys_ -g caller --percentage relative" \
	 "-s parent" "-x -q" "--comms hot --percentage relative"; do
	# shellcheck disable=SC2086
	same "$a as perf's" forks.data --stdio $a
done
# the branches under a -x entry with --percentage relative are shares of all samples,
# but the 0.5% threshold is of the kept ones (perf's callchain_non_filtered_period):
# a file with many samples in execve's kernel path shows graphs of 0.03% branches
perf record -q -g -F 20000 -o execs.data -- \
	sh -c "for i in 1 2 3 4 5 6; do $HOT 0.02; done" >/dev/null 2>&1
same "-x -p sys_ -g caller --percentage relative on an exec-heavy file as perf's" \
	execs.data --stdio -x -p sys_ -g caller --percentage relative
"$TALLY" report -i plain.data -p main >/dev/null 2>err; rc=$?
check "-p on a file without call chains: perf's error, one line, exit 1" \
	eval '[ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "without -g" err'
"$TALLY" report -i forks.data -p 'ma(in' >/dev/null 2>err; rc=$?
check "-p with a bad regex: a usage error naming it (rc $rc)" \
	eval '[ $rc -eq 129 ] && grep -q "invalid regex" err'

# --hierarchy: a level per sort key (perf's indents, " / " headers, rule, "no entry"
# lines under --percent-limit, graphs on the entries), with -n, -G, -x, --symbol-filter
# and a single-comm filter; -F with it is perf's usage error, -t refused
for a in "" "-g none --percent-limit 20" "-s sym,comm -g caller" "-s pid,cpu,dso -n --show-total-period" \
	 "-s dso,comm,sym -g none --percent-limit 30" "-G" "-p ^main\$|^hot_ -x" \
	 "--symbol-filter hot_ -g none" "--symbol-filter spin -s sym,comm" "--comms hot --percentage relative"; do
	# shellcheck disable=SC2086
	same "--hierarchy $a as perf's" forks.data --stdio --hierarchy $a
done
same "--hierarchy on an event group as perf's" "$FIX/group.data" --stdio --hierarchy -s cpu,comm -n
same "--hierarchy on several events as perf's (fixture)" "$FIX/multi.data" --stdio --hierarchy
"$TALLY" report -i forks.data --hierarchy -F overhead,sym >/dev/null 2>err; rc=$?
check "--hierarchy with -F: perf's usage error (rc $rc)" eval '[ $rc -eq 129 ] && grep -q "cannot be used together" err'
"$TALLY" report -i forks.data --hierarchy -t , >/dev/null 2>err; rc=$?
check "--hierarchy with -t refused in one line (rc $rc)" eval '[ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ]'

# --ignore-callees: the last matching function of the chain, in its order, takes the
# sample, and the frames read before it go (callees in callee order, callers in caller
# order, as perf); nothing for -g none without children (perf resolves no chain then)
for a in "--no-children" "--no-children -G" "" "-g none" "--no-children -g none -q" "--hierarchy"; do
	# shellcheck disable=SC2086
	same "--ignore-callees 'main|^hot_a' $a as perf's" forks.data --stdio --ignore-callees 'main|^hot_a' $a
done
"$TALLY" report -i forks.data --ignore-callees 'ma(in' >/dev/null 2>err; rc=$?
check "--ignore-callees with a bad regex: a usage error naming it (rc $rc)" \
	eval '[ $rc -eq 129 ] && grep -q "invalid regex" err'

# --column-widths: keys at the given width (comm, dso and symbol names cut to it, an
# address not), values printed at it and padded to their header, 0 automatic
for a in "--no-children -g none --column-widths 5,3,10,8" "--no-children --column-widths 12,0,30 -n" \
	 "-g none --column-widths 5,4,3,6 -n --show-total-period -s comm" \
	 "--column-widths 20,20,20,20,20 -g caller" "-g none --column-widths 3,3,3,3,3 -s comm,dso,sym,cpu" \
	 "-g none --column-widths 6,1,2,5,5 -s comm,dso,sym,cpu"; do
	# shellcheck disable=SC2086
	same "$a as perf's" forks.data --stdio $a
done
"$TALLY" report -i forks.data --column-widths 5,x >/dev/null 2>err; rc=$?
check "--column-widths with a bad list: a usage error (rc $rc)" eval '[ $rc -eq 129 ] && grep -q "column-widths" err'

# --group-sort-idx: a group's rows by member N first (then the others after the
# leader, not the leader); an index past the members: the leader alone
perf record -q -e '{cpu-clock,task-clock}' -c 100000 -o grp.data -- \
	sh -c "$HOT 0.1; ls -R /usr/share >/dev/null" >/dev/null 2>&1
for a in "--group-sort-idx 1" "--group-sort-idx 1 -n -s comm,dso" "--group-sort-idx 5" \
	 "--group-sort-idx 0" "--group-sort-idx 1 --hierarchy"; do
	# shellcheck disable=SC2086
	same "$a as perf's" grp.data --stdio $a
done

# --show-cpu-utilization: sys and usr columns after the overhead (the self period of
# kernel and of user samples), also in a group, a hierarchy, with -t and fixed widths
for a in "--no-children -g none" "" "-n -s comm --no-children" "--hierarchy" "-t ," \
	 "--column-widths 3,4,12,5" "--percentage relative --comms hot"; do
	# shellcheck disable=SC2086
	same "--show-cpu-utilization $a as perf's" forks.data --stdio --show-cpu-utilization $a
done
same "--show-cpu-utilization on a group, hierarchy, as perf's" grp.data --stdio --show-cpu-utilization --hierarchy

# --socket-filter: only the rows whose first sample's cpu is on that socket (the file's
# CPU_TOPOLOGY), "# Processor Socket: N" under the event count (one socket here: 0 keeps
# every row, 1 none)
for a in "--socket-filter 0" "--socket-filter 1" "--socket-filter 0 -q -s cpu,comm" \
	 "--socket-filter 0 --hierarchy -g none"; do
	# shellcheck disable=SC2086
	same "$a as perf's (fixture)" "$FIX/system.data" --stdio $a
	# shellcheck disable=SC2086
	same "$a as perf's" forks.data --stdio $a
done

# the time key and --time-quantum (default 100 ms; ns, us, ms, s; --ns prints
# nanoseconds), also perf 6.1's children totals with it (every frame adds again)
for a in "-s time -g none --no-children" "-s time,comm --time-quantum 10ms --no-children" \
	 "-s time --ns --time-quantum 1ms -g none --no-children" "-s comm,time --time-quantum 1000 --no-children" \
	 "-s time" "-s time,sym -g none" "-s time --time-quantum 1s" "-s time --hierarchy"; do
	# shellcheck disable=SC2086
	same "$a as perf's" forks.data --stdio $a
done
for q in 0 1x; do
	"$TALLY" report -i forks.data -s time --time-quantum $q >/dev/null 2>err; rc=$?
	check "--time-quantum $q: perf's usage error (rc $rc)" eval '[ $rc -eq 129 ] && grep -q "time quantum" err'
done

# --switch-on / --switch-off / --show-on-off-events: only the samples between the on
# and off events' samples count, as perf's report
perf record -q -e cpu-clock -e task-clock -F 2000 -o two.data "$HOT" 0.1 >/dev/null 2>&1
for a in "--switch-off cpu-clock --switch-on task-clock" "--switch-on task-clock --show-on-off-events" \
	 "--switch-off task-clock" "--switch-off cpu-clock --show-on-off-events -n"; do
	# shellcheck disable=SC2086
	same "$a as perf's" two.data --stdio $a
done

# --raw-trace: the trace key's fields as " name=value", as perf 6.1's own libtraceevent
# prints them (strings, hex pointers, dynamic arrays)
if perf record -q -e sched:sched_switch -e sched:sched_process_exec -e syscalls:sys_enter_openat \
	-o tp.data -a -- sh -c 'cat /dev/null; ls / >/dev/null' >/dev/null 2>&1 && [ -s tp.data ]; then
	same "--raw-trace -s trace as perf's" tp.data --stdio --raw-trace -s trace
	same "--raw-trace with the default keys as perf's (no change)" tp.data --stdio --raw-trace -q
else
	skip "--raw-trace (perf cannot record tracepoints here)"
fi
# accepted, and as perf: --modules (module symbols come from kallsyms), --ignore-vmlinux,
# --stdio-color never/auto, --show-ref-call-graph without PERF_SAMPLE_READ events;
# --disable-order on a file whose records need no reordering
for o in --modules --ignore-vmlinux "--stdio-color never" "--stdio-color auto" \
	 --show-ref-call-graph; do
	# shellcheck disable=SC2086
	same "$o: the report perf prints" forks.data --stdio $o
done
same "--disable-order: the report perf prints (fixture)" "$FIX/plain.data" --stdio --disable-order -s comm,dso
# --ignore-vmlinux passes over -k's file: kernel symbols come from kallsyms as usual
"$TALLY" report -i forks.data --stdio -k /nonexistent --ignore-vmlinux >ign.out 2>ign.err
"$TALLY" report -i forks.data --stdio >def.out 2>/dev/null
check "--ignore-vmlinux: -k's file is not read" eval '! grep -q nonexistent ign.err && cmp -s ign.out def.out'
# refused in one line, exit 1 (or a usage error for a bad word)
for w in "--stdio-color always" "--percent-type local-period"; do
	# shellcheck disable=SC2086
	"$TALLY" report -i forks.data $w >/dev/null 2>err; rc=$?
	check "report $w refused in one line saying why (rc $rc)" \
		eval '[ $rc -ne 0 ] && [ "$(grep -c "^tally" err)" -eq 1 ] && ! grep -q unknown err'
done
