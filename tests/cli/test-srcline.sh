# Source lines against perf 6.1 on the same files: report --sort srcline/srcfile,
# -g address / -g srcline call-graph entries, --full-source-path, script -F srcline;
# on a binary with DWARF, one without (binutils' "file:0" / "??:0" from the symbol
# table), and kernel frames ("sym +OFFSET"); glibc's frames too where libc6-dbg is
# installed (DWARF 5 rows named as binutils 2.40 names them: libc-start.c:74).
. "$(dirname "$0")/lib.sh"

HOT=$TALLY_BUILD/workloads/hot
export HOME=$TMP/home
mkdir -p "$HOME"
cd "$TMP" || exit 1

# --- without perf: tally's own recording -------------------------------------------
"$TALLY" record -q -g -F 2000 -o own.data "$HOT" 0.3 >/dev/null 2>&1
"$TALLY" report -i own.data --stdio --no-children --sort srcline,srcfile -g none >own.out 2>own.err
check "report --sort srcline,srcfile: spin's lines in hot.c" \
	grep -Eq '^ +[0-9.]+%  hot\.c:[0-9]+ +hot\.c$' own.out
"$TALLY" report -i own.data --stdio --no-children -g address >own-a.out 2>&1
check "report -g address: frames named 'sym file:line'" grep -Eq -- '--spin hot\.c:[0-9]+$' own-a.out
check "report -g address: callers named 'sym file:line'" grep -Eq ' main hot\.c:[0-9]+$' own-a.out
"$TALLY" script -i own.data -F ip,sym,srcline >own-s.out 2>&1
check "script -F srcline: a line under spin" grep -A1 ' spin$' own-s.out | grep -Eq '^  hot\.c:[0-9]+$'
"$TALLY" script -i own.data -F ip,sym,srcline --full-source-path >own-f.out 2>&1
check "script --full-source-path: the whole path" grep -Eq '^  /.*/workloads/hot\.c:[0-9]+$' own-f.out
"$TALLY" script -i own.data -F comm,srcline >bad.out 2>bad.err; rc=$?
check "script -F srcline without ip: refused (rc $rc), saying why" \
	eval 'test $rc -ne 0 && grep -q "srcline needs the ip field" bad.err && test ! -s bad.out'
"$TALLY" report -i own.data --stdio -g bogus >/dev/null 2>bad.err; rc=$?
check "report -g with an unknown key: refused naming it (rc $rc)" \
	eval 'test $rc -ne 0 && grep -q "bogus" bad.err'

if ! have_perf; then
	skip "perf comparisons (perf not installed)"
	exit 0
fi

# --- against perf ----------------------------------------------------------------------
cc -O1 -fno-omit-frame-pointer -pthread -o hotng "$TALLY_TOP/workloads/hot.c" 2>/dev/null
perf record -q -g -F 2000 -o g.data "$HOT" 0.3 >/dev/null 2>&1
perf record -q -g -F 2000 -o ng.data ./hotng 0.3 >/dev/null 2>&1
perf record -q -g -F 2000 -o k.data -- dd if=/dev/zero of=/dev/null bs=64k count=20000 >/dev/null 2>&1

cmp_report() {	# FILE OPTIONS...
	local f=$1
	shift
	perf report -i "$f" --stdio "$@" 2>/dev/null | grep -v '^#' >p.out
	"$TALLY" report -i "$f" --stdio "$@" 2>t.err | grep -v '^#' >t.out
	check "report $* on $f: perf's text" eval 'test -s p.out && diff p.out t.out >diff.out'
	[ -s diff.out ] && { head -5 diff.out; head -5 t.err; } | sed 's/^/# /'
	return 0
}
cmp_script() {	# FILE OPTIONS...
	local f=$1
	shift
	perf script -i "$f" "$@" 2>/dev/null >p.out
	"$TALLY" script -i "$f" "$@" 2>/dev/null >t.out
	check "script $* on $f: perf's text" eval 'test -s p.out && diff p.out t.out >diff.out'
	[ -s diff.out ] && head -5 diff.out | sed 's/^/# /'
	return 0
}

for f in g.data ng.data k.data; do
	[ -s $f ] || { fail "perf record made $f"; continue; }
	cmp_report $f --no-children --sort srcline -g none
	cmp_report $f --no-children --full-source-path --sort srcline -g none
	# perf sizes the srcfile column (and srcline's, after another key) from the rows it
	# happened to look up while sorting and cuts the others to it ("dl-lookup-d"):
	# rows compare by their values, each tally file the start of perf's and the file
	# of its own srcline
	perf report -i $f --stdio --no-children --sort srcline,srcfile -g none 2>/dev/null |
		awk '!/^#/ && NF { print $1, $2, $3 }' | sort >p.sf
	"$TALLY" report -i $f --stdio --no-children --sort srcline,srcfile -g none 2>/dev/null |
		awk '!/^#/ && NF { print $1, $2, $3 }' | sort >t.sf
	check "report --sort srcline,srcfile on $f: perf's rows (files cut as perf cuts them)" \
		eval 'test -s p.sf && join -j 2 -o 1.1,1.2,1.3,2.3 p.sf t.sf | awk "{ if (index(\$4, \$3) != 1) bad = 1 } END { exit bad }" && test $(wc -l <p.sf) = $(wc -l <t.sf)'
	check "report --sort srcline,srcfile on $f: each file is its line's" \
		awk '$3 != "" { f = $2; sub(/:[0-9]+$/, "", f); if (f != $3) bad = 1 } END { exit bad }' t.sf
	cmp_report $f --no-children -g address
	cmp_report $f --no-children -g address,caller
	cmp_report $f --no-children -g srcline
	cmp_report $f --no-children --sort sym,dso -g srcline,caller
	cmp_script $f -F comm,tid,ip,sym,srcline
	cmp_script $f -G -F comm,tid,ip,sym,dso,srcline
	cmp_script $f -F ip,sym,srcline --full-source-path
done

# perf's file recorded by tally reads the same in both
"$TALLY" record -q -g -F 2000 -o t.data "$HOT" 0.3 >/dev/null 2>&1
cmp_report t.data --no-children --sort srcline -g address

# the children view: tally looks callers' lines up where they are (perf 6.1 prints an
# absolute address as the offset of a caller's row): each function's children row is
# one of its own lines
"$TALLY" report -i g.data --stdio --sort srcline -g none 2>/dev/null | grep -v '^#' >c.out
check "report --sort srcline (children): main's row is a line of hot.c, not an offset" \
	eval '! grep -Eq "main\+[0-9]{9,}" c.out && grep -Eq "^ +[0-9.]+% +[0-9.]+%  hot\.c:[0-9]+" c.out'
exit 0
