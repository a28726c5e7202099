#!/usr/bin/env bash
# tally flamegraph: the stacks it folds (against FlameGraph's folding of perf script's
# and tally script's output), and the page it writes, loaded in a real headless Chromium
# driven over the DevTools protocol (tests/cli/browser.py: real clicks and key strokes,
# no network, a fresh profile): it draws the hot functions, a screenshot is not blank,
# typing in its search box highlights and totals the matches, clicks zoom and reset,
# tooltips, callers and icicle views, colours by kind (user, kernel, inlined, JIT),
# sub-pixel frames merged; --diff colours; pipes; filters; errors.
. "$(dirname "$0")/lib.sh"

W=$TALLY_BUILD/workloads
BROWSER="python3 $TALLY_TOP/tests/cli/browser.py"
# browse PAGE OUTDIR STEP...: browser.py, retried once from scratch (a fresh browser)
# when it fails: on a loaded machine Chromium may fail to start or to answer in time.
# A fault of the page fails both runs. What the browser said goes to stderr.
browse() {
	local try
	for try in 1 2; do
		if $BROWSER "$@" >browse.out 2>browse.err; then
			cat browse.out
			return 0
		fi
		sed "s/^/# browser.py (run $try): /" browse.err >&2
	done
	cat browse.out
	return 1
}

"$TALLY" record -q -g -F 2000 -o hot.data "$W/hot" 0.4 >/dev/null 2>rec.err ||
	{ fail "record hot (for the flame graphs)"; cat rec.err; exit 0; }

# --- folding: the stacks FlameGraph's pipeline would draw ------------------------------
# stackcollapse-perf.pl's rules as tests/cli/test-script.sh writes them out; tally names
# a frame without symbol "[dso]", but "[kernel.kallsyms]" where stackcollapse doubles
# the brackets of an already bracketed dso, and "[unknown]" where it writes "unknown"
sed -n '/^cat >fold.pl <<.EOF.$/,/^EOF$/p' "$TALLY_TOP/tests/cli/test-script.sh" | sed '1d;$d' >fold.pl
norm() { perl -pe 's/\[\[([^];]*)\]\]/[$1]/g; s/(?<=;)unknown(?=[; ])/[unknown]/g' "$@" | LC_ALL=C sort; }
"$TALLY" flamegraph --no-inline --folded -i hot.data >t.folded 2>t.err
"$TALLY" script -i hot.data 2>/dev/null | perl fold.pl | norm >s.folded
if [ -s t.folded ] && diff s.folded t.folded >d.out; then
	ok "--folded: the stacks tally script | stackcollapse-perf give"
else
	fail "--folded: the stacks tally script | stackcollapse-perf give"; head -10 d.out | sed 's/^/# /'
fi
check "--folded: comm first, then the call chain outermost first" \
	grep -q '^hot;.*main;hot_a;spin [0-9]*$' t.folded
if have_perf; then
	perf script -i hot.data 2>/dev/null | perl fold.pl | norm >p.folded
	if [ -s p.folded ] && diff p.folded t.folded >d.out; then
		ok "--folded: the stacks perf script | stackcollapse-perf give"
	else
		fail "--folded: the stacks perf script | stackcollapse-perf give"; head -10 d.out | sed 's/^/# /'
	fi
else
	skip "--folded against perf script (perf absent)"
fi
# samples folded: every sample of the file once
n=$("$TALLY" report --stats -i hot.data 2>/dev/null | awk '/^ *SAMPLE events:/ {print $3; exit}')
check "--folded: counts add up to the file's samples" \
	test "$(awk '{s += $NF} END {print s}' t.folded)" = "$n"

# --- the page ------------------------------------------------------------------------
"$TALLY" flamegraph -i hot.data -o hot.html --title 'hot <&> "flames"' 2>fg.err
check "flamegraph writes the page" test -s hot.html
check "the page is one file: no script, style, image or frame from elsewhere" \
	sh -c '! grep -Eiq "(src|href)=|url\(|https?:|import |fetch\(|XMLHttpRequest" hot.html'
check "the page escapes its title" grep -q '<title>hot &lt;&amp;&gt; &quot;flames&quot;</title>' hot.html
check "default output name flamegraph.html" sh -c \
	'"$0" flamegraph -i hot.data 2>/dev/null && test -s flamegraph.html' "$TALLY"

if ! command -v chromium >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
	skip "flame graph pages in headless Chromium (chromium or python3 absent: scripts/deps.sh installs them)"
	exit 0
