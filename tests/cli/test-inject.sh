# tally inject against perf 6.1's perf inject on the same inputs: perf's own pipe test
# (record -o - | inject -b | report -i -) with tally and perf in every place, pipes and
# files both ways, -b and --buildid-all, -s, and --jit on a program that writes its own
# jitdump (workloads/jitdemo). Outputs pass perf report, perf script and perf report -D
# without warnings. Every part runs in an empty HOME of its own.
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
JIT=$TALLY_BUILD/workloads/jitdemo
fresh_home() { HOME=$(mktemp -d "$TMP/home.XXXXXX"); export HOME; }
unset PERF_BUILDID_DIR PERF_CONFIG
# same NAME A B: ok if files A and B are equal, else the difference
same() { if cmp -s "$2" "$3"; then ok "$1"; else fail "$1"; diff "$2" "$3" | head -10 | sed 's/^/#   /'; fi; }
# what perf report -D says when it does not like a record (not data such as [unknown])
PERF_WARNS='Warning|[Ff]ailed|Error|error:|[Ii]nvalid|not properly terminated|unexpected|[Uu]nknown (record|feature|event)'
rows() { "$@" --stdio -q --sort comm,dso,sym 2>/dev/null | awk 'NF {print $1, $2, $3, $NF}' | sort; }

# --- tally alone -------------------------------------------------------------------
fresh_home
cp "$HOT" ./hot
"$TALLY" record -q -o - ./hot 0.2 2>/dev/null | "$TALLY" inject -b >b.pipe
check "record -o - | inject -b | report -i -: spin" grep -q "\[\.\] spin" <("$TALLY" report -i - --stdio <b.pipe 2>/dev/null)
check "inject -b: the pipe's build-ids" grep -q "^$("$TALLY" buildid-list -i ./hot) $PWD/hot\$" <("$TALLY" buildid-list -i b.pipe)
"$TALLY" inject -b -i b.pipe -o b.data
check "inject: pipe in, file out (-o)" grep -q "\[\.\] spin" <("$TALLY" report -i b.data --stdio 2>/dev/null)
"$TALLY" inject -i b.data >c.pipe
check "inject: file in, pipe out (stdout)" grep -q "\[\.\] spin" <("$TALLY" report -i - --stdio <c.pipe 2>/dev/null)
"$TALLY" inject -i nosuch.data -o x.data 2>x.err; rc=$?
check "inject of a missing file: an error, no output file" eval 'test $rc -ne 0 && test ! -e x.data && grep -q nosuch x.err'
if [ -x "$JIT" ]; then
	"$TALLY" record -q -e cpu-clock:u -o nojit.data "$JIT" 0.1 . >/dev/null 2>&1
	"$TALLY" inject --jit -i nojit.data -o nojit2.data 2>nojit.err; rc=$?
	check "inject --jit of a recording without -k monotonic: refused, said why" \
		eval 'test $rc -ne 0 && grep -q "k monotonic" nojit.err && test ! -e nojit2.data'
	rm -f jit-*.dump jitted-*.so
fi

have_perf || { skip "inject: comparisons with perf (perf absent)"; exit 0; }

# --- perf's pipe test, every recorder/injector/reporter combination ------------------
fresh_home
for rec in tally perf; do
	for inj in tally perf; do
		for rep in tally perf; do
			R=perf; [ $rec = tally ] && R=$TALLY
			I=perf; [ $inj = tally ] && I=$TALLY
			P=perf; [ $rep = tally ] && P=$TALLY
			k="$rec record | $inj inject -b | $rep report"
			$R record -q -e task-clock:u -o - ./hot 0.2 2>/dev/null | $I inject -b 2>/dev/null |
				$P report -i - --stdio >pt.out 2>/dev/null
			check "pipe test: $k -i -: spin" grep -q "\[\.\] spin" pt.out
		done
		$R record -q -e task-clock:u -o - ./hot 0.2 2>/dev/null | $I inject -b -o pt.data 2>/dev/null
		check "pipe test: $rec record -o - | $inj inject -b -o FILE; perf report" \
			grep -q "\[\.\] spin" <(perf report -i pt.data --stdio 2>/dev/null)
		$R record -q -e task-clock:u -o pf.data ./hot 0.2 >/dev/null 2>&1
		$I inject -b -i pf.data 2>/dev/null | perf report -i - --stdio >pt.out 2>/dev/null
		check "pipe test: $rec record -o FILE; $inj inject -b -i FILE | perf report -i -" \
			grep -q "\[\.\] spin" pt.out
	done
