#!/usr/bin/env bash
# Where symmetry first breaks (issue 13, item 3): `permcheck audit --exec` of a torch module served by
# python/permcheck_adapter.py with `serve(module)` alone: a stack blocks.0 (equivariant: a Linear per position and
# pairwise softmax(h h^T) mixing), blocks.1 (a learned position embedding) and blocks.2 (equivariant). The
# violation's tap table names blocks.1 as the first tap that breaks, every tap before it holds, and report.json,
# report.md and report.html carry the table with the mark; in the shorthand form, in a signature with a batch
# dim, and with n forced to the feature size (n = d = 4), where the axes must still be told apart (the pairwise
# tap follows n on both dims, the (n, d) taps on the first only). serve(..., taps=False) gives no table and no
# second adapter process; the stack without the embedding holds, and a holding audit asks for no taps.
#   python_adapter_taps.sh PERMCHECK
set -uo pipefail
permcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
unset PYTHONPATH
fail() { echo "python_adapter_taps.sh: $*" >&2; [[ -f "$work/out.txt" ]] && cat "$work/out.txt" >&2; exit 1; }

python3 -c 'import torch' 2>"$work/import.err" ||
  fail "python3 cannot import torch (the project's Python environment, .venv/: scripts/install-deps --test): $(cat "$work/import.err")"

cat >"$work/stack.py" <<'EOF'
import os
import sys
import torch
from permcheck_adapter import serve


class Mix(torch.nn.Module):  # pairwise weights softmax(x x^T): (n, n), equivariant on both dims
    def forward(self, x):
        return torch.softmax(x @ x.transpose(-1, -2), dim=-1)


class Block(torch.nn.Module):  # equivariant: a Linear per position, then attention-like mixing of positions
    def __init__(self, d):
        super().__init__()
        self.linear = torch.nn.Linear(d, d)
        self.mix = Mix()

    def forward(self, x):
        h = torch.tanh(self.linear(x))
        return x + self.mix(h) @ h


class PositionEmbedding(torch.nn.Module):  # a learned embedding per position: breaks equivariance
    def __init__(self, max_len, d):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(max_len, d))

    def forward(self, x):
        return x + self.table[: x.shape[-2]]


class Stack(torch.nn.Module):
    def __init__(self, d, position=True):
        super().__init__()
        middle = PositionEmbedding(16, d) if position else torch.nn.Identity()
        self.blocks = torch.nn.Sequential(Block(d), middle, Block(d))

    def forward(self, x):
        return self.blocks(x)


if "STARTS" in os.environ:  # one line per process started, for the test to count
    with open(os.environ["STARTS"], "a") as starts:
        starts.write("started\n")
torch.manual_seed(0)
serve(Stack(4, position="--no-position" not in sys.argv), dtype=torch.float64, taps="--no-taps" not in sys.argv)
EOF

audit() {  # audit EXPECTED_EXIT ARGS_OF_STACK_PY -- PERMCHECK_OPTIONS...
  local expected=$1 args=$2
  shift 3
  "$permcheck" audit --exec "python3 $work/stack.py $args" --cases 40 "$@" >"$work/out.txt" 2>&1
  local code=$?
  [[ $code -eq $expected ]] || fail "audit of stack.py $args $* exited $code, expected $expected"
}

sentence="symmetry first breaks at blocks.1 (tap 4 of 8); every tap before it holds"
check_table() {  # check_table REPORT_DIR AXES_OF_AN_(n,d)_TAP AXES_OF_THE_PAIRWISE_TAP
  grep -qF "  $sentence" "$work/out.txt" || fail "the console does not say: $sentence"
  for k in 1 2 3; do
    grep -qE "^ {4} +$k  blocks\.0[a-z.]*  .* holds, largest difference" "$work/out.txt" || fail "tap $k does not hold"
  done
  grep -qE "^  > +4  blocks\.1  .* violated, largest difference" "$work/out.txt" || fail "tap 4 is not marked violated"
  python3 - "$1" "$2" "$3" <<'PY' || fail "report $1 lacks the tap table"
import json, sys
directory, nd_axes, pair_axes = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
r = json.load(open(directory + "/report.json"))
names = [t["name"] for t in r["taps"]]
assert names == ["blocks.0.linear", "blocks.0.mix", "blocks.0", "blocks.1", "blocks.2.linear", "blocks.2.mix",
                 "blocks.2", "blocks"], names
assert r["first_breaking_tap"] == "blocks.1", r["first_breaking_tap"]
assert [t["verdict"] for t in r["taps"][:4]] == ["holds"] * 3 + ["violated"], r["taps"]
assert r["taps"][3]["max_difference"] > r["taps"][3]["tolerance"], r["taps"][3]
assert r["taps"][0]["axes"] == nd_axes and r["taps"][1]["axes"] == pair_axes, (r["taps"][0], r["taps"][1])
md = open(directory + "/report.md").read()
assert "| 4 \u25c0 first break | `blocks.1` |" in md, md
html = open(directory + "/report.html").read()
assert '<tr class="first-break"><td>4 &#9664; first break</td><td><code>blocks.1</code>' in html
assert "symmetry first breaks at blocks.1 (tap 4 of 8); every tap before it holds" in md and html.count("first-break") == 2
PY
}

# The shorthand form: x is an (n, 4) tensor. The taps come from a second adapter process (one audit process).
STARTS=$work/starts_on.txt audit 1 "" -- --dim 4 --report "$work/shorthand"
[[ $(wc -l <"$work/starts_on.txt") -eq 2 ]] || fail "expected 2 adapter processes with taps, got $(wc -l <"$work/starts_on.txt")"
check_table "$work/shorthand" '["n", null]' '["n", "n"]'
# A signature with a batch dim of 1: the tap dims follow [-, n, -].
audit 1 "" -- --axis n=1..8 --input x:1,n,4 --output y:1,n,4 --report "$work/batch"
check_table "$work/batch" '[null, "n", null]' '[null, "n", "n"]'
# n forced to the feature size: every (n, d) tap is 4 x 4 and the pairwise one too; the probe (n = 5) tells them apart.
audit 1 "" -- --axis n=4..4 --input x:n,4 --output y:n,4 --report "$work/square"
check_table "$work/square" '["n", null]' '["n", "n"]'
grep -q "n = 4" "$work/out.txt" || fail "the counterexample is not at n = 4"

# taps=False: the same violation, no table.
STARTS=$work/starts_off.txt audit 1 --no-taps -- --dim 4 --report "$work/off"
[[ $(wc -l <"$work/starts_off.txt") -eq 1 ]] || fail "an adapter that offers no taps got a tap process"
grep -q "symmetry first breaks\|taps of the counterexample" "$work/out.txt" && fail "serve(..., taps=False) gave a tap table"
python3 -c 'import json, sys; assert "taps" not in json.load(open(sys.argv[1]))' "$work/off/report.json" ||
  fail "report.json has taps without an offer"
# Without the embedding the stack holds: taps serve violations only, so there is no table.
audit 0 --no-position -- --dim 4 --report "$work/holds"
grep -q "taps" "$work/out.txt" && fail "a holding audit printed taps"
python3 -c 'import json, sys; assert "taps" not in json.load(open(sys.argv[1]))' "$work/holds/report.json" ||
  fail "report.json of a holding audit has taps"
echo "ok: $sentence"
