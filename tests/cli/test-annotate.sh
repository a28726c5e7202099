# tally annotate against perf 6.1's annotate --stdio on files recorded by perf: every
# line the same except the instructions' spelling (capstone's, not objdump's), on the
# hot workload (plain, options, a group) and on a mix of programs (libc, ld.so); tally's
# own recordings when perf is absent; and damaged or incomplete input.
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
export HOME=$TMP/home	# perf's build-id cache and tally's: this test's own
mkdir -p "$HOME"

# norm FILE: the annotation with each instruction's text dropped (address and values stay)
norm() { sed -E 's/^(( +[0-9.]+)+ : +[0-9a-f]+:).*/\1/' "$1"; }
# insns FILE: "dso|first address|pct addr" lines, one per instruction, per function
insns() {
	awk '/Source code & Disassembly of/ { dso = $0; sub(/.*Disassembly of /, "", dso); sub(/ .*/, "", dso); first = ""; next }
	     /^( +[0-9.]+)+ : +[0-9a-f]+:/ { line = $0; sub(/: *[0-9a-f]+:.*/, "", line); a = $0; sub(/^[^:]*: +/, "", a); sub(/:.*/, "", a);
					     if (first == "") first = a; gsub(/ +/, " ", line); print dso "|" first "|" line " " a }' "$1"
}
# targets FILE: "dso|address|target <name>" for every instruction that names an address
# (a branch or call target, a memory operand's "# addr <name>" comment): the names
# objdump gives them, which perf shows
targets() {
	awk '/Source code & Disassembly of/ { dso = $0; sub(/.*Disassembly of /, "", dso); sub(/ .*/, "", dso); next }
	     /^( +[0-9.]+)+ : +[0-9a-f]+:.* [0-9a-f]+ <.*>$/ { a = $0; sub(/^[^:]*: +/, "", a); sub(/:.*/, "", a);
		t = $0; sub(/.* [0-9a-f]+ </, "", t); n = $0; sub(/ <.*/, "", n); sub(/.* /, "", n); print dso "|" a "|" n " <" t }' "$1" | sort -u
}
# same_targets PERF TALLY: every address perf names, tally names alike; prints what differs
same_targets() {
	targets "$1" >p.tgt
	targets "$2" >t.tgt
	comm -23 p.tgt t.tgt >missing
	[ -s p.tgt ] && [ ! -s missing ] || { head -5 missing | sed 's/^/# perf only: /'; return 1; }
}
# same_insns PERF TALLY: every function perf annotated, tally annotated with the same
# instructions (addresses) and the same values; prints what differs
same_insns() {
	insns "$1" | sort >p.insns
	insns "$2" | sort >t.insns
	comm -23 p.insns t.insns >missing
	[ ! -s missing ] || { head -5 missing | sed 's/^/# perf only: /'; return 1; }
}

