#!/usr/bin/env bash
# A signature audit's report.html in headless Chromium: the message-passing example whose aggregator reads its
# neighbours in edge-list order (examples/adapters/message_passing.py --edge-order) is audited with the third
# command of issue 12; the page renders (a screenshot that is not blank, with the moved edges drawn in red), and
# the DOM Chromium built holds the graph's <svg> with one node per node of the counterexample and its two moved
# edges. Exit 77 (skipped) when Chromium is not installed.
#   usage: report_graph_in_chromium.sh PERMCHECK_BINARY SOURCE_DIR [KEEP_DIR]
set -euo pipefail
bin=$1
source=$2
keep=${3:-}
command -v chromium >/dev/null || { echo "chromium is not installed (scripts/install-deps --test)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

status=0
"$bin" audit --exec "/usr/bin/python3 $source/examples/adapters/message_passing.py --edge-order" \
    --axis nodes=1..8 --axis edges=0..16 --input x:nodes,4 \
    --input edge_index:2,edges:index=nodes --input edge_attr:edges,3 --output y:nodes,4 --output g:4 \
    --report out >audit.txt || status=$?
[ "$status" -eq 1 ] || { echo "expected exit 1 (violated) from the audit, got $status"; cat audit.txt; exit 1; }
nodes=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counterexample"]["lengths"]["nodes"])' out/report.json)

browse() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$(mktemp -d -p "$work")" \
    --window-size=1200,2400 "$@" "file://$work/out/report.html" 2>chromium.log
}
browse --screenshot="$work/shot.png"
browse --dump-dom >dom.html

[ -s shot.png ] || { echo "no screenshot"; cat chromium.log; exit 1; }
grep -q '<svg xmlns="http://www.w3.org/2000/svg" class="graph"' dom.html || { echo "no graph <svg> in the DOM"; exit 1; }
drawn=$(grep -o '<circle class="gnode [a-z]*"' dom.html | wc -l)
[ "$drawn" -eq "$nodes" ] || { echo "the graph draws $drawn nodes, the counterexample has $nodes"; exit 1; }
moved=$(grep -o '<path class="edge moved"' dom.html | wc -l)
[ "$moved" -eq 2 ] || { echo "the graph marks $moved moved edges, expected the 2 edges of the transposition"; exit 1; }

/usr/bin/python3 - "$work/shot.png" <<'PY'
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
colours = img.getcolors(maxcolors=1 << 22)
assert colours is not None and len(colours) > 20, f"the screenshot is blank: {len(colours or [])} colours"
red = sum(n for n, (r, g, b) in colours if r > 140 and g < 90 and b < 90)
assert red > 200, f"only {red} red pixels: the moved edges were not drawn"
print(f"screenshot {img.size}, {len(colours)} colours, {red} red pixels")
PY
if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r shot.png dom.html out "$keep/"; fi
echo "report.html renders the graph: $drawn nodes, $moved moved edges"
