#!/usr/bin/env bash
# libtally as a third-party program sees it: build a small C program outside the tree
# with `pkg-config --cflags --libs libtally-uninstalled`, run it, and run the
# examples/selfmon program built by meson.
. "$(dirname "$0")/lib.sh"

pc_dir="$TALLY_BUILD/meson-uninstalled"
if ! command -v pkg-config >/dev/null 2>&1; then
	skip "pkgconfig (pkg-config absent)"
	exit 0
fi
if [ ! -f "$pc_dir/libtally-uninstalled.pc" ]; then
	fail "pkgconfig: $pc_dir/libtally-uninstalled.pc exists"
	exit 0
fi
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs libtally-uninstalled) &&
	ok "pkgconfig: pkg-config --cflags --libs libtally-uninstalled" ||
	fail "pkgconfig: pkg-config --cflags --libs libtally-uninstalled"

# Under the ASan build the shared library needs the sanitizer runtime too.
san=
asan_build && san="-fsanitize=address,undefined"

cat >prog.c <<'C'
#include <stdio.h>
#include <string.h>
#include <tally/tally.h>

int main(void)
{
	struct perf_event_attr a;
	struct tally_selfmon *c;
	struct tally_count v;
	int err;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	err = tally_selfmon__open(&c, &a, 0, -1, NULL, 0);
	if (err) {
		printf("open: %s\n", strerror(-err));
		return 3;
	}
	for (volatile int i = 0; i < 100000; i++)
		;
	err = tally_selfmon__read(c, &v);
	printf("version %s read %d value %llu scaled %llu\n", tally_version(), err,
	       (unsigned long long)v.val, (unsigned long long)tally_scale(v.val, v.ena, v.run));
	tally_selfmon__delete(c);
	return err ? 1 : 0;
}
C
# shellcheck disable=SC2086
if cc -std=gnu11 -Wall -Wextra -Werror $san -o prog prog.c $flags 2>cc.err; then
	ok "pkgconfig: a program outside the tree builds against <tally/tally.h>"
else
	fail "pkgconfig: a program outside the tree builds against <tally/tally.h>"
	sed 's/^/# /' cc.err
fi
if [ -x prog ]; then
	out=$(LD_LIBRARY_PATH="$TALLY_BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ./prog)
	rc=$?
	case $rc in
	0)	case $out in
		"version 0."*" read 0 value "*) ok "pkgconfig: the program runs against libtally.so" ;;
		*) fail "pkgconfig: unexpected output: $out" ;;
		esac ;;
	3)	skip "pkgconfig: run (cannot open a software event here: $out)" ;;
	*)	fail "pkgconfig: the program runs (rc=$rc: $out)" ;;
	esac
	# the symbols come from the shared library, not compiled in
	if nm -D --undefined-only prog 2>/dev/null | grep -Eq ' tally_selfmon__open(@.*)?$'; then
		ok "pkgconfig: links libtally dynamically"
	else
		fail "pkgconfig: links libtally dynamically"
	fi
fi

sm="$TALLY_BUILD/examples/selfmon"
if [ -x "$sm" ]; then
	out=$("$sm" 1000000)
	rc=$?
	if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -Eq '^ *[0-9]+  page-faults ' &&
	   printf '%s\n' "$out" | grep -Eq '^fast path used: (yes|no)$'; then
		ok "pkgconfig: examples/selfmon runs"
	else
		fail "pkgconfig: examples/selfmon runs (rc=$rc)"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
else
	fail "pkgconfig: $sm built"
fi
