#!/usr/bin/env bash
# Runs the CPU store benchmark at full size (10 M keys prefilled) and keeps
# the JSON under bench/results/<machine>/ (default: cpu).
set -euo pipefail
cd "$(dirname "$0")/../.."
machine=${MACHINE:-cpu}
out_dir=bench/results/$machine
mkdir -p "$out_dir"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
out=$out_dir/cpu_store-$(date -u +%Y%m%d-%H%M%S).json
build/bench/cpu/kvcg-bench-cpu --keys "${KEYS:-10000000}" --seconds "${SECONDS_PER_POINT:-3}" \
  --machine "$machine ($(nproc) cores, $(uname -m))" --commit "$commit" "$@" >"$out"
echo "wrote $out"
