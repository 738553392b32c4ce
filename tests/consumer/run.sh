#!/usr/bin/env bash
# Installs the main build into a temporary prefix (stripped, as the README says) and builds and tests
# tests/consumer/ against it, as a user would: the consumer sees permcheck only through find_package(permcheck)
# and the prefix. Then tests/consumer/cli_only/, a project that needs only the command, configured with the
# package search confined to the prefix, where no Eigen, Boost, RapidCheck or GMP is.
#   run.sh BUILD_DIR CONSUMER_SOURCE_DIR [cmake configure arguments for the consumer, e.g. sanitizer flags]
set -euo pipefail
build=$1
source=$2
shift 2
work=$(mktemp -d)
[[ -n ${KEEP_WORK:-} ]] || trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --strip >/dev/null
fail() { echo "run.sh: $*" >&2; exit 1; }
# The source tree must not leak into the installed package.
if grep -rq "$(cd "$source/../.." && pwd)" "$prefix/lib/cmake/permcheck"; then
  fail "the installed package refers to the source tree"
fi
# Only what a user needs: no test fixture, no search, nothing that includes RapidCheck, Boost or GMP; a stripped
# command.
for internal in mutants.h make_family.h engine.h search.h generators.h catalog.h symbolic.h scalar.h weights.h compare.h; do
  [[ -z $(find "$prefix/include" -name "$internal") ]] || fail "$internal is installed"
done
[[ -z $(grep -rliE "#include [<\"]rapidcheck" "$prefix/include") ]] || fail "an installed header includes RapidCheck"
[[ -z $(grep -rliE "#include [<\"](boost/|gmp)" "$prefix/include") ]] || fail "an installed header includes Boost or GMP"
[[ -f $prefix/include/permcheck/serve.h ]] || fail "<permcheck/serve.h> is not installed"
[[ -f $prefix/include/permcheck/audit.h && -f $prefix/include/permcheck/gtest.h ]] || fail "the API is not installed"
if readelf -S "$prefix/bin/permcheck" | grep -q debug_info; then fail "bin/permcheck carries debug information"; fi
# The ready Python adapter is installed, and the installed command puts the installed copy on the PYTHONPATH of
# the programs it runs: a file that only calls serve() is audited with no PYTHONPATH of its own.
adapter=$(realpath "$prefix")/share/permcheck/python/permcheck_adapter.py
[[ -f $adapter ]] || fail "permcheck_adapter.py is not installed"
printf '%s\n' "import sys" "import permcheck_adapter" "print(permcheck_adapter.__file__, file=sys.stderr)" \
  "permcheck_adapter.serve(lambda x: x)" >"$work/served.py"
if ! (unset PYTHONPATH; cd "$work" && "$prefix/bin/permcheck" audit --exec "python3 $work/served.py" \
        --dim 2 --cases 5 >/dev/null 2>"$work/served.err"); then
  cat "$work/served.err" >&2
  fail "the installed permcheck did not audit a layer served by permcheck_adapter"
fi
grep -qxF "$adapter" "$work/served.err" || { cat "$work/served.err" >&2; fail "the adapter was not imported from $adapter"; }

cmake -S "$source" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" "$@" >/dev/null
cmake --build "$work/build" -j2
ctest --test-dir "$work/build" --output-on-failure

# The C++ replay hint explain() printed for a padding audit, pasted into a program as a user would: it compiles
# against the installed package and finds the same case (verdict, case index, length).
mkdir -p "$work/hint"
PERMCHECK_HINT_FILE="$work/hint/hint.txt" "$work/build/consumer_tests" \
  --gtest_filter='ConsumerKernel.ThePaddingAuditsReplayHintIsWritten' >/dev/null
expect=$(sed -n 's|^// expect: ||p' "$work/hint/hint.txt")
{ echo '#include "masked_kernel.h"'; echo '#include <cstdio>'; echo 'int main() {'
  echo '    const auto layer = consumer::pads_in_the_denominator;'
  grep -v '^// expect: ' "$work/hint/hint.txt"
  echo '    std::printf("%s %d %d\n", permcheck::verdict_name(again.verdict), again.counterexample->case_index,'
  echo '                again.counterexample->lengths.at("n"));'; echo '}'; } >"$work/hint/hint.cpp"
printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'project(permcheck_hint LANGUAGES CXX)' \
  'find_package(permcheck 0.9 CONFIG REQUIRED)' 'add_executable(hint hint.cpp)' \
  "target_include_directories(hint PRIVATE \"$source\")" 'target_link_libraries(hint PRIVATE permcheck::permcheck)' \
  >"$work/hint/CMakeLists.txt"
cmake -S "$work/hint" -B "$work/hint/build" -DCMAKE_PREFIX_PATH="$prefix" "$@" >/dev/null
cmake --build "$work/hint/build" >/dev/null || { cat "$work/hint/hint.cpp" >&2; fail "the replay hint does not compile"; }
got=$("$work/hint/build/hint")
[[ $got == "violated $expect" ]] || { cat "$work/hint/hint.cpp" >&2; fail "the replay hint found '$got', not 'violated $expect'"; }
echo "run.sh: the C++ replay hint of a padding audit compiles and finds the same case ($got)"

# The package search confined to the prefix: the cli component configures and runs; the api component, which
# needs Eigen, must not (or the confinement hides nothing and proves nothing).
confined=(-DCMAKE_FIND_ROOT_PATH="$prefix" -DCMAKE_PREFIX_PATH=/ -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY
          -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY
          -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER)
cmake -S "$source/cli_only" -B "$work/cli" --no-warn-unused-cli "${confined[@]}" >/dev/null
ctest --test-dir "$work/cli" --output-on-failure
if cmake -S "$source" -B "$work/confined-api" "${confined[@]}" "$@" >"$work/confined-api.log" 2>&1; then
  fail "the api component configured with the search confined to the prefix: the confinement proves nothing"
fi
grep -q Eigen3 "$work/confined-api.log" || { cat "$work/confined-api.log" >&2; fail "the confined api failed, but not on Eigen"; }
echo "run.sh: the cli component configures without Eigen, Boost, RapidCheck or GMP"
