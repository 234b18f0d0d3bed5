#!/usr/bin/env python3
"""Draw the KVCG paper's figures (§8) from kvcg-ycsb's JSON lines.

  scripts/eval/plot.py DIR [--figure 3a,3b,...]

reads DIR/fig<name>.jsonl (written by scripts/eval/run.py) and writes
DIR/fig<name>.png. Each figure shows kvcg's numbers beside what the paper
reports for its GTX 1080 testbed (hot 19-150 us, cold 0.2-2.2 ms, > 40 MOPS
with up to 0.1% of the keys hot, 0.82 ms mean when everything goes to the
GPU, ...) and, for GPU runs, the H100 bounds of DESIGN.md §5. Exits non-zero
when a requested figure has no data or cannot be drawn.
"""
import argparse
import json
import math
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# --- What the paper reports (GTX 1080, 2x Xeon 8160), §8.
PAPER_HOT_US = (19, 150)        # Hot Cache mean latency range over the experiments
PAPER_COLD_US = (200, 2200)     # Canonical Store mean latency range
PAPER_MOPS_HOT_01 = 40          # > 40 MOPS with up to 0.1% of the keys hot (Fig. 3b)
PAPER_ALL_GPU_MS = 0.82         # mean latency when every operation goes to the GPU (Fig. 3b)
PAPER_HOT_AT_01_US = 131.7      # hot latency with the hottest 0.1% hot (Fig. 3b)
PAPER_KVCG_MOPS_5 = 35.4        # "KVCG is the best choice above 35.4 MOPS" (Fig. 5)
PAPER_SWITCH_S, PAPER_SWITCH_LEN_S = 1.3, 0.34  # Fig. 7: install at 1.3 s, 340 ms long
# --- DESIGN.md §5, measured on the H100 host.
H100_ROUNDTRIP_US = 15.6        # 512-op round trip (copy in, kernel, copy out), p50
H100_SLAB_PROBES_G = 10.9       # random 256-byte slab probes per second (G)

FIGURES = ["3a", "3b", "3c", "4", "5", "6", "7"]
HOT_C, COLD_C, TOTAL_C = "#d95f02", "#1b9e77", "#444444"
SYSTEM_C = {"kvcg": "#7570b3", "gpu-only": "#1b9e77", "cpu-only": "#e7298a", "libcuckoo": "#66a61e"}


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def setup_text(rows):
    r = rows[0]
    c = r["config"]
    return (f"{r['device']} ({r['backend']} backend) · key space {c['key_space']:,} · prefill "
            f"{c['prefill']:,} · {c['threads']} client threads · batch {c['batch']} · "
            f"{c['seconds']} s per point")


def on_gpu(rows):
    return any(r["backend"] == "gpu" for r in rows)


def finish(fig, rows, title, notes, path):
    fig.suptitle(title, fontsize=12, fontweight="bold")
    text = setup_text(rows)
    bounds = (f"H100 bounds (DESIGN.md §5): a cold batch cannot return in < {H100_ROUNDTRIP_US} µs "
              f"(512-op round trip); slab probes ≤ {H100_SLAB_PROBES_G} G/s = "
              f"{H100_SLAB_PROBES_G * 1000:,.0f} MOPS."
              if on_gpu(rows) else
              "CPU backend stands in for the GPU: the H100 bounds of DESIGN.md §5 do not apply.")
    lines = [w for n in [text] + notes + [bounds] for w in textwrap.wrap(n, 190)]
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=7.5, va="bottom", ha="left", color="#333333")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def ref_hline(ax, y, label, data_max):
    """A paper's throughput as a line, or as a note when it would flatten the data."""
    if data_max > 0 and y > 4 * data_max:
        ax.set_title(f"{label} — above this scale", fontsize=8, color="#555555")
    else:
        ax.axhline(y, color="black", ls="--", lw=1, label=label)


def log_headroom(ax, factor=6):
    """Room above the data on a log axis for the legend."""
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * factor)


def paper_bands(ax, hot=True, cold=True):
    if hot:
        ax.axhspan(*PAPER_HOT_US, color=HOT_C, alpha=0.10, lw=0,
                   label=f"paper HC {PAPER_HOT_US[0]}–{PAPER_HOT_US[1]} µs")
    if cold:
        ax.axhspan(*PAPER_COLD_US, color=COLD_C, alpha=0.10, lw=0,
                   label=f"paper CS {PAPER_COLD_US[0] / 1000}–{PAPER_COLD_US[1] / 1000} ms")