# --- without perf: tally's own recording, options, errors -------------------------------
"$TALLY" record -q -F 2000 -o own.data "$HOT" 0.3 >/dev/null 2>&1
if [ -s own.data ]; then
	"$TALLY" annotate -i own.data >own.out 2>own.err; rc=$?
	check "annotate: tally's own file annotates (rc $rc)" test $rc -eq 0
	check "annotate: perf's header line" grep -Eq '^ Percent \|	Source code & Disassembly of hot for cpu-clock(:[a-zA-Z]*)? \([0-9]+ samples, percent: local period\)$' own.out
	check "annotate: spin's listing with its source" eval 'grep -q "<spin>:$" own.out && grep -q "x = x \* 2862933555777941757ul" own.out'
	check "annotate: jump targets named as objdump names them" grep -Eq ' j[a-z]+ +[0-9a-f]+ <spin\+0x[0-9a-f]+>$' own.out
	sum=$(awk '/<spin>:$/ {on = 1; next} /Source code/ {on = 0} on && /^ +[0-9.]+ : / {s += $1} END {printf "%.0f", s}' own.out)
	check "annotate: spin's instruction shares add up to 100% ($sum)" test "$sum" = 100
	"$TALLY" annotate -i own.data -n --stdio spin >n.out 2>&1
	check "annotate -n and a symbol argument: sample counts of spin only" eval 'grep -q "^ Samples |" n.out && test "$(grep -c "Source code" n.out)" -eq 1'
	"$TALLY" annotate -i own.data --show-total-period -s spin >tp.out 2>&1
	check "annotate --show-total-period: a Period column" grep -q '^ Period      |' tp.out
	"$TALLY" annotate -i own.data -s spin -M intel >intel.out 2>&1
	check "annotate -M intel: Intel syntax" grep -Eq ' (push|mov) +[a-z]+' intel.out
	"$TALLY" annotate -i own.data -s spin --no-source >ns.out 2>&1
	check "annotate --no-source: no source text" eval '! grep -q "2862933555777941757ul" ns.out && grep -q "<spin>:" ns.out'
	"$TALLY" annotate -i own.data -s spin --asm-raw >raw.out 2>&1
	check "annotate --asm-raw: instruction bytes" grep -Eq ':   55 +push' raw.out
	"$TALLY" annotate -i own.data -s spin -l >l.out 2>&1
	check "annotate -l: a summary per source file and lines beside hot instructions" eval 'grep -q "^Sorted summary for file .*/hot$" l.out && grep -q " // hot.c:[0-9]*$" l.out'
	"$TALLY" annotate -i own.data -s nosuchsymbol >x.out 2>x.err; rc=$?
	check "annotate -s with no such symbol: an error naming it (rc $rc)" eval 'test $rc -ne 0 && grep -q nosuchsymbol x.err'
	"$TALLY" annotate -i own.data --objdump /usr/bin/objdump >x.out 2>x.err; rc=$?
	check "annotate --objdump: refused with the reason" eval 'test $rc -ne 0 && grep -q capstone x.err'
	"$TALLY" annotate -i own.data --percent-type bogus >x.out 2>x.err; rc=$?
	check "annotate --percent-type bogus: refused" eval 'test $rc -ne 0 && grep -q "local-period" x.err'
	"$TALLY" annotate -i own.data -n --show-total-period >x.out 2>x.err; rc=$?
	check "annotate -n --show-total-period: refused, one column at a time (rc $rc)" eval 'test $rc -ne 0 && grep -q "one column" x.err'
	"$TALLY" annotate -i own.data -C 0 >x.out 2>x.err; rc=$?
	check "annotate -C of a file without cpus in its samples: refused with the reason (rc $rc)" eval 'test $rc -ne 0 && grep -q "no cpu" x.err'
	"$TALLY" annotate -i own.data -M masm >x.out 2>x.err; rc=$?
	check "annotate -M masm: refused" eval 'test $rc -ne 0 && grep -q intel x.err'
	"$TALLY" annotate -i own.data --dsos '[kernel.kallsyms]' -k /nonexistent/vmlinux >x.out 2>x.err; rc=$?
	check "annotate of kernel code without a vmlinux: a reason, no crash (rc $rc)" eval 'test $rc -ne 0 && test $rc -lt 128 && grep -Eq "vmlinux|no samples" x.err'
	# kernel code from a vmlinux: one made here with the names of the kernel functions
	# sampled (their code is not the kernel's, the lookup by name and the listing are real)
	"$TALLY" record -q -F 4000 -o kern.data "$HOT" --faults 60000 >/dev/null 2>&1
	ksyms=$("$TALLY" report --stdio -q --sort sym --dsos '[kernel.kallsyms]' -g none -i kern.data 2>/dev/null |
		awk '$2 == "[k]" {print $3}' | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | head -5)
	if [ -n "$ksyms" ] && command -v cc >/dev/null 2>&1; then
		for s in $ksyms; do printf 'void %s(void) { __asm__ volatile("nop\\n\\tnop"); }\n' "$s"; done >fake.c
		if cc -shared -nostdlib -fPIC -o vmlinux fake.c 2>/dev/null; then
			"$TALLY" annotate -i kern.data --dsos '[kernel.kallsyms]' -k ./vmlinux >k.out 2>k.err; rc=$?
			first=$(echo "$ksyms" | head -1)
			check "annotate -k VMLINUX: kernel functions listed from it (rc $rc)" eval 'test $rc -eq 0 && grep -q "<$first>:$" k.out && grep -q "   nop$" k.out'
		else
			skip "annotate -k VMLINUX (cc cannot link a shared object here)"
		fi
	else
		skip "annotate -k VMLINUX (no named kernel samples, or no cc)"
	fi
	# damage: cut short, then garbage
	head -c $(($(stat -c %s own.data) * 2 / 3)) own.data >cut.data
	"$TALLY" annotate -i cut.data >cut.out 2>cut.err; rc=$?
	check "annotate of a file cut short: a warning, no crash (rc $rc)" eval 'test $rc -lt 128 && grep -q "cut short\|offset" cut.err'
	head -c 4096 /dev/urandom >junk.data
	"$TALLY" annotate -i junk.data >x.out 2>x.err; rc=$?
	check "annotate of random bytes: an error, no crash (rc $rc)" eval 'test $rc -ne 0 && test $rc -lt 128 && test -s x.err'
	# the binary gone (and no build-id cache): the reason, not a silent nothing
	cp "$HOT" gone
	"$TALLY" record -q -F 2000 -o gone.data ./gone 0.2 >/dev/null 2>&1
	rm -rf gone "$HOME/.debug"
	"$TALLY" annotate -i gone.data --dsos gone >x.out 2>x.err; rc=$?
	check "annotate with the binary missing: says so (rc $rc)" eval 'test $rc -ne 0 && test $rc -lt 128 && grep -q "gone found no symbol" x.err'
