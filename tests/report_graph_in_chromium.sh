#!/usr/bin/env bash
# A signature audit's report.html in headless Chromium: the message-passing example whose aggregator reads its
# neighbours in edge-list order (examples/adapters/message_passing.py --edge-order) is audited with the third
# command of issue 12; the page renders (a screenshot that is not blank, with the moved edges drawn in red), and
# the DOM Chromium built holds the graph drawn before and after the permutation (x's and P x's), each with one node
# per node of the counterexample and red exactly the edges the permutation moves or renumbers. Both that violated report and the report of the fixed adapter's audit (holds) show the table of what was
# checked (one row per output and axis: y along nodes and invariant to edges, g invariant to both), with the
# lengths, cases, largest differences and tolerances of report.json at six significant digits; the violated
# report marks y's rows and draws y's heatmap with its colour scale, the holding one the heatmap of the case closest
# to its tolerance (the scale's gradient bar seen in both screenshots).
# Exit 77 (skipped) when Chromium is not installed.
set -euo pipefail
bin=$1
source=$2
keep=${3:-}
command -v chromium >/dev/null || { echo "chromium is not installed (scripts/install-deps --test)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

status=0
"$bin" audit --exec "python3 $source/examples/adapters/message_passing.py --edge-order" \
    --axis nodes=1..8 --axis edges=0..16 --input x:nodes,4 \
    --input edge_index:2,edges:index=nodes --input edge_attr:edges,3 --output y:nodes,4 --output g:4 \
    --report out >audit.txt || status=$?
[ "$status" -eq 1 ] || { echo "expected exit 1 (violated) from the audit, got $status"; cat audit.txt; exit 1; }
nodes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counterexample"]["lengths"]["nodes"])' out/report.json)
status=0
"$bin" audit --exec "python3 $source/examples/adapters/message_passing.py" \
    --axis nodes=1..8 --axis edges=0..16 --input x:nodes,4 \
    --input edge_index:2,edges:index=nodes --input edge_attr:edges,3 --output y:nodes,4 --output g:4 \
    --report holds >holds.txt || status=$?
[ "$status" -eq 0 ] || { echo "expected exit 0 (holds) from the fixed adapter's audit, got $status"; cat holds.txt; exit 1; }

# browse DIR ARGS...: DIR/report.html in headless Chromium.
browse() {
  local dir=$1
  shift
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$(mktemp -d -p "$work")" \
    --window-size=1200,4000 "$@" "file://$work/$dir/report.html" 2>chromium.log
}
browse out --screenshot="$work/shot.png"
browse out --dump-dom >dom.html
browse holds --screenshot="$work/holds.png"
browse holds --dump-dom >holds.html

[ -s shot.png ] || { echo "no screenshot"; cat chromium.log; exit 1; }
grep -q '<svg xmlns="http://www.w3.org/2000/svg" class="graph"' dom.html || { echo "no graph <svg> in the DOM"; exit 1; }
# The graph before (x) and after (P x) the permutation: each with every node, and red exactly the edges the
# permutation of the edges moves or whose ends the permutation of the nodes renumbers, counted from report.json.
python3 - out/report.json dom.html <<'PY'
import json, re, sys
c = json.load(open(sys.argv[1]))["counterexample"]
dom = open(sys.argv[2]).read()
graphs = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="graph".*?</svg>', dom, re.S)
assert len(graphs) == 2, f"{len(graphs)} graph drawings, expected x's and P x's"
assert 'aria-label="graph of edge_index in x"' in graphs[0] and 'aria-label="graph of edge_index in P x"' in graphs[1]
nodes, p_nodes, p_edges = c["lengths"]["nodes"], c["permutations"]["nodes"], c["permutations"]["edges"]
def moved(edge_index):
    return sum(1 for e, (s, t) in enumerate(zip(*edge_index)) if p_edges[e] != e or p_nodes[s] != s or p_nodes[t] != t)
for svg, edge_index in zip(graphs, (c["inputs"]["edge_index"], c["transformed"]["inputs"]["edge_index"])):
    drawn = len(re.findall(r'<circle class="gnode [a-z]*"', svg))
    assert drawn == nodes, f"a graph draws {drawn} nodes, the counterexample has {nodes}"
    red = len(re.findall(r'<path class="edge moved"', svg))
    assert red == moved(edge_index) > 0, f"a graph marks {red} moved edges, expected {moved(edge_index)}"
print(f"two graphs of {nodes} nodes, {moved(c['inputs']['edge_index'])} moved edges each")
PY

python3 - "$work/shot.png" <<'PY'
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
colours = img.getcolors(maxcolors=1 << 22)
assert colours is not None and len(colours) > 20, f"the screenshot is blank: {len(colours or [])} colours"
red = sum(n for n, (r, g, b) in colours if r > 140 and g < 90 and b < 90)
assert red > 200, f"only {red} red pixels: the moved edges were not drawn"
print(f"screenshot {img.size}, {len(colours)} colours, {red} red pixels")
PY
# The table of what was checked, in the DOM Chromium built from each report, against the report's own report.json.
python3 - "$work" <<'PY'
import html.parser, json, re, sys
work = sys.argv[1]

class Table(html.parser.HTMLParser):
    """The rows of <table class="checked"> (cells' text and the rows' classes), the text outside tags, and the
    heatmaps' colour scales (<g class="scale"> with their data-max) per heatmap heading."""
    def __init__(self):
        super().__init__()
        self.rows, self.text, self.scales, self.inside, self.cell, self.heading = [], [], [], False, None, ""
        self.in_heading = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("class") == "checked": self.inside = True
        elif tag == "tr" and self.inside: self.rows.append({"class": a.get("class", ""), "cells": []})
        elif tag in ("td", "th") and self.inside and self.rows: self.cell = ""
        elif tag == "h3": self.in_heading, self.heading = True, ""
        elif tag == "g" and a.get("class") == "scale": self.scales.append((self.heading, a))
    def handle_endtag(self, tag):
        if tag == "table" and self.inside: self.inside = False
        elif tag in ("td", "th") and self.cell is not None:
            self.rows[-1]["cells"].append(self.cell.strip())
            self.cell = None
        elif tag == "h3": self.in_heading = False
    def handle_data(self, data):
        if self.cell is not None: self.cell += data
        if self.in_heading: self.heading += data
        self.text.append(data)

def parse(name):
    t = Table()
    t.feed(open(f"{work}/{name}").read())
    return t

def significant(number):  # significant digits of a number as the page writes it
    mantissa = re.split("[eE]", number)[0].lstrip("-").replace(".", "").lstrip("0")
    return len(mantissa)

def runs(lengths):  # "1..3, 5": the page's lengths with their runs joined
    out, i = [], 0
    while i < len(lengths):
        j = i
        while j + 1 < len(lengths) and lengths[j + 1] == lengths[j] + 1: j += 1
        out.append(str(lengths[i]) + (f"..{lengths[j]}" if j > i else ""))
        i = j + 1
    n = len(lengths)
    return ", ".join(out) + f" ({n} length{'' if n == 1 else 's'})"

def check(name, report_dir, verdict, least_numbers):
    t = parse(name)
    report = json.load(open(f"{work}/{report_dir}/report.json"))
    assert report["verdict"] == verdict, report["verdict"]
    rows = [r for r in t.rows if "checked-row" in r["class"]]
    assert len(rows) == 4, f"{name}: {len(rows)} rows in the table of what was checked, expected y and g by nodes and edges"
    claims = [(r["cells"][1], r["cells"][2]) if len(r["cells"]) > 7 else (r["cells"][0], r["cells"][1]) for r in rows]
    assert claims == [("nodes", "equivariant along"), ("edges", "invariant to"), ("nodes", "invariant to"),
                      ("edges", "invariant to")], f"{name}: {claims}"
    by_output = {rows[0]["cells"][0]: rows[0]["cells"], rows[2]["cells"][0]: rows[2]["cells"]}
    assert set(by_output) == {"y", "g"}, by_output.keys()
    for out in report["checked"]["outputs"]:
        cells = by_output[out["name"]]
        # output, axis, claim, lengths, cases, compared, largest difference, its tolerance, fraction, range, result
        assert cells[4] == str(out["cases"]), (cells, out)
        assert out["cases"] == report["cases"], (out, report["cases"])
        for cell, field in ((6, "max_abs_diff"), (7, "tolerance_at_max"), (8, "largest_fraction_of_tolerance")):
            assert cells[cell] == "%.6g" % out[field], (name, field, cells[cell], out[field])
        assert out["max_tolerance"] > 0 and cells[9] == "%.6g \u2013 %.6g" % (out["min_tolerance"], out["max_tolerance"]), cells
    for row, axis in zip(rows, ["nodes", "edges", "nodes", "edges"]):
        lengths = row["cells"][3] if len(row["cells"]) > 7 else row["cells"][2]
        assert lengths == runs(report["checked"]["lengths"][axis]), (name, axis, lengths, report["checked"]["lengths"])
    assert by_output["g"][5] == "|L(P x) - L(x)|" and by_output["y"][5] == "|L(P x) - P L(x)|", by_output
    # Six significant digits for every number the page shows (report.json keeps them all).
    numbers = re.findall(r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+", " ".join(t.text))
    assert len(numbers) >= least_numbers, f"{name}: only {len(numbers)} numbers on the page"
    long = [n for n in numbers if significant(n) > 6]
    assert not long, f"{name}: numbers with more than six significant digits: {long[:5]}"
    full = [v for o in report["checked"]["outputs"] for v in (o["min_tolerance"], o["max_tolerance"]) if len(repr(v)) > 12]
    assert full, "report.json's tolerances should carry more digits than the page shows"
    assert "{" not in " ".join(t.text).split("Details")[-1], f"{name}: a raw JSON dump under Details"
    return t, rows, by_output

holds, rows, by_output = check("holds.html", "holds", "holds", 8)
assert all(r["class"] == "checked-row" for r in rows), rows
assert by_output["y"][10] == "within tolerance" and by_output["g"][10] == "within tolerance", by_output
assert float(by_output["y"][8]) <= 1 and float(by_output["g"][8]) <= 1, by_output
# The holding report draws, per output that showed a difference, the case closest to its tolerance with its scale.
outputs = {o["name"]: o for o in json.load(open(f"{work}/holds/report.json"))["checked"]["outputs"]}
drawn = {h.split("output ")[1].split(":")[0]: a for h, a in holds.scales if h.startswith("Closest case, output ")}
expected = {n for n, o in outputs.items() if o["closest"]["max_abs_diff"] > 0}
assert expected, f"no output showed a rounding difference in 100 cases: {outputs}"
assert set(drawn) == expected, (drawn.keys(), expected)
for name, scale in drawn.items():
    # A holding case's scale runs up to its tolerance (its rounding drawn pale, not in a violation's red).
    closest = outputs[name]["closest"]
    assert scale["data-max"] == "%.6g" % max(closest["max_abs_diff"], closest["tolerance"]), (name, scale, closest)
    assert outputs[name]["closest"]["max_abs_diff"] / outputs[name]["closest"]["tolerance"] == \
        outputs[name]["largest_fraction_of_tolerance"], outputs[name]

violated, rows, by_output = check("dom.html", "out", "violated", 20)
outputs = json.load(open(f"{work}/out/report.json"))["counterexample"]["outputs"]
broke = [not outputs[o]["holds"] for o in ("y", "y", "g", "g")]
assert outputs["y"]["holds"] is False, outputs["y"]
assert [r["class"] for r in rows] == ["checked-row broke" if b else "checked-row" for b in broke], ([r["class"] for r in rows], broke)
assert by_output["y"][10].startswith("violated"), by_output["y"]
assert float(by_output["y"][8]) > 1, by_output["y"]
scales = [(h, a) for h, a in violated.scales if h.startswith("Output y")]
assert scales, f"no colour scale under y's heatmap: {violated.scales}"
heading, scale = scales[0]
assert scale["data-min"] == "0" and scale["data-symmetric"] == "false", scale
diff = json.load(open(f"{work}/out/report.json"))["counterexample"]["outputs"]["y"]["max_abs_diff"]
assert scale["data-max"] == "%.6g" % diff, (scale, diff)
print(f"the table of what was checked: 4 rows in each report; y's heatmap scale 0..{scale['data-max']}")
PY
grep -q '<rect class="scale-bar"' dom.html || { echo "no colour scale bar in the violated report's DOM"; exit 1; }

# The scale bar is drawn, in both reports: in some row of the screenshot, a run of at least 150 pixels of red tints
# whose green falls steadily from light to dark (the gradient); neither the heatmap's cells nor anti-aliased red
# lines make one.
for shot in shot.png holds.png; do
python3 - "$work/$shot" <<'PY'
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
width, height = img.size
pixels = img.load()
best = 0
for y in range(height):
    run, start_g, last_g = 0, None, None
    for x in range(width):
        r, g, b = pixels[x, y]
        if r >= 150 and r - g >= 15 and r - b >= 8 and (last_g is None or g <= last_g):
            run, start_g = (run + 1, start_g) if last_g is not None else (1, g)
            last_g = g
            if run >= 150 and start_g - g >= 150: best = max(best, run)
        else:
            run, start_g, last_g = 0, None, None
assert best >= 150, f"no gradient bar in {sys.argv[1]}: the heatmap's colour scale was not drawn"
print(f"{sys.argv[1]}: the colour scale's gradient bar, {best} pixels")
PY
done
if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r shot.png dom.html holds.png holds.html out holds "$keep/"; fi
echo "report.html renders the graph before and after the permutation; both reports show what was checked"
