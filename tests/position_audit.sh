#!/usr/bin/env bash
# Position-aware audits through the Python helper (examples/adapters/positions.py, torch modules fed int64 ids,
# position ids and a keep mask): every property found violated and shrunk (the smallest c, the fewest pads, two
# tokens cut after one) and
# found holding, bad combinations of flags refused, the profile's exit code and its rows, a saved case replayed.
#   position_audit.sh PERMCHECK
set -euo pipefail
permcheck="$1"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
model="$root/examples/adapters/positions.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -c 'import torch' || { echo "position_audit.sh: python3 cannot import torch (the project's Python environment, .venv/: scripts/install-deps --test)"; exit 1; }
sig=(--axis n=1..8 --input ids:n:token=50 --input pos:n:position --input keep:n:mask=keep --output y:n,8)
fail() { echo "FAIL: $*"; exit 1; }

# expect EXIT MODEL FLAGS...: runs the audit with a report in $work/last and checks its exit code.
expect() {
  local want="$1" name="$2"; shift 2
  rm -rf "$work/last"
  set +e
  "$permcheck" audit --exec "python3 $model $name" "${sig[@]}" --cases 60 --report "$work/last" "$@" > "$work/out.txt" 2>&1
  local got=$?
  set -e
  [ "$got" = "$want" ] || { cat "$work/out.txt"; fail "$name $* exited $got, expected $want"; }
  echo "ok: $name $* -> $got"
}
field() { python3 -c "import json,sys; d=json.load(open('$work/last/report.json')); print(eval(sys.argv[1]))" "$1"; }

expect 0 rope
expect 1 rope-arange                         # order by another route than the position ids
expect 1 rope --keep-positions               # order-aware
expect 0 rope --property shift
expect 0 alibi --property shift
expect 0 "rope float32" --dtype float32 --property shift   # rotary angles in float32: no false alarm
expect 1 learned --property shift
[ "$(field "d['counterexample']['part']['shift']")" = 1 ] || fail "learned: shift not shrunk to c = 1"
[ "$(field "d['counterexample']['lengths']['n']")" = 1 ] || fail "learned: not shrunk to one token"
[ "$(field "d['counterexample']['inputs']['ids'][0] == int(d['counterexample']['inputs']['ids'][0])")" = True ] || fail "ids not integers"
grep -q "symmetry first breaks at table" "$work/out.txt" || { cat "$work/out.txt"; fail "learned shift: the taps do not name the position table"; }
[ "$(field "d['first_breaking_tap']")" = table ] || fail "learned shift: no tap table in the report"
expect 1 "learned float32" --dtype float32 --property shift
expect 1 sinusoidal --property shift
expect 0 rope --property padding
expect 0 rope --property padding --padding left
expect 1 rope-nomask --property padding --padding right
[ "$(field "len(d['counterexample']['part']['slots'])")" = 1 ] || fail "rope-nomask: not shrunk to one pad"
grep -q "taps\|symmetry" "$work/out.txt" || { cat "$work/out.txt"; fail "rope-nomask padding: no tap table"; }
grep -q "embed .* holds" "$work/out.txt" || { cat "$work/out.txt"; fail "rope-nomask padding: the embedding's tap at the real positions does not hold"; }
"$permcheck" replay "$work/last/report.json" --exec "python3 $model rope-nomask" > /dev/null && fail "replay of a leak held"
"$permcheck" replay "$work/last/report.json" --exec "python3 $model rope" > /dev/null || fail "replay on the masked model failed"
expect 1 rope --property causal              # bidirectional: output 0 sees token 1
[ "$(field "d['counterexample']['lengths']['n']")" = 2 ] || fail "rope causal: not shrunk to two tokens"
[ "$(field "d['counterexample']['part']['at']")" = "[1]" ] || fail "rope causal: not shrunk to the cut k = 1"
grep -q "cut n after k = 1 of 2 positions" "$work/out.txt" || { cat "$work/out.txt"; fail "rope causal: the cut is not shown"; }
set +e
"$permcheck" replay "$work/last/report.json" --exec "python3 $model rope" > "$work/replay.txt" 2>&1
got=$?
set -e
[ "$got" = 1 ] || { cat "$work/replay.txt"; fail "the replay of a non-causal model exited $got, expected 1 (still fails)"; }
"$permcheck" replay "$work/last/report.json" --exec "python3 $model rope-causal" > "$work/replay.txt" 2>&1 \
  || { cat "$work/replay.txt"; fail "replay on the causal model failed"; }
expect 0 rope-causal --property causal
expect 0 rope-causal --property padding --padding left   # empty queries attend uniformly: padding, not compared
expect 1 rope-causal --property packing      # no block mask: the second sequence sees the first
[ "$(field "d['counterexample']['lengths']['n']")" = 2 ] || fail "rope-causal packing: not shrunk to two tokens"
[ "$(field "d['counterexample']['part']['at'], d['counterexample']['part']['piece']")" = "([1], 1)" ] \
  || fail "rope-causal packing: not shrunk to two one-token sequences, the second alone"
expect 0 rope-packed --property packing
expect 0 rope-packed --property causal
expect 0 rope-cached --property incremental  # a cache of keys and values, the mask cumulative
expect 1 rope-cached-restart --property incremental   # new tokens rotated from 0: found at two chunks
[ "$(field "len(d['counterexample']['part']['at']), d['counterexample']['part']['chunked'], d['counterexample']['lengths']['n']")" = "(1, 1, 2)" ] \
  || fail "rope-cached-restart: not shrunk to two chunks of two tokens"
"$permcheck" replay "$work/last/report.json" --exec "python3 $model rope-cached" > "$work/replay.txt" 2>&1 \
  || { cat "$work/replay.txt"; fail "the cached model's replay of the restart finding failed"; }
expect 1 rope-causal --property incremental  # no cache: the second chunk sees nothing before it
expect 2 rope --causal-axis n                # --causal-axis without --property causal
expect 2 rope --property causal --causal-axis m
expect 2 rope --padding left                 # --padding without --property padding
expect 2 rope --property reversal
expect 2 rope --profile --property shift
# A property the signature cannot take is refused before the adapter starts.
set +e
"$permcheck" audit --exec "touch $work/started" "${sig[@]}" --property shift --padding-axis n > "$work/out.txt" 2>&1
got=$?
set -e
[ "$got" = 2 ] || { cat "$work/out.txt"; fail "--padding-axis with shift exited $got, expected 2"; }
[ ! -e "$work/started" ] || fail "the adapter was started for options the audit refuses"

# The profile: every row to a verdict, exit 0; one report directory a row and profile.json.
rm -rf "$work/profile"
"$permcheck" audit --exec "python3 $model learned" "${sig[@]}" --cases 40 --profile --report "$work/profile" > "$work/out.txt" \
  || { cat "$work/out.txt"; fail "the profile did not exit 0"; }
for row in causal order-through-positions order-aware relative padding-left padding-right padding-any packing position-ids; do
  [ -f "$work/profile/$row/report.json" ] || fail "no report for the profile row $row"
done
python3 - "$work/profile/profile.json" <<'PY'
import json, sys
rows = {r["row"]: r["verdict"] for r in json.load(open(sys.argv[1]))["rows"]}
want = {"causal": "violated", "order-through-positions": "holds", "order-aware": "violated", "relative": "violated",
        "padding-left": "holds", "padding-right": "holds", "padding-any": "holds", "packing": "violated",
        "position-ids": "violated"}
assert rows == want, rows
PY
# Each row that found something has its reproduction beside its report, and it reproduces (exit 1).
for row in causal order-aware relative packing; do
  [ -f "$work/profile/$row/repro.py" ] || fail "no repro.py for the profile row $row"
  status=0
  (cd "$work" && env -i PATH="$(dirname "$(command -v python3)"):/usr/bin:/bin" python3 "$work/profile/$row/repro.py" > "$work/repro.txt" 2>&1) \
    || status=$?
  [ "$status" -eq 1 ] || { cat "$work/repro.txt"; fail "the repro.py of the profile row $row did not exit 1"; }
done
[ ! -e "$work/profile/padding-left/repro.py" ] || fail "a repro.py for a row that holds"
echo "ok: profile"
# A causal model's profile: the causal row holds, and the order row says why equivariance fails only as far as the
# rows before it checked (the causal mask alone: pads anywhere, ids kept, changed nothing), never just "order by
# another route"; the gaps row finds that the ids reach the output.
"$permcheck" audit --exec "python3 $model rope-causal" "${sig[@]}" --cases 30 --profile > "$work/out.txt" \
  || { cat "$work/out.txt"; fail "the causal model's profile did not exit 0"; }
grep -q "causal (tokens after a cut redrawn) *holds" "$work/out.txt" || { cat "$work/out.txt"; fail "causal row"; }
grep -q "order only through position inputs (tokens permuted with them) *violated .*through the causal mask alone (the causal and padding rows held)" "$work/out.txt" \
  || { cat "$work/out.txt"; fail "the order row does not name the causal mask"; }
grep -q "position ids reach the output (a gap widened) *violated" "$work/out.txt" \
  || { cat "$work/out.txt"; fail "the gaps row"; }
echo "ok: causal profile"

# The user docs' examples of these flags (docs/positions.md) run, with the exit codes they show, in the doc test
# (tests/doc_test.py).

echo "position_audit.sh: all passed"
