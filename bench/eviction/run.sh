#!/usr/bin/env bash
# Runs kvcg-bench-eviction as committed under bench/results/cpu/ and plots it:
#   bench/eviction/run.sh [build dir] [python with matplotlib]
# Writes bench/results/cpu/<date>-<commit>-eviction/{eviction.json,
# eviction_throughput_2threads.json,hit_ratio.png}. Takes ~10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
PY=${2:-.venv/bin/python}
C=$(git rev-parse --short HEAD)
D=$(date +%F)
OUT=bench/results/cpu/$D-$C-eviction
mkdir -p "$OUT"
B=$BUILD/bench/eviction/kvcg-bench-eviction
"$B" --commit "$C" --date "$D" --threads 1 --repeats 5 > "$OUT/eviction.json"
"$B" --commit "$C" --date "$D" --fractions "" --threads 2 --repeats 5 > "$OUT/eviction_throughput_2threads.json"
if "$PY" -c "import matplotlib" 2>/dev/null; then
  "$PY" bench/eviction/plot.py "$OUT/eviction.json" "$OUT/hit_ratio.png"
else
  echo "no matplotlib in $PY: plot skipped (bench/eviction/plot.py $OUT/eviction.json out.png)" >&2
fi