def gpu_floor(ax, rows):
    if on_gpu(rows):
        ax.axhline(H100_ROUNDTRIP_US, color="black", ls=":", lw=1,
                   label=f"H100 512-op round trip {H100_ROUNDTRIP_US} µs")


def contributions(r):
    """Throughput (MOPS) served by the hot cache and by the canonical store."""
    t = r["throughput_mops"]
    return t * r["hot_share"], t * (1 - r["hot_share"])


def pos(v):
    return v if v is not None and v > 0 else math.nan


def throughput_and_latency(rows, x, xlabel, path, title, notes, xticks=None, xlog=False,
                           extra=None):
    """The Fig. 3 layout: stacked throughput (HC/CS) beside mean latency (HC/CS)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.8))
    fig.subplots_adjust(bottom=0.27, top=0.86, wspace=0.28)
    hot = [contributions(r)[0] for r in rows]
    cold = [contributions(r)[1] for r in rows]
    idx = list(range(len(rows)))
    a1.bar(idx, cold, color=COLD_C, label="CS (canonical store)")
    a1.bar(idx, hot, bottom=cold, color=HOT_C, label="HC (hot cache)")
    a1.set_ylabel("throughput (MOPS)")
    a2.plot(idx, [pos(r["hot"]["mean_us"]) for r in rows], "o-", color=HOT_C, label="HC mean")
    a2.plot(idx, [pos(r["cold"]["mean_us"]) for r in rows], "s-", color=COLD_C, label="CS mean")
    a2.plot(idx, [pos(r["hot"]["p99_us"]) for r in rows], "o:", color=HOT_C, alpha=0.6, label="HC p99")
    a2.plot(idx, [pos(r["cold"]["p99_us"]) for r in rows], "s:", color=COLD_C, alpha=0.6, label="CS p99")
    paper_bands(a2)
    gpu_floor(a2, rows)
    a2.set_yscale("log")
    a2.set_ylabel("latency per operation (µs)")
    labels = xticks or [str(v) for v in x]
    for ax in (a1, a2):
        ax.set_xticks(idx)
        ax.set_xticklabels(labels, rotation=30 if len(labels) > 6 else 0, fontsize=8)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    if extra:
        extra(a1, a2, idx)
    log_headroom(a2)
    a1.legend(fontsize=7.5, loc="best")
    a2.legend(fontsize=7, loc="best", ncol=2)
    finish(fig, rows, title, notes, path)


def router_model(row):
    """The trained model's kind (results before it existed are histogram)."""
    return row["config"].get("router_model", "histogram")


def fig3a(rows, path):
    rows = sorted(rows, key=lambda r: r["point"]["theta"])
    thr = rows[0]["point"]["threshold"]
    rm = router_model(rows[0])
    what = "10,000 bins" if rm == "histogram" else "hot keys by Space-Saving"
    throughput_and_latency(
        rows, [r["point"]["theta"] for r in rows], "zipfian θ", path,
        f"Fig. 3a — throughput and latency against skew (YCSB-B, {rm} model)",
        [f"{rm.capitalize()} model: {what}, threshold {thr:g}, retrained on "
         f"{rows[0]['config']['train_ops']:,} requests per θ. Hot share per θ: " +
         ", ".join(f"{r['point']['theta']}: {100 * r['hot_share']:.1f}%" for r in rows),
         "Paper (GTX 1080): HC latency < 0.15 ms up to θ = 0.9, at most 0.32 ms; throughput highest "
         "at low skew; HC share of throughput grows with θ."])


