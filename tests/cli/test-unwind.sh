# DWARF unwinding (--call-graph dwarf): tally script and report give the user frames
# perf 6.1 gives, on a -O2 -fomit-frame-pointer program (workloads/unwind: main -> top
# -> mid -> leaf -> libm's sin) and on workloads/cxx.cpp built the same way, recorded
# by perf and by tally, with the full stack
# copy and with one too small for the whole chain (where the chain must stop where
# perf's stops); with perf's inline frames (its default) and without (--no-inline).
. "$(dirname "$0")/lib.sh"

W=$TALLY_BUILD/workloads/unwind
[ -x "$W" ] || { skip "unwinding: workloads/unwind not built"; exit 0; }
have_perf || { skip "unwinding vs perf (perf absent)"; exit 0; }

# plt_as_tally P T: where perf names a frame in a PIE's first PLT entry "_init" and
# tally, at the same address, "NAME@plt" (a perf 6.1 quirk, docs/report.md), take
# tally's name into P so the comparisons look at everything else
plt_as_tally() {
	awk 'BEGIN { RS = ""; ORS = "\n\n" }
		FNR == NR { t[FNR] = $0; next }
		{ np = split($0, p, "\n"); split(t[FNR], q, "\n"); out = ""
		  for (i = 1; i <= np; i++) {
			l = p[i]
			if (l ~ / _init$/ && q[i] ~ /@plt$/) {
				a = l; b = q[i]; sub(/_init$/, "", a); sub(/[^ ]*@plt$/, "", b)
				if (a == b) l = q[i]
			}
			out = out (i > 1 ? "\n" : "") l
		  }
		  print out }' "$2" "$1" >"$1.plt" && mv "$1.plt" "$1"
}

