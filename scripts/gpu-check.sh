#!/usr/bin/env bash
# One call on the GPU machine: configure + build with CUDA, run every CTest
# test (GPU rows of conformance and stress included), run the GPU benchmarks,
# copy logs and JSON results to $OUT (or ./gpu-check-out), and print a short
# summary table last.
#
#   scripts/fetch-device-deps.sh          # once, on the networked machine
#   run: scripts/gpu-check.sh             # carry: [".deps"]
#
# Stages (STAGES, default "build test bench"; one device call has 10 minutes,
# so a full check is two or three calls on a warm machine, e.g.
# STAGES="build test", then STAGES="bench apps", then STAGES="eval"):
#   build  configure + build with CUDA        test  every CTest test
#   bench  GPU store benchmarks (issue 3)     apps  engine YCSB-B (issue 4),
#          and the server matrix (issue 12): kvcg-server GPU and CPU
#          backends next to redis-server, single-threaded and io-threads 8;
#          the kvcg rows again at 256 connections
#   server the server matrix alone (for SERVER_KEYS_LIST with 100 M keys)
#   cpu    CPU store vs libcuckoo on this host's cores (issue 2)
#   python the Python package on the GPU backend: pytest, NumPy batches vs
#          the C++ Store API (issue 15)
#   eval   the KVCG paper's figures (issue 5), JSON + PNG
#   redis  Redis 7.0's own test units against a GPU-backend kvcg-server
#          (issue 13; scripts/redis-suite.py, needs the carried tcl)
#   durability  persistence on the GPU backend (issue 14): the server's
#          persistence, damage and SIGKILL crash tests; restart time of
#          RESTART_KEYS (default 100 M) keys, GPU and CPU; server throughput
#          with appendonly off/everysec/always next to redis-server
# Environment: BENCHES (the bench stage's subset, default "kernel e2e latency
# expiry eviction"), SERVER_KEYS_LIST (default 2000000), SERVER_WALL (seconds
# for the server matrix, default 200), BUILD_DIR
# (default build-h100), CTEST_ARGS (extra ctest arguments, e.g. "-L gpu"),
# KEYS_LOG2 (kernel benchmark key count, default 27), JOBS, TEST_WALL (seconds
# for the whole ctest run, default 420), COMMIT (written into every result;
# pass it from the machine that calls the device: the device's copy of the
# repository may carry older git metadata than its files, so its own
# `git rev-parse` can name an earlier commit — such a tree is marked
# "+differs" below).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
STAGES=${STAGES:-"build test bench"}
BUILD_DIR=${BUILD_DIR:-build-h100}
JOBS=${JOBS:-$(nproc)}
KEYS_LOG2=${KEYS_LOG2:-27}
SUMMARY=()
note() { SUMMARY+=("$(printf '%-34s %s' "$1" "$2")"); }

# Carried Debian packages (no network here).
if [ -d .deps/root ]; then
  export PATH=$ROOT/.deps/root/usr/bin:$PATH
  export LD_LIBRARY_PATH=$ROOT/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# The commit the results are labelled with (see COMMIT above).
