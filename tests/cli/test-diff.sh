# tally diff against perf 6.1's perf diff on files recorded by perf: the same text for
# every computation and option (two files, three files, a rebuilt binary, another
# event); tally's own recordings and examples/diffprofiles when perf is absent; errors.
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
export HOME=$TMP/home	# perf's build-id cache: this test's own
mkdir -p "$HOME" old new
# the baseline runs hot; the new file a rebuilt hot (other code and addresses, the
# same names) at another path with the same file name: rows must pair by name
cp "$HOT" old/hot
cp "$TALLY_BUILD/workloads/hot-rebuilt" new/hot

# --- without perf --------------------------------------------------------------------
"$TALLY" record -q -F 2000 -o own-old.data ./old/hot 0.2 >/dev/null 2>&1
"$TALLY" record -q -F 2000 -o own-new.data ./new/hot 0.3 >/dev/null 2>&1
if [ -s own-old.data ] && [ -s own-new.data ]; then
	"$TALLY" diff own-old.data own-new.data >d.out 2>d.err; rc=$?
	check "diff: two of tally's files (rc $rc)" test $rc -eq 0
	check "diff: perf's header" eval 'grep -Eq "^# Event '"'"'cpu-clock(:[a-zA-Z]*)?'"'"'$" d.out && grep -Eq "^# Baseline  Delta Abs  Shared Object +Symbol" d.out'
	check "diff: the rebuilt binary's spin pairs with the old one's" grep -Eq '^ +[0-9.]+% +[-+][0-9.]+%  hot +\[\.\] spin$' d.out
	cp own-old.data perf.data.old
	cp own-new.data perf.data
	"$TALLY" diff >dd.out 2>&1
	check "diff with no file names: perf.data.old against perf.data" cmp -s d.out dd.out
	"$TALLY" diff own-new.data >d1.out 2>&1
	check "diff with one file name: perf.data.old against it" cmp -s d.out d1.out
	"$TALLY" diff own-old.data own-new.data own-old.data >d3.out 2>&1
	check "diff of three files: a column per file, data files listed" eval 'grep -q "^# Baseline/0  Delta Abs/1  Delta Abs/2" d3.out && grep -q "^#  \[2\] own-old.data" d3.out'
	if [ -x "$TALLY_BUILD/examples/diffprofiles" ]; then
		"$TALLY_BUILD/examples/diffprofiles" own-old.data own-new.data >ex.out 2>&1
		ex=$(awk 'NR == 1 {print $2, $4}' ex.out)
		tr=$(awk '/^ / {for (i = 1; i <= NF; i++) if ($i ~ /^[-+][0-9.]+%$/) {print $i, $NF; exit}}' d.out)
		check "examples/diffprofiles: the top row as tally diff's ($ex)" test -n "$ex" -a "$ex" = "$tr"
	else
		skip "examples/diffprofiles not built"
	fi
	# errors
	"$TALLY" diff -c bogus own-old.data own-new.data >x.out 2>x.err; rc=$?
	check "diff -c bogus: refused with the choices" eval 'test $rc -ne 0 && grep -q "wdiff:w1,w2" x.err'
	"$TALLY" diff -c wdiff:0,1 own-old.data own-new.data >x.out 2>x.err; rc=$?
	check "diff -c wdiff:0,1: zero weights refused" eval 'test $rc -ne 0 && grep -q "non-zero" x.err'
	"$TALLY" diff -c cycles own-old.data own-new.data >x.out 2>x.err; rc=$?
	check "diff -c cycles: refused with the reason" eval 'test $rc -ne 0 && grep -q "branch stacks" x.err'
	"$TALLY" diff --cycles-hist own-old.data own-new.data >x.out 2>x.err; rc=$?
	check "diff --cycles-hist: refused with the reason" eval 'test $rc -ne 0 && grep -q "LBR" x.err'
	"$TALLY" diff -o 3 own-old.data own-new.data >x.out 2>x.err; rc=$?
	check "diff -o past the files: refused" eval 'test $rc -ne 0 && grep -q "only files 0 to 1" x.err'
	"$TALLY" diff -s nokey own-old.data own-new.data >x.out 2>x.err; rc=$?
	check "diff -s with an unknown key: refused naming it" eval 'test $rc -ne 0 && grep -q nokey x.err'
	head -c 4096 /dev/urandom >junk.data
	"$TALLY" diff own-old.data junk.data >x.out 2>x.err; rc=$?
	check "diff with a damaged file: an error naming it, no crash (rc $rc)" eval 'test $rc -ne 0 && test $rc -lt 128 && grep -q junk.data x.err'
	head -c $(($(stat -c %s own-new.data) / 2)) own-new.data >cut.data
	"$TALLY" diff own-old.data cut.data >x.out 2>x.err; rc=$?
	check "diff with a file cut short: a warning, the rows before it (rc $rc)" eval 'test $rc -eq 0 && grep -q "cut short" x.err && grep -q spin x.out'
