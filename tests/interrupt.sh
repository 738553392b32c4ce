#!/usr/bin/env bash
# Progress and Ctrl-C on the command line (issue 14, item 3), with the slow mode of tests/adapters/fault.py:
#   - under a pseudo-terminal (script) an audit draws a progress line on stderr; in a pipe it draws none;
#   - SIGINT during a long audit: exit 130, report.json with the verdict `interrupted` and the cases run, no
#     adapter process left, no Python traceback, and a sentence that says what was interrupted.
#   interrupt.sh PERMCHECK FAULT_PY
set -euo pipefail
set -m  # job control: a background job keeps SIGINT (without it, bash starts it with SIGINT ignored)
permcheck=$1
fault=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "interrupt.sh: $*" >&2; exit 1; }

adapter="python3 $fault slow 20"
script -qec "env -u CI $permcheck audit --exec '$adapter' --dim 2 --cases 30" /dev/null >"$work/pty.log" 2>&1 ||
  fail "the audit under a pseudo-terminal failed: $(cat "$work/pty.log")"
grep -q "audit: [0-9]*/30 cases, [0-9]* calls" "$work/pty.log" || fail "no progress line on a terminal: $(cat "$work/pty.log")"
grep -q "holds after 30 cases" "$work/pty.log" || fail "the audit under a pseudo-terminal did not finish"
env -u CI "$permcheck" audit --exec "$adapter" --dim 2 --cases 10 >"$work/pipe.out" 2>"$work/pipe.err"
if grep -q "calls" "$work/pipe.err"; then fail "a progress line in a pipe: $(cat "$work/pipe.err")"; fi

FAULT_PID_FILE=$work/adapter.pid "$permcheck" audit --exec "python3 $fault slow 200" --dim 2 --cases 1000 \
  --report "$work/report" >"$work/int.out" 2>"$work/int.err" &
audit=$!
for _ in $(seq 100); do [[ -s $work/adapter.pid ]] && break; sleep 0.1; done
[[ -s $work/adapter.pid ]] || fail "the adapter never started"
sleep 1.5  # a few cases
kill -INT "$audit"
rc=0
wait "$audit" || rc=$?
[[ $rc == 130 ]] || fail "exit $rc after SIGINT, expected 130: $(cat "$work/int.err")"
verdict=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], r["cases"])' \
          "$work/report/report.json")
[[ $verdict =~ ^interrupted\ [1-9][0-9]*$ ]] || fail "report.json says '$verdict', expected interrupted and cases run"
adapter_pid=$(cat "$work/adapter.pid")
if kill -0 "$adapter_pid" 2>/dev/null; then fail "the adapter (pid $adapter_pid) is still running"; fi
if grep -q Traceback "$work/int.err"; then fail "a Python traceback on stderr: $(cat "$work/int.err")"; fi
grep -q "interrupted by Ctrl-C (SIGINT) after" "$work/int.err" || fail "no word of the interruption: $(cat "$work/int.err")"
echo "interrupt.sh: progress on a terminal only; SIGINT gave exit 130 and report verdict '$verdict'"