def fig3b(rows, path):
    def key(r):
        if r["system"] == "gpu-only":
            return -1
        if r["system"] == "cpu-only":
            return 2
        return r["point"]["hot_fraction"]
    rows = sorted(rows, key=key)
    ticks = []
    for r in rows:
        if r["system"] == "gpu-only":
            ticks.append("0%\n(gpu-only)")
        elif r["system"] == "cpu-only":
            ticks.append("100%\n(cpu-only)")
        else:
            ticks.append(f"{100 * r['point']['hot_fraction']:g}%")

    def extra(a1, a2, idx):
        ref_hline(a1, PAPER_MOPS_HOT_01, f"paper: > {PAPER_MOPS_HOT_01} MOPS up to 0.1% hot",
                  max(r["throughput_mops"] for r in rows))
        for i, r in enumerate(rows):
            if r["system"] == "gpu-only":
                a2.plot([i], [PAPER_ALL_GPU_MS * 1000], "k*", ms=11,
                        label=f"paper: all-GPU mean {PAPER_ALL_GPU_MS} ms")
            if r["system"] == "kvcg" and abs(r["point"]["hot_fraction"] - 0.001) < 1e-12:
                a2.plot([i], [PAPER_HOT_AT_01_US], "kP", ms=9,
                        label=f"paper: HC {PAPER_HOT_AT_01_US} µs at 0.1% hot")

    throughput_and_latency(
        rows, ticks, "share of the key space classified hot (prior-knowledge model)", path,
        "Fig. 3b — against the share of keys classified hot (θ = 0.5, 95% reads)",
        ["Hot share of requests: " + ", ".join(f"{t.splitlines()[0]}: {100 * r['hot_share']:.2f}%"
                                               for t, r in zip(ticks, rows)),
         "Paper: with the hottest 0.1% hot, the HC serves 1.83% of requests at 131.7 µs; "
         "all on the GPU: 0.82 ms mean; > 40 MOPS up to 0.1% hot."],
        xticks=ticks, extra=extra)


def fig3c(rows, path):
    rows = sorted(rows, key=lambda r: r["point"]["value_bytes"])
    throughput_and_latency(
        rows, [r["point"]["value_bytes"] for r in rows], "value size (bytes)", path,
        "Fig. 3c — against value size (θ = 0.5, 95% reads, hottest 0.1% hot)",
        ["Layout general for every size (values over 8 B live outside the index).",
         "Paper: value size up to 256 B minimally impacts KVCG's performance."])


def fig4(rows, path):
    rows = sorted(rows, key=lambda r: r["point"]["theta"])
    fig, ax = plt.subplots(figsize=(8, 5))
    fig.subplots_adjust(left=0.17, bottom=0.25, top=0.88)
    # The y axis stretches the tail: a point at quantile q sits at -log10(1 - q),
    # so p50, p90, p99, p99.9 are evenly spaced; the maximum sits one step above.
    qs = [("p50_us", "p50", 0.301), ("p90_us", "p90", 1), ("p99_us", "p99", 2),
          ("p999_us", "p99.9", 3), ("max_us", "max", 4)]
    cmap = plt.get_cmap("viridis")
    for i, r in enumerate(rows):
        h = r["hot"]
        color = cmap(i / max(1, len(rows) - 1))
        label = (f"θ = {r['point']['theta']} (HC {100 * r['hot_share']:.1f}% of ops, "
                 f"mean {h['mean_us']:.1f} µs)")
        if h.get("cdf"):
            # The engine's whole histogram: one point per non-empty bucket.
            pts = [(pos(us), min(-math.log10(max(1 - f, 1e-4)), 4)) for us, f in h["cdf"]]
            ax.plot([x for x, _ in pts], [y for _, y in pts], "-", color=color, label=label)
            ax.plot([pos(h[k]) for k, _, _ in qs[:-1]], [y for _, _, y in qs[:-1]], "o",
                    color=color, ms=4)
        else:
            xs = [pos(h[k]) for k, _, _ in qs]
            ax.plot(xs, [y for _, _, y in qs], "o-", color=color, label=label)
    ax.axvspan(*PAPER_HOT_US, color=HOT_C, alpha=0.12, lw=0,
               label=f"paper HC latency {PAPER_HOT_US[0]}–{PAPER_HOT_US[1]} µs")
    ax.set_xscale("log")
    ax.set_xlabel("hot-cache operation latency (µs)")
    ax.set_ylabel("fraction of hot operations at or below (CDF, tail stretched)")
    ax.set_yticks([y for _, _, y in qs])
    ax.set_yticklabels([f"{name} ({1 - 10 ** -y:.3g})" if name != "max" else "max (1)"
                        for _, name, y in qs])
    ax.set_ylim(0, 4.4)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="lower right")
    finish(fig, rows, "Fig. 4 — CDF of hot-cache latency (95% reads, 8 B values, hottest 0.1% hot)",
           ["CDF from the engine's latency histogram per θ (dots: p50/p90/p99/p99.9); "
            "older runs without it show only those points.",
            "Paper: a lower θ gives lower latency at most points; a higher θ sends more requests to "
            "the HC and key contention lengthens the tail."], path)


