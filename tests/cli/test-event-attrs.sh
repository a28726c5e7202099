#!/usr/bin/env bash
# The attrs tally's event parser builds equal the ones perf 6.1 builds, field by field.
#
# How perf's attr is obtained: `perf stat -vv -e EVENT true` prints every attr block
# ("perf_event_attr:" … dashes) BEFORE it calls perf_event_open, so even hardware
# events that cannot open on a machine without a PMU show what perf parsed. When an
# open fails perf may retry with a changed attr ("switching off exclude_guest …"); only
# the first block of each event is compared. Stat adds its own policy (sample_type,
# read_format, disabled, inherit, enable_on_exec) and drops sample_period, so stat is
# used for the fields the parser decides (type, config, config1/2 = bp_addr/bp_len,
# bp_type, exclude_*, precise_ip, pinned, exclusive) and `perf record -vv` for
# sample_period/freq set by period=/freq= terms and the tracepoint/breakpoint default
# period. Event names are compared with `perf stat -x,` (hardware events show as
# <not supported> but keep their name).
. "$(dirname "$0")/lib.sh"

have_perf || { skip "event attrs vs perf (perf absent)"; exit 0; }
command -v python3 >/dev/null || { skip "event attrs vs perf (python3 absent)"; exit 0; }

# Event strings: modifiers, groups, PMU terms, tracepoints, breakpoints, hw-cache, raw.
STAT_EVENTS=(
	'cycles' 'instructions:u' 'cycles:k' 'cache-misses:ppp' 'branches:pH' 'ref-cycles:G'
	'bus-cycles:I' 'stalled-cycles-frontend:D' 'cpu-cycles:e' 'branch-misses:uk'
	'idle-cycles-backend:h' 'cache-references:P'
	'task-clock' 'cs:u' 'page-faults:k' 'cpu-migrations:h' 'minor-faults:uk' 'dummy'
	'major-faults:S' 'alignment-faults:GH' 'context-switches:Iu'
	'L1-dcache-loads' 'L1-dcache-load-misses:u' 'LLC-store-misses' 'dTLB-prefetches'
	'iTLB-load-misses' 'branch-loads' 'node-loads:k' 'l1d-loads' 'L1-icache-prefetch-misses'
	'LLC-misses' 'Data-TLB-store-miss' 'bpu-read-access'
	'r1a2' 'r003c:u' 'rff:pp'
	'msr/tsc/' 'msr/event=0x1/' 'msr/smi/u' 'msr/tsc/k' 'tsc' 'msr/config=0x2,name=foo/'
	'uprobe/retprobe,ref_ctr_offset=0x12/' 'uprobe/config=0x10,retprobe=1/'
	'sched:sched_switch' 'sched:sched_wakeup:u' 'sched:sched_process_e*'
	'mem:0x1000' 'mem:0x1000:w' 'mem:0x1000/8:rw:u' 'mem:0x2000:x' 'mem:4096/2:r'
	'{cycles,instructions}:u' '{task-clock,page-faults}:S' '{cs,cpu-migrations}:D'
	'{task-clock:u,page-faults:k}:H' '{cycles:p,cs}:e' 'grp{task-clock,minor-faults}'
	'4:0x10' '1:3'
	'cpu-clock/period=1000/' 'task-clock/config=2/'
	'cycles/period=1/' 'msr/tsc,name=x/u' 'cpu-clock:u,cs:k' 'r1a2/config1=5/' 'mem:0x1000:u'
	'tsc:u' 'faults:PS' '{cs:D,faults}' 'instructions:Iu' 'cpu-clock:ukhGHI'
	'L1-dcache-loads/name=l1/' '{cs,faults}:u,{cycles}'
)
# Fields perf's sample_period/freq are compared on (record -vv).
RECORD_EVENTS=(
	'cpu-clock/period=1000/' 'task-clock/freq=99/' 'cs/period=7,name=ctx/'
	'sched:sched_switch' 'mem:0x1000:w' 'page-faults/period=3/u' 'bpf-output'
)

cat > compare.py <<'PY'
import re, sys

FIELDS = ["type", "config", "{ bp_addr, config1 }", "{ bp_len, config2 }", "bp_type",
          "exclude_user", "exclude_kernel", "exclude_hv", "exclude_idle", "exclude_host",
          "exclude_guest", "precise_ip", "pinned", "exclusive"]
RECORD_FIELDS = ["{ sample_period, sample_freq }", "freq"]

