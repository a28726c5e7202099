# tally top's full-screen view in a real terminal (tmux): it shows the table, keys
# toggle and scroll, Enter shows callers with -g, q quits with status 0. Under the
# ASan build the same run also proves the view leaks and overflows nothing (ASan
# makes the exit status nonzero otherwise).
. "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null 2>&1 || { skip "top terminal view (tmux absent)"; exit 0; }
if ! "$TALLY" top --stdio -d 0.1 --iterations 1 >/dev/null 2>err; then
	skip "top terminal view (cannot open events: $(head -1 err))"
	exit 0
fi

HOT="$TALLY_BUILD/workloads/hot"
SOCK="tally-top-test-$$"
"$HOT" 20 & HP=$!
trap 'kill $HP 2>/dev/null; tmux -L "$SOCK" kill-server 2>/dev/null; rm -rf "$TMP"' EXIT

tm() { tmux -L "$SOCK" "$@"; }
# new_session ARGS...: tm new-session -d, again when a loaded machine makes it fail ("server
# exited unexpectedly": the last session's server was still going away on the socket)
new_session() {
	local i
	for i in 1 2 3 4 5; do
		tm new-session -d "$@" 2>/dev/null && return 0
		sleep 0.5
	done
	tm new-session -d "$@"
}
# wait_pane PATTERN SECONDS: until the pane shows PATTERN (pane text in ./pane).
wait_pane() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		tm capture-pane -p -t top >pane 2>/dev/null
		grep -q -- "$1" pane && return 0
		sleep 0.1
	done
	return 1
}
wait_rc() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do [ -s rc ] && return 0; sleep 0.1; done
	return 1
}

start() {	# ARGS for tally top
	rm -f rc
	new_session -s top -x 132 -y 30 \
		"TERM=xterm-256color '$TALLY' top -d 0.3 $* 2>'$TMP/err'; echo \$? >'$TMP/rc'"
}

# quits VIEW WHERE: q ends the view with status 0 and nothing on stderr
quits() {
	tm send-keys -t top q
	if wait_rc 10; then check "q quits $1 with status 0" test "$(cat rc)" = 0
	else fail "q quits $1 with status 0 (still running)"; fi
	check "nothing on stderr $2" test ! -s err
}

start -p $HP
if wait_pane 'spin' 10; then ok "terminal view shows the table"; else fail "terminal view shows the table"; cat pane; fi
check "terminal view shows the PerfTop header" grep -q 'PerfTop:.*irqs/sec' pane
check "terminal view shows the key help" grep -q 'q quit' pane
tm send-keys -t top U
if wait_pane 'U user:hidden' 5; then ok "U hides user symbols"; else fail "U hides user symbols"; fi
check "user rows are gone after U" bash -c "! grep -q '\[\.\] spin' pane"
check "a redraw between refreshes keeps the last interval's rate" grep -Eq 'PerfTop: +[1-9][0-9]* irqs/sec' pane
tm send-keys -t top U
wait_pane '\[\.\] spin' 5
tm send-keys -t top Down Down Up NPage PPage Home End
tm send-keys -t top q
if wait_rc 10; then check "q quits with status 0 (rc=$(cat rc))" test "$(cat rc)" = 0
else fail "q quits with status 0 (still running)"; fi
check "nothing on stderr" test ! -s err
tm kill-server 2>/dev/null

start -p $HP -g
if wait_pane 'spin' 10; then ok "terminal view with -g shows the table"; else fail "terminal view with -g shows the table"; fi
# The highlighted row is the first one (spin, or main with children); Enter shows
# its callers, and main is among them either way.
tm send-keys -t top Enter
if wait_pane 'Callers of the selected symbol' 5; then ok "Enter shows the callers view"; else fail "Enter shows the callers view"; cat pane; fi
check "callers view shows main" grep -q 'main' pane
tm send-keys -t top Escape
if wait_pane 'q quit  arrows' 5; then ok "Esc goes back to the table"; else fail "Esc goes back to the table"; fi
quits "the -g view" "with -g"

# The group view: a cell per member under one Overhead header; Tab goes from the group
# to the event after it (alone: one cell) and back.
start -p $HP -e "'{cpu-clock,task-clock},cpu-clock'"
if wait_pane '% *[0-9.]*%  *hot  *\[\.\] spin' 10; then ok "group view: two cells per row"
else fail "group view: two cells per row"; cat pane; fi
check "group view: the Overhead header over both cells" grep -q '^          Overhead  Shared Object' pane
tm send-keys -t top Tab
if wait_pane '^  Overhead  Shared Object' 5; then ok "Tab: the event after the group, one cell"
else fail "Tab: the event after the group, one cell"; cat pane; fi
tm send-keys -t top Tab
if wait_pane '^          Overhead' 5; then ok "Tab: back to the group"; else fail "Tab: back to the group"; fi
quits "the group view" "in the group view"
tm kill-server 2>/dev/null

# A terminal ncurses cannot drive: one clear message, no exit from inside ncurses.
rm -f rc
new_session -s top -x 100 -y 20 \
	"TERM=no-such-terminal '$TALLY' top -d 0.3 -p $HP 2>'$TMP/err'; echo \$? >'$TMP/rc'"
if wait_rc 10; then check "unusable TERM exits 1" test "$(cat rc)" = 1
else fail "unusable TERM exits 1 (still running)"; fi
check "unusable TERM says to use --stdio" grep -q 'cannot start the terminal view (TERM=no-such-terminal); use --stdio' err
