#!/usr/bin/env python3
"""Smoke test of the evaluation: every experiment of scripts/eval/run.py at
"smoke" size on the CPU backend, then checks that

  * each figure's JSON lines parse and carry the full configuration,
  * throughput and operation counts are positive and no operation failed,
  * every component that served operations has positive, ordered latencies
    (p50 <= p90 <= p99 <= p99.9 <= max),
  * the sweeps produced the points asked for (θ, hot fraction, value size,
    read ratio, systems), and Fig. 7 recorded a timeline and its switch,
  * scripts/eval/plot.py draws every figure as a PNG.

Run by CTest (tests/eval/CMakeLists.txt, label "eval"); standalone:
  tests/eval/smoke_test.py --driver build-eval/kvcg-ycsb --work-dir /tmp/eval-smoke
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "scripts", "eval", "run.py")
PLOT = os.path.join(ROOT, "scripts", "eval", "plot.py")
sys.path.insert(0, os.path.join(ROOT, "scripts", "eval"))
import run as eval_run  # noqa: E402  (the sweep definitions the smoke run used)

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)


def check_latency(name, comp, where):
    if comp["ops"] == 0:
        return
    keys = ["p50_us", "p90_us", "p99_us", "p999_us", "max_us"]
    vals = [comp[k] for k in keys]
    check(all(v is not None and v > 0 for v in vals + [comp["mean_us"]]),
          f"{where}: {name} latency not positive: {comp}")
    check(all(a <= b * 1.0001 for a, b in zip(vals, vals[1:])),
          f"{where}: {name} percentiles not ordered: {vals}")


def check_line(r, where):
    for k in ["config", "point", "device", "backend", "system", "label"]:
        check(k in r, f"{where}: missing {k}")
    check(r["backend"] == "cpu", f"{where}: expected the CPU backend, got {r['backend']}")
    check(r["throughput_mops"] > 0 and r["ycsb_ops"] > 0 and r["seconds"] > 0,
          f"{where}: throughput/ops not positive")
    check(r["errors"] == 0, f"{where}: {r['errors']} operations failed")
    check(r["store_ops"] >= r["ycsb_ops"], f"{where}: fewer store ops than YCSB ops")
    for comp in ["hot", "cold", "total", "batch"]:
        check_latency(comp, r[comp], where)
    check(r["total"]["ops"] > 0, f"{where}: no operations measured")
    if r["system"] in ("kvcg", "cpu-only"):
        check(r["hot"]["ops"] + r["cold"]["ops"] == r["store_ops"],
              f"{where}: hot + cold ops {r['hot']['ops']} + {r['cold']['ops']} != {r['store_ops']}")
        check(0 <= r["hot_share"] <= 1, f"{where}: hot share {r['hot_share']}")
    c = r["config"]
    for k in ["key_space", "prefill", "threads", "batch", "seed", "value_bytes"]:
        check(c.get(k, 0) > 0, f"{where}: config.{k} missing or zero")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--work-dir", required=True)
    a = ap.parse_args()
    if os.path.exists(a.work_dir):
        shutil.rmtree(a.work_dir)
    os.makedirs(a.work_dir)
    start = time.time()
    rc = subprocess.run([sys.executable, RUN, "--figure", "all", "--preset", "smoke",
                         "--driver", a.driver, "--out", a.work_dir]).returncode
    check(rc == 0, f"run.py exited {rc}")
    print(f"smoke runs took {time.time() - start:.1f} s", flush=True)

    sw = {k: v["smoke"] for k, v in eval_run.SWEEPS.items()}
    rows = {}
    for f in eval_run.FIGURES:
        path = os.path.join(a.work_dir, f"fig{f}.jsonl")
        if not os.path.exists(path):
            check(False, f"fig {f}: {path} missing")
            continue
        with open(path) as fh:
            rows[f] = [json.loads(line) for line in fh if line.strip()]
        for i, r in enumerate(rows[f]):
            check_line(r, f"fig {f} line {i + 1}")

    def points(f, system, key):
        return sorted(r["point"][key] for r in rows.get(f, []) if r["system"] == system)

    check(points("3a", "kvcg", "theta") == sorted(sw["thetas"]), "fig 3a: θ points")
    check(points("3b", "kvcg", "hot_fraction") == sorted(sw["hot_fractions"]), "fig 3b: fractions")
    check({r["system"] for r in rows.get("3b", [])} == {"kvcg", "gpu-only", "cpu-only"}, "fig 3b: systems")
    check(points("3c", "kvcg", "value_bytes") == sorted(sw["value_bytes"]), "fig 3c: value sizes")
    check(points("4", "kvcg", "theta") == sorted(sw["cdf_thetas"]), "fig 4: θ points")
    for system in ["kvcg", "gpu-only", "cpu-only", "libcuckoo"]:
        check(points("5", system, "read_ratio") == sorted(sw["read_ratios"]), f"fig 5: {system} ratios")
    check(len(rows.get("6", [])) == 5, "fig 6: five systems")
    # The prior model's hot keys must actually be served hot in Fig. 3b.
    for r in rows.get("3b", []):
        if r["system"] == "kvcg":
            check(r["point"]["prior_hot_keys"] > 0, "fig 3b: prior model with no keys")
    for r in rows.get("7", []):
        tl = r.get("timeline")
        check(tl is not None and len(tl["client"]) > 3 and len(tl["engine"]) > 3, "fig 7: timeline")
        check(len(r["switches"]) >= 1 and r["switches"][0]["ok"], "fig 7: no successful switch")
        if tl and r["switches"]:
            t_end = tl["client"][-1]["t_s"]
            check(0 < r["switches"][0]["at_s"] < t_end, "fig 7: switch outside the run")
            after = [e for e in tl["engine"] if e["t_s"] > r["switches"][0]["at_s"] + 0.05]
            check(any(e["hot_ops"] > 0 for e in after), "fig 7: nothing served hot after the switch")
            before = [e for e in tl["engine"] if e["t_s"] < r["switches"][0]["at_s"]]
            check(all(e["hot_ops"] == 0 for e in before), "fig 7: hot operations before the switch")

    rc = subprocess.run([sys.executable, PLOT, a.work_dir]).returncode
    check(rc == 0, f"plot.py exited {rc}")
    for f in eval_run.FIGURES:
        png = os.path.join(a.work_dir, f"fig{f}.png")
        ok = os.path.exists(png) and os.path.getsize(png) > 10_000
        if ok:
            with open(png, "rb") as fh:
                ok = fh.read(8) == b"\x89PNG\r\n\x1a\n"
        check(ok, f"fig {f}: no PNG drawn")

    print(f"eval smoke: {time.time() - start:.1f} s in total")
    if FAILURES:
        print("FAILED:\n  " + "\n  ".join(FAILURES))
        return 1
    print("eval smoke: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
