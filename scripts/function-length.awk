#!/usr/bin/awk -f
# Functions longer than MAX lines (default 100), from the line that opens the body to the
# line that closes it. Kernel style makes this a text question: a function's body opens
# with "{" alone at column 0 and closes with "}" at column 0; the name is the identifier
# before the first "(" of the declaration, whose first line starts at column 0.
# Usage: awk [-v MAX=N] -f scripts/function-length.awk FILE...
# Prints "FILE:LINE: NAME is N lines (at most MAX)" per function over the limit, and
# exits 1 when there was one.
BEGIN { if (MAX == "") MAX = 100; bad = 0 }
FNR == 1 { start = 0; name = "" }
start == 0 && /^[A-Za-z_].*\(/ {
	s = $0
	sub(/\(.*/, "", s)
	n = split(s, w, /[^A-Za-z0-9_]+/)
	while (n > 0 && w[n] == "") n--
	if (n > 0) name = w[n]
}
start == 0 && /^\{[ \t]*$/ { start = FNR; next }
start > 0 && /^\}/ {
	len = FNR - start + 1
	if (len > MAX) {
		printf "%s:%d: %s is %d lines (at most %d)\n", FILENAME, start, name, len, MAX
		bad = 1
	}
	start = 0
	name = ""
}
END { exit bad }
