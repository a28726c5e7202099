#!/usr/bin/env bash
# Self-monitoring on the real kernel: examples/selfmon counts a region correctly and
# says how it read; the public headers compile as C++; bench/read-cost produces its
# result line; with perf present, its page-fault count fits inside perf's count of
# the whole process.
. "$(dirname "$0")/lib.sh"

sm="$TALLY_BUILD/examples/selfmon"
out=$("$sm" 2000000 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
	case $out in
	*"cannot open any event"*) skip "selfmon (no events can be opened here)"; exit 0 ;;
	esac
	fail "selfmon: examples/selfmon exits 0 (rc=$rc)"
	printf '%s\n' "$out" | sed 's/^/# /'
fi
pf=$(printf '%s\n' "$out" | awk '$2 == "page-faults" {print $1}')
tc=$(printf '%s\n' "$out" | awk '$2 == "task-clock" {print $1}')
# the region touches 256 fresh pages: at least 256 faults, and not absurdly more
if [ -n "$pf" ] && [ "$pf" -ge 256 ] && [ "$pf" -lt 5000 ]; then
	ok "selfmon: page-faults of the region ($pf) >= 256 touched pages"
else
	fail "selfmon: page-faults of the region ($pf) >= 256 touched pages"
fi
if [ -n "$tc" ] && [ "$tc" -gt 0 ]; then
	ok "selfmon: task-clock of the region counted ($tc ns)"
else
	fail "selfmon: task-clock of the region counted"
fi
# every counted line says how it was read; software events are never fast
if printf '%s\n' "$out" | grep -E '  (task-clock|page-faults) ' | grep -qv 'read(): the kernel publishes no counter index'; then
	fail "selfmon: software events report the read() path with its reason"
else
	ok "selfmon: software events report the read() path with its reason"
fi
if printf '%s\n' "$out" | grep -q '^fast path used: \(yes\|no\)$'; then
	ok "selfmon: reports whether the fast path was used"
else
	fail "selfmon: reports whether the fast path was used"
fi
# On a machine without a hardware PMU the hardware lines must say so, not show 0.
if printf '%s\n' "$out" | grep -E '  (instructions|cycles) ' | grep -q '^ *0  '; then
	fail "selfmon: no zero counts for events that did not open"
else
	ok "selfmon: no zero counts for events that did not open"
fi

# -e in perf's syntax, as a group: members must count too (a member joined to a
# running group would count nothing until the next context switch).
gout=$("$sm" -e '{page-faults,task-clock:u}' 1000 2>&1)
gpf=$(printf '%s\n' "$gout" | awk '$2 == "page-faults" {print $1}')
gtc=$(printf '%s\n' "$gout" | awk '$2 == "task-clock:u" {print $1}')
if [ -n "$gpf" ] && [ "$gpf" -ge 256 ] && [ -n "$gtc" ] && [ "$gtc" -gt 0 ]; then
	ok "selfmon: -e '{page-faults,task-clock:u}' counts leader and member"
else
	fail "selfmon: -e '{page-faults,task-clock:u}' counts leader and member"
	printf '%s\n' "$gout" | sed 's/^/# /'
fi
eout=$("$sm" -e 'cycles:zz' 2>&1)
rc=$?
if [ $rc -ne 0 ] && printf '%s\n' "$eout" | grep -q "event syntax error: 'cycles:zz'"; then
	ok "selfmon: -e with a syntax error fails with perf's caret message"
else
	fail "selfmon: -e with a syntax error fails with perf's caret message (rc=$rc)"
fi

# examples/selfsample: the process samples itself and attributes its own IPs; burn_a
# does three times burn_b's work, so it must get more samples.
ss="$TALLY_BUILD/examples/selfsample"
sout=$("$ss" 150 2>&1)
rc=$?
sa=$(printf '%s\n' "$sout" | awk '$3 == "burn_a" {print $2}')
sb=$(printf '%s\n' "$sout" | awk '$3 == "burn_b" {print $2}')
if [ $rc -eq 0 ] && [ -n "$sa" ] && [ -n "$sb" ] && [ "$sa" -gt "$sb" ] && [ "$sb" -gt 0 ]; then
	ok "selfmon: examples/selfsample attributes its samples (burn_a $sa > burn_b $sb)"
