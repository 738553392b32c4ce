#!/usr/bin/env bash
# Progress and Ctrl-C for the white-box commands (issue 14, item 3), as tests/interrupt.sh does for the audit:
#   - under a pseudo-terminal (script), `check` and `prove --all` draw a progress line on stderr; in a pipe, none;
#   - SIGINT during a long `check --report DIR`: exit 130, report.json with the verdict `interrupted` and the
#     cases run, and a sentence that says what was interrupted;
#   - SIGINT during `prove --all`: exit 130 and a sentence naming how many layers were done;
#   - SIGINT during the verdict table: exit 130, a sentence, and summary.json marked interrupted.
#   interrupt_check.sh PERMCHECK
set -euo pipefail
set -m  # job control: a background job keeps SIGINT (without it, bash starts it with SIGINT ignored)
permcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "interrupt_check.sh: $*" >&2; exit 1; }
cd "$work"  # the failure database (.permcheck) stays in here

script -qec "env -u CI $permcheck check attention --cases 200 --max-len 16 --no-db" /dev/null >pty.log 2>&1 ||
  fail "the check under a pseudo-terminal failed: $(cat pty.log)"
grep -q "check: [0-9]*/200 cases" pty.log || fail "no progress line for check on a terminal: $(cat pty.log)"
grep -q "holds in all 200 cases" pty.log || fail "the check under a pseudo-terminal did not finish: $(cat pty.log)"
env -u CI "$permcheck" check attention --cases 50 --no-db >pipe.out 2>pipe.err
if grep -q "cases" pipe.err; then fail "a progress line in a pipe: $(cat pipe.err)"; fi

script -qec "env -u CI $permcheck prove --all --n 3 --dim 2" /dev/null >prove-pty.log 2>&1 ||
  fail "prove --all under a pseudo-terminal failed: $(cat prove-pty.log)"
grep -q "prove: [0-9]*/[0-9]* layers" prove-pty.log || fail "no progress line for prove --all: $(cat prove-pty.log)"
grep -q "every layer certified as the verdict matrix expects" prove-pty.log ||
  fail "prove --all under a pseudo-terminal did not finish as expected: $(cat prove-pty.log)"

# A check that runs for minutes: exact arithmetic, a million short cases (n <= 16), so that some have finished in
# the 2 s before SIGINT even under the sanitizers (the first case starts at once: lengths are made per case).
"$permcheck" check attention --exact --cases 1000000 --max-len 16 --no-db --report report \
  >check.out 2>check.err &
job=$!
sleep 2
kill -0 "$job" 2>/dev/null || fail "the long check ended before it was interrupted: $(cat check.out check.err)"
kill -INT "$job"
rc=0
wait "$job" || rc=$?
[[ $rc == 130 ]] || fail "check: exit $rc after SIGINT, expected 130: $(cat check.err)"
verdict=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], r["cases"])' report/report.json)
[[ $verdict =~ ^interrupted\ [1-9][0-9]*$ ]] || fail "report.json says '$verdict', expected interrupted and cases run"
grep -q "interrupted by Ctrl-C (SIGINT) after [0-9]* of 1000000 cases" check.err ||
  fail "check: no word of the interruption: $(cat check.err)"
grep -q "INTERRUPTED after" check.out || fail "check: the result line does not say INTERRUPTED: $(cat check.out)"

"$permcheck" prove --all --n 24 --dim 8 >prove.out 2>prove.err &  # about 3 s of CPU, layer by layer
job=$!
sleep 1
kill -0 "$job" 2>/dev/null || fail "prove --all ended before it was interrupted: $(cat prove.out prove.err)"
kill -INT "$job"
rc=0
wait "$job" || rc=$?
[[ $rc == 130 ]] || fail "prove --all: exit $rc after SIGINT, expected 130: $(cat prove.err)"
grep -q "interrupted by Ctrl-C (SIGINT) after [0-9]* of [0-9]* layers" prove.err ||
  fail "prove --all: no word of the interruption: $(cat prove.err)"
# The verdict table: exit 130, a word of it, and summary.json marked interrupted.
"$permcheck" --cases 1000000 --report table >table.out 2>table.err &
job=$!
sleep 1.5
kill -0 "$job" 2>/dev/null || fail "the table ended before it was interrupted: $(cat table.out table.err)"
kill -INT "$job"
rc=0
wait "$job" || rc=$?
[[ $rc == 130 ]] || fail "table: exit $rc after SIGINT, expected 130: $(cat table.err)"
grep -q "the verdict table was interrupted by Ctrl-C (SIGINT) after [0-9]* rows\?" table.err ||
  fail "table: no word of the interruption: $(cat table.err)"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["interrupted"] is True' table/summary.json ||
  fail "table: summary.json is not marked interrupted"
echo "interrupt_check.sh: check and prove --all show progress on a terminal only; SIGINT gave exit 130," \
     "check's report verdict '$verdict'"
