# Inline frames as perf 6.1 shows them: a -O2 -g C program whose hot code is static
# inline helpers (and libm's sin, whose own inlined helpers libc6-dbg describes),
# recorded by perf with --call-graph dwarf (no frame pointers) and with -g (frame
# pointers). perf 6.1 adds "NAME (inlined)" frames to the frames it unwinds from dwarf
# stacks only, by default, and not with --no-inline; script's frames and report's
# call graphs (caller, callee, folded, srcline) must be perf's, both ways.
. "$(dirname "$0")/lib.sh"

have_perf || { skip "inline frames vs perf (perf absent)"; exit 0; }
command -v cc >/dev/null 2>&1 || { skip "inline frames (no C compiler)"; exit 0; }
# perf 6.1 (built without libbfd) asks binutils' addr2line for inlined functions
command -v addr2line >/dev/null 2>&1 || { skip "inline frames vs perf (no addr2line for perf)"; exit 0; }
export HOME=$TMP/home
mkdir -p "$HOME"
cd "$TMP" || exit 1

cat >inl.c <<'EOF'
#include <math.h>
#include <stdlib.h>
static volatile double sink;
static inline double sq(double x) { return x * x + 1.0; }
static inline double poly(double x)
{
	double r = 0;
	for (int i = 0; i < 40; i++)
		r = sq(r * 0.5 + x);
	return r;
}
__attribute__((noinline)) double leaf(double x) { return sin(x) + poly(x); }
__attribute__((noinline)) double mid(double x)
{
	double s = 0;
	for (int i = 0; i < 50; i++)
		s += leaf(x + i);
	return s;
}
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	for (long i = 0; i < n; i++)
		sink = mid((double)i);
	return 0;
}
EOF
cc -O2 -g -fomit-frame-pointer -o inl-dw inl.c -lm 2>cc.err &&
	cc -O2 -g -fno-omit-frame-pointer -o inl-fp inl.c -lm 2>>cc.err ||
	{ fail "cc builds the program"; sed 's/^/# /' cc.err; exit 0; }

perf record -q --call-graph dwarf -F 2000 -o dw.data ./inl-dw 60000 >/dev/null 2>&1
perf record -q -g -F 2000 -o fp.data ./inl-fp 60000 >/dev/null 2>&1
[ -s dw.data ] || { fail "perf record --call-graph dwarf"; exit 0; }
[ -s fp.data ] || { fail "perf record -g"; exit 0; }

# same_frames NAME FILE OPTIONS...: script's frame lists equal perf's for >= 99% of
# the samples (and for more than 100 of them)
same_frames() {
	local n=$1 f=$2
	shift 2
	perf script -i "$f" "$@" >p.out 2>/dev/null
	"$TALLY" script -i "$f" "$@" >t.out 2>t.err
	set -- $(awk 'BEGIN { RS = "" }
		FNR == NR { p[FNR] = $0; np = FNR; next }
		{ t[FNR] = $0; nt = FNR }
		END { for (i = 1; i <= np; i++) same += p[i] == t[i]
		      printf "%d %d %d\n", np, nt, same }' p.out t.out)
	if [ "$1" -gt 100 ] && [ "$1" = "$2" ] && [ $(($3 * 100)) -ge $(($1 * 99)) ]; then
		ok "$n: perf's frames ($3 of $1 samples equal)"
	else
		fail "$n: perf's frames ($3 of $1 samples equal; tally printed $2)"
		diff p.out t.out | head -10 | sed 's/^/# /'
	fi
}

# --- script ---------------------------------------------------------------------------
same_frames "script, dwarf" dw.data -F tid,time,ip,sym
check "script, dwarf: perf shows the inlined helpers (the test can tell)" eval \
	'grep -q "poly (inlined)" p.out && grep -q "sq (inlined)" p.out'
same_frames "script -F +srcline,+symoff, dwarf" dw.data -F tid,ip,sym,symoff,dso,srcline
same_frames "script --no-inline, dwarf" dw.data -F tid,time,ip,sym --no-inline
check "script --no-inline: no inlined frames" eval '! grep -q "(inlined)" t.out'
same_frames "script, frame pointers (perf 6.1 adds none)" fp.data -F tid,time,ip,sym,dso
check "script, frame pointers: no inlined frames" eval '! grep -q "(inlined)" t.out'
same_frames "script --inline, frame pointers" fp.data -F tid,time,ip,sym --inline

# --- report ---------------------------------------------------------------------------
# rows and branches above 2%: the program's few hot paths, never ties of rare samples
cmp_report() {	# FILE OPTIONS...
	local f=$1
	shift
	perf report -i "$f" --stdio --percent-limit 2 "$@" 2>/dev/null | grep -v '^#' >p.rep
	"$TALLY" report -i "$f" --stdio --percent-limit 2 "$@" 2>t.err | grep -v '^#' >t.rep
	check "report $* on $f: perf's text" eval 'test -s p.rep && diff p.rep t.rep >diff.out'
	[ -s diff.out ] && head -6 diff.out | sed 's/^/# /'
	return 0
}
cmp_report dw.data -g graph,2,caller
check "report, dwarf: inlined functions are rows and frames of their own" eval \
	'grep -q "\[\.\] poly (inlined)" t.rep && grep -q -- "--poly (inlined)" t.rep'
cmp_report dw.data -g graph,2,callee
cmp_report dw.data --no-children -g graph,2,caller
cmp_report dw.data --no-children -g graph,2,callee
cmp_report dw.data -g folded,2
cmp_report dw.data --no-children -g folded,2,caller
cmp_report dw.data --no-children -g graph,2,caller,srcline
cmp_report dw.data --no-inline -g graph,2,caller
check "report --no-inline: no inlined frames" eval '! grep -q "(inlined)" t.rep'
cmp_report fp.data -g graph,2,caller
cmp_report fp.data --no-children -g folded,2
