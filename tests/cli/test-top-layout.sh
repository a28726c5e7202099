# tally top --stdio's layout as perf 6.1's top prints it: the window ($LINES and
# $COLUMNS when both are set, else the terminal on stdout, else 25 x 80) gives a rule one
# column short of it and cuts every row one column shorter; without -E a table has the
# window's rows less 5; the header is cut at 159 characters; on a terminal the screen
# clear is a line of its own; the columns are at least as wide as their titles (not
# printed), padded also when last (the symbol not), and a row without a symbol makes the
# Shared Object column at least 16 wide. The workloads: hot, and a stripped copy of it
# (its rows have no symbols).
# perf top as the oracle where present (the values differ between runs, the layout not).
. "$(dirname "$0")/lib.sh"
unset LINES COLUMNS
HOT="$TALLY_BUILD/workloads/hot"

if ! "$TALLY" top --stdio -d 0.1 --iterations 1 -e cpu-clock >/dev/null 2>err; then
	skip "top layout (cannot sample: $(head -1 err))"
	exit 0
fi
if ! command -v strip >/dev/null 2>&1 || ! cp "$HOT" shot || ! strip shot; then
	skip "top layout (no strip to make a binary without symbols)"
	exit 0
fi
./shot 300 & SP=$!
"$HOT" 300 & HP=$!
trap 'kill $SP $HP 2>/dev/null; rm -rf "$TMP"' EXIT
for ((i = 0; i < 600; i++)); do
	[ "$(readlink "/proc/$SP/exe" 2>/dev/null)" = "$TMP/shot" ] &&
		[ "$(readlink "/proc/$HP/exe" 2>/dev/null)" = "$(readlink -f "$HOT")" ] && break
	sleep 0.1
done
P=$SP	# the process top samples

# The last table of FILE: its rule line, then its rows (the empty line between left out).
last() { tr -d '\r' <"$1" | awk '/PerfTop:/ { n = 0; delete r; next } { r[n++] = $0 } END { for (i = 0; i < n; i++) if (i == 0 || r[i] != "") print r[i] }'; }
# shape FILE: the rule's length, then the rows' lengths (each once)
shape() { last "$1" | awk '!s[length($0)]++ { printf "%d ", length($0) }'; }
# rows FILE MAX: the last table has 1 to MAX rows
rows() { local n; n=$(last "$1" | sed 1d | wc -l); [ "$n" -ge 1 ] && [ "$n" -le "$2" ]; }
# table FILE ENV... -- ARGS: tally top --stdio -p $P ARGS with ENV, into FILE; the
# delay doubled from 0.5 s until the last table has a row (a loaded machine)
table() {
	local f=$1 d e=()
	shift
	while [ "$1" != -- ]; do e+=("$1"); shift; done
	shift
	for d in 0.5 1 2 4; do
		env "${e[@]}" "$TALLY" top --stdio -d $d --iterations 2 -p $P -e cpu-clock "$@" >"$f" 2>err
		[ "$(last "$f" | wc -l)" -ge 2 ] && return 0
	done
	return 1
}
WIDE=(-n --show-total-period --sort comm,pid,dso,sym)	# rows longer than 80 columns

table wide X=1 -- "${WIDE[@]}"
check "top --stdio to a file: a rule of 79 dashes, rows cut at 78 ($(shape wide))" \
	eval 'last wide | head -1 | grep -qx -- "-\{79\}" && last wide | sed 1d | awk "length(\$0) != 78 { exit 1 }"'
table narrow LINES=7 COLUMNS=50 -- "${WIDE[@]}"
check "LINES=7 COLUMNS=50: a rule of 49, rows of 48, at most 2 ($(shape narrow))" \
	eval '[ "$(shape narrow)" = "49 48 " ] && rows narrow 2'
table cols COLUMNS=50 -- "${WIDE[@]}"
check "COLUMNS without LINES: the 80-column window ($(shape cols))" \
	eval 'last cols | head -1 | grep -qx -- "-\{79\}"'
table dso X=1 -- -K
check "a row without a symbol: the dso column 16 wide (perf's)" \
	eval 'last dso | grep -Eq "^  [ 0-9.]{7}%  shot {14}\[\.\] 0x[0-9a-f]{16}\$" &&
	      last dso | sed 1d | awk "match(\$0, /\[[.k]\] /) != 31 { exit 1 }"'

