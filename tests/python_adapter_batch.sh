#!/usr/bin/env bash
# End to end: batched requests (docs/protocol.md, "Batched requests") between `permcheck audit --exec` and
# python/permcheck_adapter.py serving torch modules. Each audit runs twice with the same seed, batched (serve()'s
# default: stacked batches, binary) and one case per request (batch=1, via PERMCHECK_BATCH), and both must print the
# same verdict, the same counterexample and the same replay line (the leak also with batches item by item, in JSON):
#   - TransformerEncoderLayer(batch_first=False) with --input src:n,1,8 (cases stacked on dim 1): holds;
#   - TransformerEncoderLayer(batch_first=True) with --input src:1,n,8 (dim 0): holds;
#   - the same layer after a learned position embedding from position 5 on: violated past the first case, shrunk
#     to n = 6, the same counterexample and replay line.
# Cases are never mixed: the batch_first=False layer declared as src:1,n,8 (a wrong layout: its dim 0 is the
# sequence) holds one case per request but is violated batched, since the stacked cases then attend to each other.
#   python_adapter_batch.sh PERMCHECK_BINARY
set -uo pipefail
permcheck=$1
if ! python3 -c "import torch" 2>/dev/null; then
  echo "FAIL: python3 cannot import torch (the project's Python environment, .venv/: scripts/install-deps --test), which this test needs" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
unset PYTHONPATH
failed=0

cat >"$work/encoder.py" <<'PY'
import os
import torch
from permcheck_adapter import serve

torch.manual_seed(0)
batch_first = os.environ["BATCH_FIRST"] == "1"
encoder = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=batch_first)


class WithPositions(torch.nn.Module):  # a learned position embedding from position 5 on: not equivariant
    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Parameter(torch.cat([torch.zeros(5, 8), torch.randn(3, 8)]))
        self.encoder = encoder

    def forward(self, src):
        return self.encoder(src + self.pos[: src.shape[1]])


layer = WithPositions() if os.environ.get("POSITIONS") == "1" else encoder
serve(layer, batch=int(os.environ.get("PERMCHECK_BATCH", "256")), stacked=os.environ.get("STACKED", "1") == "1")
PY

run() {  # run NAME BATCH [env...] -- permcheck options: the audit's output (the timing removed) in $work/NAME-BATCH
  local name=$1 batch=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" PERMCHECK_BATCH="$batch" "$permcheck" audit --exec "python3 $work/encoder.py" --seed 11 \
    "$@" >"$work/$name-$batch.raw" 2>"$work/$name-$batch.err"
  echo $? >"$work/$name-$batch.code"
  # The timing ("..., 3.2 s (150 cases/s)", a violated run without the rate) and the layer-call count (batched runs
  # finish their block) may differ.
  sed -E 's/, [0-9]+ layer calls?//; s/, [0-9.e+-]+ s( \([0-9.e+-]+ cases\/s\))?$//' "$work/$name-$batch.raw" >"$work/$name-$batch"
}

same() {  # same NAME EXPECTED_EXIT: batched and unbatched runs agree, exiting EXPECTED_EXIT
  local name=$1 expected=$2
  for b in 1 256; do
    if [[ $(cat "$work/$name-$b.code") -ne $expected ]]; then
      echo "FAIL: $name with batch $b exited $(cat "$work/$name-$b.code"), expected $expected" >&2
      cat "$work/$name-$b.raw" "$work/$name-$b.err" >&2
      failed=1
      return
    fi
  done
  if ! diff "$work/$name-1" "$work/$name-256" >&2; then
    echo "FAIL: $name: batched and one-case-a-request runs differ (above)" >&2
    failed=1
    return
  fi
  echo "ok: $name: batched and unbatched agree: $(grep -m1 -oE '(holds|violated)[^,]*' "$work/$name-256")"
}

for b in 1 256; do
  run seq-first $b BATCH_FIRST=0 -- --axis n=1..8 --input src:n,1,8 --output y:n,1,8 --cases 300
  run batch-first $b BATCH_FIRST=1 -- --axis n=1..8 --input src:1,n,8 --output y:1,n,8 --cases 300
  run positions $b BATCH_FIRST=1 POSITIONS=1 -- --axis n=1..8 --input src:1,n,8 --output y:1,n,8 --cases 300
  run wrong-layout $b BATCH_FIRST=0 -- --axis n=1..8 --input src:1,n,8 --output y:1,n,8 --cases 300
done
same seq-first 0
same batch-first 0
same positions 1
# The same leak through batches sent item by item in JSON (serve(..., stacked=False)) rather than stacked in binary.
run positions-items 256 BATCH_FIRST=1 POSITIONS=1 STACKED=0 -- --axis n=1..8 --input src:1,n,8 --output y:1,n,8 --cases 300
if [[ $(cat "$work/positions-items-256.code") -ne 1 ]] || ! diff "$work/positions-1" "$work/positions-items-256" >&2; then
  echo "FAIL: batches item by item should give the unbatched verdict and counterexample (above)" >&2
  cat "$work/positions-items-256.raw" "$work/positions-items-256.err" >&2
  failed=1
else
  echo "ok: batches item by item agree with the stacked and unbatched runs"
fi
# Found past the first case (which is asked before the adapter's announcement), so in a batch; shrunk to n = 6.
grep -qE "violated after ([2-9]|[1-9][0-9]+) cases" "$work/positions-256" ||
  { echo "FAIL: the position leak should be found in a batch, past case 1" >&2; cat "$work/positions-256" >&2; failed=1; }
grep -q "n = 6" "$work/positions-256" || { echo "FAIL: the position leak is not shrunk to n = 6" >&2; cat "$work/positions-256" >&2; failed=1; }
grep -q "replay: " "$work/positions-256" || { echo "FAIL: no replay line" >&2; failed=1; }

if [[ $(cat "$work/wrong-layout-1.code") -ne 0 ]]; then
  echo "FAIL: the wrongly declared layout should hold one case per request (each position its own sequence)" >&2
  cat "$work/wrong-layout-1.raw" >&2
  failed=1
elif [[ $(cat "$work/wrong-layout-256.code") -ne 1 ]]; then
  echo "FAIL: stacking cases on the layer's sequence dim mixes them, which the batched audit must catch" >&2
  cat "$work/wrong-layout-256.raw" >&2
  failed=1
else
  echo "ok: cases stacked on the sequence dim (a wrong layout) mix, and the batched audit says so: $(grep -m1 -oE '(violated|nondeterministic|batch-dependent)[^,]*' "$work/wrong-layout-256")"
fi
exit $failed
