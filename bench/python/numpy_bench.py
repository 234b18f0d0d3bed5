"""NumPy batches through the kvcg Python package vs the C++ Store API (issue 15).

Measures `store.get_many` / `store.put_many` on fixed8 uint64 NumPy arrays of
--batch ops (1 M by default) against a store prefilled with --keys keys, one
Python thread, and prints one JSON document. The C++ reference — the same
shape through `Store::NewBatch` + `AppendBulk` + `Execute`, one thread, same
batch size — is `kvcg-bench-gpu e2e --threads 1 --depth 1 --batch N`, which
scripts/gpu-check.sh runs in the same call; this script only reports the
Python side and, with --cpp-json, the ratio against that file.

Bound: the PCIe bound printed by kvcg-bench-gpu e2e applies (same bytes per
op); the Python layer adds only per-batch work (argument checks, one array
allocation per output column).

    PYTHONPATH=build/python:python python3 bench/python/numpy_bench.py --backend gpu
"""

import argparse
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

import kvcg


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_py_rates(cmd, keys, seconds, depth):
    """GET/SET throughput of one redis-py client with pipelines of `depth`
    against the server started by `cmd` (a list; "{port}" and "{dir}", a
    throw-away directory for persistence files, are filled in),
    over the same 8-byte keys (uint64 little-endian) as the NumPy run."""
    import redis  # redis-py; carried as a wheel on the GPU machine

    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="numpy-bench-")
    # "{dir}": a throw-away directory for a server's persistence files.
    proc = subprocess.Popen([c.replace("{port}", str(port)).replace("{dir}", data_dir) for c in cmd],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port)
        for _ in range(200):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        raw = np.arange(keys, dtype=np.uint64)
        kb = [raw[i:i + 1].tobytes() for i in range(keys)]
        vb = [(raw[i:i + 1] * np.uint64(3)).tobytes() for i in range(keys)]
        for first in range(0, keys, 10000):
            p = r.pipeline(transaction=False)
            for i in range(first, min(keys, first + 10000)):
                p.set(kb[i], vb[i])
            p.execute()
        rng = np.random.default_rng(2)
        out = {}
        for op in ("get", "set"):
            ops = 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                idx = rng.integers(0, keys, size=depth)
                p = r.pipeline(transaction=False)
                for i in idx:
                    if op == "get":
                        p.get(kb[i])
                    else:
                        p.set(kb[i], vb[i])
                res = p.execute()
                if op == "get" and any(v is None for v in res):
                    sys.exit("redis-py GET: a preloaded key was missing")
                ops += depth
            out[op + "_mops"] = round(ops / (time.perf_counter() - t0) / 1e6, 3)
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(data_dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--keys", type=int, default=1 << 24)
    ap.add_argument("--batch", type=int, default=1 << 20)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--cpp-json", default="", help="kvcg-bench-gpu e2e JSON to compare with")
    ap.add_argument("--kvcg-server", default="", help="kvcg-server binary: redis-py against it")
    ap.add_argument("--redis-server", default="", help="redis-server binary: redis-py against it")
    ap.add_argument("--redis-keys", type=int, default=1 << 20)
    ap.add_argument("--pipeline", type=int, default=1000)
    args = ap.parse_args()

    rng = np.random.default_rng(1)
    out = {"benchmark": "python_numpy_fixed8", "date": datetime.datetime.utcnow().isoformat() + "Z",
           "commit": os.environ.get("COMMIT", "unknown"), "keys": args.keys, "batch_ops": args.batch,
           "threads": 1, "api": "kvcg.Store.get_many/put_many on uint64 NumPy arrays (AppendBulk)"}
    with kvcg.open(backend=args.backend, layout="fixed8", expected_keys=args.keys) as store:
        info = store.info()
        out["backend"], out["device"] = info["backend"], info["device"]
        t0 = time.perf_counter()
        for first in range(0, args.keys, args.batch):
            k = np.arange(first, min(args.keys, first + args.batch), dtype=np.uint64)
            store.put_many(k, k * np.uint64(3))
        out["prefill_s"] = round(time.perf_counter() - t0, 3)
        if len(store) != args.keys:
            sys.exit(f"prefill: {len(store)} keys, want {args.keys}")
        keys = rng.integers(0, args.keys, size=args.batch, dtype=np.uint64)
        results = []
        for name in ("get_many", "put_many"):
            ops = 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < args.seconds:
                if name == "get_many":
                    values, found = store.get_many(keys)
                    if not found.all() or not np.array_equal(values, keys * np.uint64(3)):
                        sys.exit("get_many returned a wrong value")
                else:
                    prev, found = store.put_many(keys, keys * np.uint64(3))
                    if not found.all():
                        sys.exit("put_many: a prefilled key was not found")
                ops += len(keys)
            secs = time.perf_counter() - t0
            results.append({"op": name, "mops": round(ops / secs / 1e6, 2)})
        out["results"] = results
    if args.cpp_json:
        cpp = json.load(open(args.cpp_json))
        ref = {}
        for layout in cpp.get("layouts", []):
            if layout.get("layout") != "fixed8":
                continue
            for m in layout.get("mixes", []):
                ref[m.get("mix")] = round(m.get("gpu_ops_per_s", 0) / 1e6, 2)
        out["cpp_reference_mops"] = ref
        get_ref = ref.get("get100")
        if get_ref:
            out["get_many_vs_cpp"] = round(results[0]["mops"] / get_ref, 3)
    # The same keys through a Redis client with pipelining, one Python thread.
    clients = {}
    if args.kvcg_server:
        clients["kvcg-server"] = redis_py_rates(
            [args.kvcg_server, "--port", "{port}", "--backend", args.backend, "--save", "", "--dir", "{dir}"],
            args.redis_keys,
            args.seconds, args.pipeline)
    if args.redis_server:
        clients["redis-server"] = redis_py_rates(
            [args.redis_server, "--port", "{port}", "--save", "", "--appendonly", "no"],
            args.redis_keys, args.seconds, args.pipeline)
    if clients:
        out["redis_py_pipeline"] = {"keys": args.redis_keys, "depth": args.pipeline,
                                    "servers": clients}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
