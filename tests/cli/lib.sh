# Helpers for CLI tests: source it, then call ok/fail/skip with a test name.
# Every test script prints "ok - NAME", "not ok - NAME" or "skip - NAME (reason)".
# $TALLY is the binary under test, $TALLY_TOP the source tree, $TALLY_BUILD the build.
set -u
: "${TALLY:?run through tests/run.sh or set TALLY}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tally-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
# An empty HOME of its own: no test reads a ~/.debug build-id cache (or a .perfconfig)
# that perf or an earlier test left behind, and none writes into the user's.
export HOME=$TMP/home
mkdir -p "$HOME"

ok()   { echo "ok - $*"; }
fail() { echo "not ok - $*"; }
skip() { echo "skip - $*"; }
# check NAME CMD...: ok if CMD succeeds.
check() { local n=$1; shift; if "$@"; then ok "$n"; else fail "$n"; fi; }
have_perf() { command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1; }
# perf 6.1's report prints a call graph's remainder line "--0.33%--[...]" with
# " (inlined)" when the heap memory under its made-up "[...]" symbol happens to say so
# (it is malloc'ed and its inlined flag never set: seen once in a fresh run, not a
# property of the file). The tests compare with perf as found on PATH behind a shim
# that reads that line as made, and otherwise execs perf itself (a shell function in
# between would print "Terminated" into perf's stderr when a signal ends it).
if PERF_REAL=$(command -v perf 2>/dev/null); then
	mkdir -p "$TMP/bin"
	cat >"$TMP/bin/perf" <<EOF
#!/bin/bash
if [ "\${1:-}" = report ]; then
	"$PERF_REAL" "\$@" | sed 's/\\[\\.\\.\\.\\] (inlined)\$/[...]/'
	exit "\${PIPESTATUS[0]}"
fi
exec "$PERF_REAL" "\$@"
EOF
	chmod +x "$TMP/bin/perf"
	PATH=$TMP/bin:$PATH
fi
# record_by WHO OUT ARGS...: perf or tally (WHO) records ARGS (record's options, then the
# command) into OUT, quietly. 0; 1 when the recording failed or is empty; 2 when WHO is
# perf and perf is absent (the caller skips).
record_by() {
	local who=$1 out=$2
	shift 2
	if [ "$who" = perf ]; then
		have_perf || return 2
		perf record -q -o "$out" "$@" >/dev/null 2>&1
	else
		"$TALLY" record -q -o "$out" "$@" >/dev/null 2>&1
	fi && [ -s "$out" ] || return 1
}
# have_tracepoint SYS:NAME: the kernel has the tracepoint. Asked of tally list, which
# mounts tracefs on demand as perf does, so a test does not skip its tracepoints on a
# fresh boot just because nothing mounted tracefs before it.
have_tracepoint() { "$TALLY" list "$1" 2>/dev/null | grep -q "^  $1  *\[Tracepoint event\]$"; }
# perf_event_cgroup_root: the mount point of the perf_event controller's hierarchy (a
# cgroup v1 mount that has it, else the cgroup2 mount), or nothing.
perf_event_cgroup_root() {
	local m
	m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)perf_event(,|$)/ { print $2; exit }' /proc/mounts)
	[ -n "$m" ] || m=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	echo "$m"
}
# Under ASan builds, tests that time things or run perf-heavy comparisons may skip.
asan_build() { [ -f "$TALLY_BUILD/.asan" ]; }
# pub_copy FILE...: copies of FILEs that any user can run, in $TMP/pub (echoes the
# directory). A checkout may sit in a directory only its owner can enter (a mktemp -d),
# so tests that run as another user run these copies instead of the build tree's.
# A copy of $TALLY takes the libtally.so it links along (its rpath looks beside it first).
pub_copy() {
	chmod 711 "$TMP" && mkdir -p "$TMP/pub" && chmod 777 "$TMP/pub" || return 1
	for f in "$@"; do
		cp "$f" "$TMP/pub/" && chmod 755 "$TMP/pub/${f##*/}" || return 1
		if [ "$f" = "$TALLY" ]; then tally_lib_copy "$TMP/pub" || return 1; fi
	done
	echo "$TMP/pub"
}
# tally_lib_copy DIR: the shared library build/tally loads, readable by all, into DIR,
# so that a copy of the binary in DIR runs where the build directory is out of reach.
tally_lib_copy() {
	cp -L "$TALLY_BUILD/libtally.so.0" "$1/" && chmod 755 "$1/libtally.so.0"
}
# as_nobody CMD...: CMD as user and group 65534 without capabilities (root only).
# "${NOBODY[@]}" CMD & gives $! = CMD's own pid (setpriv execs it; a function would not).
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
as_nobody() { "${NOBODY[@]}" "$@"; }
# can_drop_root: root with setpriv at perf_event_paranoid >= 2, and $TMP reachable by
# nobody (TMPDIR may itself be private): the unprivileged tests can run.
can_drop_root() {
	[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
		[ "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 0)" -ge 2 ] &&
		chmod 711 "$TMP" && as_nobody test -x "$TMP"
}

# stat_compare NAME MODE ARGS...: perf stat and tally stat with ARGS, their reports
# (standard error) compared by shape (tests/data/stat/shape.py MODE: std, csv, json).
# Up to three tries: whether a count is <not counted> can depend on what the scheduler
# did in the two runs' windows (a busy task that got no CPU time on a loaded machine);
# a difference tally makes every time fails all three.
stat_compare() {
	local name=$1 mode=$2
	shift 2
	for _ in 1 2 3; do
		perf stat "$@" 2>p.out >/dev/null
		"$TALLY" stat "$@" 2>t.out >/dev/null
		python3 "$TALLY_TOP/tests/data/stat/shape.py" "$mode" p.out t.out 2>diff.txt && break
	done
	if python3 "$TALLY_TOP/tests/data/stat/shape.py" "$mode" p.out t.out 2>diff.txt; then
		ok "$name"
	else
		fail "$name"
		sed 's/^/# /' diff.txt
	fi
}
