#!/usr/bin/env bash
# The symbol caches, end to end. kallsyms: the first report of a file recorded on this
# kernel writes /proc/kallsyms's cache in the build-id cache (keyed by the kernel, the
# boot and the text's first page); later reports read it and print what reading the
# text prints; a cache whose key matches is really what names kernel symbols (a
# doctored one shows its names); a cache of another boot, a damaged one or one others
# may write is never read. ELF files: the same for a binary's symbol table, keyed by the
# file's identity: a changed binary is read again.
. "$TALLY_TOP/tests/cli/lib.sh"

# ---- an ELF file's symbol table (a build-id cache of its own: the kallsyms part wants
# one without a kallsyms copy)
KHOME=$HOME
export HOME=$TMP/home-elf
mkdir -p "$HOME"
cp "$TALLY_BUILD/workloads/hot" ./hot
if "$TALLY" record -q -o u.data -- ./hot 0.3 >/dev/null 2>rec.err; then
	urep() { "$TALLY" report -i u.data --stdio -q --sort dso,sym 2>/dev/null; }
	urep >ua.txt
	ucache=$(find "$HOME/.debug$TMP/hot" -name tally-symtab 2>/dev/null | head -1)
	check "symbol cache: the first report keeps hot's symbol table" test -s "$ucache"
	urep >ub.txt
	check "symbol cache: a report reading it prints what reading the ELF file prints" \
		cmp -s ua.txt ub.txt
	usym=$(awk '$2 == "hot" && $4 ~ /^[a-z_]+$/ && length($4) >= 4 {print $4; exit}' ua.txt)
	if [ -n "$usym" ]; then
		USYM=$(echo "$usym" | tr a-z A-Z)
		LC_ALL=C sed -i "s/$usym/$USYM/g" "$ucache"
		urep >uc.txt
		check "symbol cache: it names the symbols while hot stays the same (doctored: $USYM)" \
			grep -qw "$USYM" uc.txt
		touch -d '1 hour ago' ./hot
		urep >ud.txt
		if ! grep -qw "$USYM" ud.txt && cmp -s ua.txt ud.txt; then
			ok "symbol cache: a changed binary is read again"
		else
			fail "symbol cache: a changed binary is read again"
		fi
	else
		skip "symbol cache: no symbol of hot in the report"
	fi
else
	skip "symbol cache: cannot record ($(head -1 rec.err))"
fi

# ---- kallsyms
export HOME=$KHOME

# -N: no build-id cache copy of kallsyms, so that kernel symbols come from /proc/kallsyms
if ! "$TALLY" record -N -q -o k.data -- dd if=/dev/zero of=/dev/null bs=4k count=150000 \
	>/dev/null 2>rec.err; then
	skip "kallsyms cache: cannot record ($(head -1 rec.err))"
	exit 0
fi
rep() { "$TALLY" report -i k.data --stdio -q --sort sym "$@" 2>/dev/null; }
rep >a.txt
grep -q '\[k\] [a-z_]' a.txt || {
	skip "kallsyms cache: no named kernel samples (kallsyms hides addresses?)"
	exit 0
}
cache=$(ls "$HOME"/.debug/'[kernel.kallsyms]'/*/tally-kallsyms.proc 2>/dev/null | head -1)
check "kallsyms cache: the first report writes /proc/kallsyms's cache" test -s "$cache"
check "kallsyms cache: it is the user's alone" test "$(stat -c %a "$cache")" = 600
rep >b.txt
check "kallsyms cache: a report reading it prints what reading the text prints" cmp -s a.txt b.txt
rep --kallsyms /proc/kallsyms >c.txt
check "kallsyms cache: the same as --kallsyms /proc/kallsyms (never cached)" cmp -s a.txt c.txt

# a kernel symbol of the report that is the kernel image's (no "[module]" tag: only
# those are cached) and not on the text's first page (the key)
head -c 4096 /proc/kallsyms >head.txt
sym=$(awk '$2 == "[k]" && $3 ~ /^[a-z_][a-z_0-9]+$/ && length($3) > 6 {print $3}' a.txt |
	while read -r s; do
		grep -qw "$s" head.txt && continue
		grep -qE "^[0-9a-f]+ [tTwW] $s\$" /proc/kallsyms && { echo "$s"; break; }
	done)
if [ -z "$sym" ]; then
	skip "kallsyms cache: no kernel symbol to rename in the cache"
	exit 0
fi
SYM=$(echo "$sym" | tr a-z A-Z)
cp "$cache" orig.cache
LC_ALL=C sed -i "s/$sym/$SYM/g" "$cache"
rep >d.txt
check "kallsyms cache: a cache of this boot names the symbols (a doctored one: $SYM)" \
	grep -qw "$SYM" d.txt
# the same doctored names under another boot's key: never read, the text names them
LC_ALL=C sed -i 's/ boot / bOOt /' "$cache"
rep >e.txt
if ! grep -qw "$SYM" e.txt && cmp -s a.txt e.txt; then
	ok "kallsyms cache: another boot's cache is not read"
else
	fail "kallsyms cache: another boot's cache is not read"
	diff a.txt e.txt | head -5
fi
check "kallsyms cache: and this boot's is written again" cmp -s orig.cache "$cache"
# damaged: cut short, or writable by others: not read, and no wrong names either
LC_ALL=C sed -i "s/$sym/$SYM/g" "$cache" && truncate -s -1 "$cache"
rep >f.txt
check "kallsyms cache: a cut cache is not read" cmp -s a.txt f.txt
LC_ALL=C sed -i "s/$sym/$SYM/g" "$cache" && chmod 666 "$cache"
rep >g.txt
check "kallsyms cache: a cache others may write is not read" cmp -s a.txt g.txt
