#!/usr/bin/env bash
# libtally's public API is a contract written three times, and the three must agree:
# the functions declared in include/tally/*.h (each marked TALLY_API), the names listed
# in lib/libtally.map (no glob), and the dynamic symbols libtally.so exports (it is built
# with -fvisibility=hidden, so an unmarked declaration is not exported).
. "$(dirname "$0")/lib.sh"

so="$TALLY_BUILD/libtally.so"
map="$TALLY_TOP/lib/libtally.map"
if ! command -v nm >/dev/null 2>&1; then
	skip "exports (nm absent)"
	exit 0
fi
if ! cc --version 2>/dev/null | grep -qi 'gcc\|free software'; then
	skip "exports (cc is not gcc: the declarations are listed with gcc's -aux-info)"
	exit 0
fi

# Declared: every extern function of the public headers, as gcc sees them.
for h in "$TALLY_TOP"/include/tally/*.h; do
	echo "#include <tally/${h##*/}>"
done >all.c
if cc -std=gnu11 -D_GNU_SOURCE -I"$TALLY_TOP/include" -aux-info aux.txt -c all.c \
	-o all.o 2>cc.err; then
	ok "exports: every public header compiles on its own terms"
else
	fail "exports: every public header compiles on its own terms"
	sed 's/^/# /' cc.err
	exit 0
fi
grep '/include/tally/[^:]*:[0-9]*:NC \*/ extern ' aux.txt |
	sed 's/ *(.*//; s/.*[ *]//' | sort -u >declared
# Listed: the names between "global:" and "local:" in the version script.
sed -n '/global:/,/local:/p' "$map" | sed -n 's/^[[:space:]]*\([A-Za-z0-9_]*\);.*/\1/p' |
	sort >listed
# Exported: what the built library gives the dynamic linker (the version node aside).
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u >exported

n=$(wc -l <declared)
if [ "$n" -gt 100 ] && grep -qx tally_version declared; then
	ok "exports: the headers declare the API ($n functions, tally_version among them)"
else
	fail "exports: the headers declare the API ($n functions, tally_version among them)"
fi
if grep -q '\*' <(sed -n '/global:/,/local:/p' "$map" | grep -v '^[[:space:]]*\*;'); then
	fail "exports: libtally.map names each symbol (no glob before local:)"
else
	ok "exports: libtally.map names each symbol (no glob before local:)"
fi

# compare NAME A B WHAT: ok when every line of A is in B, else the missing names.
compare() {
	local missing
	missing=$(comm -23 "$2" "$3")
	if [ -z "$missing" ]; then
		ok "exports: $1"
	else
		fail "exports: $1"
		echo "$missing" | sed "s/^/# $4: /"
	fi
}
compare "every declared function is exported" declared exported "declared, not exported (TALLY_API missing, or not defined)"
compare "every exported symbol is declared in include/tally" exported declared "exported, not declared"
compare "every declared function is listed in libtally.map" declared listed "declared, not in libtally.map"
compare "libtally.map lists only declared functions" listed declared "in libtally.map, not declared"
if nm -D --defined-only "$so" | grep -q ' tly_'; then
	fail "exports: no internal tly_* symbol leaves the library"
	nm -D --defined-only "$so" | grep ' tly_' | sed 's/^/# /' | head
else
	ok "exports: no internal tly_* symbol leaves the library"
fi
