#!/usr/bin/env bash
# Runs one build folder's CTest suite, then prints why any tests were skipped
# (GPU tests on a machine without a GPU say so in their output).
set -uo pipefail
dir=${1:?build dir}
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 600
rc=$?
log="$dir/Testing/Temporary/LastTest.log"
if [ -f "$log" ]; then
  reasons=$(grep -ohE "(Skipped|SKIPPED)[^:]*: .*|GPU backend unavailable: .*|skipped: .*" "$log" | sed 's/^ *//' | sort | uniq -c | sort -rn | head -20)
  if [ -n "$reasons" ]; then
    echo "== skipped tests in $dir, by reason =="
    echo "$reasons"
  fi
fi
exit $rc