if [ -z "${COMMIT:-}" ]; then
  COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [ "$COMMIT" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    COMMIT="$COMMIT+differs"
  fi
fi
export COMMIT

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader | tee "$OUT/device.txt"
nvcc --version | tail -1 | tee -a "$OUT/device.txt"
echo "commit $COMMIT" | tee -a "$OUT/device.txt"
note "device" "$(head -1 "$OUT/device.txt")"

if [[ " $STAGES " == *" build "* ]]; then
  echo "== build ($BUILD_DIR)"
  t0=$(date +%s)
  # -k 0: build everything that builds; a teammate's broken target must not
  # keep the store's tests and benchmarks from running.
  build_tree() {  # source dir, build dir
    cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_PREFIX_PATH="$ROOT/.deps/root/usr" -DKVCG_WITH_CUDA=ON >>"$OUT/build.log" 2>&1 &&
      { cmake --build "$2" -j "$JOBS" -- -k 0 >>"$OUT/build.log" 2>&1; true; }
  }
  have_core() { [ -x "$1/tests/gpu/gpu_store_test" ] && [ -x "$1/bench/gpu/kvcg-bench-gpu" ]; }
  build_tree . "$BUILD_DIR"
  if ! have_core "$BUILD_DIR"; then
    tail -15 "$OUT/build.log"
    # The working tree travels with teammates' unfinished parts; when even the
    # build manifest breaks, still check the store from a copy without the
    # server-side parts.
    echo "== full build failed; retrying without the server parts"
    CORE=/tmp/kvcg-core
    rm -rf "$CORE" && mkdir -p "$CORE"
    tar -C "$ROOT" --exclude=./src/server --exclude=./tools/server --exclude=./tools/loadgen \
        --exclude=./tests/server --exclude=./tests/fuzz --exclude=./bench/server \
        --exclude="./build*" --exclude=./.git -cf - . | tar -C "$CORE" -xf -
    BUILD_DIR="$CORE/$BUILD_DIR"
    build_tree "$CORE" "$BUILD_DIR"
    CORE_NOTE=" (core copy without server parts)"
  fi
  failed=$(grep -c "^FAILED:" "$OUT/build.log")
  if have_core "$BUILD_DIR"; then
    note "build" "ok${CORE_NOTE:-}, $failed failed target(s) of others: $(grep '^FAILED:' "$OUT/build.log" | sed -E 's/.* ([^ ]+) *$/\1/' | xargs -n1 basename 2>/dev/null | sort -u | tr '\n' ' ') ($(( $(date +%s) - t0 )) s)"
  else
    tail -40 "$OUT/build.log"
    note "build" "FAILED (see build.log)"
    printf '\n== summary\n'; printf '%s\n' "${SUMMARY[@]}"
    exit 1
  fi
fi

if [[ " $STAGES " == *" test "* ]]; then
  echo "== tests"
  t0=$(date +%s)
  # Tests share the one GPU; several processes at once are fine (each store
  # caps its slab pool at 1 GiB in the conformance rows).
  (cd "$BUILD_DIR" && timeout "${TEST_WALL:-420}" ctest --output-on-failure -j 8 --timeout 600 ${CTEST_ARGS:-}) >"$OUT/ctest.log" 2>&1
  rc=$?
  grep -E "tests passed|tests failed|Total Test time" "$OUT/ctest.log"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Subprocess|Exception|SEGFAULT)" "$OUT/ctest.log" | head -40
  # Per label: how many ran on this machine and how many were skipped.
  for label in gpu conformance stress; do
    n=$(cd "$BUILD_DIR" && ctest -N -L "$label" 2>/dev/null | grep -c "Test *#")
    note "ctest -L $label" "$n tests"
  done
  skipped=$(grep -c "Not Run\|Skipped" "$OUT/ctest.log")
  note "ctest (all)" "$(grep -E 'tests passed' "$OUT/ctest.log" | head -1) [rc=$rc, skipped=$skipped, $(( $(date +%s) - t0 )) s]"
fi