fi

labels='[...document.querySelectorAll("#svg g")].map(g=>g.textContent).join("|")'
magenta='[...document.querySelectorAll("#svg g")].filter(g=>g.querySelector("rect").getAttribute("fill")=="rgb(230,0,230)").map(g=>g.textContent).join("|")'
# a drawn frame by its function's name (its label may be cut short or left out), the
# widest of them (as browser.py's frame=NAME): a stack cut short draws narrow ones too
frame='(function(n){return [...document.querySelectorAll("#svg g")].filter(g=>tallyFlame.nameOf(g)===n).reduce((a,g)=>!a||+g.querySelector("rect").getAttribute("width")>+a.querySelector("rect").getAttribute("width")?g:a,null)})'
widthof="(function(n){var g=${frame}(n);return g?+g.querySelector('rect').getAttribute('width'):-1})"
yof="(function(n){var g=${frame}(n);return g?+g.querySelector('rect').getAttribute('y'):-1})"
browse hot.html . \
	"eval:document.title" \
	"eval:$labels" \
	"shot:hot" \
	"type:#search:hot_a" \
	"eval:document.getElementById('matched').textContent" \
	"eval:$magenta" \
	"click:frame=hot_a" \
	"eval:$labels" \
	"eval:[${widthof}('hot_a'), document.getElementById('svg').clientWidth]" \
	"hover:frame=spin" \
	"eval:document.getElementById('tip').hidden ? '' : document.getElementById('tip').textContent" \
	"click:#reset" \
	"eval:$labels" \
	"click:#icicle" \
	"eval:[${yof}('all'), ${yof}('hot')]" \
	"click:#reverse" \
	"eval:[...document.querySelectorAll('#svg g')].filter(g=>g.querySelector('rect').getAttribute('y')=='17').map(g=>g.textContent).join('|')" \
	>hot.steps 2>browser.err ||
	{
		fail "Chromium loads the page"; sed 's/^/# /' browser.err
		echo "# the heaviest stacks of hot.data:"
		"$TALLY" flamegraph --no-inline --folded -i hot.data 2>&1 | sort -k2 -n -r | head -8 | sed 's/^/#   /'
		exit 0
	}
ok "Chromium loads the page and its script draws it"
step() { awk -F'\t' -v n="$1" '$1 == n {print $2}' hot.steps; }
check "the DOM after the script ran names the hot functions" \
	sh -c 'for f in spin hot_a hot_b main; do printf "%s" "$0" | grep -q "\\b$f\\b" || exit 1; done' "$(step 2)"
check "the page's title is the --title text" test "$(step 1)" = '"hot <&> \"flames\""'
shot_ok() {	# a screenshot with something drawn: not one colour, not a few
	python3 -c 'import json,sys; s=json.loads(sys.argv[1]); sys.exit(not (s["unlike_background"] > 0.03 and s["colours"] > 20))' "$1"
}
check "the screenshot is not blank" shot_ok "$(step 3)"
check "typing in the page's search box totals the matches" \
	sh -c 'printf "%s" "$0" | grep -Eq "Matched: (7[0-9]|8[0-9])\.[0-9]+% \([0-9,]+ samples\)"' "$(step 5)"
check "typing in the page's search box highlights exactly the matching frames" \
	test "$(step 6)" = '"hot_a"'
check "a click zooms: hot_b is gone, hot_a spans the width" \
	sh -c 'printf "%s" "$0" | grep -q hot_a && ! printf "%s" "$0" | grep -q hot_b' "$(step 8)"
check "a click zooms: the frame is as wide as the graph" \
	python3 -c 'import json,sys; w,W=json.loads(sys.argv[1]); sys.exit(abs(w-W) > 1)' "$(step 9)"
check "hovering shows the frame's samples and share" \
	sh -c 'printf "%s" "$0" | grep -Eq "^\"spin .*user.*[0-9,]+ samples, [0-9.]+% of all"' "$(step 11)"
check "Reset zoom brings the whole graph back" sh -c 'printf "%s" "$0" | grep -q hot_b' "$(step 13)"
check "Icicle puts the root at the top" test "$(step 15)" = '[0, 17]'
check "Callers: the innermost functions sit on the root" \
	sh -c 'printf "%s" "$0" | grep -q spin && ! printf "%s" "$0" | grep -Eq "\\bhot\\b|main"' "$(step 17)"

