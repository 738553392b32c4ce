#!/usr/bin/env bash
# End to end: `permcheck audit --exec` on layers served by python/permcheck_adapter.py, each a file of a few lines
# with no protocol code, and no PYTHONPATH set here: permcheck must put the adapter's directory there itself.
#   python_adapter_audit.sh PERMCHECK_BINARY
# An equivariant function holds (exit 0), a function with a position leak is violated (exit 1), so do they with an
# input named batch and an output named stacked, and a module wrapping torch.nn.MultiheadAttention holds (skipped, saying why, when python3 cannot import torch).
set -uo pipefail
permcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1  # away from the source tree: the import must come from the PYTHONPATH permcheck sets
unset PYTHONPATH
failed=0

audit() {  # audit EXPECTED_EXIT FILE [permcheck options...]
  local expected=$1 file=$2
  shift 2
  "$permcheck" audit --exec "python3 $work/$file" "$@" >"$work/out.txt" 2>&1
  local code=$?
  if [[ $code -ne $expected ]]; then
    echo "FAIL: audit of $file exited $code, expected $expected" >&2
    cat "$work/out.txt" >&2
    failed=1
  else
    echo "ok: $file exits $expected: $(grep -m1 -E 'holds|violated' "$work/out.txt")"
  fi
}

cat >"$work/equivariant.py" <<'EOF'
from permcheck_adapter import serve

def layer(x):  # each row plus the mean of all rows: permutation-equivariant
    mean = [sum(col) / len(x) for col in zip(*x)]
    return [[v + m for v, m in zip(row, mean)] for row in x]

serve(layer)
EOF
cat >"$work/leak.py" <<'EOF'
from permcheck_adapter import serve

def layer(x):  # the same, plus the row's position: a position leak
    mean = [sum(col) / len(x) for col in zip(*x)]
    return [[v + m + 0.25 * i for v, m in zip(row, mean)] for i, row in enumerate(x)]

serve(layer)
EOF
audit 0 equivariant.py --dim 4
audit 1 leak.py --dim 4
grep -q "n = 2" "$work/out.txt" || { echo "FAIL: the leak is not shrunk to n = 2" >&2; cat "$work/out.txt" >&2; failed=1; }

# Inputs and outputs named like the protocol's keys are names like any other (issue 21): an input named batch,
# served batched; with an output named stacked and a position leak, the leak is found.
cat >"$work/named_batch.py" <<'EOF'
import sys
from permcheck_adapter import serve

def layer(batch):  # each row plus the mean of all rows; plus the row's position with --leak
    mean = [sum(col) / len(batch) for col in zip(*batch)]
    leak = 0.25 if "--leak" in sys.argv else 0.0
    y = [[v + m + leak * i for v, m in zip(row, mean)] for i, row in enumerate(batch)]
    return {"y": y, "stacked": y}

serve(layer)
EOF
audit 0 named_batch.py --axis n=1..4 --input batch:n,3 --output y:n,3
audit 1 "named_batch.py --leak" --axis n=1..4 --input batch:n,3 --output stacked:n,3

# A PYTHONPATH of the user's own is kept, behind the adapter's directory.
mkdir "$work/extra"
cp "$work/equivariant.py" "$work/extra/users_module.py"
sed -i 's/^serve(layer)$//' "$work/extra/users_module.py"
printf '%s\n' "import users_module" "from permcheck_adapter import serve" "serve(users_module.layer)" >"$work/own_path.py"
PYTHONPATH=$work/extra audit 0 own_path.py --dim 3

if python3 -c "import torch" 2>"$work/torch.txt"; then
  cat >"$work/mha.py" <<'EOF'
import torch
from permcheck_adapter import serve

class SelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)

    def forward(self, x):  # x: (n, 4)
        return self.mha(x[None], x[None], x[None], need_weights=False)[0][0]

torch.manual_seed(0)
serve(SelfAttention(), dtype=torch.float32)
EOF
  audit 0 mha.py --dim 4
else
  echo "skipping the torch.nn.MultiheadAttention audit: python3 cannot import torch: $(tail -1 "$work/torch.txt")"
fi
exit $failed
