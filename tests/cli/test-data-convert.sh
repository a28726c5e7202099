#!/usr/bin/env bash
# tally data convert: --to-json byte for byte as perf 6.1's perf data convert --to-json
# on the same files (perf is the oracle; pipes, which perf 6.1 crashes on, against the
# same stream read from a file), and --to-pprof read by a real client, go tool pprof:
# -top's flat shares within 0.5 of perf report's self shares, -traces shows the call
# stacks, -raw the inlined functions as lines of one location and the build-ids, -tags
# the labels. Then the options' errors, and no half-written output.
. "$(dirname "$0")/lib.sh"

W=$TALLY_BUILD/workloads
FIX=$TALLY_TOP/tests/data/perf

"$TALLY" record -q -g -F 2000 -o hot.data "$W/hot" 0.4 >/dev/null 2>rec.err ||
	{ fail "record hot (for the conversions)"; cat rec.err; exit 0; }

# --- perf's JSON -----------------------------------------------------------------------
"$TALLY" data convert -i hot.data --to-json hot.json 2>conv.err
check "--to-json writes the file and says so, as perf" \
	sh -c 'test -s hot.json && grep -q "Converted .hot.data. into JSON data .hot.json." conv.err'
check "--to-json: a JSON document with every sample" python3 -c '
import json, sys
d = json.load(open("hot.json"))
n = int(sys.argv[1])
sys.exit(not (d["linux-perf-json-version"] == 1 and len(d["samples"]) == n and
              any(f.get("symbol") == "spin" for s in d["samples"] for f in s["callchain"])))' \
	"$("$TALLY" report --stats -i hot.data 2>/dev/null | awk '/^ *SAMPLE events:/ {print $3; exit}')"