# The columns of hot's rows (comm hot, dsos hot, libc.so.6, [vdso]): at least their
# titles' widths, the comm and pid padded also when last, the symbol not
P=$HP
table hcomm X=1 -- -K --sort comm,sym
check "the Command column at least 7 wide" \
	eval '! last hcomm | sed 1d | grep -Evq "^  [ 0-9.]{7}%  hot      \[[.k]\] [^ ]+\$"'
table hlast X=1 -- -K --sort sym,comm
check "the Command column padded when last" eval '! last hlast | sed 1d | grep -vq "  hot    \$"'
table hpid X=1 -- -K --sort sym,pid
check "the Pid:Command column padded when last" \
	eval 'last hpid | sed 1d | awk -v p=$HP "substr(\$0, length(\$0) - 16) != sprintf(\"  %7d:%-7s\", p, \"hot\") { exit 1 }"'
table hdso X=1 -- -K
check "the Shared Object column at least 13 wide" \
	eval 'last hdso | sed 1d | awk "match(\$0, /\[[.k]\] /) < 28 { exit 1 }"'

# The header: at most 159 characters (perf's), here 160 with an event of a long name
tp=compaction:mm_compaction_fast_isolate_freepages
if have_tracepoint $tp; then
	"$TALLY" top --stdio -d 0.2 --iterations 1 -e $tp -c 12345678901234567 -C 0 >hdr 2>err
	h=$(grep PerfTop: hdr | head -1)
	check "the header cut at 159 characters (${#h})" \
		eval '[ ${#h} -eq 159 ] && [ "${h: -12}" = "(all, CPU: 0" ]'
else
	skip "header cut (no tracepoint $tp)"
fi

# A terminal of 9 x 50 (script's pty): the screen clear on a line of its own, the rule
# and rows as the window makes them, at most 4 rows
if command -v script >/dev/null 2>&1; then
	script -q -c "stty rows 9 cols 50; exec '$TALLY' top --stdio -d 1 --iterations 2 -p $SP -e cpu-clock ${WIDE[*]}" \
		/dev/null </dev/null >tty 2>&1
	check "a terminal: the clear on a line of its own" eval 'grep -q $'"'"'^\e\[H\e\[2J\r$'"'"' tty'
	check "a terminal of 9 x 50: a rule of 49, rows of 48, at most 4 ($(shape tty))" \
		eval '[ "$(shape tty)" = "49 48 " ] && rows tty 4'
else
	skip "top on a terminal (no script)"
fi

# Oracle: perf top in the same windows. Its rows: those of its last table with any.
perf_table() {	# FILE ENV... -- ARGS
	local f=$1 e=()
	shift
	while [ "$1" != -- ]; do e+=("$1"); shift; done
	shift
	timeout -s INT 8 env "${e[@]}" perf top --stdio -d 1 -p $P -e cpu-clock "$@" < <(sleep 10) 2>/dev/null |
		tr -d '\033' | sed 's/^\[H\[2J$//' | awk '/PerfTop:/ { if (k > 1) t = b; b = ""; k = 0 } { b = b $0 "\n"; k += /%/ }
			END { if (k > 1) t = b; printf "%s", t }' >"$f"
}
if have_perf && ! asan_build; then
	P=$SP perf_table pnarrow LINES=7 COLUMNS=50 -- "${WIDE[@]}"
	P=$SP perf_table pdso X=1 -- -K
	P=$HP perf_table phcomm X=1 -- -K --sort comm,dso,sym
	P=$HP table hcomm2 X=1 -- -K --sort comm,dso,sym
	if [ ! -s pnarrow ] || [ ! -s pdso ] || [ ! -s phcomm ]; then
		skip "perf top oracle (perf top printed no table with rows)"
	else
		check "LINES=7 COLUMNS=50: the rule and rows as perf top's ($(shape pnarrow))" \
			eval '[ "$(shape narrow)" = "$(shape pnarrow)" ] && rows pnarrow 2'
		# the header and the first row, each number made one 0 with the spaces
		# before it left out (printf widths there; the columns after them stay)
		norm() { { grep PerfTop: "$1" | tail -1; last "$1" | sed -n 2p; } |
			sed -E 's/[0-9a-f]/0/g; s/ *0[0.]*/0/g'; }
		check "the header and a row as perf top's (dso column 16 wide)" \
			test "$(norm dso)" = "$(norm pdso)"
		[ "$(norm dso)" = "$(norm pdso)" ] || { norm dso; norm pdso; } | sed 's/^/# /'
		check "--sort comm,dso,sym: a row of hot as perf top's" \
			test "$(norm hcomm2 | sed 1d)" = "$(norm phcomm | sed 1d)"
	fi
else
	skip "perf top oracle (perf absent or ASan build)"
fi
