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

# A process is gone when it no longer runs; a zombie waiting for init to reap it counts as gone. A process killed
# with SIGKILL is gone once the kernel next schedules it, which on a loaded machine can be a moment after the
# signal: after a second Ctrl-C permcheck kills its adapters and ends without waiting for them. So a process counts
# as still running only if it runs for 5 s more (a left adapter sleeps for 1000).
running() {
  local state
  for _ in $(seq 50); do
    state=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $state != Z* ]] || return 1
    sleep 0.1
  done
}
# stopped NAME EXPECTED_VERDICT_REGEX: after the audit of the background job `audit` got its signal(s), it exited
# 130, its report (when one is expected) says the verdict, and no adapter process it started (listed in the pid
# file, one line each) nor their `sleep 1000` children still run.
stopped() {
  local name=$1 expected=$2 rc=0
  wait "$audit" || rc=$?
  [[ $rc == 130 ]] || fail "$name: exit $rc, expected 130: $(cat "$work/$name.err")"
  if [[ -n $expected ]]; then
    local got
    got=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], r["counterexample"] is not None)' \
          "$work/$name/report.json") || fail "$name: no report"
    [[ $got =~ $expected ]] || fail "$name: report.json says '$got', expected /$expected/"
  fi
  local pid group
  while read -r pid; do
    if running "$pid"; then fail "$name: adapter $pid still runs"; fi
  done <"$work/$name.pid"
  while read -r group; do  # the `sleep 1000` a hung adapter started is in its group
    for pid in $(pgrep -g "$group"); do
      if running "$pid"; then fail "$name: $(ps -o cmd= -p "$pid") of the adapter's process group still runs"; fi
    done
  done <"$work/$name.groups"
  if grep -q Traceback "$work/$name.err"; then fail "$name: a Python traceback: $(cat "$work/$name.err")"; fi
}
# wait_pids NAME COUNT: until COUNT adapter processes have started; notes their process groups.
wait_pids() {
  for _ in $(seq 300); do
    if [[ -s $work/$1.pid && $(wc -l <"$work/$1.pid") -ge $2 ]]; then
      local pid
      while read -r pid; do ps -o pgid= -p "$pid" | tr -d ' ' || true; done <"$work/$1.pid" | grep . >"$work/$1.groups" || true
      return
    fi
    sleep 0.1
  done
  fail "$1: $2 adapter processes never started"
}

# SIGINT while the adapter hangs in a request, with a --timeout far beyond the test's own: the wait for the
# answer is interrupted (exit 130, a report), not waited out.
FAULT_PID_FILE=$work/hang.pid "$permcheck" audit --exec "python3 $fault hang 3" --dim 2 --cases 100 --timeout 3000 \
  --report "$work/hang" >"$work/hang.out" 2>"$work/hang.err" &
audit=$!
wait_pids hang 1
sleep 1  # into the hang (3 answers take milliseconds)
kill -INT "$audit"
stopped hang '^interrupted False$'
grep -q "interrupted by Ctrl-C (SIGINT) after" "$work/hang.err" || fail "hang: no word of the interruption"

# SIGTERM while a pipelined block of stacked requests is under way (the adapter hangs in its third stacked
# request, the requests after it already written): the stop is read within the block.
FAULT_PID_FILE=$work/stacked.pid "$permcheck" audit --exec "python3 $fault stacked-hang 3" --axis n=1..8 \
  --input x:n,1,2 --output y:n,1,2 --cases 400 --timeout 3000 --report "$work/stacked" \
  >"$work/stacked.out" 2>"$work/stacked.err" &
audit=$!
wait_pids stacked 1
sleep 1
kill -TERM "$audit"
stopped stacked '^interrupted False$'
grep -q "interrupted by SIGTERM after" "$work/stacked.err" || fail "stacked: no word of the interruption"

# SIGINT during the tap step (the violation found and shrunk, the tap process hanging in its tap request): exit
# 130, the verdict interrupted with the counterexample kept, both adapter processes gone.
FAULT_PID_FILE=$work/taps.pid "$permcheck" audit --exec "python3 $fault taps-hang" --dim 2 --cases 50 --timeout 3000 \
  --report "$work/taps" >"$work/taps.out" 2>"$work/taps.err" &
audit=$!
wait_pids taps 2
sleep 1
kill -INT "$audit"
stopped taps '^interrupted True$'
grep -q "interrupted while the taps of the violated counterexample below were taken" "$work/taps.out" ||
  fail "taps: the output does not say the tap step was interrupted: $(cat "$work/taps.out")"

# Two SIGINTs at once while the adapter hangs: the second ends permcheck at once, and the adapter with it
# (whichever signal gets there first, no adapter outlives permcheck). The first alone may already have ended
# permcheck when the second is sent (it stops at once while the adapter hangs), and two signals close together
# may reach it as one: all three ways end as below, so the second kill may find no process.
FAULT_PID_FILE=$work/twice.pid "$permcheck" audit --exec "python3 $fault hang 3" --dim 2 --cases 100 --timeout 3000 \
  >"$work/twice.out" 2>"$work/twice.err" &
audit=$!
wait_pids twice 1
sleep 1
kill -INT "$audit"
kill -INT "$audit" 2>/dev/null || true
stopped twice ''

echo "interrupt.sh: progress on a terminal only; SIGINT gave exit 130 and report verdict '$verdict'; a hung request," \
     "a pipelined stacked block and the tap step stop at once with a report; two SIGINTs leave no adapter running"