# same_frames NAME FILE [WHAT REGEX]: script's per-sample frame lists equal perf's for
# >= 99% of the samples, and some of perf's match REGEX (default: chains that reach
# main). $INL: more options of both (--no-inline).
same_frames() {
	local n=$1 f=$2 what=${3:-"reach main"} re=${4:-'main\n'}
	perf script -i "$f" -F tid,time,ip,sym $INL >p.out 2>/dev/null
	"$TALLY" script -i "$f" -F tid,time,ip,sym $INL >t.out 2>t.err
	plt_as_tally p.out t.out
	local res
	res=$(awk -v re="$re" 'BEGIN { RS = "" }
		FNR == NR { p[FNR] = $0; np = FNR; next }
		{ t[FNR] = $0; nt = FNR }
		END {
			same = 0; deep = 0
			for (i = 1; i <= np; i++) {
				if (p[i] == t[i]) same++
				if (p[i] ~ re) deep++
			}
			printf "%d %d %d %d\n", np, nt, same, deep
		}' p.out t.out)
	set -- $res
	if [ "$1" -gt 20 ] && [ "$1" = "$2" ] && [ "$4" -gt 0 ] && [ $(($3 * 100)) -ge $(($1 * 99)) ]; then
		ok "$n: frames as perf script's ($3 of $1 samples equal, $4 $what)"
	else
		fail "$n: frames as perf script's ($3 of $1 samples equal (tally: $2), $4 $what)"
		diff p.out t.out | head -20 | sed 's/^/# /'
	fi
}

# same_shares NAME FILE: report --children rows (children and self %) within 0.5
# points of perf's.
same_shares() {
	local n=$1 f=$2
	perf report -i "$f" --stdio $INL --children -g none --sort comm,dso,sym -q \
		>p.rows 2>/dev/null
	"$TALLY" report -i "$f" --stdio $INL --children -g none --sort comm,dso,sym -q >t.rows 2>t.err
	# perf's "_init" row is tally's one NAME@plt row of the same comm and dso
	awk 'FNR == NR { if ($NF ~ /@plt$/) { k = $3 " " $4; plt[k] = $NF; n[k]++ }; next }
		{ k = $3 " " $4
		  if ($NF == "_init" && n[k] == 1) sub(/_init$/, plt[k])
		  print }' t.rows p.rows >p.rows.plt && mv p.rows.plt p.rows
	if awk 'function key(   k) { k = $3; for (i = 4; i <= NF; i++) k = k " " $i; return k }
		NF < 4 { next }
		FNR == NR { c[key()] = $1 + 0; s[key()] = $2 + 0; np++; next }
		{ nt++; k = key()
		  if (!(k in c)) { print "# tally only: " $0; bad = 1; next }
		  d = c[k] - $1; if (d < 0) d = -d; if (d > 0.5) { print "# children: " $0; bad = 1 }
		  d = s[k] - $2; if (d < 0) d = -d; if (d > 0.5) { print "# self: " $0; bad = 1 }
		  seen[k] = 1 }
		END { for (k in c) if (!(k in seen) && c[k] > 0.5) { print "# perf only: " k; bad = 1 }
		      exit bad || np < 5 }' p.rows t.rows >cmp.out; then
		ok "$n: report children/self rows within 0.5 points of perf's"
	else
		fail "$n: report children/self rows within 0.5 points of perf's"
		head -10 cmp.out
	fi
}

INL=
rec() { local out=$1; shift; "$@" -o "$out" "$W" 100 >/dev/null 2>&1 && [ -s "$out" ]; }

if rec perf.data perf record -q --call-graph dwarf -F 250; then
	same_frames "perf's recording" perf.data
	same_shares "perf's recording" perf.data
	check "script: a user chain without frame pointers reaches main through libm" \
		grep -q "leaf" t.out
	INL=--no-inline same_frames "perf's recording, --no-inline" perf.data
	check "script --no-inline: no inlined frames" eval '! grep -q "(inlined)" t.out'
	INL=--no-inline same_shares "perf's recording, --no-inline" perf.data
else
	fail "perf record --call-graph dwarf"
fi

# a stack copy too small for the chain: it ends where perf's ends
if rec small.data perf record -q --call-graph dwarf,128 -F 250; then
	same_frames "128-byte stack copies" small.data "end short of main" 'ffffffffffffffff'
else
	fail "perf record --call-graph dwarf,512"
fi

if rec tally.data "$TALLY" record -q --call-graph dwarf -F 250; then
	same_frames "tally's recording" tally.data
	same_shares "tally's recording" tally.data
else
	fail "tally record --call-graph dwarf"
fi

# C++ (templates, lambdas, clones, a virtual call through a thunk; libstdc++'s and
# libc's frames) without frame pointers
if command -v g++ >/dev/null 2>&1 &&
	g++ -O2 -fomit-frame-pointer -o cxx "$TALLY_TOP/workloads/cxx.cpp" 2>cxx.err; then
	if perf record -q --call-graph dwarf -F 400 -o cxx.data ./cxx 0.5 >/dev/null 2>&1 &&
		[ -s cxx.data ]; then
		same_frames "C++ program" cxx.data
		same_shares "C++ program" cxx.data
	else
		fail "perf record --call-graph dwarf of the C++ program"
	fi
else
	skip "C++ unwinding (g++ cannot build workloads/cxx.cpp)"
fi

# CFI in .debug_frame only (-fno-asynchronous-unwind-tables: .eh_frame has no FDE of
# the program's functions). Debian's perf 6.1 (libunwind without .debug_frame support)
# stops such chains at the first frame of the program; tally reads .debug_frame, so its
# chains are perf's and then go on: each sample in leaf reaches main through mid and
# top. Then the same with the binary stripped and its DWARF in separate debuginfo, found
# by build-id in the build-id cache; and with no .debug_frame at all, where the chains
# stop as perf's (so the checks can tell).
# chain_ok FILE: every sample under leaf continues leaf, mid, top, main (>= 20 of them)
chain_ok() {
	awk 'BEGIN { RS = "" }
		/ leaf/ { n++; if ($0 ~ / leaf[^\n]*\n[^\n]* mid[^\n]*\n[^\n]* top[^\n]*\n[^\n]* main\n/) ok++ }
		END { printf "%d of %d", ok, n; exit !(n >= 20 && ok == n) }' "$1"
}
# prefix_of P T: perf's frames of each sample begin tally's (>= 99% of the samples)
prefix_of() {
	awk 'BEGIN { RS = "" }
		FNR == NR { p[FNR] = $0; np = FNR; next }
		{ nt = FNR; if (index($0, p[FNR]) == 1) same++ }
		END { printf "%d of %d", same, np; exit !(np > 20 && np == nt && same * 100 >= np * 99) }' "$1" "$2"
}
if cc -g -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables -o dfo \
	"$TALLY_TOP/workloads/unwind.c" -lm 2>dfo.err; then
	leaf_at=$(nm dfo | awk '$3 ~ /^leaf/ { print $1; exit }')
	# the sections whose FDEs cover leaf's address
	readelf --debug-dump=frames dfo 2>/dev/null | awk -v a="$leaf_at" '
		function num(h,   i, v) { v = 0; h = tolower(h)
			for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
			return v }
		/^Contents of the/ { sec = $4 }
		/ FDE / { split($NF, r, /[=.]+/); if (num(a) >= num(r[2]) && num(a) < num(r[3])) print sec }
	' | sort -u >leaf-cfi.out
	check "-fno-asynchronous-unwind-tables: leaf's CFI is in .debug_frame only" eval \
		'[ "$(cat leaf-cfi.out)" = ".debug_frame" ]'
	if perf record -q --call-graph dwarf -F 250 -o dfo.data ./dfo 100 >/dev/null 2>&1 &&
		[ -s dfo.data ]; then
		perf script -i dfo.data -F tid,time,ip,sym --no-inline >p.out 2>/dev/null
		"$TALLY" script -i dfo.data -F tid,time,ip,sym --no-inline >t.out 2>t.err
		plt_as_tally p.out t.out
		r=$(chain_ok t.out)
		check ".debug_frame only: leaf's samples reach main through mid and top ($r)" \
			eval 'chain_ok t.out >/dev/null'
		r=$(prefix_of p.out t.out)
		check ".debug_frame only: perf's frames begin tally's ($r)" \
			eval 'prefix_of p.out t.out >/dev/null'
		# separate debuginfo: the binary at its path stripped of .debug_*, its DWARF in
		# the build-id cache's entry (<dir><path>/<build-id>/debug), the binary gone
		bid=$("$TALLY" buildid-list -i dfo.data 2>/dev/null | awk -v p="$PWD/dfo" '$2 == p { print $1 }')
		mkdir -p "$HOME/.debug$PWD/dfo/$bid"
		objcopy --only-keep-debug dfo "$HOME/.debug$PWD/dfo/$bid/debug" &&
			objcopy --strip-debug dfo "$HOME/.debug$PWD/dfo/$bid/elf" && mv dfo dfo.orig
		"$TALLY" script -i dfo.data -F tid,time,ip,sym --no-inline >t2.out 2>t2.err
		r=$(chain_ok t2.out)
		check ".debug_frame in separate debuginfo found by build-id: chains reach main ($r)" \
			eval 'chain_ok t2.out >/dev/null'
		rm -rf "${HOME:?}/.debug"
		objcopy --remove-section=.debug_frame dfo.orig dfo
		"$TALLY" script -i dfo.data -F tid,time,ip,sym --no-inline >t3.out 2>t3.err
		plt_as_tally p.out t3.out
		check "without .debug_frame the chains stop in the program, as perf's" eval \
			'! chain_ok t3.out >/dev/null && prefix_of t3.out p.out >/dev/null'
	else
		fail "perf record --call-graph dwarf of a .debug_frame-only program"
	fi
else
	skip ".debug_frame unwinding (cc cannot build workloads/unwind.c)"
fi

# flamegraph folds each dwarf sample by its unwound frames: a function called from two
# places (f from a and from b) folds under each caller as often as script shows it
cat >two.c <<'EOF'
#include <stdlib.h>
static volatile double sink;
__attribute__((noinline)) double f(double x)
{
	for (int i = 0; i < 200; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}
__attribute__((noinline)) double a(double x) { return f(x) + 1; }
__attribute__((noinline)) double b(double x) { return f(x) + 2; }
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	for (long i = 0; i < n; i++)
		sink = (i & 1) ? a(i) : b(i);
	return 0;
}
EOF
if cc -O2 -fomit-frame-pointer -o two two.c 2>two.err &&
	"$TALLY" record -q --call-graph dwarf -F 2000 -o two.data ./two 300000 >/dev/null 2>&1; then
	"$TALLY" flamegraph -i two.data --folded --no-inline 2>/dev/null | sort >two.folded
	"$TALLY" script -i two.data -F comm,ip,sym --no-inline 2>/dev/null | awk 'BEGIN { RS = "" }
		{ n = split($0, l, "\n"); s = l[1]; sub(/ +$/, "", s)
		  for (i = n; i >= 2; i--) { split(l[i], w, " "); s = s ";" w[2] }
		  c[s]++ }
		END { for (k in c) print k, c[k] }' | sort >two.script
	# samples under a;f and under b;f: each as many in both (> 10 each)
	calls() { awk '/;a;f(;| )/ { a += $NF } /;b;f(;| )/ { b += $NF } END { print a + 0, b + 0 }' "$1"; }
	r=$(calls two.folded) s=$(calls two.script)
	check "flamegraph folds dwarf samples by their unwound callers, as script lists them (a;f b;f: $r; script: $s)" \
		eval '[ "$r" = "$s" ] && [ ${r% *} -gt 10 ] && [ ${r#* } -gt 10 ]'
else
	fail "tally record --call-graph dwarf of a two-caller program"
fi

# perf's default --call-graph fp on the same program finds no callers: the dwarf
# chains above are unwound, not read from the kernel's chain
if rec fp.data perf record -q -g -F 250; then
	"$TALLY" script -i fp.data -F ip,sym >fp.out 2>/dev/null
	check "frame-pointer chains of the same program stop short (the test can tell)" eval \
		'! awk "BEGIN{RS=\"\"} /leaf/ && /mid/ && /top/ && /main/ {n++} END{exit !n}" fp.out'
fi

# top --call-graph dwarf: the running program's callers, unwound live
"$W" 600 >/dev/null & WP=$!
"$TALLY" top --stdio -d 0.5 --iterations 2 -p $WP --call-graph dwarf >top.out 2>top.err; rc=$?
kill $WP 2>/dev/null; wait $WP 2>/dev/null
check "top --call-graph dwarf exits 0" test $rc -eq 0
check "top --call-graph dwarf: leaf's callers up to main in the graphs" eval \
	'grep -q -- "--.*leaf\|leaf$" top.out && grep -q "main" top.out && grep -q "mid" top.out'
"$TALLY" top --stdio -d 0.3 --iterations 1 --call-graph dwarf,abc >/dev/null 2>bad.err; rc=$?
check "top --call-graph dwarf,abc: an error naming the option" eval \
	'[ $rc -ne 0 ] && grep -q "call-graph" bad.err'
