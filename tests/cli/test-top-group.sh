# tally top --group and --group-sort-idx, as perf 6.1's top: the events opened as one
# group (--group, or -e '{a,b}'), a cell per member in each value column (perf's group
# view), rows by the leader's values or by member N's (--group-sort-idx N). Values differ
# between live runs, so perf top is compared on the layout (where each right-aligned
# value cell ends), the header and the invariants: each member's column adds up to 100%,
# the rows follow the chosen member.
. "$(dirname "$0")/lib.sh"
HOT="$TALLY_BUILD/workloads/hot"

# usage errors, before anything opens
"$TALLY" top --stdio --group-sort-idx x >/dev/null 2>err </dev/null; rc=$?
check "--group-sort-idx x: usage error (rc $rc)" eval '[ $rc -eq 129 ] && grep -q "numerical value" err'
"$TALLY" top --stdio --group-sort-idx >/dev/null 2>err </dev/null; rc=$?
check "--group-sort-idx without n: usage error (rc $rc)" eval '[ $rc -eq 129 ] && grep -q "requires a value" err'
"$TALLY" top --stdio --group=1 >/dev/null 2>err </dev/null; rc=$?
check "--group=1: usage error (rc $rc)" eval '[ $rc -eq 129 ] && grep -q "takes no value" err'

if ! "$TALLY" top --stdio -d 0.1 --iterations 1 --group -e cpu-clock,task-clock >/dev/null 2>err </dev/null; then
	skip "top --group (cannot sample a group of cpu-clock and task-clock: $(head -1 err))"
	exit 0
fi

"$HOT" 300 & HP=$!
trap 'kill $HP 2>/dev/null' EXIT
for ((i = 0; i < 600; i++)); do	# until it has exec'd (a loaded machine may be slow)
	[ "$(readlink /proc/$HP/exe)" = "$(readlink -f "$HOT")" ] && break
	sleep 0.1
done

G=(--group -e cpu-clock,task-clock)
# top_g FILE ARGS...: one --stdio table of hot's samples, every row shown
top_g() { local f=$1; shift; "$TALLY" top --stdio -d 0.5 --iterations 1 -E 100000 -p $HP "$@" >"$f" 2>err </dev/null; }
# perf_g FILE ARGS...: perf top's tables of hot's samples (three refreshes)
perf_g() { local f=$1; shift; timeout -s INT 3.5 perf top --stdio -d 1 -p $HP "$@" < <(sleep 6) >"$f" 2>/dev/null; }
# rows FILE: the rows of FILE's last table (perf's screen clears taken out)
rows() {
	tr -d '\033' <"$1" | sed 's/\[H\[2J//g' |
		awk '/PerfTop:/ { delete r; n = 0; next } /^ +[0-9.]+%/ { r[n++] = $0 } END { for (i = 0; i < n; i++) print r[i] }'
}
# ends N: where the first N words of a row end, the layout most rows of stdin have
# (value cells are right-aligned: their ends are the columns)
ends() {
	awk -v n="$1" '{ s = ""; k = 0
		for (i = 1; i <= length($0) && k < n; i++)
			if (substr($0, i, 1) != " " && (i == length($0) || substr($0, i + 1, 1) == " ")) { s = s " " i; k++ }
		print s }' | sort | uniq -c | sort -rn | awk 'NR == 1 { $1 = ""; print }'
}
# sums: each value column's sum over the rows (the first COLS words)
sums() { awk -v n="$1" '{ for (i = 1; i <= n; i++) { v = $i; sub(/%/, "", v); s[i] += v } } END { for (i = 1; i <= n; i++) printf "%s%.0f", (i > 1 ? " " : ""), s[i] }'; }
# sorted_by K: column K (a percent) never grows down the rows
sorted_by() { awk -v k="$1" '{ v = $k; sub(/%/, "", v); if (NR > 1 && v + 0 > last + 0) bad = 1; last = v } END { exit bad || !NR }'; }

top_g plain "${G[@]}"; rc=$?
check "top --group: exit 0 (rc $rc)" test $rc -eq 0
check "top --group: the header names the leader, without a rate (as perf for several events)" \
	grep -q 'drop: [0-9]*/[0-9]* \[cpu-clock\],  (target_pid: '"$HP"')' plain
check "top --group: a cell per member on every row" \
	eval '[ -n "$(rows plain)" ] && ! rows plain | grep -Evq "^ +[0-9.]+% +[0-9.]+%  [^ ]"'
check "top --group: hot's spin on top" eval 'rows plain | head -1 | grep -Eq "%  hot +\[\.\] spin$"'
check "top --group: each member's column adds up to 100% ($(rows plain | sums 2))" \
	test "$(rows plain | sums 2)" = "100 100"
check "top --group: rows by the leader's share" eval 'rows plain | sorted_by 1'
top_g brace -e '{cpu-clock,task-clock}'
check "top -e '{cpu-clock,task-clock}': the group view without --group" \
	eval '[ "$(rows brace | sums 2)" = "100 100" ] && ! rows brace | grep -Evq "^ +[0-9.]+% +[0-9.]+%  "'

