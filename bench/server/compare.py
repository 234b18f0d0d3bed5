#!/usr/bin/env python3
"""kvcg-server next to redis-server: every configuration in one run, same host,
same client settings (issue 12).

Rows (bench/server/servers.py): kvcg-gpu (GPU backend, its default mode kvcg),
kvcg-gpu-canonical (every key on the GPU), kvcg-cpu (CPU backend), redis
(redis-server, one thread) and redis-io8 (io-threads 8, io-threads-do-reads
yes). On a machine where `kvcg-server --backend gpu` does not start, the GPU
rows are skipped with its message. For every key count of --keys-list, each
row gets a fresh server, one fill (kvcg-loadgen --preload-only, timed), then
a closed-loop kvcg-loadgen run per pipeline depth and, unless skipped,
redis-benchmark. kvcg rows record INFO kvcg (where the time goes), redis rows
INFO stats (io_threaded_reads_processed says whether threaded I/O was used).

The bound, measured in the same run (before and after the rows): kvcg-loadgen
against kvcg-resp-sink, a server that frames each request and answers from
constants. With the client and the server sharing the host's cores, no
server can be measured above it at these client settings (DESIGN.md §5's
memory and PCIe bounds are orders of magnitude higher).

Every phase (fill, measure, ...) is timed and printed. Filling is the slow
part at large key counts: kvcg-loadgen SETs in pipelined chunks of 1000 over
one connection per loadgen thread, and redis-server executes them on one
thread. Measured on the 2-core development machine: 0.55-0.75 M keys/s for
kvcg-server (CPU backend) and redis-server alike, 2 M keys in about 3 s; at
~1-2 M keys/s on one redis thread, 100 M keys take 1-2 minutes per redis row
(an estimate; the JSON records each fill's time).

  bench/server/compare.py --machine cpu --keys-list 200000 --duration 2
  bench/server/compare.py --machine h100 --kvcg-args "--io-threads 8" \\
      --keys-list 2000000,100000000 --pipelines 1,16

One JSON file: servers.<row> (banner, flags, loadgen runs each with the CPU
the server's threads and the client used (cpu_usage.py), fills, phase
times, INFO), summary (ops/s and p50/p99 per key count, pipeline and row,
relative to kvcg-cpu and to redis and as a share of the bound, and CPU ns
per op of server and client) and bound.
bench/server/plot.py draws it. Needs only the Python standard library.
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients  # noqa: E402  (same folder)
import cpu_usage  # noqa: E402
import servers  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    b = servers.BUILD
    ap.add_argument("--machine", default="cpu", help="results go to bench/results/<machine>/")
    ap.add_argument("--kvcg-server", default=os.path.join(b, "tools/server/kvcg-server"))
    ap.add_argument("--loadgen", default=os.path.join(b, "tools/loadgen/kvcg-loadgen"))
    ap.add_argument("--sink", default=os.path.join(b, "tools/loadgen/kvcg-resp-sink"), help="kvcg-resp-sink")
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--redis-benchmark", default=shutil.which("redis-benchmark") or "redis-benchmark")
    ap.add_argument("--servers", default="all", help="rows, comma-separated: " + ",".join(servers.ROWS))
    ap.add_argument("--no-gpu", action="store_true", help="skip the GPU rows without trying them")
    ap.add_argument("--kvcg-args", default="", help="extra flags of every kvcg row (quoted), e.g. '--io-threads 8'")
    ap.add_argument("--redis-args", default="", help="extra flags of every redis row (quoted)")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--threads", type=int, default=8, help="kvcg-loadgen threads")
    ap.add_argument("--sink-threads", type=int, default=8, help="kvcg-resp-sink threads (the bound's server side)")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--keys-list", default="2000000", help="key counts, comma-separated; the matrix runs per count")
    ap.add_argument("--dist", default="uniform", choices=["uniform", "zipf"])
    ap.add_argument("--theta", type=float, default=0.99)
    ap.add_argument("--get-ratio", type=float, default=0.95)
    ap.add_argument("--value-size", type=int, default=32)
    ap.add_argument("--skip-redis-benchmark", action="store_true")
    ap.add_argument("--benchmark-threads", type=int, default=0, help="redis-benchmark --threads (0: its default)")
    ap.add_argument("--benchmark-requests", type=int, default=200000)
    ap.add_argument("--out", default="", help="output file (default bench/results/<machine>/server_compare.json)")
    args = ap.parse_args()
    args.pipelines = [int(p) for p in args.pipelines.split(",")]
    args.keys_list = [int(k) for k in args.keys_list.split(",")]
    args.servers = list(servers.ROWS) if args.servers == "all" else args.servers.split(",")
    unknown = [s for s in args.servers if s not in servers.ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; known: {list(servers.ROWS)}")
    args.kvcg_args = args.kvcg_args.split()
    args.redis_args = args.redis_args.split()
    if "--backend" in args.kvcg_args or "--mode" in args.kvcg_args:
        ap.error("--kvcg-args must not set --backend or --mode: each row sets them")
    for tool in (args.kvcg_server, args.loadgen, args.sink):
        if not os.path.exists(tool):
            ap.error(f"missing {tool}: build it first (ninja kvcg-server kvcg-loadgen kvcg-resp-sink)")
    return args


def sink_runs(args, when):
    """The client's ceiling per pipeline depth (see the module comment)."""
    proc, port, banner = servers.start_sink(args.sink, args.sink_threads, args.value_size)
    runs = []
    try:
        for p in args.pipelines:
            # The sink ignores keys; the smallest key count keeps key choice as in the real runs.
            window = cpu_usage.Window(proc.pid).start()
            r = clients.measure(args, port, p, min(args.keys_list), f"bound P={p}")
            cpu = window.stop(r["ops_per_sec"])
            runs.append({"pipeline": p, "ops_per_sec": r["ops_per_sec"], "latency_us": r["latency_us"], "cpu": cpu})
            log(f"bound ({when}) P={p:<3d} {r['ops_per_sec']:>12,.0f} ops/s  p50 {r['latency_us']['p50']:.1f} us  "
                f"p99 {r['latency_us']['p99']:.1f} us  (kvcg-loadgen against kvcg-resp-sink)")
            log(f"    {cpu_usage.summary(cpu)}")
    finally:
        servers.stop(proc)
    return runs, banner


