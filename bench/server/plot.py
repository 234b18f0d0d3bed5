#!/usr/bin/env python3
"""Plots bench/server/compare.py's JSON: ops/s (left) and p99 latency (right)
of every server row, grouped by key count, at one pipeline depth, with the
run's bound (kvcg-loadgen against kvcg-resp-sink) as a dashed line.

usage: plot.py server_compare.json out.png [--pipeline 16]

Needs matplotlib (requirements.txt; any venv with it); the JSON alone holds
every number."""
import argparse
import json

# One colour per row, the same in every figure: kvcg greens/blues, redis reds.
COLORS = {"kvcg-gpu": "tab:green", "kvcg-gpu-canonical": "tab:olive",
          "kvcg-gpu-canonical-launch": "tab:gray", "kvcg-cpu": "tab:blue",
          "redis": "tab:red", "redis-io8": "tab:orange"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("png")
    ap.add_argument("--pipeline", type=int, default=16)
    args = ap.parse_args()
    with open(args.json) as f:
        d = json.load(f)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [s for s in d["summary"] if s["pipeline"] == args.pipeline]
    if not rows:
        raise SystemExit(f"no results at pipeline {args.pipeline} in {args.json}")
    keys = sorted({s["keys"] for s in rows})
    names = [n for n in d["settings"]["servers"] if any(s["server"] == n for s in rows)]
    at = {(s["server"], s["keys"]): s for s in rows}
    width = 0.8 / len(names)
    fig, (ops_ax, p99_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    for i, name in enumerate(names):
        xs = [k + (i - (len(names) - 1) / 2) * width for k in range(len(keys))]
        got = [at.get((name, k)) for k in keys]
        ops = [g["ops_per_sec"] / 1e6 if g else 0 for g in got]
        p99 = [g["p99_us"] / 1e3 if g else 0 for g in got]
        color = COLORS.get(name)
        bars = ops_ax.bar(xs, ops, width, label=name, color=color)
        ops_ax.bar_label(bars, labels=[f"{v:.2f}" if v else "" for v in ops], fontsize=7)
        bars = p99_ax.bar(xs, p99, width, label=name, color=color)
        p99_ax.bar_label(bars, labels=[f"{v:.3g}" if v else "" for v in p99], fontsize=7)
    bound = next((b["ops_per_sec"] for b in d["bound"]["runs"] if b["pipeline"] == args.pipeline), None)
    if bound:
        ops_ax.axhline(bound / 1e6, color="k", linestyle="--", linewidth=1,
                       label=f"bound: client ceiling {bound / 1e6:.2f} M")
    # Headroom above the tallest bar or the bound, for the legend.
    ops_ax.set_ylim(0, max([bound or 0] + [s["ops_per_sec"] for s in rows]) / 1e6 * 1.35)
    labels = [f"{k / 1e6:g} M keys" if k >= 1e6 else f"{k / 1e3:g} K keys" for k in keys]
    for ax, ylabel in ((ops_ax, "M ops/s"), (p99_ax, "p99 latency (ms)")):
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(labels)
        ax.set_ylabel(ylabel)
        ax.grid(True, axis="y", alpha=0.3)
    p99_ax.set_yscale("log")
    ops_ax.legend(fontsize=8, ncol=2, loc="upper left")
    s = d["settings"]
    fig.suptitle(f"kvcg-server vs redis-server: {s['get_ratio']:.0%} GET, {s['value_size']}-byte values, {s['dist']} "
                 f"keys, pipeline {args.pipeline}, {s['connections']} connections, {s['threads']} loadgen threads\n"
                 f"kvcg-server flags {' '.join(s['kvcg_args']) or '(none)'}; {d['machine']} ({d['cpus']} cores), "
                 f"commit {d.get('commit', '?')}, {d['time'][:10]}", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)


if __name__ == "__main__":
    main()
