# tally record --switch-output (signal, size, time), --switch-max-files,
# --timestamp-filename, --max-size and -D/--delay, against perf 6.1 on the same
# workloads. The workloads wait for a file the test creates once the recorder said what
# the check needs (a "Dump" line), so no check depends on how fast anything ran.
. "$(dirname "$0")/lib.sh"

have_perf || { skip "record --switch-output/--max-size/-D against perf (perf absent)"; exit 0; }

# gated WHO OUTDIR ARGS...: record a busy shell loop that creates OUTDIR/started, then
# spins until OUTDIR/go exists; WHO is perf or "$TALLY". Runs in the background: $! is it.
gated() {
	local who=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	(cd "$dir" && exec $who record -o perf.data "$@" -e cpu-clock -F 2000 -- \
		sh -c ': > started; while [ ! -e go ]; do :; done' 2>err) &
}
# wait_for PID FILE PATTERN N: until FILE has N lines matching PATTERN, or PID is gone
# (at most ~2 minutes: the workload spins meanwhile, so only a wedged recorder gets there)
# (FILE may not exist yet: the recorder's shell opens it when it gets to run)
wait_for() {
	local i=0 n
	while n=$(grep -c -- "$3" "$2" 2>/dev/null); [ "${n:-0}" -lt "$4" ] && [ $i -lt 1200 ] &&
		kill -0 "$1" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
}
# stamped DIR: the perf.data.<16 digits> files, one a line
stamped() { (cd "$1" && ls | grep -E '^perf\.data\.[0-9]{16}$'); }
# shape FILE: stderr lines with perf's name and the stamps masked
shape() { sed -E 's/perf record/tally record/; s/\.[0-9]{16}/.STAMP/; s/[0-9.]+ MB/N MB/; s/Woken up [0-9]+/Woken up N/' "$1"; }

SH=$(readlink -f "$(command -v sh)")

