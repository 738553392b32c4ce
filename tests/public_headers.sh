#!/usr/bin/env bash
# The public API includes no RapidCheck, Boost or GMP header, directly or through what it includes: the
# preprocessor's list of the files <permcheck/audit.h>, <permcheck/gtest.h> and <permcheck/serve.h> read must name
# none of theirs, so that a user's test file compiles without Boost.Multiprecision's templates (and an installed
# package needs no Boost). And cmake/install.cmake installs exactly the project's headers that list names.
#   public_headers.sh CXX SOURCE_DIR INCLUDE_DIR...
set -euo pipefail
cxx=$1
source=$2
shift 2
flags=(-std=c++20 -I"$source/include" -I"$source")
# /usr/include is searched anyway (and -isystem on it would break libstdc++'s #include_next).
for dir in "$@"; do [[ $dir == /usr/include ]] || flags+=(-isystem "$dir"); done
# The Boost and GMP headers must be reachable, or an include of them would fail instead of being listed.
"$cxx" "${flags[@]}" -fsyntax-only -x c++ - <<<'#include <boost/multiprecision/gmp.hpp>' ||
  { echo "public_headers.sh: Boost.Multiprecision and GMP are not reachable with these flags" >&2; exit 1; }
read_by_api=""
for header in audit.h gtest.h serve.h; do
  deps=$("$cxx" "${flags[@]}" -M -x c++ - <<<"#include <permcheck/$header>" | tr -s ' \\' '\n\n')
  forbidden=$(grep -Ei 'rapidcheck|/boost/|/gmp(xx)?\.h$' <<<"$deps" || true)
  if [[ -n $forbidden ]]; then
    echo "public_headers.sh: <permcheck/$header> includes RapidCheck, Boost or GMP ($(wc -l <<<"$forbidden") headers):" >&2
    head -20 <<<"$forbidden" >&2
    exit 1
  fi
  # The check must have read the API itself, or an empty list would pass it.
  grep -q "cases/signature.h" <<<"$deps" || { echo "public_headers.sh: <permcheck/$header> was not read" >&2; exit 1; }
  echo "<permcheck/$header>: $(grep -c '\.h' <<<"$deps") headers, none of RapidCheck, Boost or GMP"
  read_by_api+=$(grep "^$source/" <<<"$deps" | grep -v "^$source/include/permcheck/" | sed "s|^$source/||")$'\n'
done
# cmake/install.cmake's list of internal headers (the foreach before the install(TARGETS) call) is what they read.
installed=$(sed -n '/^foreach(header /,/)$/p' "$source/cmake/install.cmake" | sed 's/foreach(header//; s/)$//' |
            tr -s ' \n' '\n\n' | grep . | sort -u)
read_by_api=$(grep . <<<"$read_by_api" | sort -u)
if [[ $installed != "$read_by_api" ]]; then
  echo "public_headers.sh: cmake/install.cmake installs other headers than the public ones read:" >&2
  diff <(echo "$installed") <(echo "$read_by_api") | sed 's/^</  installed, not read:/; s/^>/  read, not installed:/' >&2
  exit 1
fi
echo "cmake/install.cmake installs exactly the $(wc -l <<<"$installed") internal headers they read"
