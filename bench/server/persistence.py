#!/usr/bin/env python3
"""Server throughput with persistence on, next to persistence off, for
kvcg-server and redis-server in the same run on the same host (issue 14).

Settings, each on a fresh server in its own temporary directory:
  off       appendonly no,  save ""
  everysec  appendonly yes, appendfsync everysec   (target: >= 90% of off)
  always    appendonly yes, appendfsync always     (target: >= 50% of off, group commit)
The load is kvcg-loadgen (closed loop, same keys, GET ratio, value size and
pipeline for both servers). The physical bound of `always` is the disk's
fsync rate: the script measures it (fsyncs/s of a 4 KiB append, one thread)
and prints it with the results. Writes one JSON file.

  bench/server/persistence.py --machine cpu --duration 3
  bench/server/persistence.py --machine h100 --kvcg-args "--backend gpu --io-threads 16" \
      --connections 64 --threads 8 --pipeline 16
"""
import argparse
import os
import platform
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients  # noqa: E402  (same folder: the load generator)
import compare  # noqa: E402  (the JSON record)
import servers  # noqa: E402  (server start/stop)

SETTINGS = {
    "off": ["--appendonly", "no", "--save", ""],
    "everysec": ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
    "always": ["--appendonly", "yes", "--appendfsync", "always", "--save", ""],
}


def fsync_rate(directory, seconds=1.0):
    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    block = b"x" * 4096
    n, t0 = 0, time.time()
    while time.time() - t0 < seconds:
        os.write(fd, block)
        os.fdatasync(fd)
        n += 1
    os.close(fd)
    os.unlink(path)
    return n / (time.time() - t0)


def main():
    build = servers.BUILD
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machine", default="cpu")
    ap.add_argument("--kvcg-server", default=os.path.join(build, "tools/server/kvcg-server"))
    ap.add_argument("--loadgen", default=os.path.join(build, "tools/loadgen/kvcg-loadgen"))
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--kvcg-args", default="--backend auto")
    ap.add_argument("--redis-args", default="")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--dist", default="uniform")
    ap.add_argument("--theta", type=float, default=0.99)
    ap.add_argument("--get-ratio", type=float, default=0.95)
    ap.add_argument("--value-size", type=int, default=32)
    ap.add_argument("--settings", default="off,everysec,always")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    record = {"benchmark": "server_persistence", "machine": args.machine, "host": platform.node(),
              "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "settings": {k: v for k, v in vars(args).items() if k != "out"}, "servers": {}}
    with tempfile.TemporaryDirectory(prefix="kvcg-persist-bench-") as scratch:
        record["bound_fsyncs_per_sec"] = fsync_rate(scratch)
        print(f"disk: {record['bound_fsyncs_per_sec']:.0f} fsyncs/s (4 KiB append, one thread)", file=sys.stderr)
        programs = [("kvcg", servers.start_kvcg, args.kvcg_server, args.kvcg_args.split()),
                    ("redis", servers.start_redis, args.redis_server, args.redis_args.split())]
        for name, start, binary, extra in programs:
            if name == "redis" and not shutil.which(binary) and not os.path.exists(binary):
                print(f"redis-server not found ({binary}); skipping it", file=sys.stderr)
                continue
            rows = {}
            for setting in args.settings.split(","):
                d = tempfile.mkdtemp(dir=scratch)
                proc, port, banner = start(binary, extra + SETTINGS[setting] + ["--dir", d])
                try:
                    r = clients.measure(args, port, args.pipeline, args.keys, f"{name} {setting}", preload=True)
                finally:
                    servers.stop(proc)
                rows[setting] = {"ops_per_sec": r["ops_per_sec"], "latency_us": r["latency_us"], "banner": banner}
                print(f"{name:5s} {setting:8s} {r['ops_per_sec']:>12.0f} ops/s  p99 {r['latency_us']['p99']:.0f} us",
                      file=sys.stderr)
            off = rows.get("off", {}).get("ops_per_sec")
            if off:
                for setting, row in rows.items():
                    row["fraction_of_off"] = row["ops_per_sec"] / off
            record["servers"][name] = rows
    compare.write_record(record, args.out or os.path.join(servers.ROOT, "bench", "results", args.machine,
                                                          "server_persistence.json"))


if __name__ == "__main__":
    main()
