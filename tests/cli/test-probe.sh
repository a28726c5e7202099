#!/usr/bin/env bash
# tally probe against perf probe 6.1 on real uprobes: the definitions written to
# uprobe_events (perf -v -n's "Writing event" lines as the oracle), listings both ways,
# -V/-L/-F, recording and script of probe fields, bad input leaving nothing registered,
# and kprobe lines against a simulated tracefs (this kernel has no kprobe_events).
# Every probe made here is in a group of this test's own and is removed on exit.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	skip "probe tests (uprobes need root)"
	exit 0
fi
if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
	skip "probe tests (no C and C++ compilers to build the probed programs)"
	exit 0
fi

# Where tracefs is (tally mounts it on demand, as perf does).
"$TALLY" probe -l >/dev/null 2>&1
TRACEFS=$(awk '$3 == "tracefs" { print $2; exit }' /proc/self/mounts)
if [ -z "$TRACEFS" ] || [ ! -e "$TRACEFS/uprobe_events" ]; then
	skip "probe tests (no tracefs with uprobe_events on this kernel)"
	exit 0
fi

GROUPS_RE='^[pr]:(probe_tp[a-z0-9]*|tpgrp|probe_libc)/'
cleanup() {
	# remove every probe of this test's groups, whatever state tally left
	for f in uprobe_events kprobe_events; do
		[ -w "$TRACEFS/$f" ] || continue
		grep -E "$GROUPS_RE" "$TRACEFS/$f" 2>/dev/null | sed -E 's/^[pr]:([^ ]*) .*/-:\1/' |
			sort -u | while read -r d; do echo "$d" >>"$TRACEFS/$f"; done
	done
}
trap 'cleanup; rm -rf "$TMP"' EXIT
cleanup
ours() { grep -E "$GROUPS_RE" "$TRACEFS/uprobe_events" | sort; }
oneline() { head -c 200 "$1" | tr '\n' ' '; }

# ---- the probed programs ----
cat >t.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct pt { int x; long y; char name[16]; struct pt *next; };
int arr_g[4] = {1,2,3,4};
__attribute__((noinline)) int add(int a, int b)
{
	int s = a + b;
	if (s > 10)
		s -= 3;
	return s;
}
__attribute__((noinline)) long walk(struct pt *p, const char *label)
{
	long t = 0;
	int arr[3] = {p->x, 2, 3};
	while (p) {
		t += p->y + arr[1];
		p = p->next;
	}
	printf("%s %ld\n", label, t);
	return t;
}
int main(int argc, char **argv)
{
	struct pt b = {2, 20, "bee", NULL}, a = {1, 10, "ay", &b};
	int n = argc > 1 ? atoi(argv[1]) : 3;
	for (int i = 0; i < n; i++) {
		add(i, 2);
		walk(&a, "lbl");
	}
	return 0;
}
EOF
cat >e.c <<'EOF'
enum color { RED, GREEN = 5 };
struct bits { unsigned a:3; int b:5; _Bool ok; float f; double d; unsigned char uc; short sh;
	      unsigned long ul; enum color c; };
__attribute__((noinline)) int f(struct bits *x, enum color c, float fl, _Bool bb, char ch,
				unsigned short us)
{
	return x->a + c + (int)fl + bb + ch + us;
}
int main(void)
{
	struct bits b = {1, 2, 1, 1.0f, 2.0, 3, 4, 5, GREEN};
	return f(&b, RED, 1.5f, 1, 'c', 7);
}
EOF
cat >cx.cc <<'EOF'
#include <vector>
namespace ns {
struct K { int v; __attribute__((noinline)) int get(int m) const { return v * m; } };
template <typename T> __attribute__((noinline)) T twice(T x) { return x + x; }
}
int main(int c, char **) { ns::K k{c}; std::vector<int> v{1, 2, 3};
	return k.get(2) + ns::twice(c) + (int)ns::twice(2.0) + (int)v.size(); }