def bound_record(args, banner, before, after=None):
    """Measured before and after the rows: the higher of the two is the bound,
    their spread says how steady the host was meanwhile."""
    best = before if after is None else [max(b, a, key=lambda r: r["ops_per_sec"]) for b, a in zip(before, after)]
    return {
        "what": f"client ceiling: kvcg-loadgen ({args.threads} threads, {args.connections} connections) against "
                f"kvcg-resp-sink ({args.sink_threads} threads; frames requests, answers from constants, no store) "
                f"on the same {os.cpu_count()}-core host, before and after the rows (runs: the higher of the two). "
                "Client and server share the cores as in the real rows; DESIGN.md 5's memory and PCIe bounds are "
                "orders of magnitude above socket-served rates",
        "cores": os.cpu_count(),
        "loadgen_threads": args.threads,
        "sink_threads": args.sink_threads,
        "sink_banner": banner,
        "before": before,
        "after": after,
        "runs": best,
    }


def run_row(args, name, keys, entry):
    """One row at one key count: start, fill, measure every pipeline, stop.
    Appends to `entry` (the row's record); returns the phase times."""
    phases = {"keys": keys}
    t = time.time()
    proc, port, banner, flags = servers.start_row(name, args.kvcg_server, args.redis_server, args.kvcg_args,
                                                  args.redis_args)
    phases["start_s"] = time.time() - t
    entry.update(banner=banner, flags=flags)
    try:
        t = time.time()
        fill = clients.preload(args, port, keys, f"{name} fill")
        phases["preload_s"] = time.time() - t
        entry["preload"].append(fill)
        t = time.time()
        for p in args.pipelines:
            window = cpu_usage.Window(proc.pid).start()
            r = clients.measure(args, port, p, keys, f"{name} P={p}")
            r["cpu"] = window.stop(r["ops_per_sec"])
            entry["loadgen"].append(r)
            log(f"{name:<18} keys {keys:>11,} P={p:<3d} {r['ops_per_sec']:>12,.0f} ops/s  "
                f"p50 {r['latency_us']['p50']:.1f} us  p99 {r['latency_us']['p99']:.1f} us"
                + (f"  ({r['errors']} error replies)" if r["errors"] else ""))
            log(f"    {cpu_usage.summary(r['cpu'])}")
        phases["measure_s"] = time.time() - t
        if not args.skip_redis_benchmark:
            t = time.time()
            for p in args.pipelines:
                rb = clients.redis_benchmark(args, port, p, keys)
                entry["redis_benchmark"].append(rb)
                log(f"{name:<18} keys {keys:>11,} P={p:<3d} redis-benchmark "
                    + "  ".join(f"{c} {v['requests_per_sec']:,.0f}/s" for c, v in rb["results"].items()))
            phases["redis_benchmark_s"] = time.time() - t
        section = "kvcg" if servers.ROWS[name][0] == "kvcg" else "stats"
        entry["info"].append({"keys": keys, "section": section,
                              "fields": servers.parse_info(servers.resp_command(port, "INFO", section))})
    finally:
        t = time.time()
        servers.stop(proc)
        phases["stop_s"] = time.time() - t
    log(f"{name:<18} keys {keys:>11,} phases: start {phases['start_s']:.1f} s, fill {phases['preload_s']:.1f} s "
        f"({fill['keys_per_sec'] / 1e6:.2f} M keys/s), measure {phases['measure_s']:.1f} s"
        + (f", redis-benchmark {phases['redis_benchmark_s']:.1f} s" if "redis_benchmark_s" in phases else "")
        + f", stop {phases['stop_s']:.1f} s")
    return phases


