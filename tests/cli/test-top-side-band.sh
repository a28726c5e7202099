# tally top --all-cgroups and --namespaces, as perf 6.1's top: the sampling event's
# attr gets cgroup and namespaces (the kernel's CGROUP and NAMESPACES records) and every
# sample its CGROUP id; top -vv prints the attrs as perf top -vv does, which is how
# both are compared. The table is still there (the CGROUP field is parsed).
. "$(dirname "$0")/lib.sh"
HOT="$TALLY_BUILD/workloads/hot"

if ! "$TALLY" top --stdio -d 0.1 --iterations 1 -e task-clock >/dev/null 2>err; then
	skip "top --all-cgroups/--namespaces (cannot sample: $(head -1 err))"
	exit 0
fi
"$HOT" 300 & HP=$!
trap 'kill $HP 2>/dev/null; rm -rf "$TMP"' EXIT

# bits FILE: the task-clock attr's sample_type CGROUP, namespaces and cgroup lines
bits() {
	awk '/^perf_event_attr:/ { b = "" } { b = b $0 "\n" }
	     /^  config  *0x1$/ { tc = 1 } /^---/ && tc { print b; exit }' "$1" |
		grep -E '^  (sample_type .*CGROUP|namespaces  *1|cgroup  *1)' | sed 's/^ *//; s/  */ /g; s/sample_type.*/CGROUP/'
}
"$TALLY" top -vv --stdio -d 0.5 --iterations 2 -e task-clock --namespaces --all-cgroups -p $HP \
	>t.out 2>t.err; rc=$?
check "--namespaces --all-cgroups: exit 0 (rc $rc)" test $rc -eq 0
check "the attr: CGROUP in samples, cgroup and namespaces side-band ($(bits t.err | tr '\n' ' '))" \
	test "$(bits t.err | tr '\n' ' ')" = "CGROUP namespaces 1 cgroup 1 "
check "the table is there, hot's spin on top" grep -q '%  *hot  *\[\.\] spin' t.out
"$TALLY" top -vv --stdio -d 0.2 --iterations 1 -e task-clock -p $HP >/dev/null 2>n.err
check "without them: none of these bits" test -z "$(bits n.err)"

have_perf || { skip "top --all-cgroups/--namespaces vs perf (perf absent)"; exit 0; }
timeout -s INT 3 perf top -vv --stdio -d 1 -e task-clock --namespaces --all-cgroups -p $HP \
	< <(sleep 5) >/dev/null 2>p.err
if [ -z "$(bits p.err)" ]; then
	skip "perf top printed no attr of task-clock"
else
	check "the same bits as perf top's ($(bits p.err | tr '\n' ' '))" test "$(bits p.err)" = "$(bits t.err)"
fi
