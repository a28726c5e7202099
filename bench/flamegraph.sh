#!/usr/bin/env bash
# tally flamegraph and tally data convert on a large system-wide profile: a file of at
# least 300,000 samples recorded with -a -g while a mix of programs runs (many
# processes and dsos, deep kernel stacks). Prints a Markdown section: how long
# tally flamegraph takes to write the page, and how long headless Chromium takes to open
# it: from the start of loading the page to its first picture drawn and painted, as the
# page itself measures (performance.now(), data-render-ms / data-paint-ms), and a search
# redraw; then the conversions' times and sizes (perf data convert --to-json beside
# tally's when perf is here).
# Usage: bench/flamegraph.sh BUILD_DIR [RUNS]
set -u
B=$(cd "${1:-build}" && pwd)
RUNS=${2:-5}
TALLY=$B/tally
TOP=$(cd "$(dirname "$0")/.." && pwd)

echo "## flame graph page and profile conversion (bench/flamegraph.sh)"
echo
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"

mix='for i in 1 2 3 4 5 6 7 8; do
	find /usr/lib -name "*.so*" >/dev/null 2>&1
	python3 -c "import json, zlib; [zlib.compress(json.dumps(list(range(20000))).encode()) for _ in range(40)]" 2>/dev/null
	gzip -c '"$TALLY"' >/dev/null 2>&1
	ls -lR /usr/share >/dev/null 2>&1
	perl -e "my \$s = 0; \$s += \$_ for 1..2000000" 2>/dev/null
done'
nsamples() { "$TALLY" report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}'; }
# cpu-clock every 100 us on every CPU, long enough for 300k samples (the kernel may
# throttle: record longer until there are enough)
n=0
for secs in 24 36 60; do
	"$TALLY" record -q -a -g -e cpu-clock -c 100000 -o "$W/sys.data" -- \
		sh -c "($mix) & sleep $secs; kill \$! 2>/dev/null; wait" >/dev/null 2>&1
	n=$(nsamples "$W/sys.data")
	[ "${n:-0}" -ge 300000 ] && break
done
if [ "${n:-0}" -lt 300000 ]; then
	echo "Could not record 300,000 samples system-wide here (got ${n:-none})."
	exit 1
fi

# tally flamegraph: wall, CPU, RSS (medians)
: >"$W/fg.runs"
for _ in $(seq "$RUNS"); do one "$TALLY" flamegraph -i "$W/sys.data" -o "$W/sys.html" >>"$W/fg.runs"; done
"$TALLY" flamegraph -i "$W/sys.data" -o "$W/sys.html" 2>/dev/null
fg_wall=$(median_of "$W/fg.runs" 1) fg_cpu=$(median_of "$W/fg.runs" 2) fg_rss=$(median_of "$W/fg.runs" 3)
page_mb=$(awk -v b="$(stat -c %s "$W/sys.html")" 'BEGIN {printf "%.2f", b / 1048576}')
data_mb=$(awk -v b="$(stat -c %s "$W/sys.data")" 'BEGIN {printf "%.1f", b / 1048576}')

echo "One perf.data of $n samples ($data_mb MiB), recorded by \`tally record -a -g -e cpu-clock -c 100000\`"
echo "while find, python3, gzip, ls -lR and perl ran. Medians of $RUNS runs."
echo
echo "| step | wall s | CPU s | peak RSS KiB | output |"
echo "|---|---:|---:|---:|---|"
echo "| \`tally flamegraph\` (fold, inline frames, write the page) | $fg_wall | $fg_cpu | $fg_rss | $page_mb MiB HTML |"

for f in json pprof; do
	ext=$([ $f = json ] && echo json || echo pb.gz)
	: >"$W/c.runs"
	for _ in $(seq "$RUNS"); do
		one "$TALLY" data convert -f -i "$W/sys.data" --to-$f "$W/sys.$ext" >>"$W/c.runs"
	done
	mb=$(awk -v b="$(stat -c %s "$W/sys.$ext")" 'BEGIN {printf "%.2f", b / 1048576}')
	echo "| \`tally data convert --to-$f\` | $(median_of "$W/c.runs" 1) | $(median_of "$W/c.runs" 2) | $(median_of "$W/c.runs" 3) | $mb MiB |"
done
if command -v perf >/dev/null 2>&1; then
	read -r pw pc pm < <(one perf data convert --force -i "$W/sys.data" --to-json "$W/perf.json")
	echo "| \`perf data convert --to-json\` (1 run) | $pw | $pc | $pm | the same JSON |"
fi
echo

if ! command -v chromium >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
	echo "chromium or python3 absent: the page's load time is not measured."
	exit 0
fi
# the page in headless Chromium (a fresh profile each run, no network): milliseconds
# from the start of loading to the first picture drawn (script done) and painted, then
# a search typed into the box and redrawn
: >"$W/load.runs"
for _ in $(seq "$RUNS"); do
	python3 "$TOP/tests/cli/browser.py" "$W/sys.html" "$W" \
		'wait:document.documentElement.dataset.paintMs' \
		'eval:[+document.documentElement.dataset.renderMs, +document.documentElement.dataset.paintMs, +document.documentElement.dataset.nodes, +document.documentElement.dataset.drawn, (function(){var s=document.getElementById("search"), t=performance.now(); s.value="sched"; s.dispatchEvent(new Event("input")); return performance.now()-t})()]' \
		2>/dev/null | awk -F'\t' '$1 == 2 {print $2}' | tr -d '[]' | tr ',' ' ' >>"$W/load.runs"
done
if [ ! -s "$W/load.runs" ]; then
	echo "Chromium did not load the page."
	exit 1
fi
render=$(median_of "$W/load.runs" 1) paint=$(median_of "$W/load.runs" 2)
nodes=$(median_of "$W/load.runs" 3) drawn=$(median_of "$W/load.runs" 4)
search=$(median_of "$W/load.runs" 5)
verdict=$(awk -v p="$paint" 'BEGIN {print (p < 1000) ? "yes" : "NO"}')
echo "| page in headless Chromium | tree nodes | frames drawn | load to drawn ms | load to painted ms | search redraw ms | opens in under 1 s |"
echo "|---|---:|---:|---:|---:|---:|---|"
echo "| $page_mb MiB, $n samples | $nodes | $drawn | $render | $paint | $(printf '%.1f' "$search") | $verdict |"
echo
echo "Target: the page of a 300k-sample system-wide file painted in under a second."
[ "$verdict" = yes ]
