#!/usr/bin/env python3
"""Compare kvcg-server with redis-server at equal client settings.

For each server (kvcg-server, then redis-server 7 with persistence off) on
the same host, runs our closed-loop kvcg-loadgen for every pipeline depth
given, and redis-benchmark (GET/SET) at the same connections and depth.
kvcg-server's own stage timers (INFO kvcg) are recorded after its runs, to
say where the time goes. Writes one JSON file under bench/results/<machine>/.

  bench/server/compare.py --machine cpu --duration 3 --pipelines 1,16
  bench/server/compare.py --machine h100 --kvcg-args "--backend gpu --io-threads 16" \
      --connections 64 --threads 8 --pipelines 1,16,64

Needs only the Python standard library.
"""
import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on port {port}")


def resp_command(port, *args):
    """Sends one command, returns the raw reply bytes (good enough for INFO)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    payload = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)
    s.sendall(payload)
    data = b""
    s.settimeout(2)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
            if data.startswith(b"$") and data.endswith(b"\r\n") and data.count(b"\r\n") >= 2:
                header, _, rest = data.partition(b"\r\n")
                if len(rest) >= int(header[1:]) + 2:
                    break
            elif not data.startswith(b"$") and data.endswith(b"\r\n"):
                break
    except socket.timeout:
        pass
    s.close()
    return data.decode(errors="replace")


def parse_info(text):
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#") and not line.startswith("$"):
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def start_kvcg(binary, extra):
    # Persistence off as for redis-server below (no snapshot rules, appendonly
    # no) and a throw-away --dir so nothing is written into the checkout,
    # unless `extra` says otherwise (bench/server/persistence.py does; a flag
    # may be given only once).
    data_dir = None
    defaults = []
    if "--save" not in extra:
        defaults += ["--save", ""]
    if "--appendonly" not in extra:
        defaults += ["--appendonly", "no"]
    if "--dir" not in extra:
        data_dir = tempfile.mkdtemp(prefix="kvcg-bench-")
        defaults += ["--dir", data_dir]
    p = subprocess.Popen([binary, "--port", "0", "--loglevel", "warning"] + defaults + extra, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.data_dir = data_dir
    line = p.stdout.readline()
    if not line.startswith("kvcg-server ready:"):
        p.kill()
        raise RuntimeError("kvcg-server did not start: " + line + p.stderr.read())
    port = int(line.split("listening=")[1].split()[0].rsplit(":", 1)[1])
    wait_port(port)
    return p, port, line.strip()


def start_redis(binary, extra):
    port = free_port()
    p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--loglevel", "warning"] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(port)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    return p, port, version


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    if getattr(p, "data_dir", None):
        shutil.rmtree(p.data_dir, ignore_errors=True)


def run_loadgen(args, port, pipeline, label):
    cmd = [args.loadgen, "--port", str(port), "--connections", str(args.connections), "--threads",
           str(args.threads), "--pipeline", str(pipeline), "--duration", str(args.duration), "--warmup",
           str(args.warmup), "--keys", str(args.keys), "--dist", args.dist, "--theta", str(args.theta),
           "--get-ratio", str(args.get_ratio), "--value-size", str(args.value_size), "--label", label]
    if args.preload:
        cmd.append("--preload")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.duration * 4 + 600)
    if p.returncode not in (0, 3):
        raise RuntimeError(f"kvcg-loadgen failed: {p.stderr}")
    return json.loads(p.stdout)


def run_redis_benchmark(args, port, pipeline):
    n = max(args.benchmark_requests, args.connections * pipeline * 10)
    cmd = [args.redis_benchmark, "-p", str(port), "-c", str(args.connections), "-P", str(pipeline), "-n", str(n),
           "-r", str(args.keys), "-d", str(args.value_size), "-t", "set,get", "--csv"]
    if args.benchmark_threads > 0:
        cmd += ["--threads", str(args.benchmark_threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    out = {}
    for line in p.stdout.splitlines():
        cols = [c.strip('"') for c in line.split(",")]
        if len(cols) >= 2 and cols[0] in ("SET", "GET"):
            entry = {"requests_per_sec": float(cols[1])}
            names = ["avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms", "p99_latency_ms",
                     "max_latency_ms"]
            for name, v in zip(names, cols[2:]):
                entry[name] = float(v)
            out[cols[0]] = entry
    return {"command": " ".join(cmd[1:]), "requests": n, "results": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build = os.path.join(ROOT, "build")
    ap.add_argument("--machine", default="cpu", help="results go to bench/results/<machine>/")
    ap.add_argument("--kvcg-server", default=os.path.join(build, "tools/server/kvcg-server"))
    ap.add_argument("--loadgen", default=os.path.join(build, "tools/loadgen/kvcg-loadgen"))
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--redis-benchmark", default=shutil.which("redis-benchmark") or "redis-benchmark")
    ap.add_argument("--kvcg-args", default="--backend auto", help="extra kvcg-server flags (quoted)")
    ap.add_argument("--redis-args", default="", help="extra redis-server flags (quoted)")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--threads", type=int, default=4, help="kvcg-loadgen threads")
    ap.add_argument("--benchmark-threads", type=int, default=0, help="redis-benchmark --threads (0: its default)")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--dist", default="uniform", choices=["uniform", "zipf"])
    ap.add_argument("--theta", type=float, default=0.99)
    ap.add_argument("--get-ratio", type=float, default=0.9)
    ap.add_argument("--value-size", type=int, default=8)
    ap.add_argument("--preload", action="store_true", default=True)
    ap.add_argument("--benchmark-requests", type=int, default=200000)
    ap.add_argument("--skip-redis-benchmark", action="store_true")
    ap.add_argument("--out", default="", help="output file (default bench/results/<machine>/server_compare.json)")
    args = ap.parse_args()
    pipelines = [int(p) for p in args.pipelines.split(",")]
    for tool in (args.kvcg_server, args.loadgen):
        if not os.path.exists(tool):
            sys.exit(f"missing {tool}: build it first (ninja kvcg-server kvcg-loadgen)")

    record = {
        "benchmark": "server_compare",
        "machine": args.machine,
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
        "servers": {},
    }
    servers = [("kvcg", start_kvcg, args.kvcg_server, args.kvcg_args.split()),
               ("redis", start_redis, args.redis_server, args.redis_args.split())]
    for name, start, binary, extra in servers:
        if name == "redis" and not shutil.which(binary) and not os.path.exists(binary):
            print(f"redis-server not found ({binary}); skipping it", file=sys.stderr)
            continue
        proc, port, banner = start(binary, extra)
        entry = {"banner": banner, "loadgen": [], "redis_benchmark": []}
        try:
            for p in pipelines:
                r = run_loadgen(args, port, p, f"{name} P={p}")
                print(f"{name:5s} loadgen  P={p:<3d} {r['ops_per_sec']:>12.0f} ops/s  "
                      f"p50 {r['latency_us']['p50']:.1f} us  p99 {r['latency_us']['p99']:.1f} us", file=sys.stderr)
                entry["loadgen"].append(r)
                if not args.skip_redis_benchmark:
                    b = run_redis_benchmark(args, port, p)
                    b["pipeline"] = p
                    entry["redis_benchmark"].append(b)
                    for cmd, res in b["results"].items():
                        print(f"{name:5s} redis-benchmark P={p:<3d} {cmd} {res['requests_per_sec']:>12.0f} req/s",
                              file=sys.stderr)
            if name == "kvcg":
                entry["info_kvcg"] = parse_info(resp_command(port, "INFO", "kvcg"))
        finally:
            stop(proc)
        record["servers"][name] = entry

    if "redis" in record["servers"]:
        ratios = []
        for k, r in zip(record["servers"]["kvcg"]["loadgen"], record["servers"]["redis"]["loadgen"]):
            ratios.append({"pipeline": k["pipeline"], "kvcg_ops_per_sec": k["ops_per_sec"],
                           "redis_ops_per_sec": r["ops_per_sec"],
                           "speedup": k["ops_per_sec"] / r["ops_per_sec"] if r["ops_per_sec"] else None,
                           "kvcg_p99_us": k["latency_us"]["p99"], "redis_p99_us": r["latency_us"]["p99"]})
        record["summary"] = ratios
    write_record(record, args.out or os.path.join(ROOT, "bench", "results", args.machine, "server_compare.json"))


def write_record(record, out):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