else
	fail "selfmon: examples/selfsample attributes its samples (rc=$rc)"
	printf '%s\n' "$sout" | sed 's/^/# /'
fi
if printf '%s\n' "$sout" | grep -Eq '^ring: [0-9]+ records, [0-9]+ lost'; then
	ok "selfmon: examples/selfsample reports the ring's statistics"
else
	fail "selfmon: examples/selfsample reports the ring's statistics"
fi

# The public headers from C++ (extern "C" everywhere).
if command -v g++ >/dev/null 2>&1; then
	san=
	asan_build && san="-fsanitize=address,undefined"
	cat >cxx.cc <<'CXX'
#include <tally/tally.h>
#include <cstdio>
#include <cstring>

int main()
{
	perf_event_attr a;
	std::memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.exclude_kernel = 1;
	tally_selfmon *c = nullptr;
	int err = tally_selfmon__open(&c, &a, 0, -1, nullptr, 0);
	if (err)
		return 3;
	tally_count v;
	err = tally_selfmon__read(c, &v);
	std::printf("%s %d %s\n", tally_version(), err,
		    tally_self_path_str(tally_selfmon__last_path(c)));
	tally_selfmon__delete(c);
	return err ? 1 : 0;
}
CXX
	# shellcheck disable=SC2086
	if g++ -std=c++11 -Wall -Wextra -Werror $san -I"$TALLY_TOP/include" -o cxx cxx.cc \
		-L"$TALLY_BUILD" -ltally 2>cxx.err; then
		ok "selfmon: <tally/tally.h> compiles and links as C++"
		LD_LIBRARY_PATH="$TALLY_BUILD" ./cxx >cxx.out
		rc=$?
		if [ $rc -eq 0 ] && grep -q ' 0 read()' cxx.out; then
			ok "selfmon: C++ program reads a counter"
		elif [ $rc -eq 3 ]; then
			skip "selfmon: C++ program (task-clock cannot be opened here)"
		else
			fail "selfmon: C++ program reads a counter (rc=$rc)"
		fi
	else
		fail "selfmon: <tally/tally.h> compiles and links as C++"
		sed 's/^/# /' cxx.err | head -20
	fi
else
	skip "selfmon: C++ headers (g++ absent)"
fi

# bench/read-cost: the result line (the ratio itself is for bench/RESULTS.md, not a test).
rcb="$TALLY_BUILD/bench/read-cost"
last=$("$rcb" 2000 3 | tail -1)
if printf '%s\n' "$last" | grep -Eq '^tally_read_ns=[0-9.]+ raw_read_ns=[0-9.]+ ratio=[0-9.]+$'; then
	ok "selfmon: bench/read-cost prints its result line"
else
	fail "selfmon: bench/read-cost prints its result line: $last"
fi
md=$(READ_COST_READS=2000 READ_COST_ROUNDS=3 bash "$TALLY_TOP/bench/read-cost.sh" "$TALLY_BUILD")
if printf '%s\n' "$md" | grep -q '^## ' && printf '%s\n' "$md" | grep -q '| bare read() |'; then
	ok "selfmon: bench/read-cost.sh prints a Markdown section"
else
	fail "selfmon: bench/read-cost.sh prints a Markdown section"
fi

# perf as the oracle: the region's page faults are part of the whole process's.
if have_perf && ! asan_build; then
	pout=$(perf stat -x, -e page-faults -- "$sm" 1000 2>perf.err)
	ppf=$(awk -F, '$3 == "page-faults" || $3 ~ /^page-faults/ {print $1; exit}' perf.err)
	spf=$(printf '%s\n' "$pout" | awk '$2 == "page-faults" {print $1}')
	if [ -n "$ppf" ] && [ -n "$spf" ] && [ "$ppf" -ge "$spf" ] && [ "$spf" -ge 256 ]; then
		ok "selfmon: region page-faults ($spf) within perf's count for the process ($ppf)"
	elif [ -z "$ppf" ]; then
		skip "selfmon: perf oracle (perf stat gave no page-faults count)"
	else
		fail "selfmon: region page-faults ($spf) within perf's count for the process ($ppf)"
	fi
else
	skip "selfmon: perf oracle (perf absent or ASan build)"
fi
