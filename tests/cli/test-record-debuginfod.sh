# tally record --debuginfod[=URLS]: the debug file of a binary samples hit, fetched from
# a debuginfod server into the build-id cache beside the binary's copy. The server is
# a local one (python's http.server over a directory laid out as debuginfod's
# /buildid/ID/debuginfo), so no network is needed; a server that refuses connections
# gives the error path. perf 6.1 here is built without debuginfod: it only checks the
# option's syntax, and so does this test against it.
. "$(dirname "$0")/lib.sh"
HOT="$TALLY_BUILD/workloads/hot"
command -v python3 >/dev/null && command -v objcopy >/dev/null && command -v readelf >/dev/null ||
	{ skip "record --debuginfod (python3, objcopy or readelf absent)"; exit 0; }
/sbin/ldconfig -p 2>/dev/null | grep -q "libdebuginfod.so.1 " || {
	"$TALLY" record -o x.data --debuginfod=http://127.0.0.1:1 true >/dev/null 2>err; rc=$?
	check "without libdebuginfod.so.1: refused in one line (rc $rc)" \
		eval '[ $rc -eq 1 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q libdebuginfod err'
	exit 0
}
export DEBUGINFOD_CACHE_PATH=$TMP/client-cache	# the client's own cache, hermetic

cp "$HOT" hot
ID=$(readelf -n hot | awk '/Build ID/ { print $3 }')
mkdir -p srv/buildid/"$ID"
objcopy --only-keep-debug hot srv/buildid/"$ID"/debuginfo
(cd srv && exec python3 -m http.server 0 --bind 127.0.0.1 >../srv.log 2>&1) & SP=$!
trap 'kill $SP 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do
	PORT=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' srv.log)
	[ -n "$PORT" ] && break
	sleep 0.1
done
[ -n "$PORT" ] || { skip "record --debuginfod (the local server did not start)"; exit 0; }
URL=http://127.0.0.1:$PORT
ENTRY="$HOME/.debug$PWD/hot/$ID"

"$TALLY" record -o t.data --debuginfod="$URL" -e task-clock -- ./hot 0.3 >/dev/null 2>err; rc=$?
check "--debuginfod=URL: recorded (rc $rc)" test $rc -eq 0
check "the debug file, fetched from the server, beside the cached copy" cmp -s "$ENTRY/debug" srv/buildid/"$ID"/debuginfo
check "the server was asked for it" grep -q "GET /buildid/$ID/debuginfo" srv.log
check "the summary line says one was fetched" grep -q '^\[ tally record: debuginfod: 1 debug files fetched into the build-id cache' err
check "report reads the recording (the cached copies)" eval '"$TALLY" report -i t.data --stdio -q --sort dso | grep -q hot'

rm -rf "$HOME/.debug" "$DEBUGINFOD_CACHE_PATH"; : >srv.log
DEBUGINFOD_URLS=$URL "$TALLY" record -o s.data --debuginfod -e task-clock -- ./hot 0.3 >/dev/null 2>err
check "--debuginfod alone: DEBUGINFOD_URLS's servers" test -s "$ENTRY/debug"
rm -rf "$HOME/.debug" "$DEBUGINFOD_CACHE_PATH"; : >srv.log
DEBUGINFOD_URLS=$URL "$TALLY" record -o n.data -e task-clock -- ./hot 0.3 >/dev/null 2>err
check "without --debuginfod nothing is fetched, DEBUGINFOD_URLS or not (as perf 6.1)" \
	eval '[ ! -e "$ENTRY/debug" ] && [ -e "$ENTRY/elf" ] && ! grep -q GET srv.log'
"$TALLY" record -o b.data -N --debuginfod="$URL" -e task-clock -- ./hot 0.3 >/dev/null 2>err
check "-N: no build-id cache, so nothing fetched" eval '! grep -q GET srv.log'

rm -rf "$HOME/.debug" "$DEBUGINFOD_CACHE_PATH"
"$TALLY" record -o r.data --debuginfod=http://127.0.0.1:1 -e task-clock -- ./hot 0.3 >/dev/null 2>err; rc=$?
check "a server that refuses: the recording is whole (rc $rc), no debug file" \
	eval '[ $rc -eq 0 ] && [ -e "$ENTRY/elf" ] && [ ! -e "$ENTRY/debug" ]'
check "and the summary line says why" grep -q 'debuginfod: 0 debug files fetched .* failed (Connection refused) \]$' err
"$TALLY" record -q -o r.data --debuginfod=http://127.0.0.1:1 -e task-clock -- ./hot 0.1 >/dev/null 2>err
check "-q: no summary line" test ! -s err

have_perf || { skip "record --debuginfod vs perf (perf absent)"; exit 0; }
for a in --debuginfod --debuginfod="$URL"; do
	perf record -q -o p.data "$a" -e task-clock -- ./hot 0.1 >/dev/null 2>&1; prc=$?
	"$TALLY" record -q -o t.data "$a" -e task-clock -- ./hot 0.1 >/dev/null 2>&1; trc=$?
	check "perf takes '$a' as tally does (exit $prc, tally $trc)" test $prc -eq $trc
done
