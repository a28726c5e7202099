# tally stat record / report: perf's STAT records, both ways between tally and perf 6.1,
# files and pipes.
. "$(dirname "$0")/lib.sh"
HOT="$TALLY_BUILD/workloads/hot"
pf() { awk '$2 == "page-faults" { print $1 }' "$1"; }

"$TALLY" stat record -o t.data -e task-clock,page-faults,cycles "$HOT" --faults 500 2>rec.txt; rc=$?
check "stat record: exit 0" test $rc -eq 0
check "stat record: prints the counts too" grep -q " page-faults " rec.txt
"$TALLY" stat report -i t.data 2>rep.txt; rc=$?
check "stat report reads tally's file" test $rc -eq 0
check "stat report: header names the recorded command" grep -q "Performance counter stats for '.*stat record -o t.data .*hot --faults 500':" rep.txt
check "stat report: same page-faults as recorded" test "$(pf rep.txt)" = "$(pf rec.txt)"
check "stat report: unsupported event kept" grep -q "<not supported> *cycles" rep.txt
"$TALLY" stat report -i t.data -x, 2>rep.csv
check "stat report -x, prints CSV" grep -q "^[0-9]*,,page-faults," rep.csv
"$TALLY" stat record -o - -e '{task-clock,page-faults}' true 2>/dev/null >pipe.data
"$TALLY" stat report -i - <pipe.data 2>rp.txt
check "stat report -i - reads a tally pipe: 'pipe' header" grep -q "Performance counter stats for 'pipe':" rp.txt
"$TALLY" stat report -i nonexistent.data 2>err; rc=$?
check "stat report of a missing file fails with a message" test $rc -ne 0 -a -s err

if ! have_perf; then
	skip "stat record/report against perf (perf absent)"
	exit 0
fi
perf stat report -i t.data 2>prep.txt; rc=$?
check "perf stat report reads tally's file" test $rc -eq 0
check "perf stat report: same page-faults" test "$(pf prep.txt)" = "$(pf rec.txt)"
perf stat report -i - <pipe.data 2>ppipe.txt
check "perf stat report reads tally's pipe" grep -q "Performance counter stats for 'pipe':" ppipe.txt
check "perf stat report: group from tally's pipe counted" grep -q " page-faults " ppipe.txt
perf stat record -o p.data -e task-clock,page-faults "$HOT" --faults 500 2>prec.txt
"$TALLY" stat report -i p.data 2>trep.txt
check "tally reads perf's stat file: same page-faults" test "$(pf trep.txt)" = "$(pf prec.txt)"
perf stat record -o - -e task-clock,page-faults true 2>/dev/null | "$TALLY" stat report -i - 2>tp.txt
check "perf stat record -o - | tally stat report -i -: 'pipe'" grep -q "Performance counter stats for 'pipe':" tp.txt
check "perf pipe: task-clock counted" grep -q "msec task-clock" tp.txt
# The same file read by both: byte-identical reports (values come from the file).
"$TALLY" stat record -o sys.data -a -e cpu-clock,page-faults --timeout 50 2>/dev/null
perf stat report -i sys.data 2>p1.txt
"$TALLY" stat report -i sys.data 2>t1.txt
check "stat report -a file: byte-identical to perf stat report" cmp -s p1.txt t1.txt
perf stat report -A -i sys.data 2>p2.txt
"$TALLY" stat report -A -i sys.data 2>t2.txt
check "stat report -A: byte-identical to perf stat report -A" cmp -s p2.txt t2.txt
perf stat report -i p.data 2>p3.txt
"$TALLY" stat report -i p.data 2>t3.txt
check "perf's file: byte-identical reports" cmp -s p3.txt t3.txt
