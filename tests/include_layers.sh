#!/usr/bin/env bash
# The include rule of docs/ARCHITECTURE.md ("Folders"): each folder includes only the folders below it (and
# itself). Prints every include that breaks it and exits 1; exits 0 when there is none.
#   tests/include_layers.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# folder: the folders its files may include, itself first; an entry with a slash is one header of a folder, not all
# of it (audit/ reads of check/ only the records of a check, check_result.h, which hold its progress type).
declare -A allowed=(
  [scalars]="scalars"
  [io]="io"
  [layers]="layers scalars"
  [cases]="cases layers scalars"
  [properties]="properties cases layers scalars"
  [check]="check properties cases layers scalars"
  [audit]="audit check/check_result.h properties cases layers scalars"
  [proofs]="proofs check properties cases layers scalars"
  [report]="report audit check properties cases layers scalars io"
  [adapters]="adapters audit check/check_result.h properties cases layers scalars io"
  [include]="audit check/check_result.h cases layers scalars report"
)

broken=0
for folder in "${!allowed[@]}"; do
  [ -d "$folder" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -E 's/.*#include "([^"/]+)\/.*/\1/' <<<"$line")
    header=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
    ok=0
    for a in ${allowed[$folder]}; do [ "$target" = "$a" ] || [ "$header" = "$a" ] && ok=1; done
    if [ $ok = 0 ]; then
      echo "$line   <- $folder/ may include only: ${allowed[$folder]}"
      broken=1
    fi
  done < <(grep -rn '^#include "[^"/]*/' "$folder" --include='*.h' --include='*.cpp' || true)
done
exit $broken