if [[ " $STAGES " == *" bench "* ]]; then
  echo "== benchmarks"
  B=$BUILD_DIR/bench/gpu/kvcg-bench-gpu
  JSON=$OUT/json
  mkdir -p "$JSON"
  # Every document records the commit it measured.
  export COMMIT
  want() { [[ " ${BENCHES:-kernel e2e latency expiry eviction} " == *" $1 "* ]]; }
  run_bench() {  # name, args...   (WALL: seconds before it is killed, default BENCH_WALL or 150)
    local name=$1; shift
    if timeout "${WALL:-${BENCH_WALL:-150}}" "$B" "$@" >"$JSON/$name.json" 2>>"$OUT/bench.log"; then
      tail -3 "$OUT/bench.log"
    else
      echo "$name FAILED"; tail -5 "$OUT/bench.log"; note "$name" "FAILED"
    fi
  }
  # (a) The L-Slab kernel alone on device-resident fixed8 batches.
  want kernel && run_bench kernel_fixed8 kernel --keys-log2 "$KEYS_LOG2"
  # The same with 16 times the store's batch (8,650,752 ops): what the
  # kernels do once a launch per batch costs little (BENCHMARKS.md 2r).
  want kernel && [ "$KEYS_LOG2" -ge 26 ] &&
    run_bench kernel_fixed8_batch8650752 kernel --keys-log2 "$KEYS_LOG2" --batch 8650752
  # The same on general-layout batches (16-byte keys, 64-byte values; the
  # keys prefilled through the Store API).
  want kernel && run_bench kernel_general kernel --layout general --keys-log2 24
  # (b) The Store API end to end (NewBatch + AppendBulk + async Submit,
  # every result consumed on the submitting thread), fixed8 and general,
  # GPU and CPU backend in the same run, 2^24 keys, 14 submitter threads
  # (the host has 16 cores; the GPU store's pipeline thread takes one) with
  # 3 batches in flight each.
  want e2e && WALL=280 run_bench e2e e2e --keys-log2 24 --threads 14 --depth 3 --batch 65536 --seconds 3 --consume submitter
  # The same, each submitter cycling through 16 batches of columns made
  # before the clock starts (keys already in arrays: the Store API's own
  # cost per op, without the benchmark's key generation).
  want e2e && WALL=280 run_bench e2e_pregenerated e2e --keys-log2 24 --threads 14 --depth 3 --batch 65536 --seconds 3 --consume submitter --pregenerated 16
  # The same with server-sized batches of 512 ops.
  want e2e && WALL=200 run_bench e2e_batch512 e2e --keys-log2 24 --threads 14 --depth 3 --batch 512 --seconds 2 --consume submitter
  # (c) One 512-op 95/5 batch at a time, GPU and CPU, both layouts.
  want latency && WALL=200 run_bench latency latency --keys-log2 22 --iterations 20000
  # Active expiry: the sweep kernel over a general table of 2^KEYS_LOG2 keys,
  # half with a TTL (issue 13).
  want expiry && WALL=240 run_bench expiry expiry --keys-log2 "$KEYS_LOG2" --threads 14
  # Cache mode: hit ratio at 10% of the keys and throughput with / without
  # the limit, GPU and CPU backend on the same trace in the same run
  # (issue 13; a small trace, 200k keys and 1M requests: the quality replay
  # submits one op at a time).
  EV=$BUILD_DIR/bench/eviction/kvcg-bench-eviction
  want eviction && for be in gpu cpu; do
    if ! timeout 240 "$EV" --backend $be --keys 200000 --requests 1000000 --fractions 0.1 --threads 8 --batch 512 --repeats 5 \
        --commit "$COMMIT" --date "$(date +%F)" >"$JSON/eviction_$be.json" 2>>"$OUT/bench.log"; then
      echo "eviction_$be FAILED"; tail -5 "$OUT/bench.log"; note "eviction_$be" "FAILED"
    fi
  done
  python3 - "$JSON" >"$OUT/bench-summary.txt" <<'EOF'
import json, sys, os
out = sys.argv[1]
def load(n):
    try:
        return json.load(open(os.path.join(out, n + ".json")))
    except Exception as e:
        return None
for lay in ("fixed8", "fixed8_batch8650752", "general"):
    k = load("kernel_" + lay)
    if not k:
        continue
    slab = k.get("bound_random_slab256_gps")
    print(f"(a) kernel {lay}, {k['keys']} keys; bounds: random 8B read {k['bound_random_read8_gps']} G/s"
          + (f", random 256B slab read {slab} G/s" if slab is not None else "")
          + (f", cursor claims alone {k['bound_cursor_claims_gops']} G ops/s"
             if "bound_cursor_claims_gops" in k else ""))
    for w in k.get("window_tables", []):
        print(f"    window table load {w['load']}: {w['bytes_per_key']} B/key, a hit reads "
              f"{w['mean_probe_windows_hit']} windows, bound {w['bound_random_window64_gps']} G window reads/s"
              + (f" ({w['bound_random_window64_batch_gps']} in one-batch launches)"
                 if "bound_random_window64_batch_gps" in w else ""))
    for m in k["mixes"]:
        table = f"window {m['load']:.2f}" if m.get("table") == "window" else "lslab"
        streams = f" on {m['streams']} streams" if m.get("streams", 1) > 1 else ""
        share = (f" ({m['share_of_window64_bound']:.0%} of window64, {m['share_of_hit_bound']:.0%} of "
                 f"window64 / windows a hit)" if m.get("mix") == "get100" and "share_of_hit_bound" in m else "")
        print(f"    {table:<16} {m['mix']:<12} min_blocks {m['min_blocks_per_sm']} tile {m['tile']:2}: "
              f"{m['gops']:7.3f} G ops/s{streams}{share}")
