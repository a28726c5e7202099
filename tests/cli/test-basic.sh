# The command's front door: help, version, unknown commands.
. "$(dirname "$0")/lib.sh"

out=$("$TALLY" --version); check "--version prints version" grep -q '^tally version [0-9]' <<<"$out"
out=$("$TALLY" --help); check "--help lists commands" grep -q 'list' <<<"$out"
"$TALLY" nosuchcmd 2>err; rc=$?
check "unknown command exits nonzero" test $rc -ne 0
check "unknown command is named" grep -q "'nosuchcmd' is not a tally command" err
"$TALLY" >/dev/null; rc=$?
check "no command prints usage, exits 1" test $rc -eq 1
