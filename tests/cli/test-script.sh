# tally script: perf 6.1's line format, -F fields, tracepoint fields, --ns, -i -, and
# FlameGraph folding: stackcollapse-perf.pl's rules (written out below, since FlameGraph
# cannot be downloaded here) must fold tally's output exactly as they fold perf's.
. "$(dirname "$0")/lib.sh"

FIX=$TALLY_TOP/tests/data/perf
HOT=$TALLY_BUILD/workloads/hot

# stackcollapse-perf.pl's folding (FlameGraph @ ef645645): skip '#' lines; an event line
# "comm pid[/tid] ..." starts a sample (its "period event:" tail names the event; only the
# first event seen is folded); frame lines "pc func+0xoff (dso)" are pushed leaf first;
# a blank line ends the sample. [unknown] becomes [dso basename] (or "unknown").
cat >fold.pl <<'EOF'
my (%count, @stack, $comm, $ev, $filter);
sub flush {
	if (defined $comm && @stack && (!defined $filter || !defined $ev || $ev eq $filter)) {
		$count{join(";", $comm, @stack)}++;
	}
	@stack = (); undef $comm;
}
while (<>) {
	next if /^#/;
	chomp;
	if (/^\s*$/) { flush(); next; }
	if (/^(\S.+?)\s+(\d+)\/*(\d+)*\s+/) {
		flush();
		($comm = $1) =~ tr/ /_/;
		undef $ev;
		if (/:\s*(\d+)*\s+(\S+):\s*$/) { $ev = $2; $filter //= $ev; }
		next;
	}
	if (/^\s*(\w+)\s*(.+) \((\S*)\)/) {
		my ($pc, $raw, $mod) = ($1, $2, $3);
		$raw =~ s/\+0x[\da-f]+$//;
		next if $raw =~ /^\(/;
		my @inline;
		for my $f (split /->/, $raw) {
			if ($f eq "[unknown]") {
				if ($mod ne "[unknown]") { ($f = $mod) =~ s/.*\///; $f = "[$f]"; }
				else { $f = "unknown"; }
			}
			$f =~ s/;/:/g;
			push @inline, $f;
		}
		unshift @stack, @inline;
	}
}
flush();
print "$_ $count{$_}\n" for sort keys %count;
EOF

# --- always: fixtures --------------------------------------------------------------------
"$TALLY" script -i "$FIX/plain.data" >plain.out 2>plain.err
check "script: one line per sample" test "$(wc -l <plain.out)" -eq "$("$TALLY" report --stats -i "$FIX/plain.data" | awk '/^ *SAMPLE events:/ {print $3; exit}')"
check "script: default line format" grep -Eq '^ +hot +[0-9]+ +[0-9]+\.[0-9]{6}: +[0-9]+ cpu-clock:pppH?: +[0-9a-f]+ .+ \(.+\)$' plain.out
"$TALLY" script --ns -i "$FIX/plain.data" | head -1 >ns.out
check "script --ns: nine digits" grep -Eq ' [0-9]+\.[0-9]{9}: ' ns.out
"$TALLY" script -i "$FIX/callchain.data" >cc.out 2>&1
check "script: call chains one frame per line" grep -Pq '^\t +[0-9a-f]+ \S.* \(.+\)$' cc.out
check "script: blank line after each chain" grep -q '^$' cc.out
perl fold.pl cc.out >cc.folded
check "script: call chains fold to stacks" grep -q '^hot;.*;.* [0-9]*$' cc.folded
"$TALLY" script -F comm,tid,time -i "$FIX/plain.data" | head -1 >f.out
check "script -F comm,tid,time" grep -Eq '^ +hot +[0-9]+ +[0-9]+\.[0-9]{6}: $' f.out
"$TALLY" script -F comm,pid,tid,event,ip,sym,dso -i "$FIX/plain.data" | head -1 >f.out
check "script -F with pid/tid and no time" grep -Eq '^ +hot +[0-9]+/[0-9]+ +cpu-clock:pppH?: +[0-9a-f]+ ' f.out
# the fixtures' workload ships under $FIX/symfs at the path they name
"$TALLY" script -F ip,sym,dso --symfs "$FIX/symfs" -i "$FIX/callchain.data" >sf.out 2>/dev/null
check "script --symfs: the fixture's chains name the shipped workload's functions" \
	eval 'grep -Eq "^[[:space:]]+[0-9a-f]+ spin \(/tmp/tally-fixture/hot\)$" sf.out && grep -Eq "^[[:space:]]+[0-9a-f]+ main \(/tmp/tally-fixture/hot\)$" sf.out'
"$TALLY" script -F cpu -i "$FIX/plain.data" 2>err >/dev/null; rc=$?
check "script -F cpu on a file without CPU: clear error" eval 'test $rc -ne 0 && grep -q cpu err'
"$TALLY" script -i "$FIX/multi.data" >multi.out 2>&1
check "script: tracepoint fields formatted" grep -Eq 'sched:sched_switch: prev_comm=.* prev_pid=[0-9]+ .*==> next_comm=' multi.out
check "script: event names padded to the longest" grep -Eq '  +cpu-clock: ' multi.out
"$TALLY" script -i - <"$FIX/pipe.data" >pipe.out 2>&1
check "script -i - reads a pipe stream" test "$(wc -l <pipe.out)" -gt 0
"$TALLY" script -i nosuch.data 2>err >/dev/null; rc=$?
check "script on a missing file: error naming it" eval 'test $rc -ne 0 && grep -q nosuch.data err'

# tracepoints recorded with call chains print them (off-CPU flame graphs need them)
if "$TALLY" record -q -g -e sched:sched_switch -o tpg.data "$HOT" --sleeps 10 >/dev/null 2>&1; then
	"$TALLY" script -i tpg.data >tpg.out 2>&1
	nl=$(grep -c 'sched:sched_switch:' tpg.out)
	check "script: a tracepoint's call chain under each of its $nl lines" \
		eval 'test "$nl" -gt 0 && test "$(grep -c "^	 *[0-9a-f]* .*schedule" tpg.out)" -ge "$nl"'
else
	skip "tracepoint call chains (tally record -g -e sched:sched_switch failed here)"
fi

# a file of a MiB or more is read on a second thread where another CPU may run it: the
# same text as on one CPU (taskset), also with records of 64 KiB (dwarf stack copies),
# and the same when the printing stops early
if [ "$(nproc)" -lt 2 ] || ! command -v taskset >/dev/null; then
	skip "script's reader thread (one CPU, or no taskset)"
else
	for rec in "big.data -g -e cpu-clock -c 10000 $HOT 1.5" \
		   "bigdw.data --call-graph dwarf,65528 -e cpu-clock -c 1000000 $HOT 0.1"; do
		set -- $rec
		bf=$1
		shift
		if ! "$TALLY" record -q -o "$bf" "$@" >/dev/null 2>&1 ||
		   [ "$(stat -c %s "$bf")" -lt $((1 << 20)) ]; then
			skip "script's reader thread on $bf (no recording of a MiB here)"
			continue
		fi
		"$TALLY" script -i "$bf" >"$bf.2" 2>"$bf.2.err"
		taskset -c 0 "$TALLY" script -i "$bf" >"$bf.1" 2>"$bf.1.err"
		check "script of $bf: the same text with a reader thread as without" \
			eval 'test -s "$bf.1" && cmp -s "$bf.1" "$bf.2" && cmp -s "$bf.1.err" "$bf.2.err"'
		"$TALLY" script -i "$bf" 2>/dev/null | head -3 >"$bf.h"
		check "script of $bf into a reader that stops: its first lines" \
			cmp -s "$bf.h" <(head -3 "$bf.1")
	done
fi

have_perf || { skip "script vs perf script (perf absent)"; exit 0; }

# perf's own tracepoint files: with call chains (every line, frame for frame), and
# perf record -a's, whose dummy event -F trace leaves out with perf's warnings
perf record -q -N -g -e sched:sched_switch -o ptpg.data "$HOT" --sleeps 10 >/dev/null 2>&1
perf script -i ptpg.data >p.out 2>/dev/null
"$TALLY" script -i ptpg.data >t.out 2>/dev/null
check "tracepoint with -g: perf's $(wc -l <p.out) lines, call chains included" eval 'test "$(wc -l <p.out)" -gt 20 && diff -q p.out t.out'
perf record -q -N -a -e sched:sched_switch -o ptpa.data -- sleep 0.1 >/dev/null 2>&1
check "perf record -a of a tracepoint has perf's dummy event" grep -q '^dummy' <(perf evlist -i ptpa.data 2>/dev/null)
for fl in trace trace,ip comm,tid,trace; do
	perf script -F $fl -i ptpa.data >p.out 2>p.err
	"$TALLY" script -F $fl -i ptpa.data >t.out 2>t.err; rc=$?
	check "perf -a tracepoint file, -F $fl: perf's lines and warnings (rc $rc)" \
		eval 'test $rc -eq 0 && test -s p.out && diff -q p.out t.out && diff -q p.err t.err'
done

# a file whose ring dropped records (LOST: chunks; LOST_SAMPLES: the kernel's count of
# samples it could not write): perf's warnings after the pass, word for word, on stderr;
# --show-lost-events prints the chunks instead of warning about them
for c in "script -F trace" "script --show-lost-events -F comm,tid" "report --stdio" \
	 "report -q --stdio" "report --stats" "report --stats --no-skip-empty"; do
	# shellcheck disable=SC2086
	perf $c -i "$FIX/lost.data" >p.out 2>p.err
	# shellcheck disable=SC2086
	"$TALLY" $c -i "$FIX/lost.data" >t.out 2>t.err; rc=$?
	case $c in
	*--stats*) check "lost.data, $c: perf's counts, per event its lost samples (rc $rc)" \
		eval 'test $rc -eq 0 && grep -q LOST_SAMPLES p.out && diff p.out t.out';;
	*) check "lost.data, $c: perf's warnings about lost data (rc $rc, $(grep -c Processed p.err) of perf's)" \
		eval 'test $rc -eq 0 && diff p.err t.err';;
	esac
done

# the fixtures, with perf's filters, times, --max-stack and --header: perf's lines
# (kernel frames aside: perf cannot read this kernel's symbols through --symfs)
norm() { sed -E 's/(ffffffff[0-9a-f]+) [^ ]+ \(\[kernel\.kallsyms\]\)/\1 K/'; }
bad=""
n=0
for f in system multi callchain plain; do
	pid=$(perf script -F pid -i "$FIX/$f.data" 2>/dev/null | sort | uniq -c | sort -rn | awk 'NR == 1 {print $2}')
	for o in --reltime --deltatime "--reltime --ns" "--deltatime --ns" "--comms hot" \
		 "-c swapper,hot" "--pid $pid" "--tid $pid,1" "--dsos hot" "--dsos [kernel.kallsyms]" \
		 "-S spin" "-S main,spin" "--max-stack 2" "--max-stack 0" "--max-stack 1 -G" \
		 "--stop-bt main" "--stop-bt spin,main -F ip,sym,dso" --header --header-only \
		 --show-task-events --show-mmap-events "--show-task-events --deltatime" \
		 "--show-task-events --show-mmap-events --show-switch-events --show-lost-events --show-bpf-events --reltime"; do
		# shellcheck disable=SC2086
		perf script --symfs "$FIX/symfs" $o -i "$FIX/$f.data" 2>/dev/null | norm >p.out
		# shellcheck disable=SC2086
		"$TALLY" script --symfs "$FIX/symfs" $o -i "$FIX/$f.data" 2>/dev/null | norm >t.out
		cmp -s p.out t.out || bad="$bad '$f $o'"
		n=$((n + 1))
	done
	case $f in system) cpus="0 1 0,1";; *) cpus="";; esac
	for c in $cpus; do
		perf script --symfs "$FIX/symfs" -C $c -i "$FIX/$f.data" 2>/dev/null | norm >p.out
		"$TALLY" script --symfs "$FIX/symfs" -C $c -i "$FIX/$f.data" 2>/dev/null | norm >t.out
		cmp -s p.out t.out || bad="$bad '$f -C $c'"
		n=$((n + 1))
	done
done
check "script --reltime/--deltatime/--comms/--pid/--tid/--dsos/-S/-C/--max-stack/--stop-bt/--header[-only]/--show-*-events: perf's text ($n runs)${bad:+, differ:$bad}" \
	test -z "$bad"
# --time START,STOP (either side open): the samples in the span, as perf
bad="" n=0
for f in plain system multi; do
	a=$(perf script -F time -i "$FIX/$f.data" 2>/dev/null | sed -n 5p | tr -d ' :')
	b=$(perf script -F time -i "$FIX/$f.data" 2>/dev/null | sed -n 30p | tr -d ' :')
	for tm in "$a,$b" "$a," ",$b" "${a%??},${b%???}"; do
		perf script --symfs "$FIX/symfs" --time "$tm" -i "$FIX/$f.data" 2>/dev/null | norm >p.out
		"$TALLY" script --symfs "$FIX/symfs" --time "$tm" -i "$FIX/$f.data" 2>/dev/null | norm >t.out
		{ [ -s p.out ] && cmp -s p.out t.out; } || bad="$bad '$f $tm'"
		n=$((n + 1))
	done
done
check "script --time: perf's lines ($n spans)${bad:+, differ:$bad}" test -z "$bad"
# --per-event-dump: each event's lines in INPUT.EVENT.dump (side-band lines on stdout),
# perf's summary lines (perf's sizes leave out its unflushed buffer: sizes aside)
bad=""
for f in multi system; do
	for o in "" --show-task-events; do
		rm -rf pd td; mkdir pd td; cp "$FIX/$f.data" pd/; cp "$FIX/$f.data" td/
		# shellcheck disable=SC2086
		(cd pd && perf script --per-event-dump $o -i $f.data >out 2>/dev/null)
		# shellcheck disable=SC2086
		(cd td && "$TALLY" script --per-event-dump $o -i $f.data >out 2>/dev/null)
		for d in pd/*.dump; do cmp -s "$d" "td/${d#pd/}" || bad="$bad ${d#pd/}[$o]"; done
		sz() { sed 's/Wrote [0-9.]* MB/Wrote N MB/' "$1"; }
		[ "$(ls pd | wc -l)" -gt 2 ] && cmp -s <(sz pd/out) <(sz td/out) || bad="$bad $f-stdout[$o]"
	done
done
check "script --per-event-dump: perf's files and summary${bad:+ (differ:$bad)}" test -z "$bad"
"$TALLY" script --time 10%/2 -i "$FIX/plain.data" >/dev/null 2>err; rc=$?
check "script --time with percent slices: refused, saying so" eval 'test $rc -eq 129 && grep -q "percent" err'
"$TALLY" script --time x -i "$FIX/plain.data" >/dev/null 2>err; rc=$?
check "script --time x: perf's 'Invalid time string'" eval 'test $rc -ne 0 && grep -q "^Invalid time string" err'
"$TALLY" script -C 0 -i "$FIX/plain.data" >/dev/null 2>err; rc=$?
check "script -C on a file without cpus: refused as perf refuses it" \
	eval 'test $rc -ne 0 && grep -q "does not contain CPU events" err'
# what tally cannot do is refused in one line saying what is missing, never ignored
bad=""
for o in --itrace --insn-trace=disasm "-s foo.py" "--guestmount /x" "--dlfilter f.so" --stitch-lbr \
	 -a -D "-g python" -L; do
	# shellcheck disable=SC2086
	"$TALLY" script $o -i "$FIX/plain.data" >out 2>err; rc=$?
	{ [ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ] && [ ! -s out ] &&
	  grep -q "tally" err; } || bad="$bad '$o'(rc=$rc)"
done
check "script: options tally cannot honour are refused in one line${bad:+:$bad}" test -z "$bad"
"$TALLY" script -I --header-only -i "$FIX/plain.data" >/dev/null 2>err; rc=$?
check "script -I with --header: refused, naming what it lacks" eval 'test $rc -eq 1 && grep -q "show-info" err'

# --- with perf: fresh recordings ---------------------------------------------------------
# System-wide files also catch whatever else runs on the machine; compare the samples of
# our own workload's processes (hot, sh, ls), blocks separated by blank lines or single lines.
ours() { perl -ne 'if (/^\S/ || /^ +\S+ +\d/) { $keep = /^\s*(hot|sh|ls) /; } print if $keep;' ; }
ours_lines() { grep -E '^ *(hot|sh|ls) ' ; }
rec() { local n=$1; shift; perf record -q "$@" >/dev/null 2>&1; [ -s "$n" ]; }
rec plain.data -F 2000 -o plain.data "$HOT" 0.2
rec g.data -F 2000 -g -o g.data "$HOT" 0.2
rec ag.data -F 1000 -a -g -o ag.data -- sh -c "$HOT 0.2; ls -R /usr/lib >/dev/null"
rec z.data -F 2000 -g -z -o z.data "$HOT" 0.2
perf record -q -F 2000 -g -o - "$HOT" 0.2 >pipe.data 2>/dev/null
rec tp.data -a -e sched:sched_switch -e cpu-clock -F 1000 -o tp.data -- sh -c "$HOT --sleeps 20; $HOT 0.1"
rec multi.data -e cpu-clock,task-clock -F 2000 -o multi.data "$HOT" 0.2
corpus="g ag z pipe"
if "$TALLY" record -h >/dev/null 2>&1 && "$TALLY" record -F 2000 -g -o tallyg.data "$HOT" 0.2 >/dev/null 2>&1; then
	corpus="$corpus tallyg"
fi

for f in $corpus; do
	perf script -i $f.data 2>/dev/null | perl fold.pl | grep -E '^(hot|sh|ls);' >p.folded
	"$TALLY" script -i $f.data 2>t.err | perl fold.pl | grep -E '^(hot|sh|ls);' >t.folded
	if [ -s p.folded ] && diff p.folded t.folded >d.out; then
		ok "$f: tally script folds to the same stacks as perf script"
	else
		fail "$f: tally script folds to the same stacks as perf script"; head -10 d.out | sed 's/^/# /'
	fi
done

# context switches and every side-band record of a system-wide file, as perf prints them
rec sw.data --switch-events -o sw.data "$HOT" --sleeps 5
for f in sw ag; do
	o="--show-task-events --show-mmap-events --show-switch-events --show-lost-events --show-bpf-events"
	# shellcheck disable=SC2086
	perf script $o -i $f.data >p.out 2>/dev/null
	# shellcheck disable=SC2086
	"$TALLY" script $o -i $f.data >t.out 2>/dev/null
	# (all of sw.data; of the system-wide file the side-band lines: other processes'
	# samples are compared by the row checks above)
	[ $f = ag ] && { grep PERF_RECORD p.out >p2.out; grep PERF_RECORD t.out >t2.out; mv p2.out p.out; mv t2.out t.out; }
	check "$f.data --show-*-events: perf's $(grep -c PERF_RECORD p.out) side-band lines" \
		eval 'grep -q PERF_RECORD p.out && diff -q p.out t.out'
done

perf script --show-kernel-path -i g.data >p.out 2>/dev/null
"$TALLY" script --show-kernel-path -i g.data >t.out 2>/dev/null
# (a 0.2 s recording of hot may hold no kernel sample: then only the user lines compare)
kp=$(grep -q "kernel.kallsyms" p.out && echo "kallsyms: [kernel.kallsyms]" || echo "no kernel sample this time")
check "g.data --show-kernel-path: perf's lines ($kp)" \
	eval 'test -s p.out && diff <(perl fold.pl p.out) <(perl fold.pl t.out) >kp.diff'
[ -s kp.diff ] && head -8 kp.diff | sed 's/^/# /'

# line for line on files without call chains
for f in plain multi tp; do
	perf script -i $f.data 2>/dev/null | ours_lines >p.out
	"$TALLY" script -i $f.data 2>&1 | ours_lines >t.out
	if [ -s p.out ] && diff p.out t.out >d.out; then ok "$f: script output identical to perf"; else fail "$f: script output identical to perf"; head -10 d.out | sed 's/^/# /'; fi
done
for fl in "comm,pid,tid,time,event" "comm,tid,cpu,time,period,ip,sym,symoff,dso" "comm,ip,sym"; do
	perf script -F "$fl" -i ag.data 2>/dev/null | ours >p.out
	"$TALLY" script -F "$fl" -i ag.data 2>&1 | ours >t.out
	if [ -s p.out ] && diff p.out t.out >d.out; then ok "ag.data: -F $fl identical to perf"; else fail "ag.data: -F $fl identical to perf"; head -6 d.out | sed 's/^/# /'; fi
done
perf script --ns -i plain.data >p.out 2>/dev/null
"$TALLY" script --ns -i plain.data >t.out 2>&1
check "plain.data: --ns identical to perf" diff -q p.out t.out

# --show-namespace-events and --show-cgroup-events on a file perf records with them, as
# perf prints them (the record's own thread; dev/inode four to a line); the round events
# (perf's name alone, the records in the file's order) on it and on the multi-event file
if perf record -q --namespaces --all-cgroups -e cpu-clock -c 100000 -o ns.data -- \
	sh -c 'ls / >/dev/null; true' >/dev/null 2>&1 && [ -s ns.data ]; then
	for o in --show-namespace-events --show-cgroup-events \
		 "--show-namespace-events --show-cgroup-events --show-task-events --reltime" \
		 --show-round-events "--show-round-events --show-task-events --show-mmap-events"; do
		# shellcheck disable=SC2086
		perf script $o -i ns.data >p.out 2>/dev/null
		# shellcheck disable=SC2086
		"$TALLY" script $o -i ns.data >t.out 2>/dev/null
		check "ns.data $o: perf's $(grep -c PERF_RECORD p.out) record lines, the rest as perf" \
			eval 'grep -q PERF_RECORD p.out && cmp -s p.out t.out'
	done
else
	skip "--show-namespace-events, --show-cgroup-events (perf record --namespaces --all-cgroups failed here)"
fi
perf script --show-round-events -i multi.data >p.out 2>/dev/null
"$TALLY" script --show-round-events -i multi.data >t.out 2>/dev/null
check "multi.data --show-round-events: perf's $(grep -c ROUND p.out) round lines among its records" \
	eval 'grep -q "^PERF_RECORD_FINISHED_ROUND$" p.out && cmp -s p.out t.out'

# --switch-on / --switch-off / --show-on-off-events (samples between the on and off
# events' samples) on the multi-event file
for o in "--switch-on task-clock" \
	 "--switch-on task-clock --show-on-off-events" "--switch-off cpu-clock" \
	 "--switch-off cpu-clock --show-on-off-events" --show-on-off-events; do
	# shellcheck disable=SC2086
	perf script $o -i multi.data >p.out 2>/dev/null
	# shellcheck disable=SC2086
	"$TALLY" script $o -i multi.data >t.out 2>/dev/null
	check "multi.data $o: perf's $(wc -l <p.out) lines" eval 'test -s p.out && cmp -s p.out t.out'
done
"$TALLY" script --switch-on nosuch -i multi.data >/dev/null 2>err; rc=$?
check "--switch-on of an event not in the file: one line, exit 1 (rc $rc)" \
	eval '[ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q nosuch err'

# --show-text-poke-events: perf records TEXT_POKE only with --kcore (or AUX traces), which
# this kind of machine may not allow, so a TEXT_POKE record is appended to a pipe-mode
# fixture (the sample_id of its COMM record): address, kernel symbol+offset where there
# is one, old and new bytes sixteen to a line, as perf prints them
poke() {
	python3 - "$FIX/pipe.data" poke.data "$@" <<'PY'
import struct, sys
src, dst, addr, nold, nnew = sys.argv[1], sys.argv[2], int(sys.argv[3], 16), int(sys.argv[4]), int(sys.argv[5])
d = open(src, 'rb').read()
off, trailer = 16, None
while off + 8 <= len(d):
    typ, misc, size = struct.unpack_from('<IHH', d, off)
    if size == 0:
        break
    if typ == 3:
        trailer = d[off + size - 24:off + size]
    off += size
b = bytes((i * 37 + 5) & 255 for i in range(nold + nnew))
body = struct.pack('<QHH', addr, nold, nnew) + b
body += b'\0' * (-len(body) % 8)
open(dst, 'wb').write(d + struct.pack('<IHH', 20, 1, 8 + len(body) + len(trailer)) + body + trailer)
PY
}
for spec in "ffffffff81000123 5 5" "1234 0 3" "ffffffff81000000 20 33"; do
	# shellcheck disable=SC2086
	poke $spec || { fail "text poke record made ($spec)"; continue; }
	perf script --show-text-poke-events -i poke.data >p.out 2>/dev/null
	"$TALLY" script --show-text-poke-events -i poke.data >t.out 2>/dev/null
	check "--show-text-poke-events ($spec): perf's lines" \
		eval 'grep -q "PERF_RECORD_TEXT_POKE.* old len" p.out && cmp -s p.out t.out'
done