for name in ("e2e", "e2e_pregenerated", "e2e_batch512"):
    e = load(name)
    if not e:
        continue
    print(f"(b) {name}: {e['keys']} keys, {e['submit_threads']} threads x {e['in_flight_per_thread']} in flight, "
          f"{e['ops_per_submit']}-op batches; pinned H2D {e['pcie_h2d_gbs']} GB/s, D2H {e['pcie_d2h_gbs']} GB/s")
    for lay in e["layouts"]:
        for m in lay["mixes"]:
            print(f"    {lay['layout']:<7} {m['mix']:<12} GPU {m['gpu_ops_per_s'] / 1e6:8.2f} M ops/s  "
                  f"CPU {m['cpu_ops_per_s'] / 1e6:8.2f} M ops/s  gpu/cpu {m['gpu_over_cpu']:.2f}  "
                  f"PCIe bound {m['bound_pcie_ops_per_s'] / 1e6:8.1f} M ops/s")
l = load("latency")
if l:
    print(f"(c) latency, {l['batch_ops']}-op {l['mix']} batch, one at a time (target p99 <= {l['target_p99_us']} us)")
    for r in l["results"]:
        print(f"    {r['backend']} {r['layout']:<7} resident {r.get('resident_blocks', 0)} p50 {r['p50_us']:7.1f} us  p99 {r['p99_us']:7.1f} us  "
              f"p999 {r['p999_us']:7.1f} us  max {r['max_us']:8.1f} us")
for be in ("gpu", "cpu"):
    v = load("eviction_" + be)
    if v:
        for h in v.get("hit_ratio", []):
            print(f"eviction {be}: cache {h['cache_fraction']}: exact LRU {h['exact-lru']:.4f}  " +
                  "  ".join(f"{p} {h[p]:.4f}" for p in ("allkeys-lru", "allkeys-lfu", "allkeys-random") if p in h))
        for wl in ("throughput", "throughput_ycsb_a"):
            t = v.get(wl, {})
            for p in ("allkeys-lru", "allkeys-lfu", "allkeys-random"):
                if p in t:
                    print(f"eviction {be} {wl}: {p} {t[p]['requests_per_s'] / 1e6:.2f} M req/s, "
                          f"{t[p]['ratio_to_no_limit']:.2f} of no limit ({t['no-limit']['requests_per_s'] / 1e6:.2f} M)")
x = load("expiry")
if x:
    print(f"expiry sweep, {x['keys']} keys (half volatile), {x['slabs']} slabs, HBM peak {x['hbm_peak_gbps']} GB/s")
    for r in x["results"]:
        print(f"    {r['sweep']:<8} removed {r['removed']:>10}  passes {r['passes']:>3}  kernels {r['kernel_ms']:9.3f} ms  "
              f"call {r['call_ms']:9.1f} ms  bound {r['bound_ms']:7.3f} ms")
EOF
  # The device tool brings back at most 8 files: one tarball for the JSON.
  tar -C "$JSON" -cf "$OUT/results.tar" . && rm -rf "$JSON"
fi

