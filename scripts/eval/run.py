#!/usr/bin/env python3
"""Run the KVCG paper's experiments (§8, Fig. 3a-7) with kvcg-ycsb.

One command per figure, three sizes:

  scripts/eval/run.py --figure 3a --preset quick --out results/cpu
  scripts/eval/run.py --figure all --preset full --out results/h100 --plot

  smoke  seconds in total on 2 cores (CI: tests/eval)
  quick  about a minute on a 2-core CPU machine (CPU backend)
  full   about 5 minutes on the 16-core H100 host (GPU backend)

Each figure appends JSON lines to OUT/fig<name>.jsonl (one line per measured
point, written by kvcg-ycsb) and CSV rows to OUT/results.csv; existing files
for the figure are replaced. --plot then draws OUT/fig<name>.png with
scripts/eval/plot.py. docs/EVALUATION.md explains every choice below.

--router-model heavy-hitters trains the heavy-hitters model instead of the
paper's histogram in the figures that train one (3a, 6, 7); their kvcg rows
are labelled kvcg-hh... Run it into its own --out to compare both.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PRESETS = {
    "smoke": dict(backend="cpu", key_space=100_000, prefill=10_000, threads=2, batch=64,
                  pipeline=2, seconds=0.12, warmup=0.04, train_ops=20_000, sample_rate=1.0,
                  timeline_ms=20, timeline_seconds=0.5, switch_at=0.2),
    "quick": dict(backend="cpu", key_space=1_000_000, prefill=100_000, threads=2, batch=128,
                  pipeline=2, seconds=0.5, warmup=0.2, train_ops=200_000, sample_rate=1.0,
                  timeline_ms=20, timeline_seconds=2.0, switch_at=0.7),
    "full": dict(backend="gpu", key_space=1_000_000_000, prefill=10_000_000, threads=12,
                 batch=512, pipeline=2, seconds=1.5, warmup=0.5, train_ops=5_000_000,
                 sample_rate=0.1, timeline_ms=10, timeline_seconds=4.0, switch_at=1.3,
                 # 10 M 8-byte keys need well under 1 GiB of slabs (larger values live
                 # in host memory); a bounded pool keeps each of the ~20 opens short.
                 gpu_memory_mb=8192),
}

# Sweep values per preset ("smoke" keeps two points per curve).
SWEEPS = {
    "thetas": {"smoke": [0.5, 0.99], "quick": [0.5, 0.6, 0.7, 0.8, 0.9, 0.99],
               "full": [0.5, 0.6, 0.7, 0.8, 0.9, 0.99]},
    "cdf_thetas": {"smoke": [0.5, 0.99], "quick": [0.5, 0.7, 0.9, 0.99],
                   "full": [0.5, 0.7, 0.9, 0.99]},
    # Fractions of the key space the prior model calls hot. 1e9 keys (full)
    # stop at 1% (10 M keys in the model); 0% and 100% are gpu-only/cpu-only.
    "hot_fractions": {"smoke": [0.001, 0.01], "quick": [1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
                      "full": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]},
    "value_bytes": {"smoke": [8, 256], "quick": [8, 32, 64, 128, 256, 512, 1024],
                    "full": [8, 32, 64, 128, 256, 512, 1024]},
    "read_ratios": {"smoke": [0.5, 1.0], "quick": [0.5, 0.8, 0.9, 0.95, 1.0],
                    "full": [0.5, 0.8, 0.9, 0.95, 1.0]},
}

# The paper's thresholds (§8.3): T1 = 1.3e-5, T2 = 0.005. Our histogram
# model's bins cover the hash space, where each of the 10,000 bins already
# holds 1e-4 of the accesses on average, so T1 marks every bin hot. For the
# θ sweeps we use 2e-4 (twice a bin's average share; see EVALUATION.md).
T1, T2, T_SWEEP = 1.3e-5, 0.005, 2e-4
# The heavy-hitters model's thresholds are shares of single keys: for the θ
# sweeps none (0, the model's default: the hot cache's capacity and two samples
# per key decide); Fig. 6 keeps T1 and T2, which as key shares mean "at most
# 77 K keys" and "at most 200 keys".
HH_T_SWEEP = 0
PRIOR_AT_HALF = 0.001  # Fig. 3b's chosen trade-off at θ = 0.5: the hottest 0.1%


def common_args(p, preset):
    return ["--backend", p["backend"], "--key-space", str(p["key_space"]),
            "--prefill", str(p["prefill"]), "--threads", str(p["threads"]),
            "--batch", str(p["batch"]), "--pipeline", str(p["pipeline"]),
            "--seconds", str(p["seconds"]), "--warmup", str(p["warmup"]),
            "--train-ops", str(p["train_ops"]), "--sample-rate", str(p["sample_rate"]),
            "--progress", "0" if preset == "smoke" else "2"] + (
                ["--gpu-memory-mb", str(p["gpu_memory_mb"])] if "gpu_memory_mb" in p else [])


def runs_for(figure, preset, router_model="histogram"):
    """The kvcg-ycsb invocations of one figure: a list of (label, args)."""
    p = PRESETS[preset]
    s = {k: v[preset] for k, v in SWEEPS.items()}
    csv = lambda xs: ",".join(str(x) for x in xs)
    half_prior = ["--model", "prior", "--hot-fraction", str(PRIOR_AT_HALF)]
    hh = router_model == "heavy-hitters"
    kv = "kvcg-hh" if hh else "kvcg"  # label of the rows with a trained model
    trained = ["--model", router_model]
    sweep_threshold = str(HH_T_SWEEP if hh else T_SWEEP)
    if figure == "3a":
        return [(kv, ["--system", "kvcg", "--workload", "b", "--theta", csv(s["thetas"]),
                      "--threshold", sweep_threshold] + trained)]
    if figure == "3b":
        return [("kvcg", ["--system", "kvcg", "--workload", "b", "--theta", "0.5", "--model",
                          "prior", "--hot-fraction", csv(s["hot_fractions"])]),
                ("gpu-only", ["--system", "gpu-only", "--workload", "b", "--theta", "0.5"]),
                ("cpu-only", ["--system", "cpu-only", "--workload", "b", "--theta", "0.5"])]
    if figure == "3c":
        return [(f"kvcg-{v}B", ["--system", "kvcg", "--workload", "b", "--theta", "0.5",
                                "--layout", "general", "--value-bytes", str(v)] + half_prior)
                for v in s["value_bytes"]]
    if figure == "4":
        return [("kvcg", ["--system", "kvcg", "--workload", "b", "--theta",
                          csv(s["cdf_thetas"])] + half_prior)]
    if figure == "5":
        base = ["--workload", "b", "--theta", "0.5", "--read-ratio", csv(s["read_ratios"])]
        return [("kvcg", ["--system", "kvcg"] + base + half_prior),
                ("gpu-only", ["--system", "gpu-only"] + base),
                ("cpu-only", ["--system", "cpu-only"] + base),
                ("libcuckoo", ["--system", "libcuckoo"] + base)]
    if figure == "6":
        base = ["--workload", "b", "--theta", "0.99"]
        return [(f"{kv}-T1", ["--system", "kvcg", "--threshold", str(T1)] + trained + base),
                (f"{kv}-T2", ["--system", "kvcg", "--threshold", str(T2)] + trained + base),
                ("gpu-only", ["--system", "gpu-only"] + base),
                ("cpu-only", ["--system", "cpu-only"] + base),
                ("libcuckoo", ["--system", "libcuckoo"] + base)]
    if figure == "7":
        return [(kv, ["--system", "kvcg", "--workload", "b", "--theta", "0.99",
                      "--threshold", sweep_threshold] + trained + [
                          "--seconds", str(p["timeline_seconds"]),
                          "--timeline-ms", str(p["timeline_ms"]),
                          "--switch-at", str(p["switch_at"])])]
    raise ValueError(figure)


FIGURES = ["3a", "3b", "3c", "4", "5", "6", "7"]


def find_driver(explicit):
    if explicit:
        return explicit
    for rel in ["build-eval/kvcg-ycsb", "build-eval/bench/eval/kvcg-ycsb",
                "build/bench/eval/kvcg-ycsb", "build/kvcg-ycsb", "build-h100/bench/eval/kvcg-ycsb",
                "build-h100/kvcg-ycsb", "build-gpu/bench/eval/kvcg-ycsb"]:
        path = os.path.join(ROOT, rel)
        if os.access(path, os.X_OK):
            return path
    return shutil.which("kvcg-ycsb")


def merge(*arg_lists):
    """Merges "--opt value" lists; a later list's option replaces an earlier one's."""
    merged = {}
    for args in arg_lists:
        i = 0
        while i < len(args):
            opt = args[i]
            has_value = i + 1 < len(args) and not args[i + 1].startswith("--")
            merged[opt] = [args[i + 1]] if has_value else []
            i += 2 if has_value else 1
    return [x for opt, val in merged.items() for x in [opt] + val]


def run_figure(figure, preset, driver, out_dir, extra, router_model="histogram"):
    jsonl = os.path.join(out_dir, f"fig{figure}.jsonl")
    if os.path.exists(jsonl):
        os.remove(jsonl)
    csv_path = os.path.join(out_dir, "results.csv")
    for label, args in runs_for(figure, preset, router_model):
        # kvcg-ycsb takes each option once: the figure's and the user's
        # settings replace the preset's.
        cmd = [driver] + merge(common_args(PRESETS[preset], preset), args, extra) + [
            "--label", f"fig{figure}:{label}", "--out", jsonl, "--csv", csv_path]
        print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
        rc = subprocess.run(cmd).returncode
        if rc != 0:
            print(f"run.py: fig {figure} ({label}) failed with exit status {rc}", file=sys.stderr)
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--figure", default="all", help="3a, 3b, 3c, 4, 5, 6, 7 or all (comma list allowed)")
    ap.add_argument("--preset", default="quick", choices=sorted(PRESETS))
    ap.add_argument("--quick", dest="preset", action="store_const", const="quick")
    ap.add_argument("--full", dest="preset", action="store_const", const="full")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--driver", help="path to kvcg-ycsb (default: found in build dirs or PATH)")
    ap.add_argument("--backend", help="override the preset's backend (auto, gpu, cpu)")
    ap.add_argument("--router-model", default="histogram", choices=["histogram", "heavy-hitters"],
                    help="the trained model of figures 3a, 6 and 7 (default: the paper's histogram)")
    ap.add_argument("--plot", action="store_true", help="draw OUT/fig*.png afterwards")
    ap.add_argument("extra", nargs="*", help="more kvcg-ycsb options, after --")
    a = ap.parse_args()
    figures = FIGURES if a.figure == "all" else a.figure.split(",")
    for f in figures:
        if f not in FIGURES:
            ap.error(f"unknown figure {f}")
    driver = find_driver(a.driver)
    if not driver:
        ap.error("kvcg-ycsb not found; build it (ninja kvcg-ycsb) or pass --driver")
    os.makedirs(a.out, exist_ok=True)
    extra = list(a.extra) + (["--backend", a.backend] if a.backend else [])
    csv_path = os.path.join(a.out, "results.csv")
    if a.figure == "all" and os.path.exists(csv_path):
        os.remove(csv_path)
    ok = True
    for f in figures:
        start = time.time()
        ok = run_figure(f, a.preset, driver, a.out, extra, a.router_model) and ok
        print(f"run.py: fig {f} done in {time.time() - start:.1f} s", file=sys.stderr, flush=True)
    if a.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("run.py: matplotlib missing here; draw the PNGs elsewhere with "
                  f"scripts/eval/plot.py {a.out}", file=sys.stderr)
            return 0 if ok else 1
        cmd = [sys.executable, os.path.join(HERE, "plot.py"), a.out, "--figure", ",".join(figures)]
        ok = subprocess.run(cmd).returncode == 0 and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