# --group-sort-idx 1: by the second member's share (-n: a samples cell per member too)
top_g s1 "${G[@]}" -n --group-sort-idx 1
check "top --group -n: two percent and two sample cells" \
	eval '[ -n "$(rows s1)" ] && ! rows s1 | grep -Evq "^ +[0-9.]+% +[0-9.]+% +[0-9]+ +[0-9]+  [^ ]"'
check "top --group-sort-idx 1: rows by the second member's share" eval 'rows s1 | sorted_by 2'
top_g s9 "${G[@]}" --group-sort-idx 9
check "top --group-sort-idx past the group: by the leader's, as perf" eval 'rows s9 | sorted_by 1'
# without a group: perf ignores it; tally says so and sorts as usual
top_g nog -e cpu-clock --group-sort-idx 1; rc=$?
check "top --group-sort-idx without a group: runs, one value column (rc $rc)" \
	eval '[ $rc -eq 0 ] && rows nog | head -1 | grep -Eq "^ +[0-9.]+%  hot"'
check "top --group-sort-idx without a group: a warning says it sorts nothing" \
	eval '[ "$(wc -l <err)" -eq 1 ] && grep -q "no event group to sort" err'

# system-wide: the member samples too (a group starts once complete); hundreds of rows
# of a sample or two, each rounded to 0.01%, make the columns add up to 100% +- 10
"$TALLY" top --stdio -d 0.5 --iterations 1 -E 100000 "${G[@]}" >sw 2>err </dev/null
check "top -a --group: each member's column adds up to about 100% ($(rows sw | sums 2))" \
	eval 'rows sw | sums 2 | awk "{ exit !(\$1 >= 90 && \$1 <= 110 && \$2 >= 90 && \$2 <= 110) }"'
# -g: children and self, a cell per member each; the leader's callers under a row
top_g cg "${G[@]}" -g
check "top --group -g: children then self cells, two each" \
	eval 'rows cg | head -1 | grep -Eq "^ +[0-9.]+% +[0-9.]+% +[0-9.]+% +[0-9.]+%  [^ ]"'
check "top --group -g: the callers of spin" grep -q -- '--hot_a' cg
# decay and zeroing between refreshes: the group is linked again each time
"$TALLY" top --stdio -d 0.3 --iterations 3 -p $HP "${G[@]}" >dec 2>err </dev/null; rc=$?
check "top --group over 3 refreshes: exit 0, two cells in the last table (rc $rc)" \
	eval '[ $rc -eq 0 ] && [ "$(grep -c PerfTop: dec)" -eq 3 ] && rows dec | head -1 | grep -Eq "^ +[0-9.]+% +[0-9.]+%  hot"'
"$TALLY" top --stdio -d 0.3 --iterations 3 -p $HP -z "${G[@]}" >zero 2>err </dev/null; rc=$?
check "top --group -z over 3 refreshes: exit 0, two cells in the last table (rc $rc)" \
	eval '[ $rc -eq 0 ] && rows zero | head -1 | grep -Eq "^ +[0-9.]+% +[0-9.]+%  hot"'
# -w: each member's cell at the width, the column at least its default cells
top_g w "${G[@]}" -n -w 9,7,2,6
check "top --group -n -w 9,7,2,6: cells of 9 and 7, the samples column padded to 24" \
	eval 'rows w | head -1 | grep -Eq "^  [ 0-9.]{8}%[ 0-9.]{8}%  [ 0-9]{7}[ 0-9]{7} {10}  ho  \[\.\] sp$"'
# --hierarchy: perf 6.1's top shows the leader's columns only
top_g hi "${G[@]}" --hierarchy
check "top --group --hierarchy: the leader's column only, as perf's" \
	eval '[ -n "$(rows hi)" ] && ! rows hi | grep -q "%.*%"'

if ! have_perf || asan_build; then
	skip "top --group vs perf top (perf absent or ASan build)"
	exit 0
fi
perf_g p1 "${G[@]}" -n --group-sort-idx 1
if [ -z "$(rows p1)" ]; then
	skip "top --group vs perf top (perf top printed no table)"
	exit 0
fi
check "perf top --group: the same header" \
	grep -q 'drop: [0-9]*/[0-9]* \[cpu-clock\],  (target_pid: '"$HP"')' p1
check "top --group -n: the cells where perf top's are ($(rows s1 | ends 4))" \
	test "$(rows s1 | ends 4)" = "$(rows p1 | ends 4)"
check "perf top --group-sort-idx 1 sorts by the second member too" eval 'rows p1 | sorted_by 2'
perf_g pg "${G[@]}" -g
check "top --group -g: the cells where perf top's are ($(rows cg | ends 4))" \
	test "$(rows cg | ends 4)" = "$(rows pg | ends 4)"
perf_g pw "${G[@]}" -n -w 9,7,2,6
check "top --group -n -w: the cells where perf top's are ($(rows w | ends 7))" \
	test "$(rows w | ends 7)" = "$(rows pw | ends 7)"
perf_g ph "${G[@]}" --hierarchy
check "perf top --group --hierarchy: the leader's column only too" \
	eval '[ -n "$(rows ph)" ] && ! rows ph | grep -q "%.*%"'
perf_g pn -e cpu-clock --group-sort-idx 1
check "perf top --group-sort-idx without a group: one value column too" \
	eval 'rows pn | head -1 | grep -Eq "^ +[0-9.]+%  [^ 0-9]"'
