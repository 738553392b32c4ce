#!/bin/sh
# The one-tensor shorthand (--dim) runs as a signature:
#  1. `permcheck audit --dim 4 --seed S` writes the request lines of its case draw (version 2,
#     tests/golden/one_tensor_requests.txt: their count and sha256, for a layer that holds, a pooled one, and a leak
#     whose shrink requests are included), so that a change of the draw is seen and versioned;
#  2. a report written now records the shorthand (signature.one_tensor) and the case draw, and replays through the
#     shorthand's dialect.
# usage: one_tensor_golden.sh PERMCHECK SOURCE_DIR
set -u
bin=$1
src=$2
py=python3
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
report = json.load(open(sys.argv[1]))
c = report["counterexample"]
assert report["signature"] == {"one_tensor": {"d": 3, "output": "sequence", "min_len": 1, "max_len": 8, "width": 3}}, report["signature"]
assert report["case_draw"] == 3, report.get("case_draw")
assert c["lengths"]["n"] == len(c["inputs"]["x"]) == len(c["permutations"]["n"]), c
assert "x" not in c, "the finding in one form"
print("ok: the shorthand's report records the shorthand and its case draw")
PY
replay "$work/now/report.json" 1 "$fault index-leak"
replay "$work/now/report.json" 0 "$fault identity"
exit $failed
