#!/usr/bin/env bash
# C++ layers served with <permcheck/serve.h> (examples/cpp/), audited by `permcheck audit --exec` as a user's
# would be: self-attention holds (batched: the first answer announces its batches), with a position signal it is
# violated, its mean-pooled form holds invariance; cross-attention over named tensors holds, and with a position
# signal on its memory it is violated along the memory's axis. Malformed requests each get an error answer with
# their id, and the adapter answers every line and exits 0; a reader that goes away ends it quietly.
#   serve_cpp.sh PERMCHECK SERVE_ATTENTION SERVE_CROSS_ATTENTION
set -euo pipefail
permcheck=$1
one=$2
named=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "serve_cpp.sh: $*" >&2; exit 1; }

# audit EXIT_CODE VERDICT ARGS...: the audit exits with EXIT_CODE and its report.json says VERDICT.
audit() {
  local want_rc=$1 want=$2 rc=0
  shift 2
  rm -rf "$work/report"
  "$permcheck" audit "$@" --report "$work/report" >"$work/out" 2>&1 || rc=$?
  local verdict
  verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/report/report.json") ||
    { cat "$work/out" >&2; fail "no report for: $*"; }
  [[ $rc == "$want_rc" && $verdict == "$want" ]] ||
    { cat "$work/out" >&2; fail "expected $want (exit $want_rc), got $verdict (exit $rc): permcheck audit $*"; }
  echo "serve_cpp.sh: $want (exit $rc): $*"
}
field() {  # a field of the last report, by a Python expression over j
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$work/report/report.json" "$1"
}

audit 0 holds --exec "$one" --dim 4 --cases 60
[[ $(field 'j["dtype"]') == float64 ]] || fail "the float64 layer was not judged in float64: $(field 'j["dtype"]')"
# Batched: some cases were asked again alone to confirm the batched answers, which only a batched run does.
confirmed=$(field 'j["details"]["audit"]["confirmed_alone"]')
(( confirmed > 0 )) || fail "the audit sent no batch (confirmed_alone $confirmed): serve() did not announce its batches"
audit 1 violated --exec "$one --positions" --dim 4 --cases 60
audit 0 holds --exec "$one --pool" --dim 4 --output pooled --cases 60
signature=(--axis n=1..8 --axis m=1..8 --input q:n,4 --input mem:m,4 --output y:n,4 --cases 60)
audit 0 holds --exec "$named" "${signature[@]}"
audit 1 violated --exec "$named --memory-positions" "${signature[@]}"
grep -q "permutations m (" "$work/out" || { cat "$work/out" >&2; fail "the memory's axis m was not permuted in the finding"; }

# Malformed requests: one error answer each, with the request's id (null when there is none to read).
deep=$(python3 -c 'print("[" * 100000 + "]" * 100000)')
{
  echo '{"id":1,"x":[[1,2],[3]]}'
  echo 'not json'
  echo '[1,2]'
  echo '{"id":4}'
  echo '{"id":5,"x":[[1,"a"]]}'
  echo '{"id":6,"inputs":{"x":[[1,2]]},"shapes":{"x":[2,2]},"outputs":["y"]}'
  echo '{"id":7,"inputs":{"x":[[1,2]],"z":[3]},"outputs":["y"]}'
  echo '{"id":8,"x":[[1,2]],"stacked":2}'
  printf '{"id":9,"x":[[1,2]],"bad utf8":"\xff"\n'
  echo "$deep"
  echo "{\"id\":11,\"x\":$deep}"
  echo '{"id":12,"batch":[{"x":[[1,2]]},{"x":[[1],[2,3]]},7]}'
  echo '{"id":13,"x":[[0.5,-1]]}'
} >"$work/requests"
rc=0
"$one" <"$work/requests" >"$work/answers" 2>"$work/errors" || rc=$?
[[ $rc == 0 ]] || { cat "$work/errors" >&2; fail "the adapter exited with $rc on malformed requests"; }
python3 - "$work/answers" <<'PY' || fail "the answers to malformed requests are wrong (above)"
import json, sys
answers = [json.loads(line) for line in open(sys.argv[1])]
want_ids = [1, None, None, 4, 5, 6, 7, 8, None, None, 11, 12, 13]
ok = len(answers) == len(want_ids)
for answer, want in zip(answers, want_ids):
    if answer.get("id") != want:
        ok = False
    elif want == 12:  # a batch: its items answered one by one, the bad ones with their own error
        items = answer.get("batch", [])
        ok &= len(items) == 3 and "y" in items[0] and "error" in items[1] and "error" in items[2]
    elif want == 13:  # a good request after them all is answered
        ok &= len(answer.get("y", [])) == 1
    else:
        ok &= isinstance(answer.get("error"), str) and len(answer) == 2 + ("batch" in answer)
if not ok:
    print("\n".join(json.dumps(a)[:300] for a in answers), file=sys.stderr)
    sys.exit(1)
PY
grep -q 'request 1: "x", row 1: expected an array of 2 numbers' "$work/errors" ||
  { cat "$work/errors" >&2; fail "the error was not said on stderr"; }
echo "serve_cpp.sh: 13 malformed or mixed requests answered, each error with its id"

# The reader goes away after the first answer: the adapter ends quietly (no SIGPIPE death), exit 0.
for k in $(seq 1 2000); do echo "{\"id\":$k,\"x\":[[1,2],[3,4]]}"; done >"$work/many"
set +o pipefail
"$one" <"$work/many" 2>"$work/errors" | head -c 10 >/dev/null
status=${PIPESTATUS[0]}
set -o pipefail
[[ $status == 0 ]] || { cat "$work/errors" >&2; fail "the adapter exited with $status when its reader went away"; }
echo "serve_cpp.sh: a closed pipe ends the adapter with exit 0"
