#!/usr/bin/env bash
# `permcheck audit-torch` (issue 14, item 3), served by the Python torch first on PATH: a progress line under a pseudo-terminal (script); Ctrl-C exits 130
# with a sentence that says what was interrupted, and with --report a report.json whose verdict is `interrupted`
# with the cases run.
#   interrupt_torch.sh PERMCHECK
set -euo pipefail
set -m  # job control: a background job keeps SIGINT (without it, bash starts it with SIGINT ignored)
permcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "interrupt_torch.sh: $*" >&2; exit 1; }

script -qec "env -u CI $permcheck audit-torch mha --cases 30" /dev/null >"$work/pty.log" 2>&1 ||
  fail "audit-torch under a pseudo-terminal failed: $(cat "$work/pty.log")"
grep -q "audit: [0-9]*/30 cases, [0-9]* calls" "$work/pty.log" || fail "no progress line on a terminal: $(cat "$work/pty.log")"

"$permcheck" audit-torch encoder-layer --cases 1000000 --report "$work/report" >"$work/out" 2>"$work/err" &
job=$!
# The audit starts once its Python server is up (after the describing run, which ends with --describe): wait for
# the server, then a few cases. A Ctrl-C before would find no audit to stop.
for _ in $(seq 120); do
  pgrep -f -- "_torch_serve --builtin encoder-layer .*--seed 1$" >/dev/null && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.5
done
sleep 3
kill -0 "$job" 2>/dev/null || fail "the audit ended before it was interrupted: $(cat "$work/out" "$work/err")"
kill -INT "$job"
rc=0
wait "$job" || rc=$?
[[ $rc == 130 ]] || fail "exit $rc after SIGINT, expected 130: $(cat "$work/err")"
grep -q "permcheck audit-torch: interrupted by Ctrl-C (SIGINT) after" "$work/err" ||
  fail "no word of the interruption: $(cat "$work/err")"
verdict=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], r["cases"])' \
          "$work/report/report.json")
[[ $verdict =~ ^interrupted\ [0-9]+$ ]] || fail "report.json says '$verdict', expected interrupted"
echo "interrupt_torch.sh: SIGINT gave exit 130 and report verdict '$verdict'"