# Issue 12: kvcg-server on its GPU backend (default mode kvcg, and canonical),
# on its CPU backend, redis-server single-threaded and with io-threads 8
# (carried in .deps), same run, same client: 2 M keys, 32-byte values, 95%
# GET, uniform keys, pipelines 1 and 16, 64 connections, 8 loadgen threads,
# 8 I/O threads for each kvcg row. About 100 s for 2 M keys: the client's
# ceiling (the bound) before and after the rows, per server one fill and
# 3 s + 1 s warm-up per pipeline. SERVER_KEYS_LIST=2000000,100000000 adds 100 M keys: give that
# call to the "server" stage alone with SERVER_WALL=560 (redis-server fills on
# one thread, ~1-2 M keys/s).
server_matrix() {  # output folder [connections]
  local dir=$1 conns=${2:-64}
  if timeout "${SERVER_WALL:-240}" python3 bench/server/compare.py --machine h100 --out "$dir/server_compare.json" \
      --kvcg-server "$BUILD_DIR/tools/server/kvcg-server" --loadgen "$BUILD_DIR/tools/loadgen/kvcg-loadgen" \
      --sink "$BUILD_DIR/tools/loadgen/kvcg-resp-sink" \
      --servers kvcg-gpu,kvcg-gpu-canonical,kvcg-gpu-canonical-launch,kvcg-cpu,redis,redis-io8 --kvcg-args "--io-threads 8" \
      --keys-list "${SERVER_KEYS_LIST:-2000000}" --value-size 32 --get-ratio 0.95 --dist uniform \
      --pipelines 1,16 --connections "$conns" --threads 8 --sink-threads 8 --duration 3 --warmup 1 \
      --skip-redis-benchmark >>"$OUT/server.log" 2>&1; then
    echo "server matrix: ok" >>"$OUT/apps-summary.txt"
  else
    echo "server matrix FAILED or timed out (the JSON keeps the rows done)" | tee -a "$OUT/apps-summary.txt"
    tail -5 "$OUT/server.log"
  fi
  # compare.py rewrites its JSON after every row, summary included.
  [ -f "$dir/server_compare.json" ] || return
  python3 - "$dir/server_compare.json" >>"$OUT/apps-summary.txt" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["bound"]
after = b.get("after") or [None] * len(b["before"])  # absent when the run was cut off
print("server bound (client ceiling: kvcg-loadgen vs kvcg-resp-sink, %d cores; before/after the rows): %s" % (
    b["cores"], ", ".join(f"P={x['pipeline']} {x['ops_per_sec'] / 1e6:.2f}/" + (f"{y['ops_per_sec'] / 1e6:.2f}" if y
                          else "-") + " M ops/s" for x, y in zip(b["before"], after))))
for name, e in d["servers"].items():
    if "skipped" in e:
        print(f"server {name:<18} skipped: {e['skipped']}")
    for f in e.get("failed", []):
        print(f"server {name:<18} {f['keys']:>11,} keys FAILED: {f['error']}")
    for p in e.get("phases", []):
        print(f"server {name:<18} {p['keys']:>11,} keys: start {p['start_s']:.1f} s, fill {p['preload_s']:.1f} s, "
              f"measure {p['measure_s']:.1f} s")
r = lambda v: f"{v:5.2f}x" if v is not None else "    -"  # noqa: E731
ns = lambda v: f"{v:5.0f}" if v is not None else "    -"  # noqa: E731
for s in d["summary"]:
    print(f"server {s['server']:<18} {s['keys']:>11,} keys P={s['pipeline']:<2} {s['ops_per_sec'] / 1e6:6.2f} M ops/s"
          f"  p50/p99 {s['p50_us']:7.0f}/{s['p99_us']:7.0f} us  vs cpu {r(s['vs_kvcg_cpu'])}  vs redis "
          f"{r(s['vs_redis'])}  of bound {r(s['of_bound'])}  cpu ns/op server {ns(s.get('server_cpu_ns_per_op'))}"
          f" client {ns(s.get('client_cpu_ns_per_op'))}")
print(f"server matrix wall {d['phases']['total_s']:.0f} s")
PYEOF
  python3 bench/server/plot.py "$dir/server_compare.json" "$dir/server_compare.png" >>"$OUT/server.log" 2>&1 ||
    echo "server plot skipped (no matplotlib here; bench/server/plot.py draws it from the JSON)" >>"$OUT/server.log"
}