EOF
cat >in.c <<'EOF'
#include <stdlib.h>
static inline int sq(int v) { return v * v + 1; }
__attribute__((noinline)) int f1(int a) { return sq(a) + 3; }
__attribute__((noinline)) int f2(int a) { return sq(a + 2) * 5; }
int main(int c, char **v) { return f1(c) + f2(atoi(v[0])) + sq(c); }
EOF
cat >cl.c <<'EOF'
#include <stdlib.h>
static __attribute__((noinline)) long work(long n, long k)
{ long s = 0; for (long i = 0; i < n; i++) s += i * k; return s; }
int main(int c, char **v) { return (int)work(atol(v[c > 1 ? 1 : 0]), 3); }
EOF
if ! { cc -g -O0 -o tpt0 t.c && cc -g -O2 -o tpt2 t.c && cc -O0 -o tpnd t.c &&
       cc -g -O0 -o tpe e.c && c++ -g -O0 -o tpcx cx.cc && cc -g -O2 -o tpcl cl.c && cc -g -O2 -o tpin in.c; }; then
	fail "building the probed programs"
	exit 0
fi

# ---- definitions: the line each tool would write ----
perf_def() {	# BINARY DEF: perf's line(s), or its error text
	perf probe -x "./$1" -v -n -a "$2" 2>&1 | sed -n 's/^Writing event: //p'
}
tally_def() { "$TALLY" probe -x "./$1" -D "$2" 2>/dev/null; }
DEFS=(
	'tpt0|add' 'tpt0|add a b' 'tpt0|add a:s32' 'tpt0|walk arr[1]:x32' 'tpt0|walk p->next->y'
	'tpt0|walk p->name' 'tpt0|walk p->name:string' 'tpt0|walk label' 'tpt0|walk foo=p->y'
	'tpt0|walk arr_g' 'tpt0|walk @arr_g' 'tpt0|walk arr_g[2]' 'tpt0|walk %di'
	'tpt0|walk +8(%sp):u64' 'tpt0|walk p->x:s64' 'tpt0|add $params' 'tpt0|add $vars'
	'tpt0|walk $vars' 'tpt0|add $comm' 'tpt0|main argc argv' 'tpt0|main argv[0]:string'
	'tpt0|add%return $retval' 'tpt0|walk:3' 'tpt0|walk:4' 'tpt0|walk:5' 'tpt0|walk+4'
	'tpt0|add@t.c' 'tpt0|walk p->next' 'tpt0|add:2 a' 'tpt0|main:4 $vars' 'tpt0|walk;t+=*'
	'tpt0|add;*s*' 'tpt0|t.c;return*' 'tpt0|t.c:9' 'tpt0|t.c:13' 'tpt0|tpgrp:ev=add%return'
	'tpt0|0x1149' 'tpt0|a*'
	'tpt2|add' 'tpt2|add a b' 'tpt2|walk p label' 'tpt2|walk:5 t p' 'tpt2|main argc'
	'tpt2|add%return $retval' 'tpt2|main:4' 'tpt2|main:5' 'tpt2|t.c;walk*'
	'tpe|f x c fl bb ch us' 'tpe|f x->ok x->f x->d x->uc x->sh x->ul x->c' 'tpe|f c:x8'
	'tpcx|get' 'tpcx|get m' 'tpcx|get this->v' 'tpcx|main c'
	'tpcl|work' 'tpcl|work n' 'tpcl|work.constprop.0' 'tpnd|add' 'tpnd|walk+3'
	'tpin|sq' 'tpin|sq+2' 'tpin|sq:0' 'tpin|f1' 'tpin|in.c:3'
)
if have_perf; then
	for d in "${DEFS[@]}"; do
		bin=${d%%|*} def=${d#*|}
		want=$(perf_def "$bin" "$def")
		got=$(tally_def "$bin" "$def")
		if [ -n "$want" ] && [ "$want" = "$got" ]; then
			ok "definition as perf's: -x $bin '$def'"
		else
			fail "definition as perf's: -x $bin '$def' (perf: '$want', tally: '$got')"
		fi
	done
else
	skip "definitions against perf (perf is not installed)"
fi

# ---- adding for real ----
# The kernel's listing after tally adds a set equals the one after perf adds it.
SET=(-a 'add a b' -a 'walk p->x label:string p->name:string' -a 'add%return $retval'
     -a 'walk:3 t' -a 'tpgrp:mine=main argc')
"$TALLY" probe -x ./tpt0 "${SET[@]}" 2>add.err; rc=$?
check "add: exit 0 ($(oneline add.err))" test $rc -eq 0
check "add: perf's 'Added new events' message" grep -q '^Added new events:' add.err
check "add: one line per address" test "$(grep -c '^  probe_tpt0:walk_L3 *(on walk:3 in .*/tpt0 with t)$' add.err)" = 2
check "add: the prologue note" grep -q 'Skipping prologue' add.err
ours >tally.lst
check "add: five events, six addresses" test "$(wc -l <tally.lst)" = 6
"$TALLY" list 'probe_tpt0:*' >list.out 2>&1
check "tally list shows the probes" grep -q 'probe_tpt0:walk_L3 *\[Tracepoint event\]' list.out
"$TALLY" probe -l >tl.out 2>&1
if have_perf; then
	perf probe -l >pl.out 2>&1
	check "perf -l sees tally's probes" grep -q 'probe_tpt0:add__return (on add%return@' pl.out
	check "-l as perf's (tally's probes)" diff <(grep -E 'tpt0|tpgrp' pl.out) <(grep -E 'tpt0|tpgrp' tl.out)
	"$TALLY" record -q -e 'probe_tpt0:*' -e tpgrp:mine -o p.data ./tpt0 2 >/dev/null 2>rec.err
	check "record probe events ($(tail -c 200 rec.err | tr "\n" " "))" test -s p.data
	"$TALLY" script -i p.data >ts.out 2>&1
	perf script -i p.data >ps.out 2>&1
	check "script prints probe fields" grep -q 'probe_tpt0:add: ([0-9a-f]*) a=0 b=2$' ts.out
	check "script fields as perf script's" diff ps.out ts.out
	check "string fields" grep -q 'label_string="lbl" name="ay"' ts.out
	"$TALLY" probe -q -d 'probe_tpt0:*' -d 'tpgrp:*'
	check "-d removes them" test -z "$(ours)"
	perf probe -q -x ./tpt0 "${SET[@]}" 2>/dev/null
	ours >perf.lst
	check "the kernel holds what perf would have written" diff perf.lst tally.lst
	"$TALLY" probe -l >tl2.out 2>&1
	perf probe -l >pl2.out 2>&1
	check "-l as perf's (perf's probes)" diff <(grep -E 'tpt0|tpgrp' pl2.out) <(grep -E 'tpt0|tpgrp' tl2.out)
	check "-l of one group" test "$("$TALLY" probe -l 'tpgrp:*' | wc -l)" = 1
	perf probe -q -d 'probe_tpt0:*' -d 'tpgrp:*'
	# inlined copies: one event at each, described by the function they are in
	perf probe -q -x ./tpin -a sq -a f2+3
	check "-l of inlined probes as perf's" diff <(perf probe -l 'probe_tpin:*' 2>&1) <("$TALLY" probe -l 'probe_tpin:*' 2>&1)
	perf probe -q -d 'probe_tpin:*'
else
	skip "perf's view of tally's probes (perf is not installed)"
	"$TALLY" probe -q -d 'probe_tpt0:*' -d 'tpgrp:*'
fi
cleanup

# duplicates, -f, -n, -q
"$TALLY" probe -q -x ./tpt0 -a add
"$TALLY" probe -x ./tpt0 -a add 2>dup.err; rc=$?
check "a taken name without -f: nonzero" test $rc -ne 0
check "a taken name without -f: says so" grep -q 'event "add" already exists' dup.err
"$TALLY" probe -f -x ./tpt0 -a add -a add 2>/dev/null
check "-f: add_1 and add_2" test "$(ours | grep -c 'probe_tpt0/add_[12] ')" = 2
before=$(ours)
"$TALLY" probe -n -x ./tpt0 -a walk 2>n.err
check "-n: writes nothing" test "$before" = "$(ours)"
check "-n: says what it would add" grep -q 'probe_tpt0:walk' n.err
"$TALLY" probe -q -x ./tpt0 -a walk >q.out 2>q.err
check "-q: silent" test ! -s q.err -a ! -s q.out
"$TALLY" probe -d 'probe_tpt0:add*' 2>d.err
check "-d with a glob" test "$(grep -c '^Removed event: probe_tpt0:add' d.err)" = 3
"$TALLY" probe -d nosuch_event 2>d2.err; rc=$?
check "-d of nothing: nonzero, perf's message" test $rc -ne 0 -a -n "$(grep 'does not hit any event' d2.err)"
cleanup

# ---- bad input: a clear message, nonzero, nothing registered ----
bad() {	# NAME EXPECTED-TEXT ARGS...: fails, says EXPECTED, leaves uprobe_events alone
	local n=$1 want=$2 before after rc
	shift 2
	before=$(ours)
	"$TALLY" probe "$@" >bad.out 2>bad.err; rc=$?
	after=$(ours)
	check "$n: nonzero" test $rc -ne 0
	check "$n: says '$want' ($(oneline bad.err))" grep -qF "$want" bad.err
	check "$n: nothing registered" test "$before" = "$after"
}
bad "unknown function" "Probe point 'nosuch' not found." -x ./tpt0 -a nosuch
bad "line with no code" "Probe point 'add:30' not found." -x ./tpt0 -a add:30
bad "line sharing the entry" "This line is sharing the address with other lines." -x ./tpt0 -a add:1
bad "optimized-out variable" "Failed to find the location of the 's' variable" -x ./tpt2 -a 'add s'
bad "variable without DWARF" "has no debug information" -x ./tpnd -a 'add a'
bad "no such member" "p(type:pt) has no member nosuch." -x ./tpt0 -a 'walk p->nosuch'
bad "string of an int" "Failed to cast into string: a(int) is not a pointer nor array." -x ./tpt0 -a 'add a:string'
bad "local in a return probe" "You can't specify local variable for kretprobe" -x ./tpt0 -a 'add%return s'
bad "no such binary" "cannot find ./nosuchbin" -x ./nosuchbin -a add
# the second definition is refused by the kernel (uprobes take no @symbol): the first is
# removed again
bad "kernel refuses one of two" "kernel says: " -x ./tpt0 -a add -a 'walk arr_g[2]'
"$TALLY" probe -q -x ./tpt0 -a walk
bad "a duplicate among several" 'event "walk" already exists' -x ./tpt0 -a add -a walk
cleanup

if can_drop_root; then
	pub=$(pub_copy "$TALLY" tpt0)
	before=$(ours)
	as_nobody "$pub/${TALLY##*/}" probe -x "$pub/tpt0" -a add >nob.out 2>nob.err; rc=$?
	check "unprivileged: nonzero" test $rc -ne 0
	check "unprivileged: says root is needed ($(oneline nob.err))" grep -q 'root' nob.err
	check "unprivileged: nothing registered" test "$before" = "$(ours)"
else
	skip "unprivileged probe (needs setpriv and a path nobody can reach)"
fi

# ---- -V, -L, -F as perf prints them ----
if have_perf; then
	set -f	# the options hold globs for tally, not for the shell
	while IFS='|' read -r bin q; do
		[ -n "$bin" ] || continue
		# shellcheck disable=SC2086
		want=$(perf probe -x "./$bin" $q 2>/dev/null)
		# shellcheck disable=SC2086
		got=$("$TALLY" probe -x "./$bin" $q 2>/dev/null)
		if [ -n "$want" ] && [ "$want" = "$got" ]; then
			ok "as perf: -x $bin $q"
		else
			fail "as perf: -x $bin $q"
			diff <(echo "$want") <(echo "$got") | head -10 | sed 's/^/# /'
		fi
	done <<'EOF'
tpt0|-V add
tpt0|-V walk
tpt0|-V main:4
tpt0|-V walk --range
tpt0|-V main:4 --range --externs
tpt2|-V walk
tpt2|-V walk --range
tpt2|-V add --range
tpt2|-V main:4 --range
tpe|-V f
tpcx|-V get
tpt0|-L add
tpt0|-L walk
tpt0|-L main
tpt0|-L walk:2-4
tpt0|-L walk:3+2
tpt0|-L t.c:5-9
tpt0|-L t.c:30
tpt2|-L add
tpt2|-L walk
tpt2|-L main
tpt2|-L walk:2
tpt2|-L t.c:5-9
tpt0|-F
tpt0|-F a*
tpcx|-F
tpcx|-F *get*
EOF
	set +f
	for q in "-L walk:2-4" "-V nosuch" "-D walk:3" "-D t.c:7"; do
		perf probe -x ./tpt2 $q >/dev/null 2>&1; prc=$?
		"$TALLY" probe -x ./tpt2 $q >out 2>err; trc=$?
		check "fails as perf: -x tpt2 $q" test $prc -ne 0 -a $trc -ne 0 -a ! -s out
	done
else
	skip "-V/-L/-F against perf (perf is not installed)"
fi

# ---- shared libraries by name ----
"$TALLY" probe -x libc.so.6 -D inet_pton >libc.out 2>libc.err
libc=$(sed -n 's/^p:probe_libc\/inet_pton \([^:]*\):.*/\1/p' libc.out)
check "-x libc.so.6 finds the library ($(oneline libc.err))" test -n "$libc"
if have_perf && [ -n "$libc" ]; then
	check "libc's inet_pton as perf's" test "$(perf_def_abs() { perf probe -x "$libc" -v -n -a inet_pton 2>&1 | sed -n 's/^Writing event: //p'; }; perf_def_abs)" = "$(cat libc.out)"
fi
"$TALLY" probe -q -x libc.so.6 -a 'probe_libc:tp_inet=inet_pton'
check "a library probe is added" grep -q '^p:probe_libc/tp_inet ' "$TRACEFS/uprobe_events"
"$TALLY" probe -q -d 'probe_libc:tp_inet'
# (the message depends on whether libc's debuginfo is installed: checked with tpnd above)
before=$(ours)
"$TALLY" probe -x libc.so.6 -a 'inet_pton nosuchvar' >/dev/null 2>err; rc=$?
check "a library variable that is not there: refused ($(oneline err))" test $rc -ne 0 -a "$before" = "$(ours)"

# ---- --target-ns: the binary through the process's root ----
"$TALLY" probe --target-ns $$ -x "$TMP/tpt0" -D add >ns.out 2>&1
check "--target-ns reads through /proc/PID/root" grep -q "^p:probe_tpt0/add /proc/$$/root$TMP/tpt0:0x" ns.out

# ---- tracefs unmounted: tally mounts it ----
if command -v unshare >/dev/null 2>&1 && unshare -m true 2>/dev/null; then
	unshare -m sh -c "umount '$TRACEFS' 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null;
		'$TALLY' probe -q -x ./tpt0 -a 'tpgrp:unm=add' && '$TALLY' probe -l 'tpgrp:*' &&
		'$TALLY' probe -q -d 'tpgrp:unm'" >unm.out 2>unm.err; rc=$?
	check "tracefs unmounted: probe mounts it ($(oneline unm.err))" test $rc -eq 0
	check "tracefs unmounted: the probe was there" grep -q 'tpgrp:unm' unm.out
else
	skip "tracefs unmounted (no unshare -m)"
fi

# ---- kernel probes ----
if [ ! -e "$TRACEFS/kprobe_events" ]; then
	"$TALLY" probe -a do_sys_openat2 >k.out 2>k.err; rc=$?
	check "kprobes on a kernel without kprobe_events: refused" test $rc -ne 0
	check "kprobes refused in one line" test "$(wc -l <k.err)" = 1 -a -n "$(grep 'CONFIG_KPROBE_EVENTS' k.err)"
fi
# A simulated tracefs bound over the real one: perf and tally write their kprobe lines
# into a plain file (the kernel's _text offsets come from this machine's kallsyms).
if [ "$(cat /proc/sys/kernel/kptr_restrict)" = 0 ] && have_perf &&
   unshare -m true 2>/dev/null && grep -q ' T vfs_read$' /proc/kallsyms; then
	mkdir -p fake/events && : >fake/kprobe_events && : >fake/uprobe_events &&
		cp "$TRACEFS/README" fake/ 2>/dev/null
	KDEFS=('vfs_read' 'vfs_read+4 %di dfd=%si:s32 +0(%dx):string' 'vfs_read%return $retval'
	       'myg:myev=vfs_read%return $retval:s32' 'vfs_rea?')
	for d in "${KDEFS[@]}"; do
		want=$(unshare -m sh -c "mount --bind '$TMP/fake' '$TRACEFS' && perf probe -v -n -a '$d' 2>&1" |
			sed -n 's/^Writing event: //p')
		got=$(unshare -m sh -c "mount --bind '$TMP/fake' '$TRACEFS' && '$TALLY' probe -D '$d' 2>/dev/null")
		if [ -n "$want" ] && [ "$want" = "$got" ]; then
			ok "kprobe definition as perf's: '$d'"
		else
			fail "kprobe definition as perf's: '$d' (perf: '$want', tally: '$got')"
		fi
	done
	unshare -m sh -c "mount --bind '$TMP/fake' '$TRACEFS' && '$TALLY' probe -q -a vfs_read &&
		'$TALLY' probe -l" >kl.out 2>&1
	check "kprobe written to kprobe_events" grep -q '^p:probe/vfs_read _text+[0-9]*$' fake/kprobe_events
	check "kprobe listed" grep -q '^  probe:vfs_read *(on vfs_read)$' kl.out
else
	skip "kprobe lines against perf (needs perf, unshare -m and readable kallsyms)"
fi
