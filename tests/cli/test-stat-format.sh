# tally stat output shapes against perf 6.1 run in the same test: human (line lengths,
# column layout, units, padding), CSV (separator counts 6/7/8, field kinds) and JSON
# (keys, order, value types) for plain, -a, -A, -I, -r, --per-thread and
# --per-core/socket/die/node. Values differ between two runs; shapes must not.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { skip "stat formats vs perf (python3 absent)"; exit 0; }
SHAPE="$TALLY_TOP/tests/data/stat/shape.py"
GOLD="$TALLY_TOP/tests/data/stat"

# Golden outputs captured from perf 6.1 (tests/data/stat/perf-*.txt): checked even where
# perf is not installed. Only modes whose shape does not depend on the CPU count.
golden() {
	local name=$1 mode=$2 file=$3
	shift 3
	"$TALLY" stat "$@" 2>g.out >/dev/null
	if python3 "$SHAPE" "$mode" "$GOLD/$file" g.out 2>diff.txt; then
		ok "golden $name"
	else
		fail "golden $name"
		sed 's/^/# /' diff.txt
	fi
}
golden "std" std perf-std.txt -e task-clock,page-faults,cycles true
golden "csv" csv perf-csv.txt -x, -e task-clock,page-faults,cycles true
golden "json" json perf-json.txt -j -e task-clock,page-faults,cycles true
golden "std -r 3" std perf-std-r3.txt -r 3 -e task-clock,cycles true
golden "csv -r 3" csv perf-csv-r3.txt -x, -r 3 -e task-clock,cycles true
golden "json -r 3" json perf-json-r3.txt -j -r 3 -e task-clock,cycles true
golden "std -I -a" std perf-std-I.txt -I 50 --interval-count 2 -a -e task-clock,page-faults,cycles
golden "csv -I -a" csv perf-csv-I.txt -x, -I 50 --interval-count 2 -a -e task-clock,page-faults,cycles
golden "json -I -a" json perf-json-I.txt -j -I 50 --interval-count 2 -a -e task-clock,page-faults,cycles

have_perf || { skip "stat formats vs perf run now (perf absent)"; exit 0; }
HOT="$TALLY_BUILD/workloads/hot"
EV=task-clock,page-faults,cycles


for f in std csv json; do
	case $f in std) fmt=() ;; csv) fmt=(-x,) ;; json) fmt=(-j) ;; esac
	stat_compare "$f: workload, default events" $f "${fmt[@]}" true
	stat_compare "$f: -e list with <not supported>" $f "${fmt[@]}" -e $EV true
	stat_compare "$f: -a" $f "${fmt[@]}" -a -e $EV --timeout 100
	stat_compare "$f: -a, default events (cpu-clock)" $f "${fmt[@]}" -a --timeout 100
	stat_compare "$f: -d" $f "${fmt[@]}" -d true
	stat_compare "$f: -A -a" $f "${fmt[@]}" -A -a -e $EV --timeout 100
	stat_compare "$f: -I -a" $f "${fmt[@]}" -I 50 --interval-count 2 -a -e $EV
	stat_compare "$f: -I -A -a" $f "${fmt[@]}" -I 50 --interval-count 1 -A -a -e task-clock
	for m in core socket die node; do
		stat_compare "$f: --per-$m" $f "${fmt[@]}" --per-$m -a -e $EV --timeout 100
		stat_compare "$f: -I --per-$m" $f "${fmt[@]}" -I 50 --interval-count 1 --per-$m -a -e task-clock
	done
	"$HOT" 3 &
	hp=$!
	stat_compare "$f: --per-thread -p" $f "${fmt[@]}" --per-thread -p $hp -e task-clock,context-switches --timeout 100
	kill $hp; wait $hp 2>/dev/null
done
# -r: the variance column; task-clock always varies, so its noise is always shown.
stat_compare "std: -r 3" std -r 3 -e task-clock true
stat_compare "csv: -r 3" csv -x, -r 3 -e task-clock,cycles true
stat_compare "json: -r 3" json -j -r 3 -e task-clock,cycles true

# Separator counts from the issue: 6 plain, 7 with -r (variance), 8 with -I (timestamp).
"$TALLY" stat -x, -e task-clock true 2>c6.csv
"$TALLY" stat -x, -r 2 -e task-clock true 2>c7.csv
"$TALLY" stat -x, -I 50 --interval-count 1 -a -e task-clock 2>c8.csv
check "CSV plain has 6 separators" test "$(tr -cd , <c6.csv | wc -c)" -eq 6
check "CSV -r has 7 separators" test "$(tr -cd , <c7.csv | wc -c)" -eq 7
check "CSV -I has 7 separators (+ timestamp)" test "$(tr -cd , <c8.csv | wc -c)" -eq 7
"$TALLY" stat -x, -a --per-core -e task-clock --timeout 20 2>c9.csv
check "CSV --per-core has 8 separators (id, cpus)" test "$(head -1 c9.csv | tr -cd , | wc -c)" -eq 8
