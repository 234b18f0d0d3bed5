#!/usr/bin/env bash
# Runs a fuzz target for a bounded time on a copy of its seed corpus (the
# committed corpus is not modified).
#   tests/fuzz/run_fuzz.sh <fuzzer-binary> [seconds=60] [corpus=tests/fuzz/corpus]
set -euo pipefail
bin=$(realpath "${1:?usage: run_fuzz.sh <fuzzer-binary> [seconds] [corpus]}")
secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=${3:-$here/corpus}
cp "$corpus"/* "$work"/
cd "$work"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 "$work"