# --- signal: SIGUSR2 cuts a file --------------------------------------------------------
for who in perf tally; do
	d=sig-$who
	if [ $who = perf ]; then gated perf $d --switch-output; else gated "$TALLY" $d --switch-output; fi
	pid=$!
	while [ ! -e $d/started ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
	# tally: two cuts; the second is handled after the first file's successor got its
	# side-band, so file 2 was synthesized while the command ran. perf: one (perf 6.1
	# may miss a SIGUSR2 that comes while it switches)
	# perf 6.1 ignores a SIGUSR2 that comes before its trigger is armed (after the
	# command started): send it again until a cut is reported. A cut takes well under a
	# second; a loaded machine may take seconds more, and a signal sent again while the
	# first is still being handled would make another cut: every 30 s, 10 times.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		kill -USR2 $pid
		i=0
		while ! grep -q 'Dump' $d/err 2>/dev/null && [ $i -lt 300 ] && kill -0 $pid 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
		grep -q 'Dump' $d/err 2>/dev/null && break
	done
	if [ $who = tally ]; then
		kill -USR2 $pid
		wait_for $pid $d/err 'Dump' 2
	fi
	touch $d/go
	wait $pid
	eval "rc_$who=$?"
done
check "--switch-output: exit 0 as perf ($rc_perf/$rc_tally)" test "$rc_tally" -eq 0 -a "$rc_perf" -eq 0
check "--switch-output: a file perf.data.<stamp> per cut and the last, as perf's" \
	test "$(stamped sig-tally | wc -l)" -eq 3 -a "$(stamped sig-perf | wc -l)" -eq 2 -a ! -e sig-tally/perf.data
if [ "$(shape sig-perf/err)" = "$(shape sig-tally/err | sed 1,2d)" ]; then ok "--switch-output: perf's messages (dump data, Dump, Captured ... <timestamp>)"
else fail "--switch-output: perf's messages"; diff <(shape sig-perf/err) <(shape sig-tally/err | sed 1,2d) | head; fi
n=0
for f in $(stamped sig-tally); do
	n=$((n + 1))
	perf report -i sig-tally/$f --stdio -q --sort comm,dso >rep$n 2>rerr$n; rc=$?
	# the last file may hold no sample (the command ended right after the cut)
	# (perf: "Error:" then "The FILE data has no samples!", exit 0)
	[ "$(grep -c . rerr$n)" = 2 ] && grep -q '^Error:$' rerr$n && grep -q 'has no samples!$' rerr$n &&
		: >rerr$n
	if [ $rc -eq 0 ] && [ ! -s rerr$n ]; then ok "--switch-output: perf report reads file $n"
	else fail "--switch-output: perf report reads file $n (rc $rc)"
		{ ls -l sig-tally/$f; head -5 rerr$n; } | sed 's/^/# /'; fi
	# each file has its own side-band: the shell's executable map (the last file's
	# may come after the command exited: not checked)
	perf script -i sig-tally/$f --show-mmap-events 2>/dev/null | grep ' r-xp ' >maps$n
	[ $n -lt 3 ] && check "--switch-output: file $n maps the command's executable ($SH)" \
		grep -q " r-xp $SH\$" maps$n
	# (the last file may hold no sample, so no dso at all: an empty list)
	perf buildid-list -i sig-tally/$f >bid$n 2>&1; rc=$?
	check "--switch-output: file $n has no build-ids (perf's default when switching)" \
		test $rc -eq 0 -a -z "$(grep -E '^[0-9a-f]{40}' bid$n)"
done

# --- size: a file per drain past 1K, --switch-max-files keeps the newest ------------------
gated "$TALLY" size -m 1 --switch-output=1K --switch-max-files=2; pid=$!
wait_for $pid size/err 'Dump' 3
touch size/go; wait $pid; rc=$?
check "--switch-output=1K: exit 0" test $rc -eq 0
check "--switch-output=1K: perf's warning about the wakeup size" \
	grep -q '^WARNING: switch-output data size lower than wakeup kernel buffer size (4K) expect bigger perf.data sizes$' size/err
dumped=$(grep -oE 'perf\.data\.[0-9]{16}' size/err | tail -2 | sort)
check "--switch-max-files=2: the two newest files remain ($(grep -c Dump size/err) written)" \
	test "$(stamped size | sort)" = "$dumped" -a "$(grep -c Dump size/err)" -ge 3
for f in $(stamped size); do
	perf evlist -i size/$f >/dev/null 2>&1 && perf script -i size/$f >/dev/null 2>&1
	check "--switch-output=1K: perf reads $f" test $? -eq 0
done

# --- time: a file every second ------------------------------------------------------------
gated "$TALLY" time --switch-output=1s; pid=$!
wait_for $pid time/err 'dump data' 2
touch time/go; wait $pid
check "--switch-output=1s: a file per second and the last one" test "$(stamped time | wc -l)" -ge 3
check "--switch-output=1s: each file says dump data first" \
	test "$(grep -c 'dump data' time/err)" -eq $(($(stamped time | wc -l) - 1))

# --- --timestamp-filename alone ------------------------------------------------------------
mkdir ts && (cd ts && "$TALLY" record -o perf.data --timestamp-filename -e cpu-clock true 2>err); rc=$?
check "--timestamp-filename: one perf.data.<stamp>, exit 0" test $rc -eq 0 -a "$(stamped ts | wc -l)" -eq 1
check "--timestamp-filename: Dump and Captured lines" \
	grep -q '^\[ tally record: Captured and wrote [0-9.]* MB perf.data.<timestamp> \]$' ts/err
"$TALLY" record -q --switch-output -o - -e cpu-clock true >/dev/null 2>perr; rc=$?
check "--switch-output to a pipe: refused in one line ($rc)" test $rc -eq 1 -a "$(wc -l <perr)" -eq 1

# --- --max-size -----------------------------------------------------------------------------
for who in perf tally; do
	w=$who; [ $who = tally ] && w=$TALLY
	mkdir -p max-$who
	(cd max-$who && exec $w record -o perf.data --max-size=20K -m 1 -e cpu-clock -F 2000 -- sh -c 'while :; do :; done' 2>err)
	eval "rc_$who=$?"
done
check "--max-size: the command is stopped, exit 143 as perf ($rc_perf/$rc_tally)" \
	test "$rc_tally" -eq 143 -a "$rc_perf" -eq 143
check "--max-size: perf's line" grep -q '^\[ tally record: size limit reached (2[0-9] KB), stopping session \]$' max-tally/err
sz=$(stat -c %s max-tally/perf.data)
check "--max-size=20K: the file stops past 20K by at most a drain ($sz bytes)" test "$sz" -ge 20480 -a "$sz" -lt 60000
perf report -i max-tally/perf.data --stdio -q >/dev/null 2>&1
check "--max-size: perf reads the file" test $? -eq 0

# --- -D/--delay -------------------------------------------------------------------------------
for who in perf tally; do
	w=$who; [ $who = tally ] && w=$TALLY
	$w record -D -1 -e cpu-clock -o d1-$who.data -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' 2>d1-$who.err
	eval "rc_$who=$?"
	$w record -D 1-2 -e cpu-clock -o dr-$who.data -- sh -c 'while :; do :; done' 2>dr-$who.err
	eval "rr_$who=$?"
	$w record -D 10 -e cpu-clock -o dd-$who.data -- true 2>dd-$who.err
done
check "-D -1: exit 0 as perf ($rc_perf/$rc_tally)" test "$rc_tally" -eq 0 -a "$rc_perf" -eq 0
check "-D -1: no sample, as perf" test "$(perf script -i d1-tally.data 2>/dev/null | wc -l)" -eq 0 -a \
	"$(perf script -i d1-perf.data 2>/dev/null | wc -l)" -eq 0
check "-D -1: 'Events disabled' as perf" test "$(grep Events d1-tally.err)" = "$(grep Events d1-perf.err)" -a -n "$(grep Events d1-perf.err)"
check "-D 1-2: the command is stopped after the last range, exit 143 as perf ($rr_perf/$rr_tally)" \
	test "$rr_tally" -eq 143 -a "$rr_perf" -eq 143
check "-D 1-2: Events disabled/enabled/disabled as perf" \
	test "$(grep Events dr-tally.err)" = "$(grep Events dr-perf.err)" -a "$(grep -c Events dr-perf.err)" -eq 3
check "-D 10: 'Events disabled' then 'Events enabled' when the command outlives the delay, else only the first, as perf" \
	test "$(grep -m1 Events dd-tally.err)" = "Events disabled"
for d in -2 10-20,15-30 10-20,20-30 20-10 10- x; do
	perf record -q -D $d -o x.data true >/dev/null 2>&1; p=$?
	"$TALLY" record -q -D $d -o x.data true >/dev/null 2>&1; t=$?
	check "-D '$d': usage error as perf ($p/$t)" test $p -eq 129 -a $t -eq 129
done
for a in --switch-output=5 --switch-output=x --max-size=1x --max-size=0; do
	"$TALLY" record -q $a -o x.data true >/dev/null 2>&1; t=$?
	check "$a: usage error ($t)" test $t -eq 129
done
