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

# --- no helper processes ---------------------------------------------------------------
# perf 6.1 starts addr2line (inline frames, source lines) and objdump (annotate); tally
# reads DWARF and disassembles in its own process: one execve (its own), no fork
no_child() {	# NAME ARGS...: tally ARGS starts no process
	local n=$1
	shift
	# (LeakSanitizer checks from a clone at exit, and cannot under ptrace: off here)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -e trace=execve,clone,clone3,fork,vfork -o st.out "$TALLY" "$@" >/dev/null 2>&1
	if [ "$(grep -c execve st.out)" = 1 ] && ! grep -E "clone|fork" st.out | grep -qv CLONE_THREAD; then
		ok "$n: no process started (strace)"
	else
		fail "$n: no process started (strace)"
		grep -E 'execve|clone|fork' st.out | head -4 | sed 's/^/# /'
	fi
}
if command -v strace >/dev/null 2>&1; then
	no_child "script with inline frames and source lines" script -i dw.data -F +srcline
	no_child "report with inline frames, srcline key and chains" report --stdio -i dw.data \
		--sort sym,srcline -g graph,0.5,caller,srcline
	no_child "annotate" annotate --stdio -i dw.data -l
	check "the profile has what perf starts helpers for" eval \
		'"$TALLY" script -i dw.data -F +srcline >st.txt 2>/dev/null && grep -q "inl.c:" st.txt && grep -q "(inlined)" st.txt'
else
	skip "no helper processes (strace absent)"
fi

# --- the library's inline answers, address by address ------------------------------
# perf 6.1 gets inline frames from binutils' addr2line -i: tally_lines__find_inline must
# give the same chain (function, file:line of each call) at any address, not only at the
# few the profiles above hit. 1500 random .text addresses of a program, a workload and
# libc (with its debuginfo where libc6-dbg is installed), compared where addr2line
# finds a line row.
pc_dir="$TALLY_BUILD/meson-uninstalled"
cat >a2l.c <<'C'
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tally/srcline.h>

/* addr2line -a -i -f's blocks for the addresses on stdin; "?" for no row */
int main(int argc, char **argv)
{
	struct tally_lines *l;
	struct tally_line out[32];
	char buf[64];
	int err;

	if (argc != 3)
		return 2;
	err = tally_lines__open(&l, argv[1], strcmp(argv[2], "-") ? argv[2] : NULL);
	if (err) {
		fprintf(stderr, "open %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	while (fgets(buf, sizeof(buf), stdin)) {
		uint64_t addr = strtoull(buf, NULL, 16);
		int n = tally_lines__find_inline(l, addr, out, 32);

		printf("0x%016" PRIx64 "\n", addr);
		if (n <= 0) {
			printf("?\n");
			continue;
		}
		for (int i = 0; i < n; i++) {
			const char *f = out[i].mangled ? out[i].mangled : out[i].function;

			printf("%s\n%s:%u\n", f ? f : "??", out[i].file ? out[i].file : "??",
			       out[i].line);
		}
	}
	tally_lines__delete(l);
	return 0;
}
C
san=""
asan_build && san="-fsanitize=address,undefined"
# shellcheck disable=SC2086
if flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs libtally-uninstalled) &&
	cc -std=gnu11 -Wall -Wextra -Werror $san -o a2l a2l.c $flags 2>cc.err; then
	ok "a2l: a program on tally_lines__find_inline builds"
else
	fail "a2l: a program on tally_lines__find_inline builds"
	sed 's/^/# /' cc.err
fi

# same_a2l NAME FILE DEBUG|-: tally's chains are addr2line's at every address it finds
same_a2l() {
	local n=$1 f=$2 dbg=$3 text
	text=$(readelf -SW "$f" | awk '$2 == ".text" { print $4, $6 }')
	[ -n "$text" ] || { fail "$n: $f has a .text"; return; }
	# shellcheck disable=SC2086
	set -- $text
	awk -v lo=$((16#$1)) -v sz=$((16#$2)) 'BEGIN { srand(7)
		for (i = 0; i < 1500; i++) printf "%x\n", lo + int(rand() * sz) }' >addrs
	addr2line -a -i -f -e "$f" <addrs | sed 's/ (discriminator [0-9]*)$//' >a.out
	LD_LIBRARY_PATH="$TALLY_BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		./a2l "$f" "$dbg" <addrs >t.out 2>a2l.err ||
		{ fail "$n: a2l runs ($(head -c 200 a2l.err))"; return; }
	# one record per address; compared where addr2line has a line row
	set -- $(awk '
		function flush() { if (cur != "") { if (FILENAME == ARGV[1]) a[key] = cur; else t[key] = cur } }
		/^0x[0-9a-f]+$/ { flush(); key = $0; cur = ""; next }
		{ cur = cur "|" $0 }
		END { flush()
		      for (k in a) { if (a[k] ~ /\?\?:0|:\?$|\|\?\?\|/) continue
				     n++; same += a[k] == t[k]
				     if (a[k] != t[k] && !shown++) print k a[k] " / " t[k] > "first.diff" }
		      print n + 0, same + 0 }' a.out t.out)
	if [ "$1" -ge 100 ] && [ "$1" = "$2" ]; then
		ok "$n: inline chains as addr2line -i ($2 of $1 addresses)"
	else
		fail "$n: inline chains as addr2line -i ($2 of $1 addresses)"
		sed 's/^/# /' first.diff 2>/dev/null
	fi
}
if [ -x a2l ]; then
	same_a2l "a2l, -O2 program" ./inl-dw -
	# compressed debug sections: .debug_info read unit by unit (lib/model/dwinfo.c),
	# DWARF 5 and 4 unit headers
	if cc -O2 -g -gz=zlib -fomit-frame-pointer -o inl-gz inl.c -lm 2>/dev/null &&
		cc -O2 -gdwarf-4 -gz=zlib -fomit-frame-pointer -o inl-gz4 inl.c -lm 2>/dev/null; then
		same_a2l "a2l, -O2 program, compressed DWARF 5" ./inl-gz -
		same_a2l "a2l, -O2 program, compressed DWARF 4" ./inl-gz4 -
	else
		skip "a2l: cc cannot compress debug sections (-gz=zlib)"
	fi
	[ -x "$TALLY_BUILD/workloads/unwind" ] &&
		same_a2l "a2l, workloads/unwind" "$TALLY_BUILD/workloads/unwind" -
	libc=/lib/x86_64-linux-gnu/libc.so.6
	bid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID:/ { print $3 }')
	dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
	if [ -n "$bid" ] && [ -f "$dbg" ]; then
		same_a2l "a2l, libc with its debuginfo" "$libc" "$dbg"
	else
		skip "a2l, libc: no debuginfo for $libc (libc6-dbg)"
	fi
fi