server_matrix_rows() {  # output folder, connections: kvcg rows only, pipeline 16
  local dir=$1 conns=$2
  timeout "${SERVER_WALL:-90}" python3 bench/server/compare.py --machine h100 --out "$dir/server_compare.json" \
      --kvcg-server "$BUILD_DIR/tools/server/kvcg-server" --loadgen "$BUILD_DIR/tools/loadgen/kvcg-loadgen" \
      --sink "$BUILD_DIR/tools/loadgen/kvcg-resp-sink" --servers kvcg-gpu,kvcg-gpu-canonical,kvcg-cpu \
      --kvcg-args "--io-threads 8" --keys-list "${SERVER_KEYS_LIST:-2000000}" --value-size 32 --get-ratio 0.95 \
      --dist uniform --pipelines 16 --connections "$conns" --threads 8 --sink-threads 8 --duration 3 --warmup 1 \
      --skip-redis-benchmark >>"$OUT/server.log" 2>&1 || echo "server rows at $conns connections FAILED" >>"$OUT/apps-summary.txt"
  [ -f "$dir/server_compare.json" ] && python3 - "$dir/server_compare.json" "$conns" >>"$OUT/apps-summary.txt" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["summary"]:
    print(f"server {s['server']:<18} {s['keys']:>11,} keys P={s['pipeline']:<2} conns {sys.argv[2]:>4} "
          f"{s['ops_per_sec'] / 1e6:6.2f} M ops/s  p50/p99 {s['p50_us']:7.0f}/{s['p99_us']:7.0f} us  "
          f"vs cpu " + (f"{s['vs_kvcg_cpu']:.2f}x" if s['vs_kvcg_cpu'] is not None else "-") +
          (f"  cpu ns/op server {s['server_cpu_ns_per_op']:.0f}" if s.get('server_cpu_ns_per_op') else ""))
PYEOF
}

if [[ " $STAGES " == *" server "* ]]; then
  echo "== server matrix (issue 12)"
  mkdir -p "$OUT/server"
  server_matrix "$OUT/server"
  tar -C "$OUT/server" -cf "$OUT/server.tar" . && rm -rf "$OUT/server"
  note "server" "see apps-summary.txt"
fi

if [[ " $STAGES " == *" apps "* ]]; then
  echo "== engine, server and CPU-store benchmarks"
  APPS=$OUT/apps
  mkdir -p "$APPS"
  c=$COMMIT
  # Issue 4: YCSB-B-like, 1 G key space, 10 M prefilled, 8-byte keys/values;
  # kvcg's prior model is the hottest 10 K keys (docs/BENCHMARKS.md 3c: an
  # L2-sized hot set beats the 0.1 % = 1 M-key one at every θ).
  if timeout 300 "$BUILD_DIR/bench/engine/kvcg-bench-engine" --backend gpu --layout fixed8 \
      --modes kvcg,gpu-only,cpu-only --thetas 0.5,0.9,0.99 --threads 12 --seconds 3 --warmup 1 \
      --load-fractions 0.5 --hot-fraction 1e-5 \
      >"$APPS/engine_ycsb_b.json" 2>>"$OUT/apps.log"; then
    python3 - "$APPS/engine_ycsb_b.json" >>"$OUT/apps-summary.txt" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    print(f"engine {r['mode']:<9} theta {r['theta']:<5} load {r['load_fraction']:<4} {r['throughput_mops']:8.2f} M ops/s"
          f"  hot mean/p99 {r['hot']['mean_us']:.1f}/{r['hot']['p99_us']:.1f} us"
          f"  cold mean/p99 {r['cold']['mean_us']:.1f}/{r['cold']['p99_us']:.1f} us")
PYEOF
  else
    echo "engine benchmark FAILED" | tee -a "$OUT/apps-summary.txt"; tail -5 "$OUT/apps.log"
  fi
  server_matrix "$APPS"
  # With more clients the GPU backend gathers larger batches (BENCHMARKS 4e):
  # the GPU rows and the CPU backend again at 256 connections, pipeline 16.
  mkdir -p "$APPS/conn256"
  SERVER_WALL=90 server_matrix_rows "$APPS/conn256" 256
  tar -C "$APPS" -cf "$OUT/apps.tar" . && rm -rf "$APPS"
  note "apps" "see apps-summary.txt"
fi

