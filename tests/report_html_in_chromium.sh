#!/usr/bin/env bash
# report.html in headless Chromium: the page renders (a screenshot that is not blank, with the heatmap's red
# cells and the permutation's red arrows drawn), and the DOM Chromium built holds the heatmap's <svg> with one
# cell per position x feature and its colour scale (a bar with its ends' values). Exit 77 (skipped) when Chromium is not installed.
#   usage: report_html_in_chromium.sh PERMCHECK_BINARY [KEEP_DIR]
set -euo pipefail
bin=$1
keep=${2:-}
command -v chromium >/dev/null || { echo "chromium is not installed (scripts/install-deps --test)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

status=0
"$bin" check causal-attention --no-db --report out >check.txt || status=$?
[ "$status" -eq 1 ] || { echo "expected exit 1 from permcheck check causal-attention, got $status"; cat check.txt; exit 1; }

browse() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$(mktemp -d -p "$work")" \
    --window-size=1200,900 "$@" "file://$work/out/report.html" 2>chromium.log
}
browse --screenshot="$work/shot.png"
browse --dump-dom >dom.html

[ -s shot.png ] || { echo "no screenshot"; cat chromium.log; exit 1; }
cells=$(grep -o '<rect class="cell"' dom.html | wc -l)
[ "$cells" -eq 8 ] || { echo "the rendered DOM holds $cells heatmap cells, expected 2 positions x 4 features = 8"; exit 1; }
grep -q '<svg xmlns="http://www.w3.org/2000/svg" class="heatmap"' dom.html || { echo "no heatmap <svg> in the DOM"; exit 1; }
grep -q '<g class="scale" data-min="0" data-max="[0-9.e+-]*" data-symmetric="false">' dom.html ||
  { echo "no colour scale with its ends under the heatmap"; exit 1; }
grep -q '<rect class="scale-bar"' dom.html || { echo "no colour scale bar in the DOM"; exit 1; }

python3 - "$work/shot.png" <<'EOF'
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
assert img.size == (1200, 900), f"screenshot is {img.size}, expected 1200x900"
colours = img.getcolors(maxcolors=1 << 20)
assert colours is not None and len(colours) > 20, f"the screenshot is blank: {len(colours or [])} colours"
# The heatmap's differences and the moved arrows are drawn in reds (#b3261e, #a50026 and tints).
red = sum(n for n, (r, g, b) in colours if r > 140 and g < 90 and b < 90)
assert red > 400, f"only {red} red pixels: neither the heatmap nor the arrows were drawn"
print(f"screenshot {img.size}, {len(colours)} colours, {red} red pixels")
EOF
if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r shot.png dom.html out "$keep/"; fi
echo "report.html renders: $cells heatmap cells"
