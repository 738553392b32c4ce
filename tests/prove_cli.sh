#!/usr/bin/env bash
# `permcheck prove` as a subprocess: the exit status of one case and the lines its standard output must (or must
# not) hold. One ctest test per CASE (tests/CMakeLists.txt); the case names are the tests' names.
#   prove_cli.sh CASE PERMCHECK
# Prints each failed expectation with the command's output, and exits 1 if any failed.
set -u
if [ $# -ne 2 ]; then
  echo "usage: prove_cli.sh CASE PERMCHECK" >&2
  exit 2
fi
case_name=$1
permcheck=$2
failures=0
fail() {
  echo "prove_cli.sh $case_name: $*" >&2
  failures=$((failures + 1))
}

# Runs `permcheck prove ARGS...`, its standard output in $out (also printed), its exit status in $code.
prove() {
  echo "+ permcheck prove $*"
  out=$("$permcheck" prove "$@")
  code=$?
  printf '%s\n' "$out"
}
expect_exit() {
  [ "$code" -eq "$1" ] || fail "exit status $code, expected $1"
}
# grep's basic regular expression, on the output's lines.
expect_line() {
  printf '%s\n' "$out" | grep -q -- "$1" || fail "no line matches '$1'"
}
expect_no_line() {
  if printf '%s\n' "$out" | grep -q -- "$1"; then fail "a line matches '$1', expected none"; fi
}

case $case_name in
  # One named layer exits as `permcheck check` does: 1 an exact witness, 2 bad input.
  ProveExits1OnAnExactWitness)
    prove causal-attention --n 4 --d 2
    expect_exit 1
    ;;
  ProveExits2OnBadInput)
    prove attention --n 1
    expect_exit 2
    ;;
  ProveSmtExits1OnAWitnessAndPrintsItsSizesWithoutADump)
    prove attention+learned --smt --n 3 --d 2
    expect_exit 1
    expect_line '^as expected  attention+learned at n = 3, d = 2'
    expect_line '^  n witness (exact witness search, Z3 not asked): permutation (0 1) of axis n, output y at'
    expect_line 'dyadic weights of seed [0-9]*, exact rationals'
    expect_no_line 'case -1'
    ;;
  # `prove --all --smt` covers the rational layers over named inputs, each axis as expected (issue 12).
  ProveAllSmtCoversTheLayersOverNamedInputs)
    prove --all --smt --n 3 --d 2
    expect_exit 0
    expect_line '^as expected  cross-attention at m = 3 n = 3'
    expect_line '^as expected  message-passing+edge-order-incidence'
    expect_line '^as expected  attention+key-padding-mask at n = 3, 7 mask assignments'
    expect_line 'n: proved equivariant (all real inputs and weights, every mask assignment'
    expect_no_line UNEXPECTED
    ;;
  # One SMT-LIB file per generator and mask assignment (3 at n = 2, where (0 1) is both generators), which the z3
  # command-line tool re-checks unsat.
  ProveSmtEmitsOneFilePerMaskAssignmentOfALayerOverNamedInputs)
    dir=$(mktemp -d) || { echo "prove_cli.sh $case_name: mktemp -d failed" >&2; exit 1; }
    trap 'rm -rf "$dir"' EXIT
    prove attention+key-padding-mask --smt --n 2 --emit-smt "$dir"
    expect_exit 0
    files=$(ls "$dir" | wc -l)
    [ "$files" -eq 3 ] || fail "$files files in the --emit-smt directory, expected 3: $(ls "$dir")"
    smt=$dir/attention+key-padding-mask-n2-along-n-transposition-pad01.smt2
    answer=$(/usr/bin/z3 -T:120 "$smt")
    [ "$answer" = unsat ] || fail "z3 answered '$answer' for $(basename "$smt"), expected unsat"
    ;;
  # Without --n, a layer over named inputs is proved at length 4, as `prove --all --smt` proves it (not at 8).
  ProveSmtProvesALayerOverNamedInputsAtLength4WithoutN)
    prove attention+key-padding-mask --smt
    expect_exit 0
    expect_line '^as expected  attention+key-padding-mask at n = 4, 15 mask assignments'
    ;;
  # `prove LAYER` takes a layer over named inputs by name: 1 a witness on some axis.
  ProveALayerOverNamedInputsExits1OnAWitness)
    prove cross-attention+memory-positions --n 3
    expect_exit 1
    ;;
  *)
    echo "prove_cli.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

if [ "$failures" -ne 0 ]; then
  echo "prove_cli.sh $case_name: $failures expectation(s) failed" >&2
  exit 1
fi
exit 0