else
	skip "annotate on tally's own file (tally record failed here)"
fi
"$TALLY" annotate -i nosuch.data >x.out 2>x.err; rc=$?
check "annotate: a missing file is an error naming it" eval 'test $rc -ne 0 && grep -q nosuch.data x.err'

# --- against perf --------------------------------------------------------------------
have_perf || { skip "annotate vs perf annotate (perf absent)"; exit 0; }
command -v objdump >/dev/null 2>&1 || { skip "annotate vs perf annotate (perf needs objdump, absent)"; exit 0; }

perf record -q -N -F 1000 -o hot.data "$HOT" 0.3 >/dev/null 2>&1
if [ -s hot.data ]; then
	# the hot binary's functions only: a stray sample in ld.so's start-up code would bring
	# in the rows where binutils and libdw disagree (docs/annotate.md); the mix below
	# compares every function's instructions and shares
	for opts in "" "-n" "--show-total-period" "--percent-type local-hits" "--percent-type global-period" "--asm-raw" "-l" "--no-source" "-s spin" "-P"; do
		perf annotate --stdio -d hot -i hot.data $opts >p.out 2>/dev/null
		"$TALLY" annotate --stdio -d hot -i hot.data $opts >t.out 2>t.err
		norm p.out >p.norm; norm t.out >t.norm
		if [ -s p.norm ] && diff p.norm t.norm >d.out; then
			ok "annotate ${opts:-(defaults)}: every line as perf's but the instructions' spelling"
		else
			fail "annotate ${opts:-(defaults)}: every line as perf's but the instructions' spelling"; head -10 d.out | sed 's/^/# /'
		fi
		case "$opts" in "" | "--no-source")
			check "annotate ${opts:-(defaults)}: jump, call and memory targets named as perf" same_targets p.out t.out ;;
		esac
	done
else
	fail "perf record of the hot workload"
fi

# -C: samples of the cpus asked for (a recording with cpus in its samples)
perf record -q -N -F 1000 --sample-cpu -o cpu.data "$HOT" 0.2 >/dev/null 2>&1
for c in 0 1 0-1; do
	perf annotate --stdio -d hot -i cpu.data -C $c -n >p.out 2>/dev/null
	"$TALLY" annotate -d hot -i cpu.data -C $c -n >t.out 2>/dev/null
	norm p.out >p.norm; norm t.out >t.norm
	check "annotate -C $c -n: every line as perf's (perf: $(grep -c 'Source code' p.out) functions)" diff p.norm t.norm
done

perf record -q -N -F 1000 -e '{cpu-clock,task-clock}' -o group.data "$HOT" 0.2 >/dev/null 2>&1
perf annotate --stdio -d hot -i group.data >p.out 2>/dev/null
"$TALLY" annotate -d hot -i group.data >t.out 2>/dev/null
norm p.out >p.norm; norm t.out >t.norm
if [ -s p.norm ] && diff p.norm t.norm >d.out; then ok "annotate of a group: a column per member, as perf"; else fail "annotate of a group: a column per member, as perf"; head -10 d.out | sed 's/^/# /'; fi

# --group on events recorded without a group: perf forces the first as their leader
perf record -q -N -F 1000 -e cpu-clock,task-clock -o two.data "$HOT" 0.2 >/dev/null 2>&1
for o in "" "--group" "--group -n"; do
	perf annotate --stdio -d hot -i two.data $o >p.out 2>/dev/null
	"$TALLY" annotate -d hot -i two.data $o >t.out 2>/dev/null
	norm p.out >p.norm; norm t.out >t.norm
	check "annotate ${o:-(defaults)} of two events without a group: every line as perf's" eval '[ -s p.norm ] && diff p.norm t.norm'
done