else
	skip "diff on tally's own files (tally record failed here)"
fi
mkdir -p none && cd none
"$TALLY" diff >x.out 2>x.err; rc=$?
check "diff without perf.data.old: an error that says what diff compares" eval 'test $rc -ne 0 && grep -q "perf.data.old" x.err'
cd ..

# --- against perf --------------------------------------------------------------------
have_perf || { skip "diff vs perf diff (perf absent)"; exit 0; }

perf record -q -c 200000 -o old.data -- sh -c "./old/hot 0.15; ls -R /usr/share/doc >/dev/null 2>&1" >/dev/null 2>&1
perf record -q -c 200000 -o new.data -- sh -c "./new/hot 0.2; ls -R /usr/share/doc >/dev/null 2>&1; ./new/hot 0.05" >/dev/null 2>&1
perf record -q -c 200000 -o third.data ./new/hot 0.1 >/dev/null 2>&1
perf record -q -e task-clock -c 200000 -o task.data ./old/hot 0.1 >/dev/null 2>&1
if [ ! -s old.data ] || [ ! -s new.data ] || [ ! -s third.data ]; then
	fail "perf record of the diff corpus"
	exit 0
fi
# Rows of equal values whose keys perf orders by its trees' internals (unresolved
# addresses of equal share) may come in another order: sort each run of rows with the
# same value columns (everything before the key's "[.]"/"[k]" marker or the last
# column) by their text, in both outputs, before comparing. Everything else stays exact.
ties_sorted() {
	python3 -c '
import re, sys
lines = open(sys.argv[1]).read().split("\n")
def vals(l):
    if not l or l.startswith("#"):
        return None
    m = re.search(r"\[[.kguH]\] ", l)
    return l[:m.start()] if m else l.rsplit(None, 1)[0]
out, run = [], []
for l in lines + [None]:
    v = vals(l) if l is not None else None
    if run and (v is None or v != vals(run[0])):
        out += sorted(run); run = []
    if l is None:
        break
    if v is None:
        out.append(l)
    else:
        run.append(l)
sys.stdout.write("\n".join(out))
' "$1"
}
# ties_sorted with every unresolved row's address blanked out
unresolved_any() { sed -E 's/\[([.kguH])\] 0x[0-9a-f]+/[\1] 0x?/' "$1" >"$1.any"; ties_sorted "$1.any"; }
same() {	# NAME ARGS...: tally diff prints what perf diff prints
	local name=$1
	shift
	perf diff "$@" >p.out 2>/dev/null
	"$TALLY" diff "$@" >t.out 2>t.err
	if [ -s p.out ] && cmp -s p.out t.out; then
		ok "diff $name: the same text as perf diff"
	elif [ -s p.out ] && [ "$(ties_sorted p.out)" = "$(ties_sorted t.out)" ]; then
		ok "diff $name: the same text as perf diff (rows of equal values in another order)"
	elif [ -s p.out ] && [ "$(unresolved_any p.out)" = "$(unresolved_any t.out)" ]; then
		# an unresolved row stands for several addresses merged by -s sym; which one
		# perf names depends on its tree's insertion order, which tally's diff does
		# not always reproduce (seen once in fifty runs): same rows, same values
		ok "diff $name: the same text as perf diff (an unresolved row named by another of its addresses)"
	else
		fail "diff $name: the same text as perf diff"
		diff p.out t.out | head -8 | sed 's/^/# /'
	fi
}
same "(defaults)" old.data new.data
for o in "-c delta" "-c ratio" "-c wdiff:1,2" "-c delta-abs" "-p" "-F" "-c ratio -F" \
	 "-c wdiff:2,3 -F -p" "--percentage relative -d hot" "-o 0" "-b" "-b -p -F" "-s comm" \
	 "-s dso" "-s sym" "-s pid" "-s comm,dso" "-s sym,dso" "-C ls" "-d hot,ls" "-S spin" \
	 "-q"; do
	same "$o" $o old.data new.data
done
same "of three files" old.data new.data third.data
same "of three files -o 2 -p -F" -o 2 -p -F old.data new.data third.data
same "of three files -c ratio" -c ratio old.data new.data third.data
perf diff old.data task.data >p.out 2>/dev/null
"$TALLY" diff old.data task.data >t.out 2>t.err
check "diff of files with different events: perf's text" cmp -s p.out t.out
check "diff of files with different events: a warning names the missing event" grep -q "task.data has no cpu-clock" t.err
