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
	[ $rc -eq 0 ] && grep -q "^ Usage: tally $c" h && [ ! -s e ] || bad="$bad $c(rc=$rc)"
	for o in $("$TALLY" $c --list-opts); do
		grep -Eq -- "(^ +|, )$o( |\[|$)" h || bad="$bad $c:$o"
	done
done
check "-h of every command: usage, exit 0, each option of --list-opts listed${bad:+:$bad}" \
	test -z "$bad"

# perf's messages for an unknown option and a missing value, exit 129, every command:
# "  Error: unknown option `x'" then the whole usage, " Error: option `x' requires a
# value" then the usage lines and that option's help line; nothing on stdout.
bad=""
for c in $CMDS; do
	"$TALLY" $c --no-such-option >o 2>e; rc=$?
	{ [ $rc -eq 129 ] && [ "$(head -1 e)" = "  Error: unknown option \`no-such-option'" ] &&
	  cmp -s <(tail -n +2 e) <("$TALLY" $c -h) &&
	  [ ! -s o ]; } || bad="$bad $c:long(rc=$rc)"
	"$TALLY" $c -Q >o 2>e; rc=$?
	{ [ $rc -eq 129 ] && [ "$(head -1 e)" = "  Error: unknown switch \`Q'" ] &&
	  grep -q "^ Usage: tally $c" e && [ ! -s o ]; } || bad="$bad $c:short(rc=$rc)"
done
check "unknown option or switch: perf's message and the usage, exit 129, in every command${bad:+:$bad}" \
	test -z "$bad"
bad=""
nr=0
for c in $CMDS; do
	# every option of the command that needs a value, long and short (the last word);
	# not perf's "last argument default" ones (report -g, probe -F/-l: a value if one
	# follows, else their default)
	for o in $("$TALLY" $c -h | sed -n 's/^ *\(-\(.\), \)\{0,1\}--\([a-z0-9-]*\) <.*/\3:\2/p'); do
		long=${o%%:*} short=${o#*:}
		case $c:$long in report:call-graph|probe:funcs|probe:list) continue;; esac
		"$TALLY" $c --$long >out 2>e; rc=$?
		{ [ $rc -eq 129 ] && [ "$(head -1 e)" = " Error: option \`$long' requires a value" ] &&
		  [ "$(sed -n 2p e)" = "$("$TALLY" $c -h | sed -n 2p)" ] &&
		  grep -Eq -- "--$long <" e && [ ! -s out ]; } || bad="$bad $c:--$long(rc=$rc)"
		nr=$((nr + 1))
		[ -n "$short" ] || continue
		"$TALLY" $c -$short >out 2>e; rc=$?
		{ [ $rc -eq 129 ] && [ "$(head -1 e)" = " Error: switch \`$short' requires a value" ] &&
		  grep -Eq -- "-$short, --$long <" e; } || bad="$bad $c:-$short(rc=$rc)"
	done
done
check "missing value: perf's message, the usage and the option, exit 129 ($nr options of every command)${bad:+:$bad}" \
	test -z "$bad" -a $nr -gt 100
"$TALLY" evlist --force=yes 2>e; rc=$?
check "a flag given a value: perf's message, 129" \
	eval 'test $rc -eq 129 && test "$(head -1 e)" = " Error: option \`force'"'"' takes no value"'
"$TALLY" stat --no-event 2>e; rc=$?
check "a value option negated: perf's message, 129" \
	eval 'test $rc -eq 129 && test "$(head -1 e)" = " Error: option \`no-event'"'"' isn'"'"'t available"'

# perf's syntax: --opt=val and --opt val, prefixes, bundles, attached short values.
ref=$("$TALLY" evlist -F -f -i "$FIX/group.data")
for form in "--input=$FIX/group.data -F -f" "--input $FIX/group.data -Ff" "-i$FIX/group.data -fF" \
	    "--inp $FIX/group.data --fr --fo"; do
	out=$("$TALLY" evlist $form 2>&1)
	check "evlist $form: the same as -i FILE -F -f" test "$out" = "$ref"
done
"$TALLY" evlist --f 2>e; rc=$?
check "an ambiguous prefix names two candidates, 129" \
	eval 'test $rc -eq 129 && grep -q "^ Error: Ambiguous option: f (could be --f[a-z]* or --f[a-z]*)" e'
out=$("$TALLY" report -i "$FIX/plain.data" --stdio --no-children --sort=comm -q 2>/dev/null | head -1)
check "--no-NAME and --opt=val in report" test -n "$out"
"$TALLY" report -i "$FIX/plain.data" --no-force 2>/dev/null >/dev/null; rc=$?
check "--no-NAME of a flag undoes it" test $rc -eq 0
"$TALLY" stat --inherit -- true 2>e; rc=$?
check "--NAME undoes an option named no-NAME (stat --inherit)" test $rc -eq 0
"$TALLY" report -i "$FIX/plain.data" -- extra 2>e; rc=$?
check "a stray argument: 129 with a hint" \
	eval 'test $rc -eq 129 && grep -q "^  Error: unexpected argument .extra. (use -i to name the input file)" e'
"$TALLY" stat -r 0 true 2>e; rc=$?
check "a number out of range: 129, the range named" \
	eval 'test $rc -eq 129 && grep -q -- "^ Error: switch .r. expects a number from 1 to 100, not .0." e'
"$TALLY" stat -r x true 2>e; rc=$?
check "not a number: perf's message, 129" \
	eval 'test $rc -eq 129 && grep -q "^ Error: switch .r. expects a numerical value" e'
# record/stat stop at the workload: its options are its own
out=$("$TALLY" stat -x, -e task-clock -- sh -c 'echo "$@"' sh -e -x 2>/dev/null)
check "stat: options after the command are the command's" test "$out" = "-e -x"

# perf's own words and exit status for the same mistakes, compared live: an unknown
# option and switch, and every option of perf's -h that needs a value (run bare) that
# tally knows too (where perf, given it bare, stops with a usage error)
if have_perf; then
	bad=""
	nr=0
	for c in stat record report script evlist top list annotate diff buildid-list \
		 buildid-cache inject probe; do
		known=" $("$TALLY" $c --list-opts) "
		for a in --no-such-option -Q $(perf $c -h 2>&1 |
			sed -n 's/^ *-\(.\), --\([a-z0-9-]*\) <.*/\2:\1/p; s/^ *--\([a-z0-9-]*\) <.*/\1:/p'); do
			case $a in
			-*) ;;
			*)	# perf's long option and its short letter, when tally knows them
				long=${a%%:*} short=${a#*:}
				case $known in *" --$long "*) ;; *) continue;; esac
				a=--$long
				"$TALLY" $c -h | grep -Eq -- "^ +-$short, --$long " && a="$a -$short";;
			esac
			for w in $a; do
				timeout 20 perf $c $w </dev/null >/dev/null 2>pe; p=$?
				[ $p -eq 129 ] || continue
				timeout 20 "$TALLY" $c $w </dev/null >/dev/null 2>te; t=$?
				nr=$((nr + 1))
				[ $t -eq 129 ] && [ "$(head -1 te)" = "$(head -1 pe)" ] ||
					bad="$bad $c:$w(perf $p '$(head -1 pe)', tally $t '$(head -1 te)')"
			done
		done
	done
	check "perf's first line and exit status for $nr usage errors of 13 commands${bad:+:$bad}" \
		test -z "$bad" -a $nr -gt 100
else
	skip "usage errors compared with perf (perf absent)"
fi