# --- colours by kind, inlined frames, merged frames -----------------------------------
rgb="(function(n){var g=${frame}(n);return g?g.querySelector('rect').getAttribute('fill'):''})"
# rgb(r,g,b) -> "r g b"
hue() { echo "$1" | tr -dc '0-9,' | tr ',' ' '; }
is_user() { read -r r g b <<<"$(hue "$1")"; [ "$r" -ge 200 ] && [ "$g" -le 130 ]; }
is_kernel() { read -r r g b <<<"$(hue "$1")"; [ "$r" -ge 235 ] && [ "$g" -ge 150 ] && [ "$g" -le 205 ]; }
is_inlined() { read -r r g b <<<"$(hue "$1")"; [ "$r" -le 120 ] && [ "$g" -ge 175 ] && [ "$b" -ge 175 ]; }
is_jit() { read -r r g b <<<"$(hue "$1")"; [ "$r" -le 120 ] && [ "$g" -ge 190 ] && [ "$b" -le 120 ]; }
check "user functions are drawn in the user palette" is_user "$(browse hot.html . "eval:${rgb}('spin')" | cut -f2)"
# the kernel function with the most samples (report's [k] rows) of a recording that
# surely has some: hot touching fresh pages (hot.data may hold no kernel sample)
"$TALLY" record -q -g -F 2000 -o kern.data "$W/hot" --faults 60000 >/dev/null 2>&1
kframe=$("$TALLY" report --stdio --no-children --sort sym -g none -i kern.data 2>/dev/null |
	awk '$2 == "[k]" {print $3; exit}')
if [ -n "$kframe" ] && "$TALLY" flamegraph -i kern.data -o kern.html 2>/dev/null; then
	c=$(browse kern.html . "eval:${rgb}('$kframe')" | cut -f2)
	check "kernel functions are drawn in the kernel palette ($kframe: $c)" is_kernel "$c"
else
	skip "kernel palette (no kernel sample in this recording)"
fi

"$TALLY" record -q -g -F 2000 -o inl.data "$W/inlined" 0.3 >/dev/null 2>&1
"$TALLY" flamegraph -i inl.data --folded >inl.folded 2>/dev/null
check "inlined functions are frames of their own, innermost last (DWARF)" \
	grep -Eq '^inlined;.*;churn[^;]*;stir;mix [0-9]+$' inl.folded
"$TALLY" flamegraph -i inl.data --folded --no-inline >inl2.folded 2>/dev/null
check "--no-inline: no frames for inlined functions" sh -c '! grep -q ";stir" inl2.folded'
"$TALLY" flamegraph -i inl.data -o inl.html 2>/dev/null
c=$(browse inl.html . "eval:${rgb}('mix')" | cut -f2)
check "inlined functions are drawn in the inlined palette" is_inlined "$c"

if jpid=$("$TALLY" record -q -g -F 2000 -o jit.data "$W/jit" 0.3 2>/dev/null) && [ -n "$jpid" ]; then
	"$TALLY" flamegraph -i jit.data -o jit.html 2>/dev/null
	c=$(browse jit.html . "eval:${rgb}('jitted_loop')" | cut -f2)
	check "JIT code (a /tmp/perf-PID.map) is drawn in the JIT palette" is_jit "$c"
	rm -f "/tmp/perf-$jpid.map"
else
	skip "JIT palette (the jit workload is x86-64 only)"
fi