def summarize(record, args):
    """Per key count and pipeline: each row's ops/s and latency, relative to
    kvcg-cpu, to redis and to the bound at the same point."""
    runs = {(name, r["keys"], r["pipeline"]): r for name, e in record["servers"].items() for r in e.get("loadgen", [])}
    bound = {b["pipeline"]: b["ops_per_sec"] for b in record["bound"]["runs"]}
    out = []
    for keys in args.keys_list:
        for p in args.pipelines:
            base = {ref: runs.get((ref, keys, p), {}).get("ops_per_sec") for ref in ("kvcg-cpu", "redis")}
            for name in args.servers:
                r = runs.get((name, keys, p))
                if r is None:
                    continue
                ops = r["ops_per_sec"]
                out.append({"keys": keys, "pipeline": p, "server": name, "ops_per_sec": ops,
                            "p50_us": r["latency_us"]["p50"], "p99_us": r["latency_us"]["p99"],
                            "vs_kvcg_cpu": ops / base["kvcg-cpu"] if base["kvcg-cpu"] else None,
                            "vs_redis": ops / base["redis"] if base["redis"] else None,
                            "of_bound": ops / bound[p] if bound.get(p) else None,
                            "server_cpu_ns_per_op": r.get("cpu", {}).get("server_cpu_ns_per_op"),
                            "client_cpu_ns_per_op": r.get("cpu", {}).get("client_cpu_ns_per_op")})
    return out


def print_summary(summary):
    log(f"{'keys':>11} {'P':>3} {'server':<18} {'ops/s':>12} {'p50 us':>8} {'p99 us':>8} {'/cpu':>6} {'/redis':>6} "
        f"{'/bound':>6}")
    fmt = lambda v: f"{v:6.2f}" if v is not None else f"{'-':>6}"  # noqa: E731
    for s in summary:
        log(f"{s['keys']:>11,} {s['pipeline']:>3} {s['server']:<18} {s['ops_per_sec']:>12,.0f} {s['p50_us']:>8.1f} "
            f"{s['p99_us']:>8.1f} {fmt(s['vs_kvcg_cpu'])} {fmt(s['vs_redis'])} {fmt(s['of_bound'])}")


def git_commit():
    try:
        return subprocess.run(["git", "-C", servers.ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip() or "unknown"
    except OSError:  # no git where the copy runs
        return "unknown"


def main():
    args = parse_args()
    out = args.out or os.path.join(servers.ROOT, "bench", "results", args.machine, "server_compare.json")
    t_run = time.time()
    record = {
        "benchmark": "server_compare",
        "machine": args.machine,
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": os.environ.get("COMMIT") or git_commit(),
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "servers": {},
    }
    t = time.time()
    before, banner = sink_runs(args, "before")
    record["bound"] = bound_record(args, banner, before)
    record["phases"] = {"bound_s": time.time() - t}

    skipped = {}
    if args.no_gpu:
        skipped.update({n: "--no-gpu" for n in servers.GPU_ROWS})
    redis_ok = shutil.which(args.redis_server) or os.path.exists(args.redis_server)
    if not redis_ok:
        skipped.update({n: f"{args.redis_server} not found" for n, (prog, _) in servers.ROWS.items()
                        if prog == "redis"})
    for keys in args.keys_list:
        for name in args.servers:
            if name in skipped:
                continue
            entry = record["servers"].setdefault(name, {"loadgen": [], "redis_benchmark": [], "preload": [],
                                                        "info": [], "phases": []})
            try:
                entry["phases"].append(run_row(args, name, keys, entry))
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                reason = str(e).strip()
                log(f"{name:<18} keys {keys:>11,} FAILED: {reason}")
                entry.setdefault("failed", []).append({"keys": keys, "error": reason})
                if name in servers.GPU_ROWS and "banner" not in entry:
                    # A GPU row that never started: no GPU (or no CUDA build) here.
                    skipped.update({n: f"kvcg-server --backend gpu did not start: {reason}"
                                    for n in servers.GPU_ROWS})
            record["summary"] = summarize(record, args)
            record["phases"]["total_s"] = time.time() - t_run
            write_record(record, out, quiet=True)
    for name in args.servers:
        if name in skipped and not record["servers"].get(name, {}).get("loadgen"):
            log(f"{name:<18} skipped: {skipped[name]}")
            record["servers"][name] = {"skipped": skipped[name]}
    record["servers"] = {n: record["servers"][n] for n in args.servers if n in record["servers"]}  # row order
    t = time.time()
    record["bound"] = bound_record(args, banner, before, sink_runs(args, "after")[0])
    record["phases"]["bound_s"] += time.time() - t
    record["summary"] = summarize(record, args)
    record["phases"]["total_s"] = time.time() - t_run
    print_summary(record["summary"])
    log(f"total {record['phases']['total_s']:.1f} s (bound {record['phases']['bound_s']:.1f} s)")
    write_record(record, out)


def write_record(record, out, quiet=False):
    """Also called after every row (summary included), so a run cut off by a
    timeout keeps what it measured."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".tmp", "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    os.replace(out + ".tmp", out)
    if not quiet:
        log(f"wrote {out}")


if __name__ == "__main__":
    main()