def blocks(text, first_only):
    """attr blocks in order; with first_only, skip perf's retries of the same event."""
    out, cur, retry = [], None, False
    for line in text.splitlines():
        if line.startswith("perf_event_attr:"):
            cur = {}
            continue
        if cur is not None:
            if line.startswith("-----"):
                if not (first_only and retry):
                    out.append(cur)
                cur, retry = None, False
                continue
            m = re.match(r"  (\S.*?)\s{2,}(\S+)$", line) or re.match(r"  (\S+)\s+(\S+)$", line)
            if m:
                cur[m.group(1).strip()] = m.group(2)
            continue
        if re.match(r"(switching off|Fallback|Trying|Reopen|Retrying)", line.strip()):
            retry = True
    return out

def norm(v):
    try:
        return int(v, 0)
    except ValueError:
        return v

mode, tally_file, perf_file = sys.argv[1:4]
fields = FIELDS if mode == "stat" else RECORD_FIELDS
t = blocks(open(tally_file).read(), False)
p = blocks(open(perf_file).read(), True)
if mode == "record":
    p = p[:len(t)]	# perf record adds its side-band dummy event after the user's
elif len(p) < len(t) and "not supported" in open(perf_file).read():
    t = t[:len(p)]	# a group whose leader cannot open here: perf stops trying members
if len(t) != len(p):
    print(f"event count differs: tally {len(t)} perf {len(p)}")
    sys.exit(1)
bad = []
for i, (a, b) in enumerate(zip(t, p)):
    for f in fields:
        va, vb = norm(a.get(f, "0")), norm(b.get(f, "0"))
        if va != vb:
            bad.append(f"event {i}: {f}: tally {a.get(f, '0')} perf {b.get(f, '0')}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY

n=0
for ev in "${STAT_EVENTS[@]}"; do
	n=$((n + 1))
	"$TALLY" parse-events --no-pfm "$ev" > t.out 2> t.err
	rc=$?
	perf stat -vv -e "$ev" true > p.out 2>&1
	if ! grep -q '^perf_event_attr:' p.out; then
		# An event this machine's sysfs lacks (msr/smi/ exists on some VMs only):
		# perf rejects it, and so must tally.
		if [ $rc -ne 0 ]; then
			ok "attrs '$ev': rejected by perf and by tally (not on this machine)"
		else
			skip "attrs '$ev' (perf printed no attr: $(grep -m1 -i 'error\|invalid' p.out))"
		fi
		continue
	fi
	if [ $rc -ne 0 ]; then
		fail "attrs '$ev': tally parse failed: $(head -3 t.err)"
		continue
	fi
	if python3 compare.py stat t.out p.out > diff.out; then
		ok "attrs '$ev'"
	else
		fail "attrs '$ev': $(tr '\n' ';' < diff.out)"
	fi
	# names, as perf stat -x, prints them (3rd field)
	perf stat -x';' -e "$ev" true 2> pn.out > /dev/null
	grep -v '^#' pn.out | grep -v '^$' | awk -F';' '{print $3}' > pnames
	grep -v '^-\|^perf_event_attr\|^  ' t.out > tnames
	if [ -s pnames ] && ! grep -q '^$' pnames && ! cmp -s pnames tnames; then
		fail "names '$ev': tally [$(tr '\n' ' ' < tnames)] perf [$(tr '\n' ' ' < pnames)]"
	fi
done
echo "# compared $n event strings with perf stat -vv"

for ev in "${RECORD_EVENTS[@]}"; do
	"$TALLY" parse-events --no-pfm "$ev" > t.out 2> t.err || { fail "record attrs '$ev': tally parse failed"; continue; }
	perf record -vv -e "$ev" -o r.data true > p.out 2>&1
	if ! grep -q '^perf_event_attr:' p.out; then
		skip "record attrs '$ev' (perf printed no attr)"
		continue
	fi
	if python3 compare.py record t.out p.out > diff.out; then
		ok "record attrs (period/freq) '$ev'"
	else
		fail "record attrs '$ev': $(tr '\n' ';' < diff.out)"
	fi
done

# Strings perf rejects are rejected by tally too, with a caret message and exit 1.
for ev in 'cycles:zz' 'cpu-clock:ppppp' 'foo' 'msr/foo/' 'sched:nope' 'L1-icache-stores' \
	  'cycles,' 'mem:0x1000:rr' 'cs:uu' 'msr/event=0x1,/'; do
	perf stat -e "$ev" true > /dev/null 2>&1
	prc=$?
	"$TALLY" parse-events --no-pfm "$ev" > /dev/null 2> t.err
	trc=$?
	if [ $prc -ne 0 ] && [ $trc -eq 1 ] && grep -q '\\___ ' t.err; then
		ok "rejected like perf: '$ev'"
	else
		fail "reject '$ev': perf rc $prc, tally rc $trc: $(head -2 t.err | tr '\n' ' ')"
	fi
done
