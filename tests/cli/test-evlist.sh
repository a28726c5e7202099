# tally evlist: event names and attrs of perf.data files, compared field for field
# with perf 6.1's `perf evlist` (when perf is installed) and with the checked-in fixtures.
. "$(dirname "$0")/lib.sh"

FIX=$TALLY_TOP/tests/data/perf
HOT=$TALLY_BUILD/workloads/hot

# Without perf: the fixtures' names are known.
out=$("$TALLY" evlist -i "$FIX/multi.data")
check "evlist names from EVENT_DESC" test "$out" = "$(printf 'cpu-clock\ntask-clock\nsched:sched_switch')"
out=$("$TALLY" evlist -g -i "$FIX/group.data")
check "evlist -g shows the group" test "$out" = "{cpu-clock,task-clock}"
out=$("$TALLY" evlist -F -i "$FIX/plain.data")
check "evlist -F shows sample_freq" grep -Eqx 'cpu-clock:pppH?: sample_freq=1000' <<<"$out"
out=$("$TALLY" evlist -i - <"$FIX/pipe.data")
check "evlist reads a pipe stream from stdin" grep -Eqx 'cpu-clock:pppH?' <<<"$out"
out=$(cat "$FIX/pipe.data" | "$TALLY" evlist -v -i - | sed 's/^cpu-clock:pppH:/cpu-clock:ppp:/')
check "evlist -v from a real pipe" grep -q '^cpu-clock:ppp: type: 1, size: 128, { sample_period, sample_freq }: 1000, sample_type: IP|TID|TIME|ID|PERIOD, ' <<<"$out"

"$TALLY" evlist -i nosuch.data 2>err; rc=$?
check "missing file: nonzero exit" test $rc -ne 0
check "missing file: message names the file" grep -q 'nosuch.data' err
# the data cut short (the features after it gone): the events, and a warning as report's
size=$(stat -c %s "$FIX/callchain.data")
head -c $((size / 2)) "$FIX/callchain.data" >half.data
out=$("$TALLY" evlist -i half.data 2>err); rc=$?
check "data cut short: the header's events listed, exit 0" eval 'test $rc -eq 0 && grep -Eqx "cpu-clock:pppH?" <<<"$out"'
check "data cut short: a warning saying what is missing" grep -q 'half.data is cut short: [0-9]* bytes missing at the end; its features' err
head -c 100 "$FIX/plain.data" >cut.data
"$TALLY" evlist -i cut.data 2>err; rc=$?
check "header cut short: error with an offset" eval 'test $rc -ne 0 && grep -q "offset" err'
printf 'garbage that is not perf data at all' >bad.data
"$TALLY" evlist -i bad.data 2>err; rc=$?
check "not perf.data: clear error" eval 'test $rc -ne 0 && grep -q "not a perf.data file" err'
"$TALLY" evlist --bogus 2>/dev/null; rc=$?
check "unknown option: nonzero exit" test $rc -ne 0

have_perf || { skip "evlist vs perf evlist (perf absent)"; exit 0; }

# Every fixture, every mode, byte for byte (perf's tip line aside).
same=1
for f in "$FIX"/*.data; do
	for o in "" -v -g -F; do
		if ! diff <(perf evlist $o -i "$f" 2>/dev/null | grep -v '^# Tip') \
			  <("$TALLY" evlist $o -i "$f") >diff.out; then
			same=0; echo "# $(basename "$f") $o"; sed 's/^/# /' diff.out
		fi
	done
done
check "evlist matches perf evlist on the fixtures (plain, -v, -g, -F)" test $same = 1
same=1
for f in "$FIX"/*.data; do
	for o in "" -v -g -F; do
		if ! diff <(perf evlist $o --trace-fields -i "$f" 2>/dev/null | grep -v '^# Tip') \
			  <("$TALLY" evlist $o --trace-fields -i "$f") >diff.out; then
			same=0; echo "# $(basename "$f") $o --trace-fields"; sed 's/^/# /' diff.out
		fi
	done
done
check "evlist --trace-fields (alone, -v, -g, -F) matches perf on the fixtures" test $same = 1
perf evlist -F -g -i "$FIX/group.data" >/dev/null 2>&1; p=$?
"$TALLY" evlist -F -g -i "$FIX/group.data" 2>err; t=$?
check "evlist -g with -F: refused as perf refuses it ($p)" \
	eval 'test $t -eq $p && grep -q "group option is not compatible" err'

# Fresh recordings with attrs the fixtures lack: modifiers, periods, breakpoints, -a.
rec() { local n=$1; shift; perf record -q -o "$n.data" "$@" -- "$HOT" 0.05 >/dev/null 2>&1; }
rec mods -e cpu-clock:u -e task-clock:k -e page-faults:uk
rec period -c 20000 -e cpu-clock
rec bp -e mem:0x1000:rw -e context-switches
perf record -q -e cpu-clock -e dummy -o - -- "$HOT" 0.05 >pipe1.data 2>/dev/null
rec clk -k mono -e cpu-clock
rec dwarf --call-graph dwarf,512 -F 100
rec grp2 -e '{cpu-clock,task-clock,page-faults}' -e major-faults
same=1 n=0
for f in mods period bp pipe1 clk dwarf grp2; do
	[ -s $f.data ] || continue
	n=$((n + 1))
	for o in "" -v -g -F; do
		if ! diff <(perf evlist $o -i $f.data 2>/dev/null | grep -v '^# Tip') \
			  <("$TALLY" evlist $o -i $f.data) >diff.out; then
			same=0; echo "# $f $o"; sed 's/^/# /' diff.out
		fi
	done
done
check "evlist matches perf evlist on $n fresh recordings" test $same = 1 -a $n -ge 5

# The one attr dump of evlist -v, report --header and parse-events, on fields no
# recording here can set: type 0 (a hardware event: perf shows no "type"),
# branch_sample_type as bit names, aux_sample_size and sig_data. Both copies of the attr
# (the attr section and EVENT_DESC) are patched, as each command reads one of them.
if command -v python3 >/dev/null; then
	python3 - "$FIX/plain.data" attrs.data <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
off = struct.unpack_from('<Q', d, 24)[0]
size = struct.unpack_from('<I', d, off + 4)[0]
attr = bytes(d[off:off + size])
for a in (off, d.find(attr, off + size)):
    assert a > 0
    struct.pack_into('<I', d, a, 0)             # type: PERF_TYPE_HARDWARE
    struct.pack_into('<Q', d, a + 72, 0x3)      # branch_sample_type: USER|KERNEL
    struct.pack_into('<I', d, a + 112, 64)      # aux_sample_size
    struct.pack_into('<Q', d, a + 120, 7)       # sig_data
open(sys.argv[2], 'wb').write(d)
PY
	perf evlist -v -i attrs.data 2>/dev/null | grep -v '^# Tip' >p.out
	"$TALLY" evlist -v -i attrs.data >t.out 2>&1
	check "evlist -v: type 0, branch_sample_type, aux_sample_size, sig_data as perf" \
		eval 'grep -q "branch_sample_type: USER|KERNEL, .*sig_data: 7" t.out && diff p.out t.out'
	perf report --header-only -i attrs.data 2>/dev/null | grep '^# event :' >p.out
	"$TALLY" report --header-only -i attrs.data 2>&1 | grep '^# event :' >t.out
	check "report --header-only event line: the same fields as perf" \
		eval 'grep -q "branch_sample_type = USER|KERNEL, .*sig_data = 7" t.out && diff p.out t.out'
else
	skip "attr fields perf cannot record here (python3 absent)"
fi