# a mix of programs: libc and ld.so functions, with and without debuginfo
perf record -q -N -c 100000 -o mix.data -- sh -c "$HOT 0.1; ls -lR /usr/share/doc >/dev/null 2>&1; $HOT 0.05" >/dev/null 2>&1
perf annotate --stdio -i mix.data >p.out 2>/dev/null
"$TALLY" annotate -i mix.data >t.out 2>/dev/null
n=$(grep -c 'Source code & Disassembly' p.out)
if [ "$n" -gt 0 ] && same_insns p.out t.out; then
	ok "annotate of a mix of programs: the $n functions perf annotates, with the same instructions and shares"
else
	fail "annotate of a mix of programs: the $n functions perf annotates, with the same instructions and shares"
fi
perf annotate --stdio --no-source -i mix.data >p.out 2>/dev/null
"$TALLY" annotate --no-source -i mix.data >t.out 2>/dev/null
# (PLT stubs aside: objdump names an IRELATIVE slot *ABS*+0x…@plt, perf and tally @plt)
grep -E '^ +: [0-9]+ +[0-9a-f]{16} <' p.out | grep -v '@plt>:$' | sed 's/^ *: [0-9]* *//' | sort >p.heads
grep -E '^ +: [0-9]+ +[0-9a-f]{16} <' t.out | grep -v '@plt>:$' | sed 's/^ *: [0-9]* *//' | sort >t.heads
check "annotate --no-source of the mix: functions named as objdump names them without debuginfo" eval '[ -s p.heads ] && [ -z "$(comm -23 p.heads t.heads)" ]'
for o in "-n" "--percent-type local-hits"; do
	perf annotate --stdio -i mix.data $o >p.out 2>/dev/null
	"$TALLY" annotate -i mix.data $o >t.out 2>/dev/null
	check "annotate $o of the mix: the same instructions and values" same_insns p.out t.out
done
# what perf shows of each instruction beyond capstone's spelling: the names of the
# addresses it refers to (PLT entries, GOT slots by their relocations, versions, the
# debuginfo's symbols with the source), and the source lines of every function
for o in "" "--no-source"; do
	perf annotate --stdio -i mix.data $o >p.out 2>/dev/null
	"$TALLY" annotate -i mix.data $o >t.out 2>/dev/null
	check "annotate ${o:-(defaults)} of the mix: jump, call and memory targets named as perf" same_targets p.out t.out
	# ([vdso] aside: perf -N has no copy of it, tally reads this kernel's)
	awk '/Source code & Disassembly of \[vdso\]/ {skip = 1; next} /Source code & Disassembly of/ {skip = 0} !skip' t.out >t.novdso
	norm p.out >p.norm; norm t.novdso >t.norm
	if [ -s p.norm ] && diff p.norm t.norm >d.out; then
		ok "annotate ${o:-(defaults)} of the mix: every line as perf's but the instructions' spelling"
	else
		fail "annotate ${o:-(defaults)} of the mix: every line as perf's but the instructions' spelling"; head -10 d.out | sed 's/^/# /'
	fi
done

# source lines and names where libdw and binutils 2.40 part ways, on a program of our
# own (so on every run, whatever libc's samples do): code of an #included .c file ahead
# of the unit's first DW_LNS_set_file (objdump names those rows after file entry 0,
# main.c), and a local function that is also an IFUNC (objdump heads it with the
# function, not the IFUNC)
if command -v cc >/dev/null 2>&1; then
	cat >body.c <<'EOF_BODY'
static volatile unsigned long sink;
__attribute__((noinline)) void spin(long n)
{
	unsigned long x = 1;
	for (long i = 0; i < n; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x;
}
__attribute__((noinline, used)) static void (*pick(void))(long)
{
	unsigned long x = sink;
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ul + 1;
	sink = x;
	return spin;
}
void spin_ifunc(long n) __attribute__((ifunc("pick")));
EOF_BODY
	cat >inc.c <<'EOF_INC'
#include <stdlib.h>
#include "body.c"
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000000;
	spin(n);
	for (long i = 0; i < n / 1000; i++)
		pick();
	return 0;
}
EOF_INC
	if cc -O1 -g -gdwarf-5 -o inc inc.c 2>/dev/null; then
		perf record -q -N -F 1000 -o inc.data ./inc 100000000 >/dev/null 2>&1
		for a in "-s spin" "-s spin_ifunc" "--no-source -s spin_ifunc"; do
			perf annotate --stdio -d inc -i inc.data $a >p.out 2>/dev/null
			"$TALLY" annotate -d inc -i inc.data $a >t.out 2>/dev/null
			norm p.out >p.norm; norm t.out >t.norm
			if [ -s p.norm ] && diff p.norm t.norm >d.out && same_targets p.out t.out; then
				ok "annotate $a of an #included function: every line as perf's"
			else
				fail "annotate $a of an #included function: every line as perf's"; head -10 d.out | sed 's/^/# /'
			fi
		done
	else
		skip "annotate of an #included function (cc cannot build here)"
	fi
