# Damaged perf.data files (tests/cli/damage.py makes 30+ kinds from perf 6.1 files):
# every reading command (report, script, evlist) must answer with a message, never crash,
# hang or trip a sanitizer, and exit nonzero for every damaged file other than one merely
# cut short (read up to the last complete record, warning how much is missing) or one
# holding a record type it does not know (skipped by its size, with a warning).
. "$(dirname "$0")/lib.sh"

corpus="$TALLY_TOP/tests/fuzz/corpus"
command -v python3 >/dev/null || { skip "broken files (python3 absent)"; exit 0; }
# Two sets of damaged files: from perf 6.1 recordings and from tally's own.
python3 "$TALLY_TOP/tests/cli/damage.py" "$corpus/data/perf61-task-clock-g.data" \
	"$corpus/data-pipe/perf61-pipe.data" "$corpus/data/perf61-zstd.data" dmg-perf61 ||
	{ fail "damage.py made the damaged files (perf 6.1 set)"; exit 0; }
python3 "$TALLY_TOP/tests/cli/damage.py" "$corpus/data/tally-task-clock-g.data" \
	"$corpus/data-pipe/tally-pipe.data" "$corpus/data/tally-zstd.data" dmg-tally ||
	{ fail "damage.py made the damaged files (tally set)"; exit 0; }
kinds=$(wc -l <dmg-perf61/MANIFEST)
check "at least 20 kinds of damage ($kinds from perf 6.1 files, $(wc -l <dmg-tally/MANIFEST) from tally's)" test "$kinds" -ge 20

# A command that is not there yet is skipped with the reason, not silently passed.
have_cmd() { [ -x "$TALLY" ] && ! "$TALLY" "$1" -h 2>&1 | grep -q "is not a tally command"; }

sanitizer_re='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:'
# Data-section damage must name where it is: "offset 0x…" / "0x…".
needs_offset_re='^(record-|id-index|thread-map|cpu-map|sample-|pipe-record|pipe-attr|compressed)'

for set in perf61 tally; do
for cmd in report script evlist; do
	if ! have_cmd "$cmd"; then
		skip "broken files [$set]: tally $cmd (command not built yet)"
		continue
	fi
	while read -r kind expect scope what; do
		# evlist reads the header, attrs and features only (as perf evlist does).
		[ "$cmd" = evlist ] && [ "$scope" = data ] && continue
		f="dmg-$set/$kind.data"
		# 20 s is a hang guard only (ASan builds are slow); no timing is asserted.
		timeout 20 "$TALLY" "$cmd" -i "$f" >out 2>err </dev/null
		rc=$?
		name="$cmd [$set] $kind ($what)"
		if [ $rc -eq 124 ]; then fail "$name: hung"; continue; fi
		if [ $rc -ge 128 ]; then fail "$name: killed by signal $((rc - 128))"; sed 's/^/    /' err | head -5; continue; fi
		if grep -Eq "$sanitizer_re" err; then fail "$name: sanitizer report"; grep -E -m3 "$sanitizer_re|#[0-9] " err | sed 's/^/    /'; continue; fi
		case $expect in
		fail)
			if [ $rc -eq 0 ]; then fail "$name: exit 0 (expected nonzero)"; sed 's/^/    /' err | head -3; continue; fi
			if [ ! -s err ]; then fail "$name: exit $rc without a message"; continue; fi
			if [[ $kind =~ $needs_offset_re ]] && ! grep -Eqi 'offset|0x[0-9a-f]+' err; then
				fail "$name: message does not name the file offset"; sed 's/^/    /' err | head -3; continue
			fi
			;;
		short)
			if [ $rc -ne 0 ]; then fail "$name: exit $rc (a file cut short is readable)"; sed 's/^/    /' err | head -3; continue; fi
			if ! grep -Eqi '(missing|truncated|cut short).*[0-9]|[0-9].*(missing|truncated|cut short)' err; then
				fail "$name: no warning saying how much is missing"; sed 's/^/    /' err | head -3; continue
			fi
			;;
		warn)
			if [ $rc -ne 0 ]; then fail "$name: exit $rc (should skip with a warning)"; sed 's/^/    /' err | head -3; continue; fi
			if ! grep -qi 'unknown' err; then fail "$name: no warning about the unknown record"; continue; fi
			;;
		esac
		ok "$name"
	done <"dmg-$set/MANIFEST"
done
done

# annotate and diff read the same files: never a crash, hang or sanitizer report; damage
# is an error with a message, a file cut short or with unknown records a warning. (annotate
# may have nothing to show when the files' binaries are not here: then it says why.)
for set in perf61 tally; do
for cmd in annotate diff; do
	if ! have_cmd "$cmd"; then
		skip "broken files [$set]: tally $cmd (command not built yet)"
		continue
	fi
	while read -r kind expect scope what; do
		f="dmg-$set/$kind.data"
		if [ $cmd = diff ]; then args=("$f" "$f"); else args=(-i "$f"); fi
		timeout 20 "$TALLY" "$cmd" "${args[@]}" >out 2>err </dev/null
		rc=$?
		name="$cmd [$set] $kind ($what)"
		if [ $rc -eq 124 ]; then fail "$name: hung"; continue; fi
		if [ $rc -ge 128 ]; then fail "$name: killed by signal $((rc - 128))"; sed 's/^/    /' err | head -5; continue; fi
		if grep -Eq "$sanitizer_re" err; then fail "$name: sanitizer report"; grep -E -m3 "$sanitizer_re|#[0-9] " err | sed 's/^/    /'; continue; fi
		if [ $rc -ne 0 ] && [ ! -s err ]; then fail "$name: exit $rc without a message"; continue; fi
		case $expect in
		fail)
			if [ $rc -eq 0 ]; then fail "$name: exit 0 (expected nonzero)"; sed 's/^/    /' err | head -3; continue; fi
			;;
		short)
			if ! grep -Eqi '(missing|truncated|cut short).*[0-9]|[0-9].*(missing|truncated|cut short)' err; then
				fail "$name: no warning saying how much is missing"; sed 's/^/    /' err | head -3; continue
			fi
			;;
		warn)
			if ! grep -qi 'unknown' err; then fail "$name: no warning about the unknown record"; continue; fi
			;;
		esac
		if [ $cmd = diff ] && [ "$expect" != fail ] && [ $rc -ne 0 ]; then
			fail "$name: exit $rc (a readable file diffs)"; sed 's/^/    /' err | head -3; continue
		fi
		ok "$name"
	done <"dmg-$set/MANIFEST"
done
done

# Pipe streams on standard input, as `perf record -o - | tally report -i -`.
if have_cmd report; then
	for kind in pipe-trunc pipe-attr-record-short pipe-record-size-zero; do
		timeout 20 "$TALLY" report -i - <"dmg-perf61/$kind.data" >out 2>err
		rc=$?
		expect=$(awk -v k="$kind" '$1 == k {print $2}' dmg-perf61/MANIFEST)
		if [ $rc -ge 124 ] || grep -Eq "$sanitizer_re" err; then
			fail "report -i - <$kind: rc=$rc"
		elif [ "$expect" = short ]; then
			check "report -i - <$kind: exit 0 with a warning" grep -Eqi 'missing|truncated|cut short' err
		else
			check "report -i - <$kind: nonzero exit with a message" test $rc -ne 0 -a -s err
		fi
	done
fi