# A system-wide recording holds the rest of the machine's work too (other builds and
# tests: processes that come and go while the recorder synthesizes the running ones,
# non-PIE executables whose PLT stubs perf 6.1 names "_init"). Such a file is compared
# as SYSTEM_WIDE=COMMS: the headers and every sample's time, pid, tid, cpu and
# ips as perf's, and the resolved frames (symbol, dso) of the samples of COMMS, the
# processes the test ran.
system_same() { python3 -c '
import json, sys
p, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
comms = set(sys.argv[3].split(","))
ok = p["headers"] == t["headers"] and len(p["samples"]) == len(t["samples"])
bad = 0
for a, b in zip(p["samples"], t["samples"]):
    if [a.get(k) for k in ("timestamp", "pid", "tid", "cpu")] != \
       [b.get(k) for k in ("timestamp", "pid", "tid", "cpu")] or \
       [f["ip"] for f in a["callchain"]] != [f["ip"] for f in b["callchain"]] or \
       (a["comm"] in comms and a != b):
        bad += 1
        if bad <= 3: print("# differs:", json.dumps(a)[:300], "/", json.dumps(b)[:300])
mine = sum(s["comm"] in comms for s in p["samples"])
sys.exit(not (ok and not bad and mine))' "$1" "$2" "$3"; }
same_json() {	# NAME FILE [EXTRA tally options]: tally's JSON is perf's, byte for byte
	local name=$1 f=$2
	shift 2
	perf data convert -i "$f" --to-json p.json --force >/dev/null 2>&1
	"$TALLY" data convert -i "$f" --to-json t.json -f "$@" 2>/dev/null
	if [ -s p.json ] && { cmp -s p.json t.json ||
		{ [ -n "${SYSTEM_WIDE:-}" ] && system_same p.json t.json "$SYSTEM_WIDE"; }; }; then
		ok "--to-json as perf data convert: $name"
	else
		fail "--to-json as perf data convert: $name"; diff p.json t.json | head -10 | sed 's/^/# /'
	fi
	rm -f p.json t.json
}
if have_perf; then
	same_json "tally record -g" hot.data
	for f in callchain plain multi system; do
		cp "$FIX/$f.data" .
		same_json "perf's $f.data" "$f.data"
	done
	if "$TALLY" record -q -a -g -F 1000 -o sys.data -- sh -c "$W/hot 0.2 & ls -lR /usr/share >/dev/null 2>&1; wait" >/dev/null 2>&1; then
		SYSTEM_WIDE=hot,sh,ls same_json "record -a -g (every process, kernel and library frames)" sys.data
	else
		skip "--to-json of a system-wide recording (record -a refused here)"
	fi
	# --call-graph dwarf: perf's JSON lists the recorded chain (its kernel part; empty
	# for a sample in user space), not the user frames report unwinds from the stack
	# copy. A program without frame pointers, then a shell and ls for kernel frames.
	for who in perf tally; do
		if record_by $who dw-$who.data --call-graph dwarf,4096 -F 400 -- \
			sh -c '"$1/unwind" 30 >/dev/null; ls -lR /usr/share/doc >/dev/null 2>&1' sh "$W"; then
			same_json "--call-graph dwarf recorded by $who (the recorded chain)" dw-$who.data
		else
			fail "$who record --call-graph dwarf (for --to-json)"
		fi
	done
	# (short-lived processes: the switches of exiting tasks say tid -1 with their
	# pid; perf's JSON gives them all the pid of the first such sample, its thread's)
	if "$TALLY" record -q -e sched:sched_switch -a -o tp.data -- \
		sh -c 'for i in $(seq 30); do /bin/true; done; sleep 0.1' >/dev/null 2>&1; then
		same_json "a tracepoint recording" tp.data
	else
		skip "--to-json of a tracepoint recording (tracepoints refused here)"
	fi
else
	skip "--to-json against perf data convert (perf absent)"
fi

# a pipe: the samples of the stream read from a file (perf 6.1 crashes on pipes)
"$TALLY" data convert -i "$FIX/pipe.data" --to-json pf.json 2>/dev/null
cat "$FIX/pipe.data" | "$TALLY" data convert -i - --to-json pp.json 2>/dev/null
check "--to-json from a pipe: the samples of the same stream in a file" python3 -c '
import json
a, b = json.load(open("pf.json")), json.load(open("pp.json"))
assert a["samples"] and a["samples"] == b["samples"]
assert b["headers"]["data-offset"] == 0 and b["headers"]["hostname"] == a["headers"]["hostname"]'

# --- pprof, read by go tool pprof ---------------------------------------------------------
if ! command -v go >/dev/null 2>&1; then
	skip "--to-pprof read by go tool pprof (go absent: scripts/deps.sh installs golang-go)"
	exit 0
fi
export GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOTOOLCHAIN=local GOPROXY=off GOTELEMETRY=off
pprof() { go tool pprof "$@" 2>pprof.err; }

"$TALLY" data convert -i hot.data --to-pprof hot.pb.gz --label host=web1 --label service=api 2>conv.err
check "--to-pprof writes a gzip file" sh -c 'test -s hot.pb.gz && gzip -t hot.pb.gz'
pprof -top -nodecount=10000 -nodefraction=0 -edgefraction=0 hot.pb.gz >top.out
check "go tool pprof reads it" grep -q 'flat%' top.out
# self_shares FILE: perf report's self shares (--sort sym), function by function, as the
# oracle; tally report's are the same text (test-report.sh) when perf is absent
oracle=tally
have_perf && oracle=perf
self_shares() {
	if [ $oracle = perf ]; then
		perf report -i "$1" --stdio --no-children --sort sym -g none -q 2>/dev/null
	else
		"$TALLY" report -i "$1" --stdio --no-children --sort sym -g none -q 2>/dev/null
	fi
}
self_shares hot.data >rep.out
# shares.py TOP REPORT: every function of REPORT (report --sort sym -g none) has its
# share in pprof's -top output TOP, to within 0.5
cat >shares.py <<'EOF'
import re, sys
top_file, rep_file = sys.argv[1], sys.argv[2]
rep, top, dup = {}, {}, set()
for l in open(rep_file):
    m = re.match(r"\s*([\d.]+)%\s+\[.\]\s+(\S.*?)\s*$", l)
    if m:
        name = m.group(2)
        if name in rep: dup.add(name)
        rep[name] = float(m.group(1))
for l in open(top_file):
    m = re.match(r"\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+[\d.]+%\s+(\S.*?)\s*$", l)
    if m: top[m.group(2)] = float(m.group(1))
bad = [(n, v, top.get(n)) for n, v in rep.items()
       if n not in dup and not n.startswith("0x") and abs(v - top.get(n, 0.0)) > 0.5]
checked = [n for n in rep if n not in dup]
if bad or not checked or max(rep.values()) < 20:
    print("# mismatches:", bad[:10], "report:", sorted(rep.items(), key=lambda x: -x[1])[:5])
    sys.exit(1)
EOF
# (-noinlines: a stray sample in inlined library code, ld.so's start-up, counts for the
# function holding the code, as in report; the inlined program below checks -top's way)
pprof -top -noinlines -nodecount=10000 -nodefraction=0 -edgefraction=0 hot.pb.gz >topn.out
check "-top -noinlines: flat shares within 0.5 of $oracle report's self shares" python3 shares.py topn.out rep.out
pprof -traces hot.pb.gz >traces.out
check "-traces: the call stacks, innermost first" python3 -c '
import re, sys
t = open("traces.out").read()
sys.exit(not re.search(r"\bspin\n\s+hot_a\n\s+main\n", t))'
check "-traces: comm, pid and tid labels" sh -c 'grep -q "comm:.*hot" traces.out && grep -q "pid:" traces.out && grep -q "tid:" traces.out'
# perf's system-wide fixture samples the cpu; swapper's samples are pid 0 on cpu 0 (a
# numeric label 0 without a unit is dropped by pprof's reader)
"$TALLY" data convert -i "$FIX/system.data" --to-pprof sys.pb.gz 2>/dev/null
pprof -tags sys.pb.gz >systags.out
check "-tags: cpu labels, and pid/cpu 0 kept (swapper)" python3 -c '
import re, sys
t = open("systags.out").read()
def total(key):
    m = re.search(r"^ *" + key + r": Total ([\d.]+)", t, re.M)
    return m and m.group(1)
ok = total("cpu") and total("cpu") == total("comm") == total("pid") and \
     re.search(r"^ *cpu: Total[^\n]*\n(\s+\S+ \([^)]*\): \d+\n)*\s+\S+ \([^)]*\): 0\n", t, re.M)
sys.exit(not ok)'
pprof -tags hot.pb.gz >tags.out
check "--label: host and service on every sample" \
	sh -c 'grep -A1 "^ *host:" tags.out | grep -q "100.*web1" && grep -A1 "^ *service:" tags.out | grep -q "100.*api"'
pprof -raw hot.pb.gz >raw.out
check "-raw: a sample type per value: samples (count) and cpu-clock (nanoseconds)" \
	grep -Eq '^samples/count cpu-clock[^ ]*/nanoseconds' raw.out
bid=$("$TALLY" buildid-list -i hot.data 2>/dev/null | awk -v p="$W/hot" '$2 == p {print $1}')
if sed -n "/^Mappings/,\$p" raw.out | sed -n 2p | grep -q "$W/hot $bid \[FN\]\[FL\]\[LN\]\[IN\]"; then
	ok "-raw: the program's mapping comes first, with its build-id and symbols"
else
	fail "-raw: the program's mapping comes first, with its build-id and symbols"
	echo "# build-id $bid; mappings:"; sed -n "/^Mappings/,\$p" raw.out | head -5 | sed 's/^/# /'
fi
check "-raw: source lines of the program's functions" grep -Eq ' M=1 spin .*/workloads/hot\.c:[0-9]+ ' raw.out
# addrs.py DWARF|FP COMM SCRIPT RAW: the user-space stacks of COMM's samples in pprof's
# -raw output RAW at perf script's addresses (SCRIPT: perf script --no-inline -F
# comm,ip,dso), each frame as dso and address in it. perf script prints a recorded
# chain's callers at their return addresses, pprof wants an address in the call: FP,
# pprof's one below perf's; DWARF (unwound callers, return addresses minus one
# already, as perf prints them): the same. For all but 2% of the samples (a sample may
# unwind apart, test-unwind.sh).
cat >addrs.py <<'EOF_ADDRS'
import collections, os, re, sys
mode, comm, script, raw = sys.argv[1:5]
def load_perf():
    d, frames, keep = collections.Counter(), None, False
    for l in open(script).read().split("\n") + [""]:
        if not l.strip():
            if frames and keep:
                d[tuple(frames)] += 1
            frames = None
        elif not l[0].isspace():
            frames, keep = [], l.split()[0] == comm
        elif frames is not None:
            m = re.match(r"\s*([0-9a-f]+) \((.*)\)$", l)
            if not m or m.group(2).startswith("[kernel") or m.group(2) == "[unknown]":
                keep = False
            else:
                a = int(m.group(1), 16) - (mode == "FP" and len(frames) > 0)
                frames.append((os.path.basename(m.group(2)), a))
    return d
def load_pprof():
    t = open(raw).read()
    maps = {m.group(1): (int(m.group(2), 16), int(m.group(3), 16), m.group(4)) for m in
            re.finditer(r"^(\d+): 0x([0-9a-f]+)/0x[0-9a-f]+/0x([0-9a-f]+) (\S+)", t, re.M)}
    locs = {m.group(1): (int(m.group(2), 16), m.group(3))	# (no M=: no mapping)
            for m in re.finditer(r"^\s+(\d+): 0x([0-9a-f]+)(?: M=(\d+))?", t, re.M)}
    d = collections.Counter()
    for m in re.finditer(r"^\s+(\d+)\s+\d+: ([\d ]+)\n\s+comm:\[(\S+)\]", t, re.M):
        frames = []
        for i in m.group(2).split():
            a, mid = locs[i]
            if mid not in maps or maps[mid][2].startswith("[kernel"):
                frames = None
                break
            s, o, path = maps[mid]
            frames.append((os.path.basename(path), a - s + o))
        if frames and m.group(3) == comm:
            d[tuple(frames)] += int(m.group(1))
    return d
p, t = load_perf(), load_pprof()
total = sum(p.values())
off = sum(abs(p[k] - t[k]) for k in set(p) | set(t))
if total < 20 or off * 50 > total or max(len(k) for k in p) < 3:
    print("# %d of %d user-space samples at other addresses than perf script's" % (off, total))
    for k in sorted(set(p) | set(t), key=lambda k: -abs(p[k] - t[k]))[:3]:
        print("# perf %d pprof %d %s" % (p[k], t[k], " ".join("%s:%x" % f for f in k)[:160]))
    sys.exit(1)
EOF_ADDRS
if have_perf; then
	perf script --no-inline -F comm,ip,dso -i hot.data >hot.script 2>/dev/null
	check "-raw: the locations' addresses, callers' in the call (one below perf script's)" \
		python3 addrs.py FP hot hot.script raw.out
else
	skip "-raw addresses against perf script's (perf absent)"
fi

"$TALLY" record -q -g -F 2000 -o inl.data "$W/inlined" 0.3 >/dev/null 2>&1
"$TALLY" data convert -i inl.data --to-pprof inl.pb.gz 2>/dev/null
pprof -raw inl.pb.gz >inl.raw
check "-raw: inlined functions are lines of one location, innermost first" python3 -c '
import re, sys
t = open("inl.raw").read()
sys.exit(not re.search(r" mix \S*inlined\.c:1[0-9] s=0\n\s+stir \S*inlined\.c:2[0-9] s=0\n\s+churn\S* \S*inlined\.c:[0-9]+ s=0\n", t))'
# pprof gives a sample in inlined code to the innermost inlined function, as perf
# report --inline does; -noinlines gives it to the function it was inlined into, as
# perf report does by default
pprof -top -noinlines -nodecount=10000 -nodefraction=0 -edgefraction=0 inl.pb.gz >inl.top
self_shares inl.data >inl.rep
check "-top -noinlines: inlined code counted for its function, as $oracle report" \
	python3 shares.py inl.top inl.rep
pprof -traces inl.pb.gz >inl.traces
check "-traces: inlined frames marked (inline)" grep -q 'mix (inline)' inl.traces
"$TALLY" data convert -i inl.data --to-pprof inl2.pb.gz --no-lines 2>/dev/null
pprof -raw inl2.pb.gz >inl2.raw
check "--no-lines: functions only" sh -c '! grep -q "inlined.c:" inl2.raw && grep -q " churn" inl2.raw'

# --call-graph dwarf (workloads/callers: no frame pointers, shared() under alpha and
# under beta, step() inlined into shared), recorded by perf and by tally: -traces shows
# the stacks only unwinding finds, step once in each; -top -noinlines gives perf
# report's self shares
for who in perf tally; do
	record_by $who dwc.data --call-graph dwarf,8192 -F 500 "$W/callers" 400
	case $? in
	0) ;;
	2) skip "pprof of perf's --call-graph dwarf recording (perf absent)"; continue ;;
	*) fail "$who record --call-graph dwarf of workloads/callers (for pprof)"; continue ;;
	esac
	"$TALLY" data convert -i dwc.data --to-pprof dwc.pb.gz -f 2>/dev/null
	pprof -traces dwc.pb.gz >dwc.traces
	check "-traces ($who, dwarf): the unwound stacks, shared under alpha and under beta" python3 -c '
