# tally report: the same rows as perf 6.1's report --stdio (percentages within 0.02),
# on a corpus recorded with perf when it is installed (plain, -g, -a -g, -z, pipe,
# tracepoints + cpu-clock, several events, --call-graph dwarf), on tally's own files
# when `tally record` exists, and on the checked-in fixtures otherwise.
. "$(dirname "$0")/lib.sh"

FIX=$TALLY_TOP/tests/data/perf
EXP=$TALLY_TOP/tests/data/report
HOT=$TALLY_BUILD/workloads/hot

# rows FILE: "pct[ pct] | key words" for every data line of a -q report
rows() { sed -n 's/^ *\([0-9.]*\)% *\(\([0-9.]*\)%\)\{0,1\} \{1,\}\(.*[^ ]\) *$/\1 \3|\4/p' "$1" | sed 's/ *$//; s/  */ /g'; }
# same_sys PERF TALLY: a system-wide report, line for line as perf's, but for one
# documented difference (docs/report.md, Differences): a sample in a PIE's PLT that
# perf 6.1 names _init, tally names by its entry (name@plt): the workload's ls may have one.
same_sys() {
	awk 'FNR == NR { p[FNR] = $0; np = FNR; next }
	     { nt = FNR; t = $0
	       if (t != p[FNR]) {
		       sub(/\[\.\] [^ ]+@plt$/, "[.] _init", t)
		       if (t != p[FNR]) { if (++bad <= 3) print "# line " FNR ": " p[FNR] " / " $0 }
	       } }
	     END { exit bad || np != nt || !np }' "$1" "$2"
}
# same_rows A B MIN: every row at or above MIN percent in either file is in the other,
# with every percentage within 0.02. Prints the differences.
same_rows() {
	perl -e '
		my ($a, $b, $min) = @ARGV;
		sub load { my %h; open(my $f, "<", $_[0]) or die; while (<$f>) { chomp; my ($p, $k) = split /\|/, $_, 2; $h{$k} = [split / /, $p]; } return \%h; }
		my ($x, $y) = (load($a), load($b)); my $bad = 0;
		for my $pair ([$x, $y, "perf"], [$y, $x, "tally"]) {
			my ($p, $q, $who) = @$pair;
			for my $k (keys %$p) {
				next if $p->{$k}[0] < $min;
				if (!exists $q->{$k}) { print "# only in $who: @{$p->{$k}} $k\n"; $bad = 1; next; }
				for my $i (0 .. $#{$p->{$k}}) {
					my $d = abs($p->{$k}[$i] - ($q->{$k}[$i] // -1));
					if ($d > 0.02 + 1e-9) { print "# $k: @{$p->{$k}} vs @{$q->{$k}}\n"; $bad = 1; last; }
				}
			}
		}
		exit $bad;' "$1" "$2" "$3"
}

# --- always: fixtures, options, errors -------------------------------------------------
for f in plain callchain zstd pipe multi group system; do
	[ -f "$EXP/$f.comm-dso" ] || continue
	"$TALLY" report --stdio --no-children -g none --sort comm,dso -q -i "$FIX/$f.data" >t.out 2>t.err
	rows t.out >t.rows
	rows "$EXP/$f.comm-dso" >p.rows
	if same_rows p.rows t.rows 0; then ok "fixture $f: comm,dso rows match perf's"; else fail "fixture $f: comm,dso rows match perf's"; fi
done

# examples/topsyms (the library's reader and session, nothing else): same top symbol
# and share as report's sym rows, on a fresh recording (the fixtures name a binary at
# the path it had when they were recorded, which a checkout elsewhere does not have)
"$TALLY" record -q -F 2000 -o topsyms.data "$HOT" 0.2 >/dev/null 2>&1
if [ -x "$TALLY_BUILD/examples/topsyms" ] && [ -s topsyms.data ]; then
	"$TALLY_BUILD/examples/topsyms" topsyms.data >ts.out 2>ts.err
	"$TALLY" report --stdio --no-children -g none --sort sym -q -i topsyms.data >tr.out 2>tr.err
	ts=$(awk 'NR == 1 {print $1, $2}' ts.out)
	tr=$(awk 'NF {print $1, $3; exit}' tr.out)
	check "examples/topsyms: top symbol and share as report's ($ts)" test -n "$ts" -a "$ts" = "$tr"
	"$TALLY_BUILD/examples/topsyms" nosuch.data >/dev/null 2>ts.err; rc=$?
	check "examples/topsyms: a missing file is an error" eval 'test $rc -ne 0 && grep -q nosuch ts.err'
else
	skip "examples/topsyms not built, or tally record failed here"
fi

"$TALLY" report --stdio -i "$FIX/callchain.data" >full.out 2>full.err
check "report: header lines" eval 'grep -q "^# Total Lost Samples: 0$" full.out && grep -Eq "^# Samples: [0-9]*[ KMG] of event '"'"'cpu-clock:pppH?'"'"'$" full.out && grep -q "^# Event count (approx.): [0-9]*$" full.out'
check "report: children columns by default with call chains" grep -q '^# Children      Self  Command' full.out
check "report: dotted rule under the column names" grep -q '^# \.\.\.\.\.\.\.\.  \.\.\.\.\.\.\.\.  \.\.\.\.\.\.\.' full.out
check "report: graph under the entries" grep -q -- '---' full.out
"$TALLY" report --stdio --no-children -i "$FIX/plain.data" >plain.out 2>&1
check "report: Overhead column without call chains" grep -q '^# Overhead  Command  Shared Object' plain.out
# the fixtures' workload ships under $FIX/symfs at the path they name
"$TALLY" report --stdio --no-children --symfs "$FIX/symfs" -i "$FIX/plain.data" >plain.out 2>&1
check "report --symfs: the fixture's workload symbols, marked [.]" grep -Eq '^ +[0-9.]+% +hot +hot +\[\.\] spin$' plain.out
# every row of hot's samples names one of hot's functions, and spin is among them
hot_syms() { ! awk 'NF && !/^#/' "$1" | grep -Evq '\[\.\] (spin|hot_a|hot_b|main|now)$' && grep -q '\[\.\] spin$' "$1"; }
for f in plain callchain zstd pipe multi group dwarf; do
	"$TALLY" report --stdio --no-children -g none --symfs "$FIX/symfs" --dsos hot --sort sym -q \
		-i "$FIX/$f.data" >sf.out 2>/dev/null
	check "fixture $f: hot's samples resolve through the shipped binary (--symfs)" hot_syms sf.out
done
"$TALLY" report --stdio -i "$FIX/multi.data" >multi.out 2>&1
check "report: one section per event" test "$(grep -c '^# Samples:' multi.out)" -eq 3
"$TALLY" report --stdio -i "$FIX/group.data" >grp.out 2>&1
gsamples=$(awk '$1 == "group.data" {print $2}' "$FIX/COUNTS")
check "report: a group is one section with a column per member" eval 'grep -q "^# Samples: $gsamples  of events '"'"'anon group { cpu-clock, task-clock }'"'"'" grp.out && grep -Eq "^ +[0-9.]+% +[0-9.]+%  hot " grp.out'
"$TALLY" report --stdio -n --sort dso -q -i "$FIX/plain.data" >n.out 2>&1
check "report -n: sample counts" grep -Eq '^ +[0-9.]+% +[0-9]+  ' n.out
total=$(awk '{s += $2} END {print s}' n.out)
nsamp=$("$TALLY" report --stdio -i "$FIX/plain.data" | sed -n "s/^# Samples: \([0-9]*\) .*/\1/p")
check "report -n: counts add up to the samples" test "$total" = "$nsamp"
"$TALLY" report --stdio -q --percent-limit 5 --sort dso -i "$FIX/plain.data" >pl.out 2>pl.err
check "report --percent-limit hides small rows" eval '! awk "\$1+0 < 5 && NF" pl.out | grep -q .'
"$TALLY" report --stdio -q --no-children --sort dso,sym -g none --percentage relative --dsos "[kernel.kallsyms]" -i "$FIX/system.data" >rel.out 2>&1
sum=$(awk '/^#/ {next} {s += $1} END {printf "%.0f", s}' rel.out)
check "report --percentage relative sums to 100 within a filter" test "$sum" = 100
"$TALLY" report --header-only -i "$FIX/plain.data" >ho.out 2>&1
check "report --header-only" eval 'grep -q "^# perf version : 6.1" ho.out && ! grep -q "^# Samples" ho.out'
"$TALLY" report --stats -i "$FIX/plain.data" >st.out 2>&1
check "report --stats counts records" grep -Eq '^ +SAMPLE events: +[0-9]+' st.out
"$TALLY" report -D -i "$FIX/plain.data" >d.out 2>&1
check "report -D dumps records" grep -q 'PERF_RECORD_SAMPLE' d.out
"$TALLY" report --stdio -g folded --no-children -i "$FIX/callchain.data" >fo.out 2>&1
check "report -g folded" grep -Eq '^[0-9.]+% [^ ]+;' fo.out
"$TALLY" report --stdio --sort bogus -i "$FIX/plain.data" 2>err >/dev/null; rc=$?
check "report --sort bogus: error naming the key" eval 'test $rc -ne 0 && grep -q bogus err'
"$TALLY" report -i nosuch.data 2>err >/dev/null; rc=$?
check "report on a missing file: error naming it" eval 'test $rc -ne 0 && grep -q nosuch.data err'
size=$(stat -c %s "$FIX/callchain.data")
head -c $((size / 2)) "$FIX/callchain.data" >cut.data
"$TALLY" report --stdio -i cut.data >cut.out 2>cut.err; rc=$?
check "report on a file cut short: warning, exit 0, the complete records reported" eval 'test $rc -eq 0 && grep -q "cut short" cut.err && grep -q "^# Samples:" cut.out'
cp "$FIX/callchain.data" bad.data; chmod u+w bad.data
# the first record's size field (data offset + 6) set to 4: smaller than a record header
perl -e 'open(my $f, "+<", $ARGV[0]) or die; binmode $f; my $h; read($f, $h, 104); my ($off) = unpack("Q", substr($h, 40, 8)); seek($f, $off + 6, 0); print $f pack("v", 4); close $f' bad.data
"$TALLY" report --stdio -i bad.data >/dev/null 2>bad.err; rc=$?
check "report on a damaged record: error naming the offset" eval 'test $rc -ne 0 && grep -q "offset 0x" bad.err'
"$TALLY" report --stdio -i - <"$FIX/pipe.data" >pipe.out 2>&1
check "report -i - reads a pipe stream" grep -q '^# Samples:' pipe.out

have_perf || { skip "report vs perf report on a fresh corpus (perf absent)"; exit 0; }

# --- with perf: a fresh corpus, compared row for row -------------------------------------
rec() { local n=$1; shift; perf record -q "$@" >/dev/null 2>&1; [ -s "$n" ]; }
rec plain.data -F 2000 -o plain.data "$HOT" 0.3
rec g.data -F 2000 -g -o g.data "$HOT" 0.3
# The system-wide recordings (-a) keep the samples of the test's own tasks alone: perf
# records in a cgroup made for the test (-G), which the workload's shell joins first, so
# their rows do not depend on what else runs on the machine (other tests in parallel).
# Without a writable cgroup hierarchy (not root), the comparisons of whole system-wide
# reports skip; those of the workload's rows run.
CGM=$(perf_event_cgroup_root) CGN=tally-report-$$ CG=() JOIN="" AG=""
if [ -n "$CGM" ] && mkdir "$CGM/$CGN" 2>/dev/null; then
	trap 'rmdir "$CGM/$CGN" 2>/dev/null; rm -rf "$TMP"' EXIT
	CG=(-G "$CGN") JOIN="{ echo \$\$ >'$CGM/$CGN/cgroup.procs' || exit 1; }; " AG=ag
else
	skip "whole system-wide reports vs perf (no writable perf_event cgroup to record in)"
fi
rec ag.data -F 1000 -a -g -e cpu-clock "${CG[@]}" -o ag.data -- \
	sh -c "$JOIN$HOT 0.2; ls -R /usr/lib >/dev/null"
rec z.data -F 2000 -z -o z.data "$HOT" 0.3
perf record -q -F 2000 -o - "$HOT" 0.3 >pipe.data 2>/dev/null
rec tp.data -a -e sched:sched_switch -e cpu-clock "${CG[@]}" -F 1000 -o tp.data -- \
	sh -c "$JOIN$HOT --sleeps 20; $HOT 0.1"
rec multi.data -e cpu-clock,task-clock -F 2000 -o multi.data "$HOT" 0.3
rec dwarf.data -F 500 --call-graph dwarf,4096 -o dwarf.data "$HOT" 0.3
rec group.data -F 2000 -g -e '{cpu-clock,task-clock}' -o group.data "$HOT" 0.3
corpus="plain g ag z pipe tp multi dwarf group"
if "$TALLY" record -h >/dev/null 2>&1; then
	"$TALLY" record -F 2000 -o tally.data "$HOT" 0.3 >/dev/null 2>&1 && corpus="$corpus tally"
	"$TALLY" record -F 2000 -g -o tallyg.data "$HOT" 0.3 >/dev/null 2>&1 && corpus="$corpus tallyg"
else
	skip "tally's own files (tally record absent)"
fi

for f in $corpus; do
	[ -s $f.data ] || { fail "record $f.data"; continue; }
	perf report --stdio --no-children -g none --sort comm,dso,sym -q -i $f.data >p.out 2>/dev/null
	"$TALLY" report --stdio --no-children -g none --sort comm,dso,sym -q -i $f.data >t.out 2>t.err
	rows p.out | grep -E '^[0-9. ]+\|(hot|sh|ls) ' >p.rows; rows t.out | grep -E '^[0-9. ]+\|(hot|sh|ls) ' >t.rows
	if [ -s p.rows ] && same_rows p.rows t.rows 0.5; then
		ok "$f: comm,dso,sym rows match perf report"
	else
		fail "$f: comm,dso,sym rows match perf report"; head -3 t.err | sed 's/^/# /'
	fi
done

# call graphs nested past 32 and 64 levels (workloads/deep: 80 frames, samples at every
# depth): every level printed, and past 32 levels the pipes perf draws (its 32-bit mask,
# the level's bit taken modulo 32).
if rec deep.data -F 999 -g -o deep.data "$TALLY_BUILD/workloads/deep" 80 0.3; then
	for o in "" "--no-children" "-g caller" "-g graph,0.1" "-g fractal"; do
		# shellcheck disable=SC2086
		perf report -i deep.data --stdio $o 2>/dev/null | grep -v '^# (Tip: ' >p.out
		# shellcheck disable=SC2086
		"$TALLY" report -i deep.data --stdio $o 2>t.err | grep -v '^# (Tip: ' >t.out
		check "deep call graphs (80 levels) ${o:-(default)}: perf's text" eval \
			'[ "$(awk "length > 400" p.out | wc -l)" -gt 0 ] && diff p.out t.out'
	done
else
	fail "record workloads/deep"
fi

# JIT code described by /tmp/perf-PID.map: perf names the dso "[JIT] tid PID"
if jpid=$(perf record -q -N -F 2000 -o jit.data "$TALLY_BUILD/workloads/jit" 0.3 2>/dev/null) && [ -n "$jpid" ]; then
	perf report --stdio --no-children --sort dso,sym -q -i jit.data >p.out 2>/dev/null
	"$TALLY" report --stdio --no-children --sort dso,sym -q -i jit.data >t.out 2>&1
	rm -f "/tmp/perf-$jpid.map"
	rows p.out >p.rows; rows t.out >t.rows
	check "JIT map: dso,sym rows as perf's ([JIT] tid $jpid)" eval \
		'grep -q "^[0-9. ]*|\[JIT\] tid $jpid \[\.\] jitted_loop$" p.rows && same_rows p.rows t.rows 0.5'
else
	skip "JIT map dso names (the jit workload is x86-64 only)"
fi

# children view: the same callers with the same children/self percentages
for f in g ag; do
	perf report --stdio --children -g none --sort comm,dso,sym -q -i $f.data >p.out 2>/dev/null
	"$TALLY" report --stdio --children -g none --sort comm,dso,sym -q -i $f.data >t.out 2>&1
	rows p.out | grep -E '^[0-9. ]+\|(hot|sh|ls) ' >p.rows; rows t.out | grep -E '^[0-9. ]+\|(hot|sh|ls) ' >t.rows
	if [ -s p.rows ] && same_rows p.rows t.rows 1; then ok "$f: children view matches perf"; else fail "$f: children view matches perf"; fi
done

# graph rendering of the entries with call chains, byte for byte (tip line aside). perf
# runs with --no-inline: it adds '(inlined)' frames when addr2line finds inline info for
# an address, which it does not always do the same way; tally shows no inline frames.
for mode in "graph --no-children" "graph --children" "flat --no-children" "folded --no-children" "fractal --no-children" "graph,0.5,caller --no-children"; do
	set -- $mode
	perf report --stdio --no-inline -g $1 $2 --percent-limit 5 -i g.data 2>/dev/null | grep -v '^# (Tip\|^# To display' >p.out
	"$TALLY" report --stdio -g $1 $2 --percent-limit 5 -i g.data 2>&1 | grep -v '^# (Tip\|^# To display' >t.out
	if diff p.out t.out >d.out; then ok "g.data: -g $mode output identical to perf"; else fail "g.data: -g $mode output identical to perf"; head -20 d.out | sed 's/^/# /'; fi
done

# perf's default view (children, caller graphs) and a pipe stream, byte for byte down to 1%
for f in g; do	# (system-wide files: other processes' symbols may differ, see the row checks)
	perf report --stdio --no-inline --percent-limit 1 -i $f.data 2>/dev/null | grep -v '^# (Tip' >p.out
	"$TALLY" report --stdio --percent-limit 1 -i $f.data 2>&1 | grep -v '^# (Tip' >t.out
	if diff p.out t.out >d.out; then ok "$f.data: default report identical to perf (down to 1%)"; else fail "$f.data: default report identical to perf (down to 1%)"; head -10 d.out | sed 's/^/# /'; fi
done
# --max-stack as perf: the first N frames in the order the view reads the chain (the
# outermost in the caller view), none at all with 0
for ms in "--max-stack 2" "--max-stack 0" "--no-children --max-stack 2" "-G --max-stack 1" \
	  "--no-children --max-stack 0" "--children -g callee --max-stack 3"; do
	# shellcheck disable=SC2086
	perf report --stdio --no-inline $ms -i g.data 2>/dev/null | grep -v '^# (Tip' >p.out
	# shellcheck disable=SC2086
	"$TALLY" report --stdio $ms -i g.data 2>&1 | grep -v '^# (Tip' >t.out
	check "g.data $ms: report identical to perf" diff p.out t.out
done
# -U (unresolved samples and frames left out, totals too), --symbol-filter (rows hidden,
# totals kept), --no-skip-empty (the dummy event's empty section), --ns, --samples
for f in g $AG; do
	for o in "-U" "-U --no-children" "-U -G" "--symbol-filter=spin" \
		 "--symbol-filter=main --no-children" "--no-skip-empty" "--ns" "--samples 10" \
		 "-U --symbol-filter=a -g none"; do
		# (the system-wide file without graphs: branches of equal weight in other
		# processes' trees may come in another order, see the row checks above)
		[ $f = ag ] && o="$o -g none"
		# shellcheck disable=SC2086
		perf report --stdio --no-inline $o -i $f.data 2>/dev/null | grep -v '^# (Tip' >p.out
		# shellcheck disable=SC2086
		"$TALLY" report --stdio $o -i $f.data 2>/dev/null | grep -v '^# (Tip' >t.out
		if [ $f = ag ]; then
			check "$f.data $o: report identical to perf ($(wc -l <p.out) lines)" same_sys p.out t.out
		else
			check "$f.data $o: report identical to perf ($(wc -l <p.out) lines)" diff -q p.out t.out
		fi
	done
done
# --time: only the samples in the span count (perf names the slice in the header)
for f in g $AG; do
	a=$(perf script -F time -i $f.data 2>/dev/null | sed -n 5p | tr -d ' :')
	b=$(perf script -F time -i $f.data 2>/dev/null | sed -n 100p | tr -d ' :')
	for tm in "$a,$b" "$a," ",$b"; do
		perf report --stdio --no-inline --time "$tm" -i $f.data 2>/dev/null | grep -v '^# (Tip' >p.out
		"$TALLY" report --stdio --time "$tm" -i $f.data 2>/dev/null | grep -v '^# (Tip' >t.out
		cmp=(diff -q); [ $f = ag ] && cmp=(same_sys)
		check "$f.data --time $tm: report identical to perf" eval 'grep -q "time slices" p.out && "${cmp[@]}" p.out t.out'
	done
done
"$TALLY" report -I --header-only -i g.data >/dev/null 2>err; rc=$?
check "report -I with --header: refused, naming what it lacks" eval 'test $rc -eq 1 && grep -q "show-info" err'

# every row of a system-wide children view, ties included: perf orders rows of equal
# children and self through its trees (caller above callee within a thread, junk
# addresses of frame-pointer-less code compared as perf compares them)
if [ -n "$AG" ]; then
	perf report --stdio --no-inline -g none -i ag.data 2>/dev/null | grep -v '^# (Tip' >p.out
	"$TALLY" report --stdio -g none -i ag.data 2>/dev/null | grep -v '^# (Tip' >t.out
	check "ag.data: every row of the children view in perf's order ($(wc -l <p.out) lines)" same_sys p.out t.out
fi
# a file of tracepoints only: perf's default is --sort trace. Kernel call chains only:
# branches of equal weight in two user-space dsos (a task switched out at two places,
# which load makes likely) come in the order of perf's dso objects' heap addresses,
# which its allocator decides, and no reader of the file can know; in the kernel's
# single dso perf orders them by address, as tally.
perf record -q -N -g --kernel-callchains -e sched:sched_switch -e sched:sched_wakeup -o tponly.data \
	-- sh -c "$HOT --sleeps 20; ls / >/dev/null" >/dev/null 2>&1
# trace_report NAME FILE [OPTIONS]: perf's and tally's report of a tracepoint file, the
# same byte for byte and with a Trace output column
trace_report() {
	local name=$1 f=$2
	shift 2
	perf report --stdio --no-inline "$@" -i "$f" 2>/dev/null | grep -v '^# (Tip' >p.out
	"$TALLY" report --stdio "$@" -i "$f" 2>&1 | grep -v '^# (Tip' >t.out
	if grep -q "Trace output" p.out && diff p.out t.out >d.out; then
		ok "$name"
	else
		fail "$name"
		head -20 d.out | sed 's/^/# /'
	fi
}
for tv in "" "--no-children" "--sort trace,comm" "-g none"; do
	# shellcheck disable=SC2086
	trace_report "tracepoints only ${tv:-(default)}: perf's Trace output report" tponly.data $tv
done

# perf sizes the Trace output and Source:Line columns over the texts it made while
# comparing rows on the key: rows equal on the keys before it holding one sample leave
# none, and print cut to the column ("comm=true pi", "do_exit+110"): one exit, one or
# two execs, two exits of two comms
perf record -q -e sched:sched_process_exec -e sched:sched_process_exit -o tpone.data \
	-- sh -c 'exec true' >/dev/null 2>&1
perf record -q -e sched:sched_process_exec -e sched:sched_process_exit -o tptwo.data \
	-- sh -c '/bin/true; /bin/true; :' >/dev/null 2>&1
for f in tpone tptwo; do
	for tv in "" "--sort comm,trace" "--sort pid,trace" "--sort trace,comm" "-t ,"; do
		# shellcheck disable=SC2086
		trace_report "$f.data ${tv:-(default)}: Trace output column as wide as perf's" $f.data $tv
	done
	for tv in "--sort srcline" "--sort comm,srcline" "--sort srcline,comm" "--sort pid,srcline"; do
		rm -f d.out
		# shellcheck disable=SC2086
		perf report --stdio $tv -i $f.data 2>/dev/null | grep -v '^# (Tip' >p.out
		# shellcheck disable=SC2086
		"$TALLY" report --stdio $tv -i $f.data 2>&1 | grep -v '^# (Tip' >t.out
		check "$f.data $tv: Source:Line column as wide as perf's" eval \
			'grep -q "Source:Line" p.out && diff p.out t.out >d.out'
		[ -s d.out ] && head -10 d.out | sed 's/^/# /'
	done
done
check "an event of one sample: perf cuts its trace output to the header's width" eval \
	'perf report --stdio -i tpone.data 2>/dev/null | grep -q "comm=true pi\$" && "$TALLY" report --stdio -i tpone.data 2>/dev/null | grep -q "comm=true pi\$"'

perf record -q -F 2000 -g -o - "$HOT" 0.2 2>/dev/null >gpipe.data
perf report --stdio --no-inline --percent-limit 1 -i - <gpipe.data 2>/dev/null | grep -v '^# (Tip' >p.out
"$TALLY" report --stdio --percent-limit 1 -i - <gpipe.data 2>&1 | grep -v '^# (Tip' >t.out
if diff p.out t.out >d.out; then ok "pipe -g: report identical to perf (no children for pipes)"; else fail "pipe -g: report identical to perf (no children for pipes)"; head -10 d.out | sed 's/^/# /'; fi

# event groups: one section, a column per member, byte for byte
perf report --stdio --no-children -n -i group.data 2>/dev/null | grep -v '^# (Tip' >p.out
"$TALLY" report --stdio --no-children -n -i group.data 2>&1 | grep -v '^# (Tip' >t.out
if diff p.out t.out >d.out; then ok "group.data: group view identical to perf"; else fail "group.data: group view identical to perf"; head -10 d.out | sed 's/^/# /'; fi

# --header-only / --header, byte for byte (file, pipe stream from stdin, group)
for f in plain g group; do
	perf report --header-only -i $f.data >p.out 2>/dev/null
	"$TALLY" report --header-only -i $f.data >t.out 2>&1
	if diff p.out t.out >d.out; then ok "$f.data: --header-only identical to perf"; else fail "$f.data: --header-only identical to perf"; head -6 d.out | sed 's/^/# /'; fi
done
perf report --header-only -i - <gpipe.data >p.out 2>/dev/null
"$TALLY" report --header-only -i - <gpipe.data >t.out 2>&1
check "pipe stream: --header-only identical to perf" diff -q p.out t.out
perf report --stdio --header --percent-limit 1 -i g.data 2>/dev/null | grep -v '^# (Tip' >p.out
"$TALLY" report --stdio --header --percent-limit 1 -i g.data 2>&1 | grep -v '^# (Tip' >t.out
check "g.data: --header report identical to perf" diff -q p.out t.out

# the exact header and table layout
perf report --stdio --no-children -i plain.data 2>/dev/null | grep -v '^# (Tip' | sed -n '1,12p' >p.out
"$TALLY" report --stdio --no-children -i plain.data 2>&1 | grep -v '^# (Tip' | sed -n '1,12p' >t.out
if diff p.out t.out >d.out; then ok "plain.data: header block and first rows identical"; else fail "plain.data: header block and first rows identical"; sed 's/^/# /' d.out | head -20; fi

# --sort with other keys
for s in pid cpu dso comm,pid; do
	[ -n "$AG" ] || break
	perf report --stdio --no-children -g none --sort $s -q -i ag.data >p.out 2>/dev/null
	"$TALLY" report --stdio --no-children -g none --sort $s -q -i ag.data >t.out 2>&1
	rows p.out >p.rows; rows t.out >t.rows
	if same_rows p.rows t.rows 0.5; then ok "ag.data: --sort $s rows match"; else fail "ag.data: --sort $s rows match"; fi
done

# two binaries of one name with a function at the same address but of other sizes
# (two builds of one program): perf's rows keep them apart, by dso name and symbol
# start and end
if command -v cc >/dev/null 2>&1; then
	mkdir -p two/a two/b
	printf '%s\n' 'int main(void) { volatile unsigned long x = 0;' \
		'for (unsigned long i = 0; i < 150000000UL; i++) x += i; return 0; }' >two/a/spin.c
	printf '%s\n' 'int main(int c, char **v) { volatile unsigned long x = c;' \
		'for (unsigned long i = 0; i < 150000000UL; i++) x += i;' \
		'if (x == 7) x += c * 5 + (long)v; return 0; }' >two/b/spin.c
	if cc -O1 -o two/a/spin two/a/spin.c && cc -O1 -o two/b/spin two/b/spin.c &&
		perf record -q -F 1000 -e cpu-clock -o two.data -- \
			sh -c './two/a/spin; ./two/b/spin' >/dev/null 2>&1; then
		check "two builds: main at one address in both (the test can tell)" eval \
			'[ "$(nm two/a/spin | grep " T main")" = "$(nm two/b/spin | grep " T main")" ]'
		for o in "--sort comm,dso,sym" "--sort sym" "--children --sort dso,sym"; do
			# shellcheck disable=SC2086
			perf report -i two.data --stdio -g none $o 2>/dev/null | grep '\] main$' >p.out
			# shellcheck disable=SC2086
			"$TALLY" report -i two.data --stdio -g none $o 2>t.err | grep '\] main$' >t.out
			check "two builds, report $o: a row per build, as perf" eval \
				'[ "$(wc -l <p.out)" = 2 ] && diff p.out t.out'
		done
	else
		fail "two builds of one program recorded"
	fi
	# a row without a symbol (a stripped build, not in the build-id cache: -N) widens
	# perf's dso column to an address's 16 digits, but not with -t, -w or --dsos
	if cc -O2 -s -o two/stripped two/a/spin.c &&
		perf record -q -N -F 1000 -e cpu-clock:u -o st.data -- ./two/stripped >/dev/null 2>&1; then
		for o in "--sort dso,sym" "--sort dso" "--sort comm,dso" "--sort dso,sym -w 5,5,5" \
			 "--sort dso,sym --dsos stripped" "--sort dso,sym -t ,"; do
			# shellcheck disable=SC2086
			perf report -i st.data --stdio -g none $o 2>/dev/null | grep -v '^#' | grep . >p.out
			# shellcheck disable=SC2086
			"$TALLY" report -i st.data --stdio -g none $o 2>&1 | grep -v '^#' | grep . >t.out
			check "stripped build, report $o: the dso column as wide as perf's" eval \
				'[ -s p.out ] && diff p.out t.out'
		done
	else
		fail "a stripped build recorded"
	fi
fi