if [[ " $STAGES " == *" python "* ]]; then
  echo "== python package (issue 15) on the GPU backend"
  # The machine's python3 has pybind11, numpy and pytest: build _kvcg for it.
  PY=$(command -v python3)
  cmake -S . -B "$BUILD_DIR" -DKVCG_PYTHON="$PY" >>"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$JOBS" --target _kvcg >>"$OUT/build.log" 2>&1
  export PYTHONPATH=$ROOT/$BUILD_DIR/python:$ROOT/python
  if KVCG_TEST_BACKEND=auto timeout 300 "$PY" -m pytest -q -p no:cacheprovider python/tests >"$OUT/python.log" 2>&1; then
    note "python tests (GPU)" "$(tail -1 "$OUT/python.log")"
  else
    note "python tests (GPU)" "FAILED: $(tail -1 "$OUT/python.log")"
  fi
  # NumPy 1 M-op batches vs the C++ Store API, same shape, one thread, same run.
  c=$COMMIT
  COMMIT=$c timeout 200 "$BUILD_DIR/bench/gpu/kvcg-bench-gpu" e2e --layout fixed8 --keys-log2 24 \
      --threads 1 --depth 1 --batch 1048576 --seconds 2 --cpu 0 >"$OUT/python_cpp_ref.json" 2>>"$OUT/python.log"
  # redis-py (carried as a wheel in .whl, see README of the device tool) with
  # pipelines against kvcg-server and redis-server on the same keys.
  REDIS_ARGS=()
  if [ -d .whl ]; then
    "$PY" -m pip install -q --no-index --no-deps --target /tmp/whl-site .whl/*.whl >>"$OUT/python.log" 2>&1
    export PYTHONPATH=$PYTHONPATH:/tmp/whl-site
    REDIS_ARGS=(--kvcg-server "$BUILD_DIR/tools/server/kvcg-server" --redis-server "$(command -v redis-server)")
  fi
  if COMMIT=$c timeout 280 "$PY" bench/python/numpy_bench.py --backend gpu --keys 16777216 \
      --batch 1048576 --cpp-json "$OUT/python_cpp_ref.json" "${REDIS_ARGS[@]}" >"$OUT/python_numpy.json" 2>>"$OUT/python.log"; then
    note "python numpy bench" "$(python3 -c "import json;d=json.load(open('$OUT/python_numpy.json'));print(d['results'], 'vs C++', d.get('cpp_reference_mops'), 'ratio', d.get('get_many_vs_cpp'), 'redis-py', d.get('redis_py_pipeline'))")"
  else
    note "python numpy bench" "FAILED (see python.log)"
  fi
fi

if [[ " $STAGES " == *" cpu "* ]]; then
  echo "== CPU store benchmark"
  c=${COMMIT:-unknown}
  # Issue 2: the CPU store against libcuckoo on this host's 16 cores.
  if timeout 200 "$BUILD_DIR/bench/cpu/kvcg-bench-cpu" --keys 10000000 --seconds 2 --threads 1,4,8,16 \
      --batch 1,64 --machine "h100 host ($(nproc) cores)" --commit "$c" >"$OUT/cpu_store.json" 2>>"$OUT/cpu.log"; then
    note "cpu store" "ok (cpu_store.json)"
    grep -E "^\[.*threads" "$OUT/cpu.log" >"$OUT/cpu-summary.txt"
  else
    note "cpu store" "FAILED (see cpu.log)"
  fi
fi

if [[ " $STAGES " == *" durability "* ]]; then
  echo "== persistence (issue 14) on the GPU backend"
  c=$COMMIT
  PY=$(command -v python3)
  if [ -d .whl ]; then
    "$PY" -m pip install -q --no-index --no-deps --target /tmp/whl-site .whl/*.whl >>"$OUT/durability.log" 2>&1
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/whl-site
  fi
  if KVCG_TEST_SERVER_BACKEND=gpu timeout 300 "$PY" -m pytest -q -p no:cacheprovider \
      tests/server/py/test_persistence.py tests/server/py/test_persistence_damage.py tests/server/py/test_crash.py \
      --server="$BUILD_DIR/tools/server/kvcg-server" >"$OUT/durability-pytest.log" 2>&1; then
    note "persistence tests (GPU server)" "$(tail -1 "$OUT/durability-pytest.log")"
  else
    note "persistence tests (GPU server)" "FAILED: $(tail -1 "$OUT/durability-pytest.log")"
  fi
  if timeout 280 "$BUILD_DIR/bench/durability/kvcg-bench-restart" --keys "${RESTART_KEYS:-100000000}" \
      --backends gpu,cpu --dir "$ROOT/.restart-bench" >"$OUT/restart.json" 2>>"$OUT/durability.log"; then
    note "restart bench" "$(python3 -c "import json;d=json.load(open('$OUT/restart.json'));print('; '.join(f\"{r['backend']}: {r['loaded_keys']} keys save {r['save_seconds']:.1f}s restart {r['restart_seconds']:.1f}s\" for r in d['rows']))")"
  else
    note "restart bench" "FAILED (see durability.log)"; tail -5 "$OUT/durability.log"
  fi
  rm -rf "$ROOT/.restart-bench"
  if timeout 200 python3 bench/server/persistence.py --machine h100 --out "$OUT/server_persistence.json" \
      --kvcg-server "$BUILD_DIR/tools/server/kvcg-server" --loadgen "$BUILD_DIR/tools/loadgen/kvcg-loadgen" \
      --kvcg-args "--backend gpu --io-threads 8" --connections 64 --threads 8 --pipeline 16 \
      --duration 3 --warmup 1 >>"$OUT/durability.log" 2>&1; then
    note "server persistence bench" "$(python3 -c "import json;d=json.load(open('$OUT/server_persistence.json'));print(d['bound_fsyncs_per_sec'] and f\"disk {d['bound_fsyncs_per_sec']:.0f} fsync/s; \" or '', '; '.join(f\"{s} {k} {v['ops_per_sec']/1e6:.2f}M ({v.get('fraction_of_off',0):.0%})\" for s,b in d['servers'].items() for k,v in b.items()))")"
  else
    note "server persistence bench" "FAILED (see durability.log)"; tail -5 "$OUT/durability.log"
  fi
fi

if [[ " $STAGES " == *" redis "* ]]; then
  echo "== Redis's test units against kvcg-server (GPU backend)"
  if [ -x "$ROOT/.deps/root/usr/bin/tclsh8.6" ] && ! command -v tclsh >/dev/null; then
    mkdir -p "$ROOT/.deps/bin" && ln -sf "$ROOT/.deps/root/usr/bin/tclsh8.6" "$ROOT/.deps/bin/tclsh"
    export PATH=$ROOT/.deps/bin:$PATH TCL_LIBRARY=$ROOT/.deps/root/usr/share/tcltk/tcl8.6
  fi
  [ -d "$ROOT/.deps/redis-tests" ] && export KVCG_REDIS_TESTS=$ROOT/.deps/redis-tests
  if timeout 400 python3 scripts/redis-suite.py --backend gpu --durable \
      --server "$BUILD_DIR/tools/server/kvcg-server" --show-failures >"$OUT/redis-suite.log" 2>&1; then
    note "redis suite (gpu)" "$(grep -iE '^total' "$OUT/redis-suite.log" | tail -1)"
  else
    note "redis suite (gpu)" "rc!=0: $(grep -iE '^total' "$OUT/redis-suite.log" | tail -1) (see redis-suite.log)"
  fi
  tail -15 "$OUT/redis-suite.log"
fi

if [[ " $STAGES " == *" eval "* ]]; then
  echo "== the paper's experiments"
  if timeout 560 python3 scripts/eval/run.py --figure all --full --out "$OUT/eval" \
      --driver "$BUILD_DIR/bench/eval/kvcg-ycsb" --plot >"$OUT/eval.log" 2>&1; then
    note "eval" "ok"
  else
    note "eval" "FAILED or timed out (see eval.log)"; tail -5 "$OUT/eval.log"
  fi
  tar -C "$OUT" -cf "$OUT/eval.tar" eval && rm -rf "$OUT/eval"
fi

printf '\n== summary\n'
printf '%s\n' "${SUMMARY[@]}"
cat "$OUT/device.txt" >>"$OUT/build.log" 2>/dev/null; rm -f "$OUT/device.txt"
[ -f "$OUT/bench-summary.txt" ] && cat "$OUT/bench-summary.txt"
[ -f "$OUT/apps-summary.txt" ] && cat "$OUT/apps-summary.txt"
[ -f "$OUT/cpu-summary.txt" ] && cat "$OUT/cpu-summary.txt"
exit 0
