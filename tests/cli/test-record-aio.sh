# tally record --aio[=N]: the file written through N POSIX AIO blocks in flight (the
# data section in 256 KiB blocks at their offsets) is the same recording: perf reads
# every sample tally counted, with and without -z, for N = 1, 2 and 4; the writes are
# the AIO threads' pwrite64 (strace, where present); N outside 1..4 is a usage error
# (perf clamps it silently), a pipe output is refused (perf spins there).
. "$(dirname "$0")/lib.sh"
HOT="$TALLY_BUILD/workloads/hot"
have_perf || { skip "record --aio (perf absent: its reader is the oracle)"; exit 0; }

# the samples tally says it wrote, and those perf reads from the file
said() { sed -n 's/.*(\([0-9]*\) samples) \]$/\1/p' "$1"; }
read_by_perf() { perf script -i "$1" -F event 2>/dev/null | grep -c task-clock; }
bad=""
for a in --aio --aio=2 --aio=4 "--aio=2 -z"; do
	# shellcheck disable=SC2086
	"$TALLY" record -o a.data $a -e task-clock -c 20000 --call-graph dwarf,1024 -- "$HOT" 0.6 >/dev/null 2>err
	n=$(said err) p=$(read_by_perf a.data)
	[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" = "$p" ] || bad="$bad '$a'(tally $n, perf $p)"
	[ "$a" = --aio=4 ] && size=$(stat -c %s a.data)
done
check "--aio[=N] (-z too): perf reads every sample tally wrote${bad:+:$bad}" test -z "$bad"
check "--aio=4: several blocks of 256 KiB went out ($size bytes)" test "$size" -gt 1000000

if command -v strace >/dev/null; then
	strace -f -qq -e trace=pwrite64 -o st.aio "$TALLY" record -q -o s.data --aio -e task-clock --call-graph dwarf,1024 \
		-c 20000 -g -- "$HOT" 0.3 >/dev/null 2>&1
	strace -f -qq -e trace=pwrite64 -o st.sync "$TALLY" record -q -o s.data -e task-clock --call-graph dwarf,1024 \
		-c 20000 -g -- "$HOT" 0.3 >/dev/null 2>&1
	check "--aio: the data goes out by pwrite64 at its offsets ($(grep -c pwrite64 st.aio) of them; \
$(grep -c pwrite64 st.sync) without --aio, for the header)" \
		test "$(grep -c pwrite64 st.aio)" -gt "$(grep -c pwrite64 st.sync)"
else
	skip "--aio's pwrite64 calls (strace absent)"
fi

# a write error (the file size limit: EFBIG) with blocks in flight: the file keeps the
# complete blocks before it, described by its header, as without --aio
(ulimit -f 300; exec "$TALLY" record -o f.data --aio=2 -e task-clock -c 20000 -g -- "$HOT" 1) \
	>/dev/null 2>err
kept=$(perf script -i f.data -F event 2>perr | grep -c task-clock)
check "EFBIG with --aio: tally says so, and perf reads the $kept samples kept without an error" \
	eval 'grep -q "File too large" err && [ "$kept" -gt 0 ] && [ ! -s perr ]'

bad=""
for a in --aio=0 --aio=5 --aio=x; do
	"$TALLY" record -o x.data $a true >/dev/null 2>err; rc=$?
	{ [ $rc -eq 129 ] && grep -q -- "--aio" err; } || bad="$bad '$a'(rc $rc)"
done
check "--aio outside 1..4: usage error 129 naming the option${bad:+:$bad}" test -z "$bad"
"$TALLY" record -o x.data --aio --no-aio -e task-clock true >/dev/null 2>&1
check "--no-aio undoes it" test $? -eq 0
"$TALLY" record -o - --aio -e task-clock true 2>err >/dev/null; rc=$?
check "a pipe output: refused in one line (rc $rc)" \
	eval '[ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q pipe err'
for a in --aio --aio=4; do
	perf record -q -o p.data $a -e task-clock true >/dev/null 2>&1; prc=$?
	"$TALLY" record -q -o t.data $a -e task-clock true >/dev/null 2>&1; trc=$?
	check "perf takes '$a' as tally does (exit $prc, tally $trc)" test $prc -eq $trc
done
