#!/usr/bin/env bash
# No function in lib/ or cli/ is longer than 100 lines (issue 13: split at the meaning).
# scripts/function-length.awk names the ones that are; the checker itself is checked on
# a function of 101 lines and one of 100.
. "$(dirname "$0")/lib.sh"

awk_prog=$TALLY_TOP/scripts/function-length.awk
{
	echo 'static int long_one(void)'; echo '{'
	for i in $(seq 99); do echo "	x($i);"; done
	echo '}'
	echo 'static int fits(int a,'; echo '		int b)'; echo '{'
	for i in $(seq 98); do echo "	y($i);"; done
	echo '}'
} >probe.c
out=$(awk -f "$awk_prog" probe.c)
if [ $? -ne 0 ] && [ "$out" = "probe.c:2: long_one is 101 lines (at most 100)" ]; then
	ok "function-length: the checker names a function of 101 lines, not one of 100"
else
	fail "function-length: the checker on a probe file said: $out"
fi

files=$(cd "$TALLY_TOP" && find lib cli -name '*.c' | sort)
if out=$(cd "$TALLY_TOP" && awk -f "$awk_prog" $files); then
	ok "function-length: no function in lib/ or cli/ exceeds 100 lines"
else
	fail "function-length: functions over 100 lines:"
	printf '%s\n' "$out" | sed 's/^/    /'
fi