done

# the same input through both: the same build-ids, records perf reads without a word.
# Files in, files out; then a pipe in, a pipe out (perf 6.1 misreads a pipe stream stored
# in a file when given -i, and writes a pipe stream into -o FILE: it gets it on stdin)
"$TALLY" record -q -o in.data ./hot 0.2 >/dev/null 2>&1
"$TALLY" record -q -o - ./hot 0.2 2>/dev/null >in.pipe
for opt in -b --buildid-all ""; do
	perf inject $opt -i in.data -o p$opt.out 2>/dev/null
	"$TALLY" inject $opt -i in.data -o t$opt.out
	perf buildid-list -i p$opt.out 2>/dev/null | sort >pb
	perf buildid-list -i t$opt.out 2>/dev/null | sort >tb
	if [ -n "$opt" ]; then
		same "inject $opt -i FILE -o FILE: perf's build-ids" pb tb
	else
		# perf 6.1's plain inject forgets all build-ids but the vdso's; tally keeps
		# those of the binaries hit (docs/inject.md)
		check "inject -i FILE -o FILE: the build-ids of the binaries hit are kept" \
			grep -q " $PWD/hot\$" tb
	fi
	rows perf report -i p$opt.out >pr
	rows perf report -i t$opt.out >tr
	same "inject $opt -i FILE -o FILE: perf report's rows of perf's output" pr tr
	perf report -D -i t$opt.out >dump 2>&1
	check "inject $opt -o FILE: perf report -D warns of nothing" eval '! grep -qE "$PERF_WARNS" dump'
	perf script -i t$opt.out >/dev/null 2>sc.err; rc=$?
	check "inject $opt -o FILE: perf script reads it" eval 'test $rc -eq 0 && ! grep -qi "warn\|error" sc.err'
	cat in.pipe | perf inject $opt 2>/dev/null >p.pipe
	"$TALLY" inject $opt <in.pipe >t.pipe
	# (perf names a vdso it dumped while reading by its random temporary file; it decides
	# on samples in its time-ordered queue, tally in stream order, each a record before
	# the sample that first hits the binary: when the task moved between CPUs the order
	# of two records may differ, so the lists are compared as sets)
	perf buildid-list -i p.pipe 2>/dev/null | sed 's,/tmp/perf-vdso\.so-[A-Za-z0-9]*,[vdso],' | sort >pb
	perf buildid-list -i t.pipe 2>/dev/null | sed 's,/tmp/perf-vdso\.so-[A-Za-z0-9]*,[vdso],' | sort >tb
	same "inject $opt, a pipe in and out: perf's build-id records" pb tb
	perf report -D -i t.pipe >dump 2>&1
	check "inject $opt, a pipe out: perf report -D warns of nothing" eval '! grep -qE "$PERF_WARNS" dump'
done

