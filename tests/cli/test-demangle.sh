# C++ names as perf 6.1 shows them: workloads/cxx.cpp (templates, namespaces, lambdas,
# GCC .constprop/.isra clones, constructor, destructor, operator, a C function) built
# with g++ and recorded with call chains; report, script and folded stacks compared
# with perf's on the same file. perf asks the demangler for no parameters: no argument
# list, no return type, no "const", no " [clone .constprop.0]".
. "$(dirname "$0")/lib.sh"

command -v g++ >/dev/null 2>&1 || { skip "C++ names (g++ absent)"; exit 0; }
g++ -O2 -g -o cxx "$TALLY_TOP/workloads/cxx.cpp" 2>cxx.err || { skip "C++ names (g++ cannot build workloads/cxx.cpp: $(head -c 200 cxx.err))"; exit 0; }

# what the workload's hot functions are called (perf 6.1's spelling)
cat >names <<'EOF'
(anonymous namespace)::work
tmpl<7>
main::{lambda(long)#1}::operator()
outer::inner::Box<double>::spin
outer::inner::Box<long>::spin
apply_twice<main::{lambda(long)#2}>(main::{lambda(long)#2}, long)::{lambda(long)#1}::operator()
outer::Counter::operator+=
outer::Counter::~Counter
outer::Counter::Counter
Both::right
c_function
EOF
# names FILE: the names of FILE's sym rows (report -q --sort sym)
names() { sed -n 's/^ *[0-9.]*% *\[\.\] //p' "$1" | sed 's/ *$//'; }

# LD_BIND_NOW: no lazy binding, so no sample in a PLT stub's resolving path. perf 6.1
# named such an address (0x1046, the stub's push) "_init" in a failing run (its zero-size
# _init stretched over .plt up to main, presumably met first in its symbol tree), tally
# "clock_gettime@plt": a difference of PLT naming, not of C++ names (left open).
if have_perf; then
	# (with its build-id cache, in this test's own HOME, perf names [vdso] functions too)
	LD_BIND_NOW=1 perf record -q -F 4000 -g -o c.data ./cxx 0.6 >/dev/null 2>&1
else
	LD_BIND_NOW=1 "$TALLY" record -q -F 4000 -g -o c.data ./cxx 0.6 >/dev/null 2>&1
fi
[ -s c.data ] || { fail "record the C++ workload"; exit 0; }
"$TALLY" report --stdio -q --no-children -g none --sort sym -i c.data >t.out 2>/dev/null
names t.out >t.names
missing=$(grep -vxFf t.names names | tr '\n' ';')
check "report: the workload's C++ functions by perf's names (missing: ${missing:-none})" test -z "$missing"
# (a thunk keeps its target's parameters, as in perf: "non-virtual thunk to Both::right(long)")
left=$(grep -v "thunk to " t.names | grep "\[clone \|(long)$\| const$" | tr '\n' ';')
check "report: no parameter list or clone suffix left (${left:-none})" test -z "$left"

have_perf || { skip "C++ names against perf (perf absent)"; exit 0; }
perf report --stdio -q --no-children -g none --sort sym -i c.data >p.out 2>/dev/null
names p.out >p.names
missing=$(grep -vxFf p.names names | tr '\n' ';')
check "perf 6.1 spells the workload's functions as expected (missing: ${missing:-none})" test -z "$missing"
check "report --sort sym: the rows of perf's report" diff p.out t.out
perf report --stdio -q --no-children -g none --sort dso,sym -i c.data >p2.out 2>/dev/null
"$TALLY" report --stdio -q --no-children -g none --sort dso,sym -i c.data >t2.out 2>/dev/null
check "report --sort dso,sym: the rows of perf's report" diff p2.out t2.out
perf script -F comm,tid,ip,sym -i c.data >ps.out 2>/dev/null
"$TALLY" script -F comm,tid,ip,sym -i c.data >ts.out 2>/dev/null
check "script with call chains: perf's lines, frame for frame" diff ps.out ts.out
perf report --stdio --no-children -g folded --percent-limit 1 -i c.data 2>/dev/null | grep -v '^# (Tip\|^# To display' >pf.out
"$TALLY" report --stdio --no-children -g folded --percent-limit 1 -i c.data 2>/dev/null | grep -v '^# (Tip\|^# To display' >tf.out
check "report -g folded: perf's stacks" diff pf.out tf.out
# --no-demangle (after a demangled report, which may have cached its symbol tables): the
# linkage names perf prints; and the next report demangles again (nothing cached raw)
perf report --stdio -q --no-children -g none --sort dso,sym --no-demangle -i c.data >p3.out 2>/dev/null
"$TALLY" report --stdio -q --no-children -g none --sort dso,sym --no-demangle -i c.data >t3.out 2>/dev/null
check "report --no-demangle: perf's rows, by linkage names (_Z…)" eval 'diff p3.out t3.out && grep -q "\] _Z" t3.out'
"$TALLY" report --stdio -q --no-children -g none --sort dso,sym -i c.data >t4.out 2>/dev/null
check "report after --no-demangle: demangled names again" diff p2.out t4.out
perf report --stdio --no-demangle -g caller --percent-limit 2 -i c.data 2>/dev/null | grep -v '^# (Tip' >p5.out
"$TALLY" report --stdio --no-demangle -g caller --percent-limit 2 -i c.data 2>/dev/null | grep -v '^# (Tip' >t5.out
check "report --no-demangle with call graphs: perf's text" diff p5.out t5.out
for o in --no-demangle --demangle "--demangle-kernel"; do
	# shellcheck disable=SC2086
	perf script $o -F comm,tid,ip,sym -i c.data >ps.out 2>/dev/null
	# shellcheck disable=SC2086
	"$TALLY" script $o -F comm,tid,ip,sym -i c.data >ts.out 2>/dev/null
	check "script $o: perf's lines, frame for frame" diff ps.out ts.out
done
check "script --no-demangle: linkage names (_Z…)" grep -q " _Z" <("$TALLY" script --no-demangle -i c.data 2>/dev/null)