def by_system(rows):
    out = {}
    for r in rows:
        out.setdefault(r["system"], []).append(r)
    for v in out.values():
        v.sort(key=lambda r: r["point"]["read_ratio"])
    return out


def system_latency(r):
    """Mean per-operation latency of a whole system."""
    return pos(r["total"]["op_mean_us"])


def fig5(rows, path):
    systems = by_system(rows)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.8))
    fig.subplots_adjust(bottom=0.25, top=0.86, wspace=0.28)
    for name, rs in systems.items():
        x = [100 * r["point"]["read_ratio"] for r in rs]
        c = SYSTEM_C.get(name, "gray")
        a1.plot(x, [r["throughput_mops"] for r in rs], "o-", color=c, lw=2.5 if name == "kvcg" else 1.5,
                alpha=0.8, label=name + (" (total)" if name == "kvcg" else ""))
        if name == "kvcg":
            a1.plot(x, [contributions(r)[0] for r in rs], "^:", color=HOT_C, label="kvcg HC part")
            a1.plot(x, [contributions(r)[1] for r in rs], "v:", color=COLD_C, label="kvcg CS part")
            a2.plot(x, [pos(r["hot"]["mean_us"]) for r in rs], "^-", color=HOT_C, label="kvcg HC")
            a2.plot(x, [pos(r["cold"]["mean_us"]) for r in rs], "v-", color=COLD_C, label="kvcg CS")
        else:
            a2.plot(x, [system_latency(r) for r in rs], "o-", color=c, label=name)
    ref_hline(a1, PAPER_KVCG_MOPS_5, f"paper: KVCG best above {PAPER_KVCG_MOPS_5} MOPS",
              max(r["throughput_mops"] for r in rows))
    a2.plot([80], [110], "k^", ms=9, label="paper: HC 0.11 ms at 80%")
    a2.plot([80], [170], "kx", ms=9, label="paper: MICA 0.17 ms at 80%")
    paper_bands(a2)
    gpu_floor(a2, rows)
    a2.set_yscale("log")
    a1.set_ylabel("throughput (MOPS)")
    a2.set_ylabel("mean latency per operation (µs)")
    log_headroom(a2)
    for ax in (a1, a2):
        ax.set_xlabel("reads (%) — rest are updates")
        ax.grid(alpha=0.3)
    a1.legend(fontsize=7, loc="best")
    a2.legend(fontsize=6.5, loc="best", ncol=2)
    finish(fig, rows, "Fig. 5 — against the read/write ratio (θ = 0.5, 8 B values)",
           ["kvcg: prior model, hottest 0.1% hot. gpu-only = KVG, cpu-only = KVC; the CPU peer map "
            "is libcuckoo (the paper: MICA).",
            "Paper: KVC has high latency (contention); KVCG keeps KVG's throughput and adds "
            "low-latency hot operations."], path)