# --- -s: sched_stat merged into sched_switch ---------------------------------------
if have_tracepoint sched:sched_stat_runtime; then
	fresh_home
	perf record -q -e sched:sched_switch -e sched:sched_stat_runtime -e sched:sched_process_exit \
		-o ss.data -- sh -c './hot 0.05; sleep 0.01; ./hot 0.05' >/dev/null 2>&1
	perf inject -s -i ss.data -o ssp.data 2>/dev/null
	"$TALLY" inject -s -i ss.data -o sst.data
	F=comm,tid,cpu,time,period,event
	"$TALLY" script -F $F -i ssp.data >ssp.txt 2>/dev/null
	"$TALLY" script -F $F -i sst.data >sst.txt 2>/dev/null
	check "inject -s: switch samples carry the stats (some)" test -s sst.txt
	same "inject -s: perf's samples (task, cpu, time, period, event)" ssp.txt sst.txt
	perf script -i sst.data >pss.txt 2>&1; rc=$?
	check "inject -s: perf script decodes tally's output" eval 'test $rc -eq 0 && test "$(grep -c "sched:sched_switch: prev_comm=" pss.txt)" -eq "$(wc -l <sst.txt)"'
	"$TALLY" record -q -e sched:sched_switch -e sched:sched_stat_runtime \
		-e sched:sched_process_exit -o tss.data -- sh -c './hot 0.05; sleep 0.01' >/dev/null 2>&1
	"$TALLY" inject -s -i tss.data | perf script -i - >tss.txt 2>&1
	check "inject -s of tally's recording, to a pipe: perf script reads it" grep -q "sched:sched_switch: prev_comm=" tss.txt
else
	skip "inject -s: no sched_stat tracepoints here"
fi

# --- --jit ----------------------------------------------------------------------------
if [ -x "$JIT" ]; then
	fresh_home
	mkdir -p jit && cd jit || exit 1
	for rec in perf tally; do
		rm -f jit-*.dump jitted-*.so
		if [ $rec = perf ]; then
			perf record -q -k 1 -e cpu-clock:u -o j.data "$JIT" 0.3 "$PWD" >/dev/null 2>&1
		else
			"$TALLY" record -q -k monotonic -e cpu-clock:u -o j.data "$JIT" 0.3 "$PWD" >/dev/null 2>&1
		fi
		perf inject --jit -i j.data -o jp.data 2>/dev/null
		rows perf report -i jp.data >jp.rows
		rm -f jitted-*.so
		"$TALLY" inject --jit -i j.data -o jt.data; rc=$?
		check "$rec record -k mono; inject --jit: exit 0" test $rc -eq 0
		check "$rec record; inject --jit: one ELF per jitted function" test "$(ls jitted-*.so | wc -l)" -eq 2
		rows perf report -i jt.data >jt.rows
		check "$rec record; inject --jit: perf report names jit_loop_a and jit_loop_b" \
			eval 'grep -q " jit_loop_a$" jt.rows && grep -q " jit_loop_b$" jt.rows'
		same "$rec record; inject --jit: perf report's rows of perf inject --jit" jp.rows jt.rows
		rows "$TALLY" report -i jt.data >jtt.rows
		same "$rec record; inject --jit: tally report as perf report" jt.rows jtt.rows
		perf report -D -i jt.data >dump 2>&1
		check "$rec record; inject --jit: perf report -D warns of nothing" eval '! grep -qE "$PERF_WARNS" dump'
		perf script -i jt.data >js.out 2>js.err
		check "$rec record; inject --jit: perf script names the jitted code" eval 'grep -q "jit_loop_a+0x" js.out && ! grep -qi "warn\|error" js.err'
		check "$rec record; inject --jit: the marker map is gone" eval '! grep -q "jit-[0-9]*\.dump" <(perf report -D -i jt.data 2>/dev/null)'
		check "$rec record; inject --jit: BUILD_ID lists the jitted files" \
			test "$(perf buildid-list -i jt.data 2>/dev/null | grep -c "/jitted-[0-9]*-[12]\.so$")" -eq 2
		"$TALLY" inject --jit -i j.data | perf report -i - --stdio >jpipe.out 2>/dev/null
		check "$rec record; inject --jit to a pipe: perf report names jit_loop_b" grep -q "\[\.\] jit_loop_b" jpipe.out
	done
	cd ..
else
	skip "inject --jit: workloads/jitdemo is x86-64 only"
fi
