#!/usr/bin/env python3
"""Throughput against memory, and the best dp x pp layout, of a meshsim search.

usage: plot_search.py RESULTS_CSV OUT_DIR

Reads the results.csv written by `meshsim search` and writes two PNGs:

  OUT_DIR/pareto.png   samples/s against peak memory per GPU (GiB) for every
                       simulated configuration, coloured by schedule, with
                       the Pareto front (the most samples/s for at most that
                       memory) and the fastest configuration labelled.
  OUT_DIR/heatmap.png  for the tensor-parallel degree of the fastest
                       configuration, the best samples/s of each (dp, pp)
                       cell over every other dimension; "OOM" where every
                       runnable configuration of the cell is over memory,
                       "-" where every one is invalid, blank where the CSV
                       has no configuration with that dp and pp.

Exits 1 when the CSV has no simulated configuration. Needs Debian's
python3-matplotlib.
"""
import csv
import math
import os
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_cells import number  # noqa: E402  (beside this script)

GIB = float(1 << 30)
REQUIRED = ["dp", "tp", "pp", "microbatches", "microbatch_size", "schedule", "status", "samples_per_s",
            "peak_memory_bytes"]


def label(r) -> str:
    """A short name for one configuration, e.g. "dp4 tp2 pp8 mb1x128 zb-h1 send-recv"."""
    parts = [f"dp{r['dp']}", f"tp{r['tp']}", f"pp{r['pp']}", f"mb{r['microbatch_size']}x{r['microbatches']}",
             r["schedule"]]
    if r.get("virtual_stages") not in (None, "", "1"):
        parts.append(f"v{r['virtual_stages']}")
    if r.get("reshard"):
        parts.append(r["reshard"])
    if r.get("recompute") not in (None, "", "0", "none"):
        parts.append(f"recompute {r['recompute']}")
    if r.get("sequence_parallel") == "1":
        parts.append("sp")
    if r.get("zero") not in (None, "", "0"):
        parts.append(f"zero{r['zero']}")
    if r.get("flash_attention") == "1":
        parts.append("flash")
    return " ".join(parts)


def pareto_front(points):
    """The points no other point beats: sorted by memory, each faster than all that need no more memory."""
    front, best = [], -math.inf
    for mem, sps, r in sorted(points, key=lambda p: (p[0], -p[1])):
        if sps > best:
            front.append((mem, sps, r))
            best = sps
    return front


def plot_pareto(simulated, counts, out):
    fig, ax = plt.subplots(figsize=(10, 6))
    schedules = OrderedDict()
    for p in simulated:
        schedules.setdefault(p[2]["schedule"], []).append(p)
    for name, points in schedules.items():
        ax.scatter([p[0] for p in points], [p[1] for p in points], s=14, alpha=0.45, linewidths=0, label=name)
    front = pareto_front(simulated)
    fx, fy = [p[0] for p in front], [p[1] for p in front]
    ax.step(fx, fy, where="post", color="black", linewidth=1.2, label="Pareto front")
    ax.scatter(fx, fy, s=30, facecolors="none", edgecolors="black", linewidths=1.0, zorder=3)

    mem, sps, best = max(simulated, key=lambda p: p[1])
    ax.scatter([mem], [sps], s=90, marker="*", color="crimson", zorder=4)
    lo, hi = min(p[0] for p in simulated), max(p[0] for p in simulated)
    right_half = hi > lo and (mem - lo) / (hi - lo) > 0.5
    ax.annotate(f"{label(best)}\n{sps:.1f} samples/s, {mem:.1f} GiB", xy=(mem, sps),
                xytext=(-16 if right_half else 16, -34), textcoords="offset points",
                ha="right" if right_half else "left", va="top", fontsize=9,
                bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="crimson", alpha=0.9),
                arrowprops=dict(arrowstyle="->", color="crimson"))

    ax.set_xlabel("peak memory per GPU (GiB)")
    ax.set_ylabel("throughput (samples/s)")
    title = f"{counts['simulated']} simulated"
    if counts["out_of_memory"]:
        title += f", {counts['out_of_memory']} over memory"
    if counts["invalid"]:
        title += f", {counts['invalid']} invalid"
    ax.set_title(f"Throughput against memory ({title})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "pareto.png"), dpi=128)
    plt.close(fig)


def plot_heatmap(rows, tp, out):
    cells = {}
    for r in rows:
        if r["tp"] != tp:
            continue
        cell = cells.setdefault((int(r["dp"]), int(r["pp"])), {"best": None, "oom": False})
        if r["status"] == "simulated":
            sps = number(r["samples_per_s"])
            if sps is not None and (cell["best"] is None or sps > cell["best"]):
                cell["best"] = sps
        elif r["status"] == "out_of_memory":
            cell["oom"] = True
    dps = sorted({dp for dp, _ in cells})
    pps = sorted({pp for _, pp in cells})
    grid = [[cells.get((dp, pp), {}).get("best") for pp in pps] for dp in dps]
    values = [v for row in grid for v in row if v is not None]
    vmin, vmax = min(values), max(values)
    if vmax == vmin:
        vmin, vmax = vmin - 0.5, vmax + 0.5

    fig, ax = plt.subplots(figsize=(10, 6))
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("#e8e8e8")
    image = ax.imshow([[math.nan if v is None else v for v in row] for row in grid], cmap=cmap, vmin=vmin,
                      vmax=vmax, aspect="auto", origin="lower")
    size = 11 if len(pps) <= 8 and len(dps) <= 8 else 8
    for i, dp in enumerate(dps):
        for j, pp in enumerate(pps):
            v = grid[i][j]
            if v is not None:
                bright = (v - vmin) / (vmax - vmin) > 0.6
                ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=size,
                        color="black" if bright else "white")
            elif (dp, pp) in cells:
                oom = cells[(dp, pp)]["oom"]
                ax.text(j, i, "OOM" if oom else "\u2014", ha="center", va="center", fontsize=size, color="dimgrey")
    ax.set_xticks(range(len(pps)))
    ax.set_xticklabels([str(pp) for pp in pps])
    ax.set_yticks(range(len(dps)))
    ax.set_yticklabels([str(dp) for dp in dps])
    ax.set_xlabel("pipeline-parallel degree (pp)")
    ax.set_ylabel("data-parallel degree (dp)")
    ax.set_title(f"Best throughput (samples/s) per dp x pp at tp={tp}")
    fig.colorbar(image, ax=ax, label="samples/s")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "heatmap.png"), dpi=128)
    plt.close(fig)


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, out = sys.argv[1:]
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            rows = list(reader)
    except OSError as e:
        print(f"{path}: {e.strerror}", file=sys.stderr)
        return 1
    if missing:
        print(f"{path}: missing column(s) {', '.join(missing)}", file=sys.stderr)
        return 1

    counts = {"simulated": 0, "out_of_memory": 0, "invalid": 0}
    simulated = []
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        if r["status"] == "simulated":
            sps, mem = number(r["samples_per_s"]), number(r["peak_memory_bytes"])
            if sps is not None and mem is not None:
                simulated.append((mem / GIB, sps, r))
    if not simulated:
        print(f"{path}: no simulated configuration to plot", file=sys.stderr)
        return 1

    os.makedirs(out, exist_ok=True)
    plot_pareto(simulated, counts, out)
    plot_heatmap(rows, max(simulated, key=lambda p: p[1])[2]["tp"], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
