#!/usr/bin/env bash
# Installs the main build into a temporary prefix and builds and tests tests/consumer/ against it, as a user
# would: the consumer sees permcheck only through find_package(permcheck) and the prefix.
#   run.sh BUILD_DIR CONSUMER_SOURCE_DIR [cmake configure arguments for the consumer, e.g. sanitizer flags]
set -euo pipefail
build=$1
source=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The source tree must not leak into the installed package.
if grep -rq "$(cd "$source/../.." && pwd)" "$work/prefix/lib/cmake/permcheck"; then
  echo "run.sh: the installed package refers to the source tree" >&2
  exit 1
fi
cmake -S "$source" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" "$@" >/dev/null
cmake --build "$work/build" -j2
ctest --test-dir "$work/build" --output-on-failure
