#!/usr/bin/env bash
# The symbol caches, end to end. kallsyms: the first report of a file recorded on this
# kernel writes /proc/kallsyms's cache in the build-id cache (keyed by the kernel, the
# boot and the text's first page); later reports read it and print what reading the
# text prints; a cache whose key matches is really what names kernel symbols (a
# doctored one shows its names); a cache of another boot, a damaged one or one others
# may write is never read. ELF files: the same for a binary's symbol table, keyed by the
# file's identity: a changed binary is read again; also for a binary the recording
# names no build-id of (keyed by the file's own build-id note).
. "$TALLY_TOP/tests/cli/lib.sh"

# ---- an ELF file's symbol table (a build-id cache of its own: the kallsyms part wants
# one without a kallsyms copy)
KHOME=$HOME
export HOME=$TMP/home-elf
mkdir -p "$HOME"
# elf_case NAME LABEL [RECORD OPTIONS]: record a copy of hot named NAME, then: the first
# report keeps its table, a report reading it prints the same, the cache (doctored) is
# what names the symbols while the binary stays the same, a changed binary is read again.
# Sets $ecache (the cache file).
elf_case() {
	local name=$1 label=$2 sym SYM
	shift 2
	cp "$TALLY_BUILD/workloads/hot" "./$name"
	if ! "$TALLY" record "$@" -q -o "$name.data" -- "./$name" 0.3 >/dev/null 2>rec.err; then
		skip "$label: cannot record ($(head -1 rec.err))"
		return 1
	fi
	erep() { "$TALLY" report -i "$name.data" --stdio -q --sort dso,sym 2>/dev/null; }
	erep >"$name.a"
	ecache=$(find "$HOME/.debug$TMP/$name" -name tally-symtab 2>/dev/null | head -1)
	check "$label: the first report keeps $name's symbol table" test -s "$ecache"
	erep >"$name.b"
	check "$label: a report reading it prints what reading the ELF file prints" \
		cmp -s "$name.a" "$name.b"
	sym=$(awk -v n="$name" '$2 == n && $4 ~ /^[a-z_]+$/ && length($4) >= 4 {print $4; exit}' \
		"$name.a")
	if [ -z "$sym" ]; then
		skip "$label: no symbol of $name in the report"
		return 0
	fi
	SYM=$(echo "$sym" | tr a-z A-Z)
	LC_ALL=C sed -i "s/$sym/$SYM/g" "$ecache"
	erep >"$name.c"
	check "$label: it names the symbols while $name stays the same (doctored: $SYM)" \
		grep -qw "$SYM" "$name.c"
	touch -d '1 hour ago' "./$name"
	erep >"$name.d"
	if ! grep -qw "$SYM" "$name.d" && cmp -s "$name.a" "$name.d"; then
		ok "$label: a changed binary is read again"
	else
		fail "$label: a changed binary is read again"
	fi
}

elf_case hot "symbol cache"

# the same for a binary the recording names no build-id of (-B; also perf record's
# build-id list, which has only the dsos of sampled addresses, not of call chain frames):
# the entry is named by the file's own build-id note
if elf_case hotnb "symbol cache (no build-id recorded)" -B; then
	nbid=$("$TALLY" buildid-list -i hotnb.data 2>/dev/null | grep -c '^[0-9a-f]\{40\} .*hotnb')
	check "symbol cache (no build-id recorded): the file names none for hotnb" test "$nbid" = 0
	own=$(readelf -n ./hotnb 2>/dev/null | awk '/Build ID/ {print $3}')
	check "symbol cache (no build-id recorded): kept under the file's own build-id ($own)" \
		test -n "$own" -a "$(basename "$(dirname "$ecache")")" = "$own"
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
