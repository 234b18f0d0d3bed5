#!/usr/bin/env python3
"""Plots kvcg-bench-eviction's JSON: hit ratio vs cache size (fraction of the
keys that fit) for each maxmemory policy next to exact LRU on the same trace,
as Redis's documentation compares its approximated LRU with the real one.

usage: plot.py eviction.json out.png

Needs matplotlib (any venv with it: pip install matplotlib); the JSON alone
holds every number."""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        d = json.load(f)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = d["hit_ratio"]
    x = [r["cache_fraction"] * 100 for r in rows]
    styles = {"exact-lru": ("k", "--", "exact LRU (simulated)"), "allkeys-lru": ("tab:blue", "-", "allkeys-lru"),
              "allkeys-lfu": ("tab:green", "-", "allkeys-lfu"), "allkeys-random": ("tab:red", "-", "allkeys-random")}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, (color, line, label) in styles.items():
        if name in rows[0]:
            ax.plot(x, [r[name] * 100 for r in rows], color=color, linestyle=line, marker="o", label=label)
    t = d["trace"]
    ax.set_xscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{v:g}%" for v in x])
    ax.set_xlabel("cache size (share of the keys that fit under maxmemory)")
    ax.set_ylabel("hit ratio (%)")
    ax.set_title(f"kvcg CPU backend: zipf θ={t['theta']}, {t['keys']:,} keys, {t['requests']:,} requests\n"
                 f"commit {d['commit']}, {d['date']}, {d['device']}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
