# The build-id cache, buildid-list, buildid-cache and archive against perf 6.1 on the
# same inputs: tally record fills perf's ~/.debug layout (perf lists and uses what tally
# cached, tally uses what perf cached), reports survive a rebuilt or deleted binary,
# damaged caches get a warning and are not trusted, archives unpack into another HOME.
# Every part runs in an empty HOME of its own.
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
REBUILT=$TALLY_BUILD/workloads/hot-rebuilt
fresh_home() { HOME=$(mktemp -d "$TMP/home.XXXXXX"); export HOME; }
# hot copied here, so that it can be rebuilt (replaced) and deleted
fresh_hot() { rm -f "$PWD/hot"; cp "$HOT" "$PWD/hot"; }
# the profile rows of a report: "pct dso sym"
rows() { "$@" --stdio -q --sort dso,sym 2>/dev/null | awk 'NF {print $1, $2, $NF}' | sort; }
bid_of() { "$TALLY" buildid-list -i "$1" 2>/dev/null; }
unset PERF_BUILDID_DIR PERF_CONFIG
# same NAME A B: ok if files A and B are equal, else the difference
same() { if cmp -s "$2" "$3"; then ok "$1"; else fail "$1"; diff "$2" "$3" | head -10 | sed 's/^/#   /'; fi; }

