# The options of every command come from one table (cli/options.c): perf's
# parse-options syntax, one message and exit status 129 for each kind of usage error
# whatever the command, -h listing every option the parser knows.
. "$(dirname "$0")/lib.sh"

FIX=$TALLY_TOP/tests/data/perf
CMDS="list parse-events top stat report script evlist record annotate diff buildid-list
buildid-cache inject probe archive"

# -h: usage on stdout, exit 0, every long option the parser knows listed once.
bad=""
for c in $CMDS; do
	"$TALLY" $c -h >h 2>e; rc=$?
	[ $rc -eq 0 ] && grep -q "^ usage: tally $c" h && [ ! -s e ] || bad="$bad $c(rc=$rc)"
	for o in $("$TALLY" $c --list-opts); do
		grep -Eq -- "(^ +|, )$o( |\[|$)" h || bad="$bad $c:$o"
	done
done
check "-h of every command: usage, exit 0, each option of --list-opts listed${bad:+:$bad}" \
	test -z "$bad"

# One message for an unknown option, one for a missing value, exit 129 everywhere.
bad=""
for c in $CMDS; do
	"$TALLY" $c --no-such-option >o 2>e; rc=$?
	[ $rc -eq 129 ] && [ "$(cat e)" = "tally: $c: unknown option '--no-such-option' (see 'tally $c -h')" ] &&
		[ ! -s o ] || bad="$bad $c:long(rc=$rc)"
	"$TALLY" $c -Q >o 2>e; rc=$?
	[ $rc -eq 129 ] && [ "$(cat e)" = "tally: $c: unknown option '-Q' (see 'tally $c -h')" ] ||
		bad="$bad $c:short(rc=$rc)"
done
check "unknown option: one message, exit 129, in every command${bad:+:$bad}" test -z "$bad"
bad=""
for c in stat record report script evlist top annotate inject; do
	long=$("$TALLY" $c --list-opts | tr ' ' '\n' | grep -m1 -E '^--(input|event|output)$')
	"$TALLY" $c "$long" 2>e; rc=$?
	[ $rc -eq 129 ] && [ "$(cat e)" = "tally: $c: option '$long' needs a value" ] ||
		bad="$bad $c(rc=$rc)"
done
check "missing value: one message, exit 129, in every command${bad:+:$bad}" test -z "$bad"
"$TALLY" evlist --force=yes 2>e; rc=$?
check "a flag given a value: refused, 129" eval 'test $rc -eq 129 && grep -qx "tally: evlist: option .--force. takes no value" e'

# perf's syntax: --opt=val and --opt val, prefixes, bundles, attached short values.
ref=$("$TALLY" evlist -F -g -i "$FIX/group.data")
for form in "--input=$FIX/group.data -F -g" "--input $FIX/group.data -Fg" "-i$FIX/group.data -gF" \
	    "--inp $FIX/group.data --fr --gr"; do
	out=$("$TALLY" evlist $form 2>&1)
	check "evlist $form: the same as -i FILE -F -g" test "$out" = "$ref"
done
"$TALLY" evlist --f 2>e; rc=$?
check "an ambiguous prefix names two candidates, 129" \
	eval 'test $rc -eq 129 && grep -q "option .--f. is ambiguous: it could be --f[a-z]* or --f[a-z]*" e'
out=$("$TALLY" report -i "$FIX/plain.data" --stdio --no-children --sort=comm -q 2>/dev/null | head -1)
check "--no-NAME and --opt=val in report" test -n "$out"
"$TALLY" report -i "$FIX/plain.data" --no-force 2>/dev/null >/dev/null; rc=$?
check "--no-NAME of a flag undoes it" test $rc -eq 0
"$TALLY" stat --inherit -- true 2>e; rc=$?
check "--NAME undoes an option named no-NAME (stat --inherit)" test $rc -eq 0
"$TALLY" report -i "$FIX/plain.data" -- extra 2>e; rc=$?
check "a stray argument: 129 with a hint" \
	eval 'test $rc -eq 129 && grep -q "unexpected argument .extra. (use -i to name the input file)" e'
"$TALLY" stat -r 0 true 2>e; rc=$?
check "a number out of range: 129, the range named" \
	eval 'test $rc -eq 129 && grep -q -- "-r/--repeat expects a number from 1 to 100, not .0." e'
"$TALLY" stat -r x true 2>e; rc=$?
check "not a number: 129" test $rc -eq 129
# record/stat stop at the workload: its options are its own
out=$("$TALLY" stat -x, -e task-clock -- sh -c 'echo "$@"' sh -e -x 2>/dev/null)
check "stat: options after the command are the command's" test "$out" = "-e -x"

# the same exit status as perf for the same mistakes
if have_perf; then
	bad=""
	for c in stat record report script evlist top list annotate diff buildid-list inject probe; do
		perf $c --no-such-option >/dev/null 2>&1; p=$?
		"$TALLY" $c --no-such-option >/dev/null 2>&1; t=$?
		[ $p -eq $t ] || bad="$bad $c(perf $p, tally $t)"
	done
	check "unknown option: perf's exit status in every command${bad:+:$bad}" test -z "$bad"
else
	skip "exit status compared with perf (perf absent)"
fi