# --- --call-graph dwarf: the callers only unwinding finds ------------------------------
# workloads/callers (-O2 -fomit-frame-pointer -g): shared() under alpha and under beta,
# step() inlined into shared. Recorded with --call-graph dwarf by perf and by tally: a
# user sample's recorded chain is empty, every caller comes from unwinding its stack.
names='[...document.querySelectorAll("#svg g")].map(g=>tallyFlame.nameOf(g)).join("|")'
# near FOLDED FOLDED: the same stacks with the same counts, but for 2% of the samples
# (test-unwind: a sample in a function's first or last instructions may unwind apart)
near() { python3 -c '
import sys
def load(f):
    d = {}
    for l in open(f):
        k, _, n = l.rstrip("\n").rpartition(" ")
        d[k] = d.get(k, 0) + int(n)
    return d
p, t = load(sys.argv[1]), load(sys.argv[2])
total = sum(p.values())
off = sum(abs(p.get(k, 0) - t.get(k, 0)) for k in set(p) | set(t))
if total < 20 or off * 50 > total:
    print("# %d of %d samples folded apart" % (off, total))
    for k in sorted(set(p) | set(t), key=lambda k: -abs(p.get(k, 0) - t.get(k, 0)))[:4]:
        print("# perf %d tally %d %s" % (p.get(k, 0), t.get(k, 0), k[-150:]))
    sys.exit(1)' "$1" "$2"; }
for who in perf tally; do
	record_by $who dw.data --call-graph dwarf,8192 -F 500 "$W/callers" 400
	case $? in
	0) ;;
	2) skip "flame graphs of perf's --call-graph dwarf recording (perf absent)"; continue ;;
	*) fail "$who record --call-graph dwarf of workloads/callers"; continue ;;
	esac
	"$TALLY" flamegraph --no-inline --folded -i dw.data >dw.folded 2>/dev/null
	check "dwarf ($who): shared under both of its callers, found by unwinding" \
		awk '/;main;alpha[^;]*;shared( |;)/ {a += $NF} /;main;beta[^;]*;shared( |;)/ {b += $NF}
		     END {exit !(a > 0 && b > 0)}' dw.folded
	if have_perf; then
		perf script --no-inline -i dw.data 2>/dev/null | perl fold.pl | norm >dwp.folded
		check "dwarf ($who): --folded --no-inline gives perf script --no-inline | stackcollapse-perf's stacks" \
			near dwp.folded dw.folded
	fi
	# step() is inlined into shared: one frame of its own, never a second one, and
	# no function twice in a row
	"$TALLY" flamegraph --folded -i dw.data >dwi.folded 2>/dev/null
	check "dwarf ($who): the inlined step() is one frame under shared, counted once" \
		awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); steps = 0
		       for (i = 2; i <= n; i++) { if (f[i] == f[i - 1]) bad = 1; if (f[i] == "step") steps++ }
		       if (steps > 1) bad = 1; if ($0 ~ /;shared;step(;|$)/) seen = 1 }
		     END { exit bad || !seen }' dwi.folded
	"$TALLY" flamegraph -i dw.data -o dw.html 2>/dev/null
	got=$(browse dw.html . "eval:$names" | cut -f2)
	check "dwarf ($who): the page draws the callers only unwinding finds" \
		sh -c 'for f in alpha beta main shared step; do printf "%s" "$0" | grep -Eq "(^|[|\"])$f([.|\"]|$)" || exit 1; done' "$got"
done

# many processes, most of them a sliver: at 300 pixels most frames are under one pixel
if "$TALLY" record -q -a -g -F 1000 -o sys.data -- sh -c "$W/hot 0.3 & $W/inlined 0.3 & ls -lR /usr/share >/dev/null 2>&1; wait" >/dev/null 2>&1; then
	"$TALLY" flamegraph -i sys.data -o sys.html 2>/dev/null
	browse sys.html . \
		"eval:document.getElementById('svg').style.width='300px'; window.dispatchEvent(new Event('resize')); [+document.documentElement.dataset.nodes, document.querySelectorAll('#svg g').length, document.querySelectorAll('#svg g.merged').length, Math.min(...[...document.querySelectorAll('#svg g:not(.merged) rect')].map(r=>+r.getAttribute('width')))]" \
		"hover:#svg g.merged" \
		"eval:document.getElementById('tip').textContent" >sys.steps 2>browser.err || sed 's/^/# /' browser.err
	step1=$(awk -F'\t' '$1 == 1 {print $2}' sys.steps)
	check "frames under a pixel are merged: fewer drawn than folded, none drawn narrower" \
		python3 -c 'import json,sys; n,d,m,w=json.loads(sys.argv[1]); sys.exit(not (d < n and m > 0 and w >= 1))' "$step1"
	check "a merged block says what it holds" \
		grep -Eq 'frames, each under a pixel wide' sys.steps
else
	skip "merged frames (system-wide recording refused here)"
fi

# --- pipes, filters --------------------------------------------------------------------
"$TALLY" flamegraph --folded -i "$TALLY_TOP/tests/data/perf/pipe.data" \
	--symfs "$TALLY_TOP/tests/data/perf/symfs" >pf.folded 2>/dev/null
cat "$TALLY_TOP/tests/data/perf/pipe.data" |
	"$TALLY" flamegraph --folded -i - --symfs "$TALLY_TOP/tests/data/perf/symfs" >pp.folded 2>/dev/null
check "a pipe stream folds as the same stream read from a file" \
	sh -c 'test -s pf.folded && cmp -s pf.folded pp.folded'
"$TALLY" record -q -g -F 2000 -o - "$W/hot" 0.2 2>/dev/null |
	"$TALLY" flamegraph -i - -o live.html 2>/dev/null
