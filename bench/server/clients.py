"""The clients the server benchmarks drive a server with: our closed-loop
kvcg-loadgen (fill, then measure) and redis-benchmark as a second opinion.

The client settings come from the caller's argparse namespace: loadgen,
connections, threads, duration, warmup, dist, theta, get_ratio, value_size
(and redis_benchmark, benchmark_requests, benchmark_threads for
redis-benchmark). Needs only the Python standard library.
"""
import json
import subprocess


def _loadgen(args, port, keys, label, extra, timeout):
    cmd = [args.loadgen, "--port", str(port), "--connections", str(args.connections), "--threads",
           str(args.threads), "--keys", str(keys), "--value-size", str(args.value_size), "--label", label] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    # 3: some replies were errors; the JSON counts them and is still good.
    if p.returncode not in (0, 3):
        raise RuntimeError(f"kvcg-loadgen failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)


def preload(args, port, keys, label):
    """SETs every key once (pipelined, one connection per loadgen thread);
    returns loadgen's JSON with preload_s and keys_per_sec."""
    # Even a single-threaded redis-server fills > 200 K keys/s.
    return _loadgen(args, port, keys, label, ["--preload-only"], timeout=600 + keys / 200_000)


def measure(args, port, pipeline, keys, label, preload=False):
    """One closed-loop run; `preload` fills the keys first in the same call."""
    extra = ["--pipeline", str(pipeline), "--duration", str(args.duration), "--warmup", str(args.warmup), "--dist",
             args.dist, "--theta", str(args.theta), "--get-ratio", str(args.get_ratio)]
    if preload:
        extra.append("--preload")
    fill_s = keys / 200_000 if preload else 0
    return _loadgen(args, port, keys, label, extra, timeout=args.duration * 4 + 600 + fill_s)


def redis_benchmark(args, port, pipeline, keys):
    """redis-benchmark -t set,get over the same key names (key:%012d) as kvcg-loadgen."""
    n = max(args.benchmark_requests, args.connections * pipeline * 10)
    cmd = [args.redis_benchmark, "-p", str(port), "-c", str(args.connections), "-P", str(pipeline), "-n", str(n),
           "-r", str(keys), "-d", str(args.value_size), "-t", "set,get", "--csv"]
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
    return {"command": " ".join(cmd[1:]), "pipeline": pipeline, "keys": keys, "requests": n, "results": out}
