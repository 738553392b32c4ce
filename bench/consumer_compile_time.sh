#!/usr/bin/env bash
# How long a user's test file takes to compile with permcheck's GoogleTest macros, against the same file without
# permcheck: a test file including <permcheck/gtest.h> that audits a layer with EXPECT_EQUIVARIANT, and the baseline,
# one including only <gtest/gtest.h> and <Eigen/Dense> that tests the same layer with a plain EXPECT_TRUE. Both are
# compiled as a consumer's Release build compiles them (g++ -std=c++20 -O3 -DNDEBUG -c), RUNS times each, the runs
# interleaved so that both see the same load; prints the best and the median wall time of each, and the difference.
#   bench/consumer_compile_time.sh [RUNS] [SOURCE_DIR...]
# RUNS defaults to 5; each SOURCE_DIR (default: this tree) is a permcheck source tree whose include/ and internal
# headers the permcheck file is compiled against (give two to compare trees). CXX overrides g++. The machine's
# load matters: run it alone (flock /work/tools/build.lock on a shared machine).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
shift || true
trees=("$@")
[[ ${#trees[@]} -gt 0 ]] || trees=("$PWD")
cxx=${CXX:-g++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-std=c++20 -O3 -DNDEBUG -c -isystem /usr/include/eigen3)

layer='
// A DeepSets-style layer: each position mixed with the mean of all positions.
Eigen::MatrixXd mix_with_mean(const Eigen::MatrixXd& x) {
    const Eigen::RowVectorXd mean = x.colwise().mean();
    return (x.rowwise() + mean).array().tanh().matrix();
}'
cat >"$work/with_permcheck.cpp" <<CPP
#include <permcheck/gtest.h>
$layer
TEST(MyLayer, IsEquivariant) {
    permcheck::AuditOptions options;
    options.d = 3;
    EXPECT_EQUIVARIANT(mix_with_mean, options);
}
CPP
cat >"$work/baseline.cpp" <<CPP
#include <gtest/gtest.h>
#include <Eigen/Dense>
$layer
TEST(MyLayer, IsFinite) { EXPECT_TRUE(mix_with_mean(Eigen::MatrixXd::Random(5, 3)).allFinite()); }
CPP

seconds() {  # the wall time of one compile
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
stats() {  # best and median of the numbers on stdin
  sort -n | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                      printf "best %.2f s, median %.2f s", v[1], m }'
}
: >"$work/baseline.times"
for ((r = 1; r <= runs; r++)); do
  seconds "$cxx" "${flags[@]}" "$work/baseline.cpp" -o "$work/baseline.o" >>"$work/baseline.times"
  for k in "${!trees[@]}"; do
    tree=$(cd "${trees[$k]}" && pwd)
    seconds "$cxx" "${flags[@]}" -I"$tree/include" -I"$tree" "$work/with_permcheck.cpp" -o "$work/with.o" \
      >>"$work/tree$k.times"
  done
done
echo "$cxx ${flags[*]} FILE.cpp, $runs runs each, interleaved; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
base_median=$(stats <"$work/baseline.times" | sed 's/.*median \([0-9.]*\) s/\1/')
echo "  <gtest/gtest.h> + <Eigen/Dense>:           $(stats <"$work/baseline.times")"
for k in "${!trees[@]}"; do
  median=$(stats <"$work/tree$k.times" | sed 's/.*median \([0-9.]*\) s/\1/')
  printf '  <permcheck/gtest.h> (%s): %s, median %+.2f s over the baseline\n' "${trees[$k]}" \
    "$(stats <"$work/tree$k.times")" "$(echo "$median - $base_median" | bc)"
done
