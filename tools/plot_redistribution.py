#!/usr/bin/env python3
"""Speedup of synthesised redistributions over XLA-style, per pair.

usage: plot_redistribution.py CHART_CSV OUT_DIR

CHART_CSV is what meshsim writes for the chart (studies/redistribution_study.h):
`group,series,speedup` lines, one per plan of a pair where XLA-style moves
data. One panel per group: every such pair, sorted by speedup (XLA-style
time / synth or rink time), log scale, with each series' geometric mean,
the series coloured in the order they first come. Writes
OUT_DIR/speedup.png. Needs Debian's python3-matplotlib.
"""
import csv
import math
import os
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    groups = OrderedDict()
    order = []
    for r in csv.DictReader(open(sys.argv[1])):
        groups.setdefault(r["group"], {}).setdefault(r["series"], []).append(float(r["speedup"]))
        if r["series"] not in order:
            order.append(r["series"])
    if not groups:
        print("no pair to plot", file=sys.stderr)
        return 1
    cols = 2 if len(groups) > 1 else 1
    rows = (len(groups) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.2 * rows), squeeze=False)
    colours = {name: f"C{i}" for i, name in enumerate(order)}
    for ax, (group, series) in zip(axes.flat, groups.items()):
        for name, speedups in series.items():
            speedups.sort(reverse=True)
            geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
            ax.plot(range(len(speedups)), speedups, marker=".", linestyle="none", markersize=3,
                    color=colours[name], label=f"{name} (geomean {geo:.2f}x)")
            ax.axhline(geo, color=colours[name], linewidth=0.8, linestyle="--")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_title(group, fontsize=9)
        ax.set_xlabel("pair (sorted)")
        ax.set_ylabel("XLA-style / synth")
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(sys.argv[2], "speedup.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
