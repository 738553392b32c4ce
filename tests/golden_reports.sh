#!/bin/bash
# Reports written by earlier versions of permcheck still replay (tests/golden/reports/, README.md there): each
# line of replays.txt names a report, the exit status `permcheck replay` must give, and the command (the audited
# program or its fixed twin) that an audit's report is replayed through.
# usage: golden_reports.sh PERMCHECK SOURCE_DIR
set -u
bin=$1
src=$2
py=python3
dir="$src/tests/golden/reports"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
cd "$src" || exit 2
while read -r file want command; do
  case "$file" in "#"*|"") continue ;; esac
  command=${command//\$FAULT/$py tests/adapters/fault.py}
  command=${command//\$RECORD/$py tests/adapters/record.py}
  command=${command//\$EX\//$py examples/adapters/}
  if [ -n "$command" ]; then "$bin" replay "$dir/$file" --exec "$command" > "$out" 2>&1
  else "$bin" replay "$dir/$file" > "$out" 2>&1; fi
  code=$?
  if [ "$code" != "$want" ]; then
    echo "FAIL: replay $file ${command:+through '$command' }exited $code, expected $want"
    cat "$out"
    failed=1
  else
    echo "ok: replay $file ${command:+through '$command' }exits $want"
  fi
done < "$dir/replays.txt"
exit $failed