import re, sys
t = open("dwc.traces").read()
sys.exit(not (re.search(r"\bshared\n\s+alpha\S*\n\s+main\n", t) and
              re.search(r"\bshared\n\s+beta\S*\n\s+main\n", t)))'
	check "-traces ($who, dwarf): the inlined step once in a stack, above shared" python3 -c '
import re, sys
stacks = open("dwc.traces").read().split("-----------+")[1:]
frames = [[re.sub(r"^\s*(\d+\S*\s+)?", "", l) for l in s.split("\n")[1:]
           if l.strip() and not re.match(r"\s*(comm|pid|tid|cpu):", l)] for s in stacks]
bad = [f for f in frames if sum(x.startswith("step") for x in f) > 1 or
       any(a == b for a, b in zip(f, f[1:]))]
seen = any(f[:2] == ["step (inline)", "shared"] for f in frames)
if bad: print("# a frame twice:", bad[0])
sys.exit(bool(bad) or not seen)'
	if have_perf; then
		perf script --no-inline -F comm,ip,dso -i dwc.data >dwc.script 2>/dev/null
		pprof -raw dwc.pb.gz >dwc.raw
		check "-raw ($who, dwarf): the unwound callers at perf script's addresses (in the call)" \
			python3 addrs.py DWARF callers dwc.script dwc.raw
	fi
	pprof -top -noinlines -nodecount=10000 -nodefraction=0 -edgefraction=0 dwc.pb.gz >dwc.top
	self_shares dwc.data >dwc.rep
	check "-top -noinlines ($who, dwarf): flat shares within 0.5 of $oracle report's self shares" \
		python3 shares.py dwc.top dwc.rep