else
	skip "annotate of an #included function (cc absent)"
fi

# a function with code inlined from 20 headers (a C++ function full of inlined library
# code touches as many): objdump -S keeps its place in every file it shows, so each
# header's lines are in perf's listing (tally used to keep 16 files and show nothing
# of the others: std::map code lost its <tuple> lines)
if command -v cc >/dev/null 2>&1; then
	: >many.c
	body=""
	for i in $(seq 1 20); do
		printf 'static inline __attribute__((always_inline)) unsigned long f%d(unsigned long x)\n{\n\treturn (x ^ (x >> %d)) * %dul;	/* h%d */\n}\n' \
			"$i" $((i % 13 + 3)) $((2 * i + 3)) "$i" >"h$i.h"
		echo "#include \"h$i.h\"" >>many.c
		body="$body		x = f$i(x);
"
	done
	cat >>many.c <<EOF_MANY
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void hot(long n)
{
	unsigned long x = 1;
	for (long i = 0; i < n; i++) {
$body	}
	sink = x;
}
int main(int argc, char **argv)
{
	hot(argc > 1 ? atol(argv[1]) : 10000000);
	return 0;
}
EOF_MANY
	if ! cc -O1 -g -o many many.c 2>/dev/null; then
		skip "annotate of code inlined from 20 headers (cc cannot build here)"
	elif perf record -q -N -F 1000 -o many.data ./many 10000000 >/dev/null 2>&1; then
		perf annotate --stdio -d many -s hot -i many.data >p.out 2>/dev/null
		"$TALLY" annotate -d many -s hot -i many.data >t.out 2>/dev/null
		norm p.out >p.norm; norm t.out >t.norm
		if grep -q '/\* h20 \*/' p.out && diff p.norm t.norm >d.out; then
			ok "annotate of code inlined from 20 headers: every header's lines, as perf"
		else
			fail "annotate of code inlined from 20 headers: every header's lines, as perf"
			head -10 d.out | sed 's/^/# /'
		fi
	else
		fail "perf record of the 20-header program"
	fi
else
	skip "annotate of code inlined from 20 headers (cc absent)"
fi

# C++: templates, inlined library code, demangled names (g++ needed to build it)
if command -v g++ >/dev/null 2>&1; then
	cat >cxx.cc <<'EOF_CXX'
#include <cmath>
#include <cstdio>
#include <vector>
namespace ns {
template <typename T> struct Acc {
	T sum = 0;
	__attribute__((noinline)) void add(T v) { sum += std::sqrt(v) * 1.0001; }
};
}
static double work(int n)
{
	ns::Acc<double> a;
	std::vector<double> v(1000);
	for (int k = 0; k < n; k++)
		for (size_t i = 0; i < v.size(); i++) { v[i] = i * 0.5 + k; a.add(v[i]); }
	return a.sum;
}
int main() { printf("%f\n", work(20000)); }
EOF_CXX
	if g++ -O2 -g -o cxx cxx.cc 2>/dev/null; then
		perf record -q -N -F 1000 -o cxx.data ./cxx >/dev/null 2>&1
		perf annotate --stdio -i cxx.data >p.out 2>/dev/null
		"$TALLY" annotate -i cxx.data >t.out 2>/dev/null
		check "annotate of C++: the functions perf annotates, same instructions and shares" same_insns p.out t.out
		check "annotate of C++: the listing names the method in full, as objdump -C" grep -q ' <ns::Acc<double>::add(double)>:$' t.out
		# the program's own functions (a stray sample may land in libgcc_s or
		# libstdc++; the mix above compares libraries)
		perf annotate --stdio -d cxx -i cxx.data >p.out 2>/dev/null
		"$TALLY" annotate -d cxx -i cxx.data >t.out 2>/dev/null
		check "annotate of C++: calls name their targets as objdump -C, parameters and @plt" same_targets p.out t.out
		# (main inlines the static work(), which has no linkage name: binutils says
		# main() the first time it meets it, work() after)
		norm p.out >p.norm; norm t.out >t.norm
		check "annotate of C++: every line as perf's but the instructions' spelling" eval '[ -s p.norm ] && diff p.norm t.norm'
	else
		skip "annotate of C++ (g++ cannot build here)"
	fi
else
	skip "annotate of C++ (g++ absent)"
fi
