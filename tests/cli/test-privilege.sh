# Privilege: tally must not become a way around the kernel's access rules.
# Needs root (to create a user, set perf_event_paranoid and setcap); skips otherwise.
# Everything it changes (user, paranoid level, files) is restored on exit.
. "$(dirname "$0")/lib.sh"

have_cmd() { [ -x "$TALLY" ] && ! "$TALLY" "$1" -h 2>&1 | grep -q "is not a tally command"; }
if [ "$(id -u)" -ne 0 ]; then skip "privilege tests (need root to create a user and set paranoid)"; exit 0; fi
for t in useradd userdel runuser setcap; do
	command -v $t >/dev/null || { skip "privilege tests ($t absent)"; exit 0; }
done
have_cmd stat || { skip "privilege tests (tally stat not built yet)"; exit 0; }

user="tlyt$$"
user2="tlyu$$"
para_file=/proc/sys/kernel/perf_event_paranoid
old_para=$(cat $para_file)
work=$(mktemp -d /tmp/tally-priv.XXXXXX)
cleanup() {
	echo "$old_para" >$para_file 2>/dev/null
	userdel "$user" 2>/dev/null
	userdel "$user2" 2>/dev/null
	rm -rf "$work" "$TMP"
}
trap cleanup EXIT
useradd -M -N -r -s /bin/sh "$user" 2>/dev/null && useradd -M -N -r -s /bin/sh "$user2" 2>/dev/null ||
	{ skip "privilege tests (useradd failed)"; exit 0; }
echo 2 >$para_file || { skip "privilege tests (cannot set perf_event_paranoid)"; exit 0; }
uid=$(id -u "$user")

# The user runs copies of the binaries from a directory it can read.
chmod 0755 "$work"
cp "$TALLY" "$work/tally" && tally_lib_copy "$work"
cp "$TALLY_BUILD/workloads/hot" "$work/hot"
mkdir "$work/out" && chown "$user" "$work/out"
as_user() { (cd "$work/out" && runuser -u "$user" -- env ASAN_OPTIONS="${ASAN_OPTIONS:-}" "$@"); }

# --- paranoid 2: counting its own processes works.
as_user "$work/tally" stat -e task-clock,page-faults -- "$work/hot" 0.05 >out 2>err; rc=$?
check "user, paranoid 2: stat of its own workload works (rc=$rc)" test $rc -eq 0
check "user, paranoid 2: task-clock counted" grep -Eq '[0-9.]+ +msec +task-clock' err

# --- -a is refused, with the message that says what to do.
as_user "$work/tally" stat -a -e task-clock -- true >out 2>err; rc=$?
check "user, paranoid 2: stat -a fails (rc=$rc)" test $rc -ne 0 -a $rc -lt 126
check "user, paranoid 2: the message names perf_event_paranoid" grep -q 'perf_event_paranoid' err
check "user, paranoid 2: the message names CAP_PERFMON" grep -q 'CAP_PERFMON' err

# --- a copy given cap_perfmon can count system-wide. A binary with file capabilities
# runs in secure-execution mode, where the loader ignores $ORIGIN in its rpath: the copy
# gets its own directory as an absolute one (as an installed tally has its libdir).
cp "$work/tally" "$work/tally-cap"
if ! command -v patchelf >/dev/null 2>&1; then
	skip "setcap cap_perfmon (patchelf absent: scripts/deps.sh installs it)"
elif ! patchelf --set-rpath "$work" "$work/tally-cap"; then
	fail "setcap cap_perfmon: patchelf --set-rpath on a copy of tally"
elif ! setcap cap_perfmon+ep "$work/tally-cap" 2>/dev/null; then
	skip "setcap cap_perfmon (filesystem does not take file capabilities)"
else
	as_user "$work/tally-cap" stat -a -e task-clock -- sleep 0.1 >out 2>err; rc=$?
	check "user + cap_perfmon: stat -a works (rc=$rc)" test $rc -eq 0
	check "user + cap_perfmon: system-wide task-clock printed" grep -Eq '[0-9.]+ +msec +task-clock' err
	# cap_perfmon gives no file access: a root-only file stays unreadable.
	if have_cmd report; then
		cp "$TALLY_TOP/tests/fuzz/corpus/data/perf61-task-clock-g.data" "$work/secret.data"
		chmod 0600 "$work/secret.data"
		as_user "$work/tally-cap" report -i "$work/secret.data" --stdio >out 2>err; rc=$?
		check "user + cap_perfmon: a root-only perf.data is not read (rc=$rc)" test $rc -ne 0 -a ! -s out
		check "user + cap_perfmon: ... with a permission message" grep -qi 'permission denied' err
	fi
fi

# --- output files: owned by the invoking user, mode 0600, symlinks not followed.
if have_cmd record; then
	as_user "$work/tally" record -q -e task-clock -o own.data -- "$work/hot" 0.05 >out 2>err; rc=$?
	check "user: record works at paranoid 2 (rc=$rc)" test $rc -eq 0
	if [ -f "$work/out/own.data" ]; then
		check "user: perf.data owned by the user" test "$(stat -c %u "$work/out/own.data")" = "$uid"
		check "user: perf.data mode 0600" test "$(stat -c %a "$work/out/own.data")" = 600
	else
		fail "user: record wrote own.data"
	fi
	# A symlink planted at the output path (by someone else) must not be followed.
	echo "victim" >"$work/victim"
	chmod 0666 "$work/victim"
	ln -s "$work/victim" "$work/out/planted.data"
	as_user "$work/tally" record -q -e task-clock -o planted.data -- true >out 2>err
	check "record: symlink at the output path not followed (target unchanged)" grep -qx victim "$work/victim"
	if [ -e "$work/out/planted.data" ]; then
		check "record: output path now a regular file, not the symlink" test -f "$work/out/planted.data" -a ! -L "$work/out/planted.data"
	else
		check "record: refused the symlinked path with a message" test -s err
	fi
	# The same as root: the danger case (root writing through a user's symlink).
	ln -s "$work/victim" "$work/out/rootlink.data"
	(cd "$work/out" && "$TALLY" record -q -e task-clock -o rootlink.data -- true >/dev/null 2>&1)
	check "record as root: symlink at the output path not followed" grep -qx victim "$work/victim"
	# Ownership check on input: a perf.data owned by another user is refused without -f.
	if have_cmd report; then
		cp "$work/out/own.data" "$work/out/other.data"
		chown "$user2" "$work/out/other.data" && chmod 0644 "$work/out/other.data"
		as_user "$work/tally" report -i other.data --stdio >out 2>err; rc=$?
		check "user: report refuses a perf.data owned by another user (rc=$rc)" test $rc -ne 0 -a $rc -lt 126
		check "user: ... and says to use -f" grep -q -- '-f' err
		as_user "$work/tally" report -f -i other.data --stdio >out 2>err; rc=$?
		check "user: report -f reads it" test $rc -eq 0
	fi
else
	skip "record output ownership/mode/symlink tests (tally record not built yet)"
fi

# stat -o: symlinks not followed either.
ln -s "$work/victim" "$work/out/stat-link.txt"
as_user "$work/tally" stat -e task-clock -o stat-link.txt -- true >/dev/null 2>&1
check "stat -o: symlink at the output path not followed" grep -qx victim "$work/victim"