check "tally record -o - | tally flamegraph -i -" grep -q '"hot_a"' live.html
hpid=$("$TALLY" script -F pid -i hot.data 2>/dev/null | head -1 | tr -dc '0-9')
"$TALLY" flamegraph --folded --no-inline -i hot.data --pid "$hpid" >pid.folded 2>/dev/null
check "--pid keeps that process's samples" cmp -s pid.folded t.folded
"$TALLY" flamegraph --folded -i hot.data --pid 1 >none.folded 2>none.err
check "--pid of another process: no stacks, and a warning" \
	sh -c '! test -s none.folded && grep -q "no samples that pass the filters" none.err'
"$TALLY" flamegraph --folded --no-inline -i hot.data --comm hot --tid "$hpid" >c.folded 2>/dev/null
check "--comm and --tid" cmp -s c.folded t.folded
"$TALLY" flamegraph --folded -i hot.data --comm nosuch >c2.folded 2>/dev/null
check "--comm of another command: no stacks" sh -c '! test -s c2.folded'

# --- a differential graph ---------------------------------------------------------------
"$TALLY" flamegraph --diff --folded hot.data inl.data >diff.folded 2>/dev/null
check "--diff --folded: difffolded's two columns" \
	sh -c 'grep -Eq "^hot;.* [1-9][0-9]* 0$" diff.folded && grep -Eq "^inlined;.* 0 [1-9][0-9]*$" diff.folded'
"$TALLY" flamegraph --diff hot.data inl.data -o diff.html 2>/dev/null
# frames are as wide as in the new profile; "Old widths" draws the old one's
browse diff.html . "eval:[${rgb}('inlined'), ${rgb}('hot')]" "shot:diff" "click:#oldwidth" \
	"eval:[${rgb}('inlined'), ${rgb}('hot')]" >diff.steps 2>browser.err || sed 's/^/# /' browser.err
red() { python3 -c 'import re,sys; r,g,b=map(int,re.findall(r"\d+",sys.argv[1])); sys.exit(not (r == 255 and b < 200 and g < 200))' "$1"; }
blue() { python3 -c 'import re,sys; r,g,b=map(int,re.findall(r"\d+",sys.argv[1])); sys.exit(not (b == 255 and r < 200 and g < 200))' "$1"; }
dstep() { awk -F'\t' -v n="$1" '$1 == n {print $2}' diff.steps | python3 -c 'import json,sys; print(json.load(sys.stdin)[int(sys.argv[1])])' "$2"; }
check "--diff: what grew is red" red "$(dstep 1 0)"
check "--diff: a frame only the old profile has is not drawn at the new widths" test -z "$(dstep 1 1)"
check "--diff: what shrank is blue (Old widths)" blue "$(dstep 4 1)"
check "--diff: the screenshot is not blank" shot_ok "$(awk -F'\t' '$1 == 2 {print $2}' diff.steps)"

# --- errors: one message, no output file -------------------------------------------------
mkdir -p errs
"$TALLY" flamegraph -i nosuch.data -o errs/x.html 2>e.err
rc=$?
check "a missing input: an error" sh -c 'test "$0" -eq 1 && grep -q "nosuch.data" e.err' "$rc"
check "a missing input: no page written" sh -c '! ls errs | grep -q .'
"$TALLY" flamegraph -i hot.data -e nosuch -o errs/x.html 2>e.err
check "-e of an event the file lacks names the file's events" grep -q "has no event 'nosuch' (its events: cpu-clock" e.err
check "-e failure: no page written" sh -c '! ls errs | grep -q .'
"$TALLY" flamegraph -i hot.data -o nodir/x.html 2>e.err
check "an output directory that is not there: an error naming it" grep -q 'nodir/x.html' e.err
"$TALLY" flamegraph --diff hot.data 2>e.err
rc=$?
check "--diff with one file: an error" sh -c 'test "$0" -eq 129 && grep -q "OLD then NEW" e.err' "$rc"
"$TALLY" flamegraph --pid abc -i hot.data 2>e.err
check "--pid abc: an error naming it" grep -q "'abc' is not a pid" e.err
cp hot.data cut.data && truncate -s -3000 cut.data
"$TALLY" flamegraph --folded -i cut.data >cut.folded 2>cut.err
check "a file cut short: the stacks before the damage, and a warning" \
	sh -c 'test -s cut.folded && grep -q "cut short" cut.err'