# --- without perf: tally alone ---------------------------------------------------------
fresh_home; fresh_hot
"$TALLY" record -q -o t.data ./hot 0.2 >/dev/null 2>&1
id=$("$TALLY" buildid-list -i ./hot)
check "buildid-list -i ELF: the file's own id" test ${#id} -eq 40
link=$HOME/.debug/.build-id/${id:0:2}/${id:2}
check "record: .build-id link to ../../<path>/<id>" test "$(readlink "$link")" = "../..$PWD/hot/$id"
check "record: the elf copy is the binary" cmp -s "$link/elf" ./hot
kid=$("$TALLY" buildid-list -i t.data | awk '$2 == "[kernel.kallsyms]" {print $1}')
if [ -n "$kid" ]; then
	check "record: a kallsyms copy under [kernel.kallsyms]/<id>" test -s "$HOME/.debug/[kernel.kallsyms]/$kid/kallsyms"
else
	skip "record: no kernel samples, no kallsyms copy to check"
fi
"$TALLY" buildid-cache -l >l.out
check "buildid-cache -l lists hot" grep -q "^$id $PWD/hot\$" l.out
rows "$TALLY" report -i t.data >r1
"$TALLY" annotate --stdio -s spin -i t.data >a1 2>/dev/null
rm ./hot; cp "$REBUILT" ./hot
"$TALLY" annotate --stdio -s spin -i t.data >a2 2>/dev/null
check "annotate of a rebuilt binary: the recorded build's code, from the cache" eval 'test -s a1 && cmp -s a1 a2' 
rows "$TALLY" report -i t.data >r2 2>/dev/null
"$TALLY" report --stdio -i t.data >/dev/null 2>r2.err
check "report of a rebuilt binary: names from the cache, as before" diff r1 r2
check "report of a rebuilt binary: no warning" test ! -s r2.err
rm ./hot
rows "$TALLY" report -i t.data >r3
check "report of a deleted binary: names from the cache" diff r1 r3
rm -rf "$HOME/.debug"
"$TALLY" report --stdio -i t.data >/dev/null 2>r4.err
check "report, binary and cache gone: one warning naming it" test "$(grep -c "$PWD/hot: no symbols" r4.err)" -eq 1
"$TALLY" script -i t.data >/dev/null 2>s4.err
check "script, binary and cache gone: one warning naming it" test "$(grep -c "$PWD/hot: no symbols" s4.err)" -eq 1

# -N, -B, --buildid-dir, $PERF_BUILDID_DIR, perf's config
fresh_home; fresh_hot
"$TALLY" record -q -N -o n.data ./hot 0.1 >/dev/null 2>&1
check "record -N: BUILD_ID written, nothing cached" eval 'grep -q " $PWD/hot\$" <(bid_of n.data) && test ! -e "$HOME/.debug"'
"$TALLY" record -q -B -o b.data ./hot 0.1 >/dev/null 2>&1
check "record -B: no build-ids, nothing cached" eval '! grep -q "^[0-9a-f]\{40\} " <(bid_of b.data) && test ! -e "$HOME/.debug"'
"$TALLY" --buildid-dir "$TMP/bdir" record -q -o d.data ./hot 0.1 >/dev/null 2>&1
check "tally --buildid-dir DIR record: the cache is DIR" test -L "$TMP/bdir/.build-id/${id:0:2}/${id:2}"
PERF_BUILDID_DIR=$TMP/envdir "$TALLY" record -q -o e.data ./hot 0.1 >/dev/null 2>&1
check "PERF_BUILDID_DIR=DIR: the cache is DIR" test -L "$TMP/envdir/.build-id/${id:0:2}/${id:2}"
printf '[buildid]\n\tdir = %s/cfgdir\n[record]\n\tbuild-id = no-cache\n' "$TMP" >"$HOME/.perfconfig"
"$TALLY" record -q -o c.data ./hot 0.1 >/dev/null 2>&1
check "perf config record.build-id = no-cache: nothing cached" test ! -e "$TMP/cfgdir"
sed -i '/record/,$d' "$HOME/.perfconfig"
"$TALLY" record -q -o c.data ./hot 0.1 >/dev/null 2>&1
check "perf config buildid.dir: the cache is there" test -L "$TMP/cfgdir/.build-id/${id:0:2}/${id:2}"
rm -f "$HOME/.perfconfig"

# damaged caches: a warning, never a blind use
fresh_home; fresh_hot
"$TALLY" record -q -o t.data ./hot 0.2 >/dev/null 2>&1
rows "$TALLY" report -i t.data >good
rm ./hot; cp "$REBUILT" ./hot
entry=$HOME/.debug$PWD/hot/$id
mv "$entry" "$TMP/saved-entry"
"$TALLY" report --stdio -i t.data >dang.out 2>dang.err
check "dangling link: warned" grep -q "dangling link" dang.err
check "dangling link: the rebuilt binary is not used (no spin)" eval '! grep -q "\[\.\] spin" dang.out'
mv "$TMP/saved-entry" "$entry"
size=$(stat -c %s "$entry/elf")
truncate -s $((size / 2)) "$entry/elf"
"$TALLY" report --stdio -i t.data >trunc.out 2>trunc.err
check "truncated copy: warned (cut short)" grep -q "is cut short" trunc.err
check "truncated copy: not used" eval '! grep -q "\[\.\] spin" trunc.out'
"$TALLY" archive t.data >/dev/null 2>arch.err
check "archive: a truncated copy is left out with a warning" grep -q "left out.*cut short" arch.err
rm -f t.data.tar.bz2
cp "$HOT" "$entry/elf"
if [ "$(id -u)" = 0 ]; then
	chown 65534 "$entry/elf"
	rows "$TALLY" report -i t.data >own
	"$TALLY" report --stdio -i t.data >/dev/null 2>own.err
	check "another user's copy with the right build-id: used" diff good own
	check "another user's copy: warned" grep -q "owned by uid 65534" own.err
	# a recording sure to have kernel samples (t.data may have none), reported by symbol
	# so that kernel symbols are wanted, from the cached copy
	"$TALLY" record -q -o k.data -- dd if=/dev/zero of=/dev/null bs=64 count=400000 \
		>/dev/null 2>&1
	kid2=$("$TALLY" buildid-list -i k.data | awk '$2 == "[kernel.kallsyms]" {print $1}')
	ks=$HOME/.debug/[kernel.kallsyms]/$kid2/kallsyms
	if [ -n "$kid2" ] && [ -s "$ks" ]; then
		chown 65534 "$ks"
		"$TALLY" report --stdio -i k.data --sort dso,sym >/dev/null 2>kown.err
		check "another user's kallsyms copy: not used, warned" grep -q "owned by uid 65534.*not used" kown.err
		chown 0 "$ks"
		truncate -s 100 "$ks"
		"$TALLY" report --stdio -i k.data --sort dso,sym >/dev/null 2>kcut.err
		check "a cut kallsyms copy: not used, warned" grep -q "is cut short" kcut.err
	else
		fail "a recording of dd has kernel samples and a kallsyms copy"
	fi
else
	skip "damaged caches: another owner (needs root to chown)"
fi

# archive, unpacked into a fresh HOME on "another machine" (the binary gone)
fresh_home; fresh_hot
"$TALLY" record -q -o t.data ./hot 0.2 >/dev/null 2>&1
rows "$TALLY" report -i t.data >before
"$TALLY" archive t.data >arch.out 2>&1; rc=$?
check "archive: exit 0 and perf's instructions" eval 'test $rc -eq 0 && grep -q "tar xvf t.data.tar.bz2 -C ~/.debug" arch.out'
tar tjf t.data.tar.bz2 >tar.list 2>tar.err
check "archive: tar reads it" test -s tar.list -a ! -s tar.err
check "archive: the link and the elf of hot" eval 'grep -qx ".build-id/${id:0:2}/${id:2}" tar.list && grep -qx "${PWD#/}/hot/$id/elf" tar.list'
fresh_home; mkdir -p "$HOME/.debug"; rm ./hot
tar xjf t.data.tar.bz2 -C "$HOME/.debug"
rows "$TALLY" report -i t.data >after
check "archive unpacked in a fresh HOME: tally report names the functions" diff before after

# a stripped copy of a build whose unstripped file is in the build-id cache: the
# symbols come from the cache's copy, as perf's (the first file with a .symtab among the
# cache's copy, its debug copy, /usr/lib/debug and the file itself)
if command -v strip >/dev/null 2>&1; then
	fresh_home; fresh_hot; rm -rf stripped; mkdir stripped
	strip -o stripped/hot ./hot
	"$TALLY" record -q -o st.data ./stripped/hot 0.2 >/dev/null 2>&1
	rows "$TALLY" report -i st.data >st.none
	check "stripped file, no cached copy: addresses (the test can tell)" eval \
		'[ -s st.none ] && ! grep -q " hot spin$" st.none'
	fresh_home
	"$TALLY" record -q -o cached.data ./hot 0.05 >/dev/null 2>&1
	"$TALLY" record -q -o st.data ./stripped/hot 0.2 >/dev/null 2>&1
	check "stripped file recorded: the cache keeps the unstripped copy" \
		cmp -s "$HOME/.debug/.build-id/${id:0:2}/${id:2}/elf" ./hot
	rows "$TALLY" report -i st.data >st.rows
	check "stripped file, unstripped build cached: tally report names the functions" \
		grep -q " hot spin$" st.rows
	if have_perf; then
		rows perf report -i st.data >st.perf
		check "stripped file, unstripped build cached: the rows of perf report" diff st.perf st.rows
	fi
else
	skip "symbols of a stripped file from the build-id cache (strip absent)"
fi

have_perf || { skip "buildid: comparisons with perf (perf absent)"; exit 0; }

if asan_build; then
	# the perf comparisons below exercise perf more than tally: once is enough
	skip "buildid: perf comparisons (run in the plain build)"
	exit 0
fi

rows_perf() { perf report -i "$1" --stdio -q --sort dso,sym 2>/dev/null | awk 'NF {print $1, $2, $NF}' | sort; }

# perf uses what tally cached, and sees it as its own
fresh_home; fresh_hot
"$TALLY" record -q -o t.data ./hot 0.2 >/dev/null 2>&1
perf buildid-cache -l >pl.out 2>/dev/null
"$TALLY" buildid-cache -l >tl.out
check "perf buildid-cache -l lists what tally cached" grep -q "^$id $PWD/hot\$" pl.out
check "buildid-cache -l: the same lines as perf's" cmp -s pl.out tl.out
perf buildid-cache -M t.data >pm.out 2>/dev/null
"$TALLY" buildid-cache -M t.data >tm.out 2>/dev/null
check "buildid-cache -M: nothing missing, as perf says" eval 'test ! -s tm.out && cmp -s pm.out tm.out'
rows_perf t.data >p1
rm ./hot; cp "$REBUILT" ./hot
rows_perf t.data >p2
check "perf report of a rebuilt binary: names from tally's cache" eval 'diff p1 p2 && grep -q " hot spin$" p2'
archive_of() { tar tjf "$1" | sort; }

# tally uses what perf cached
fresh_home; fresh_hot
perf record -q -o p.data ./hot 0.2 >/dev/null 2>&1
rows "$TALLY" report -i p.data >t1
rm ./hot; cp "$REBUILT" ./hot
rows "$TALLY" report -i p.data >t2
"$TALLY" report --stdio -i p.data >/dev/null 2>t2.err
check "tally report of a rebuilt binary: names from perf's cache" eval 'diff t1 t2 && grep -q " hot spin$" t2'
check "tally report with perf's cache: no warning" test ! -s t2.err
perf buildid-cache -l >pl.out 2>/dev/null
"$TALLY" buildid-cache -l >tl.out
check "buildid-cache -l of perf's cache: perf's lines" cmp -s pl.out tl.out
# perf archive and tally archive pack the same files
fresh_hot
perf record -q -o pa.data ./hot 0.2 >/dev/null 2>&1
perf archive pa.data >/dev/null 2>&1
mv pa.data.tar.bz2 perf.tar.bz2
"$TALLY" archive pa.data >/dev/null 2>&1
check "archive: the files perf archive packs" eval 'diff <(tar tjf perf.tar.bz2 | sed "s,/\$,," | sort) <(tar tjf pa.data.tar.bz2 | sed "s,/\$,," | sort)'
fresh_home; mkdir -p "$HOME/.debug"; rm ./hot; cp "$REBUILT" ./hot
tar xjf pa.data.tar.bz2 -C "$HOME/.debug"
rows_perf pa.data >pa.perf
rows "$TALLY" report -i pa.data >pa.tally
check "tally archive unpacked in a fresh HOME: perf report names the functions" grep -q " hot spin$" pa.perf
check "tally archive unpacked in a fresh HOME: tally report gives perf's rows" diff pa.perf pa.tally

# --buildid-all and buildid-list, output identical to perf's
fresh_home; fresh_hot
perf record -q --buildid-all -o pall.data ./hot 0.1 >/dev/null 2>&1
"$TALLY" record -q --buildid-all -o tall.data ./hot 0.1 >/dev/null 2>&1
check "record --buildid-all: perf's binaries (libc though not hit)" \
	diff <(perf buildid-list -i pall.data | sort) <(perf buildid-list -i tall.data | sort)
perf record -q -e cpu-clock -o - ./hot 0.1 2>/dev/null >pipe.data
"$TALLY" record -q -B -o nb.data ./hot 0.1 >/dev/null 2>&1
for f in pall.data tall.data t.data pipe.data nb.data ./hot; do
	for o in "" -H; do
		# perf names a vdso it dumped while reading by its random temporary file
		perf buildid-list $o -i $f 2>/dev/null | sed 's,/tmp/perf-vdso\.so-[A-Za-z0-9]*$,[vdso],' >pb.out
		"$TALLY" buildid-list $o -i $f >tb.out 2>/dev/null
		same "buildid-list $o -i $f: perf's output" pb.out tb.out
	done
done
check "buildid-list on a pipe: perf's" cmp -s \
	<(perf buildid-list <pipe.data 2>/dev/null | sed 's,/tmp/perf-vdso\.so-[A-Za-z0-9]*$,[vdso],') \
	<("$TALLY" buildid-list <pipe.data)
check "buildid-list -k: perf's" cmp -s <(perf buildid-list -k 2>/dev/null) <("$TALLY" buildid-list -k)
check "buildid-list -m: perf's" cmp -s <(perf buildid-list -m 2>/dev/null) <("$TALLY" buildid-list -m)

# buildid-cache: each operation, then perf and tally list the same cache alike
fresh_home; fresh_hot
lib=$(ldd ./hot | awk '/libc.so/ {print $3}')
"$TALLY" buildid-cache -a ./hot,"$lib"
check "buildid-cache -a: perf lists both" test "$(perf buildid-cache -l 2>/dev/null | wc -l)" -eq 2
check "buildid-cache -a: -l as perf's" cmp -s <(perf buildid-cache -l 2>/dev/null) <("$TALLY" buildid-cache -l)
"$TALLY" buildid-cache -r ./hot
check "buildid-cache -r: gone for perf too" eval '! perf buildid-cache -l 2>/dev/null | grep -q "$id"'
perf buildid-cache -a ./hot 2>/dev/null
"$TALLY" buildid-cache -u ./hot
check "buildid-cache -u of perf's entry: still listed" grep -q "$id" <(perf buildid-cache -l 2>/dev/null)
"$TALLY" buildid-cache -p "$lib"
check "buildid-cache -p: every entry of the path gone" eval '! perf buildid-cache -l 2>/dev/null | grep -q "$lib"'
"$TALLY" record -q -o m.data ./hot 0.1 >/dev/null 2>&1
"$TALLY" buildid-cache -P
check "buildid-cache -P: an empty cache for perf" test -z "$(perf buildid-cache -l 2>/dev/null)"
perf buildid-cache -M m.data >pm.out 2>/dev/null
"$TALLY" buildid-cache -M m.data >tm.out 2>/dev/null
check "buildid-cache -M after -P: perf's list of what is missing" eval 'test -s tm.out && cmp -s pm.out tm.out'
"$TALLY" buildid-cache -a /nonexistent >/dev/null 2>a.err; rc=$?
check "buildid-cache -a of a missing file: an error naming it" eval 'test $rc -ne 0 && grep -q /nonexistent a.err'

# -k: a kcore tree made here (no /proc/kcore on the test machines): ROOT/proc/{kcore,
# kallsyms,modules}, ROOT/sys/kernel/notes; perf's copy and tally's are the same bytes
if [ -r /sys/kernel/notes ] && command -v python3 >/dev/null; then
	mkdir -p kc/proc kc/sys/kernel && cp /sys/kernel/notes kc/sys/kernel/notes
	python3 - <<'PY'
import struct
open('kc/proc/kallsyms', 'w').write("ffffffff81000000 T _text\nffffffff81000000 T _stext\n"
    "ffffffff81001000 T f\nffffffff81002000 T _etext\nffffffffc0001000 t m1\t[mod]\n")
open('kc/proc/modules', 'w').write("mod 4096 0 - Live 0xffffffffc0001000\n")
segs = [(0xffffffff81000000, 0x2000), (0xffffffffc0000000, 0x2000), (0xffff888000000000, 0x1000)]
ph, data = b'', b''
for i, (va, sz) in enumerate(segs):
    ph += struct.pack('<IIQQQQQQ', 1, 5, 0x1000 + len(data), va, 0, sz, sz, 0x1000)
    data += bytes([i + 1]) * sz
eh = b'\x7fELF' + bytes([2, 1, 1, 0]) + b'\0' * 8 + struct.pack('<HHIQQQIHHHHHH', 4, 62, 1, 0, 64, 0, 0, 64, 56, len(segs), 64, 0, 0)
with open('kc/proc/kcore', 'wb') as f:
    f.write(eh + ph + b'\0' * (0x1000 - len(eh) - len(ph)) + data)
PY
	fresh_home; perf buildid-cache -k "$PWD/kc/proc/kcore" 2>/dev/null; pk=$(find "$HOME/.debug" -name kcore)
	fresh_home; "$TALLY" buildid-cache -k "$PWD/kc/proc/kcore"; rc=$?; tk=$(find "$HOME/.debug" -name kcore)
	check "buildid-cache -k: exit 0, a kcore under [kernel.kcore]/<id>/<time>" test $rc -eq 0 -a -n "$tk"
	check "buildid-cache -k: perf's kcore copy, byte for byte" cmp -s "$pk" "$tk"
	check "buildid-cache -k: kallsyms and modules copied" eval 'cmp -s kc/proc/kallsyms "${tk%/kcore}/kallsyms" && cmp -s kc/proc/modules "${tk%/kcore}/modules"'
	"$TALLY" buildid-cache -k "$PWD/kc/proc/kcore"
	check "buildid-cache -k again: the same kcore is not copied twice" test "$(find "$HOME/.debug" -name kcore | wc -l)" -eq 1
	"$TALLY" buildid-cache -k "$PWD/kc/proc/kallsyms" 2>k.err; rc=$?
	check "buildid-cache -k of a file not named kcore: refused" eval 'test $rc -ne 0 && grep -q "named kcore" k.err'
else
	skip "buildid-cache -k: no /sys/kernel/notes or python3"
fi
