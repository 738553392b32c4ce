#!/bin/sh
# The one-tensor shorthand (--dim) runs as a signature, and users of it must see no change:
#  1. `permcheck audit --dim 4 --seed S` writes the very request lines the shorthand's own path wrote before
#     (tests/golden/one_tensor_requests.txt: their count and sha256, for a layer that holds, a pooled one, and a
#     leak whose shrink requests are included);
#  2. a report written now keeps the shorthand's fields (n, d, permutation, cycles, x, both sides) beside the
#     signature's, and replays.
# usage: one_tensor_golden.sh PERMCHECK SOURCE_DIR
set -u
bin=$1
src=$2
py=/usr/bin/python3
record="$py $src/tests/adapters/record.py"
fault="$py $src/tests/adapters/fault.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

while read -r form seed lines digest; do
  case "$form" in "#"*|"") continue ;; esac
  case "$form" in
    seq) args="--dim 4"; mode=identity ;;
    pool) args="--dim 4 --output pooled"; mode=sum ;;
    leak) args="--dim 4"; mode=index-leak ;;
  esac
  log="$work/$form-$seed.txt"
  # shellcheck disable=SC2086
  "$bin" audit --exec "$record $log $mode" $args --seed "$seed" > "$work/out" 2>&1
  got_lines=$(wc -l < "$log")
  got=$(sha256sum < "$log" | cut -d' ' -f1)
  if [ "$got_lines" != "$lines" ] || [ "$got" != "$digest" ]; then
    fail "$form seed $seed: $got_lines request lines with sha256 $got, expected $lines with $digest"
    head -c 600 "$log"
  else
    echo "ok: $form seed $seed sends the same $lines request lines"
  fi
done < "$src/tests/golden/one_tensor_requests.txt"

replay() {  # replay FILE EXPECTED-EXIT COMMAND
  "$bin" replay "$1" --exec "$3" > "$work/replay" 2>&1
  code=$?
  if [ "$code" != "$2" ]; then
    fail "replay $1 --exec '$3' exited $code, expected $2"
    cat "$work/replay"
  else
    echo "ok: replay $(basename "$1") through '$3' exits $2"
  fi
}
"$bin" audit --exec "$fault index-leak" --dim 3 --seed 3 --report "$work/now" > /dev/null 2>&1
[ $? -eq 1 ] || fail "the index leak was not found violated"
$py - "$work/now/report.json" <<'PY' || failed=1
import json, sys
c = json.load(open(sys.argv[1]))["counterexample"]
for key in ["n", "d", "permutation", "cycles", "x", "layer_of_permuted", "permuted_layer", "max_abs_diff", "where",
            "tolerance", "case_index", "shrink_steps", "black_box", "lengths", "permutations", "inputs", "outputs"]:
    if key not in c:
        sys.exit("FAIL: the shorthand's report has no counterexample field " + key)
assert isinstance(c["cycles"], str) and c["n"] == len(c["x"]) == c["lengths"]["n"], c
assert c["inputs"]["x"] == c["x"] and c["permutations"]["n"] == c["permutation"], c
print("ok: the shorthand's report keeps its fields beside the signature's")
PY
replay "$work/now/report.json" 1 "$fault index-leak"
replay "$work/now/report.json" 0 "$fault identity"
exit $failed
