#!/usr/bin/env bash
# The public API includes no RapidCheck header, directly or through what it includes (issue 11, item 7): the
# preprocessor's list of the files <permcheck/audit.h> and <permcheck/gtest.h> read must name no rapidcheck file.
#   public_headers.sh CXX SOURCE_DIR INCLUDE_DIR...
set -euo pipefail
cxx=$1
source=$2
shift 2
flags=(-std=c++20 -I"$source/include" -I"$source")
# /usr/include is searched anyway (and -isystem on it would break libstdc++'s #include_next).
for dir in "$@"; do [[ $dir == /usr/include ]] || flags+=(-isystem "$dir"); done
for header in audit.h gtest.h; do
  deps=$("$cxx" "${flags[@]}" -M -x c++ - <<<"#include <permcheck/$header>")
  if grep -qi rapidcheck <<<"$deps"; then
    echo "public_headers.sh: <permcheck/$header> includes RapidCheck:" >&2
    tr ' ' '\n' <<<"$deps" | grep -i rapidcheck >&2
    exit 1
  fi
  # The check must have read the API itself, or an empty list would pass it.
  grep -q "check/blackbox.h" <<<"$deps" || { echo "public_headers.sh: <permcheck/$header> was not read" >&2; exit 1; }
  echo "<permcheck/$header>: $(tr ' ' '\n' <<<"$deps" | grep -c '\.h') headers, none of RapidCheck"
done