done

# one pass, both formats; a pipe in
cat "$FIX/pipe.data" | "$TALLY" data convert -i - --to-json both.json --to-pprof both.pb.gz \
	--symfs "$FIX/symfs" 2>/dev/null
pprof -top both.pb.gz >both.top
check "--to-json and --to-pprof in one pass, from a pipe" \
	sh -c 'test -s both.json && grep -q " spin$" both.top'

# --- options and errors --------------------------------------------------------------------
echo keep >exists.json
"$TALLY" data convert -i hot.data --to-json exists.json 2>e.err
rc=$?
check "an existing output without -f: refused, as perf, and left alone" \
	sh -c 'test "$0" -ne 0 && grep -q "exists" e.err && test "$(cat exists.json)" = keep' "$rc"
"$TALLY" data convert -i hot.data --to-json exists.json -f 2>/dev/null
check "-f overwrites it" grep -q linux-perf-json-version exists.json
"$TALLY" data convert -i nosuch.data --to-pprof gone.pb.gz 2>e.err
rc=$?
check "a missing input: an error and no output" \
	sh -c 'test "$0" -eq 1 && grep -q nosuch.data e.err && ! ls gone.pb.gz* 2>/dev/null' "$rc"
"$TALLY" data convert -i hot.data --to-pprof nodir/x.pb.gz 2>e.err
check "an output directory that is not there: an error naming it" grep -q 'nodir/x.pb.gz' e.err
"$TALLY" data convert -i hot.data 2>e.err
rc=$?
check "no --to-*: an error saying what to give" sh -c 'test "$0" -eq 129 && grep -q -- "--to-json" e.err' "$rc"
"$TALLY" data convert -i hot.data --to-ctf out.ctf 2>e.err
check "--to-ctf: not supported, said so" grep -q 'to-ctf.*not supported' e.err
"$TALLY" data convert -i hot.data --to-pprof x.pb.gz --label novalue 2>e.err
check "--label without '=': an error" grep -q 'key=value' e.err
"$TALLY" data 2>e.err
rc=$?
check "tally data alone: usage, exit 129" sh -c 'test "$0" -eq 129 && grep -q "data convert" e.err' "$rc"
check "no temporary files left behind" sh -c '! ls | grep -Eq "\\.(json|gz)\\.[A-Za-z0-9]{6}$"'