def fig6(rows, path):
    order = ["fig6:kvcg-T1", "fig6:kvcg-T2", "fig6:kvcg-hh-T1", "fig6:kvcg-hh-T2", "fig6:gpu-only",
             "fig6:cpu-only", "fig6:libcuckoo"]
    rows = sorted(rows, key=lambda r: order.index(r["label"]) if r["label"] in order else 99)
    names = [r["label"].split(":", 1)[-1] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.8))
    fig.subplots_adjust(bottom=0.25, top=0.86, wspace=0.28)
    idx = list(range(len(rows)))
    a1.bar(idx, [contributions(r)[1] for r in rows], color=COLD_C, label="CS part")
    a1.bar(idx, [contributions(r)[0] for r in rows], bottom=[contributions(r)[1] for r in rows],
           color=HOT_C, label="HC part")
    w = 0.38
    hot = [pos(r["hot"]["mean_us"]) for r in rows]
    cold = [pos(r["cold"]["mean_us"]) if r["system"] != "libcuckoo" else system_latency(r)
            for r in rows]
    a2.bar([i - w / 2 for i in idx], hot, w, color=HOT_C, label="HC mean")
    a2.bar([i + w / 2 for i in idx], cold, w, color=COLD_C, label="CS mean (peer: its own)")
    paper_bands(a2)
    gpu_floor(a2, rows)
    a2.set_yscale("log")
    log_headroom(a2)
    a1.set_ylabel("throughput (MOPS)")
    a2.set_ylabel("mean latency per operation (µs)")
    for ax in (a1, a2):
        ax.set_xticks(idx)
        ax.set_xticklabels(names, fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    a1.legend(fontsize=7.5)
    a2.legend(fontsize=7)
    finish(fig, rows, "Fig. 6 — YCSB-B at θ = 0.99 with two thresholds",
           ["T1 = 1.3e-5 and T2 = 0.005 (the paper's). Hot share: " +
            ", ".join(f"{n} {100 * r['hot_share']:.1f}%" for n, r in zip(names, rows)),
            "Paper: KVG beats KVCG at θ = 0.99 (> 2x the throughput of T2); KVC > 1 ms; "
            "HC latency stays lower than KVG's."], path)


def moving_average(xs, window):
    out, acc = [], []
    for v in xs:
        acc.append(v)
        acc = acc[-window:]
        good = [a for a in acc if a is not None and not math.isnan(a)]
        out.append(sum(good) / len(good) if good else math.nan)
    return out


def fig7(rows, path):
    r = rows[0]
    tl = r["timeline"]
    window = 5
    fig, ax = plt.subplots(figsize=(10, 5))
    fig.subplots_adjust(bottom=0.25, top=0.88)
    eng = tl["engine"]
    t = [e["t_s"] for e in eng]
    ax.plot(t, moving_average([e["cold_mean_us"] if e["cold_ops"] else None for e in eng], window),
            color=COLD_C, label="CS (cold) mean")
    ax.plot(t, moving_average([e["hot_mean_us"] if e["hot_ops"] else None for e in eng], window),
            color=HOT_C, label="HC (hot) mean")
    cl = tl["client"]
    ax.plot([c["t_s"] for c in cl],
            moving_average([c["batch_mean_us"] if c["batches"] else None for c in cl], window),
            color=TOTAL_C, alpha=0.5, lw=1, label="client batch mean")
    for i, s in enumerate(r["switches"]):
        ax.axvline(s["at_s"], color="red", lw=1.2,
                   label="model switch (kvcg)" if i == 0 else None)
        ax.axvspan(s["at_s"], s["at_s"] + s["duration_us"] / 1e6, color="red", alpha=0.15)
    ax.axvline(PAPER_SWITCH_S, color="gray", ls="--", lw=1,
               label=f"paper: switch at {PAPER_SWITCH_S} s, {PAPER_SWITCH_LEN_S * 1000:.0f} ms long")
    ax.axhline(900, color=COLD_C, ls="--", lw=0.8, label="paper: CS < 0.9 ms after the switch")
    ax.axhline(100, color=HOT_C, ls="--", lw=0.8, label="paper: HC 0.1 ms")
    gpu_floor(ax, rows)
    ax.set_yscale("log")
    log_headroom(ax, 4)
    ax.set_xlabel("time since the measured run started (s)")
    ax.set_ylabel(f"latency, moving average of {window} x {tl['interval_ms']:g} ms (µs)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best", ncol=2)
    sw = "; ".join(f"switch at {s['at_s']:.3f} s took {s['duration_us'] / 1000:.2f} ms "
                   f"(blocked {s['blocked_us'] / 1000:.2f} ms, replayed {s['replayed']}, "
                   f"evicted {s['evicted']}), model {s['model']}" for s in r["switches"]) or "no switch"
    finish(fig, rows, "Fig. 7 — latency over time across a model switch (YCSB-B, θ = 0.99)",
           ["Until the switch the model is all-cold (the hottest keys go to the CS); the shadow "
            f"{router_model(r)} model trains from t = 0. " + sw,
            "Paper: model installed at 1.3 s, done 340 ms later; CS latency rises during the "
            "replay and compulsory misses, then returns below 0.9 ms; HC 0.1 ms."], path)


DRAW = {"3a": fig3a, "3b": fig3b, "3c": fig3c, "4": fig4, "5": fig5, "6": fig6, "7": fig7}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--figure", default="all")
    a = ap.parse_args()
    figures = FIGURES if a.figure == "all" else a.figure.split(",")
    ok = True
    for f in figures:
        src = os.path.join(a.dir, f"fig{f}.jsonl")
        if not os.path.exists(src):
            print(f"plot.py: {src} missing", file=sys.stderr)
            ok = False
            continue
        rows = load(src)
        if not rows:
            print(f"plot.py: {src} is empty", file=sys.stderr)
            ok = False
            continue
        dst = os.path.join(a.dir, f"fig{f}.png")
        DRAW[f](rows, dst)
        print(f"plot.py: wrote {dst}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
