#!/usr/bin/env python3
"""Bar charts of a meshsim resharding study: one PNG per case group.

usage: plot_study.py CHART_CSV OUT_DIR [PNG]

CHART_CSV is what meshsim writes for the chart (studies/reshard_study.h):
`group,case,series,value` lines, the series already decided (naive
send-recv, the best of each strategy over its balancing modes, auto,
signal) and the case's lower bound as the series "bound". With PNG
(`meshsim reshard --plot`), the one group's chart is written there instead
of OUT_DIR/GROUP.png.

For every case, the effective bandwidth (Gb/s: tensor bits / time) of naive
send-recv and the best send-recv, all-gather, broadcast and scatter over
balancing modes, and auto, on a linear axis, with the case's lower bound
drawn as a black line across its bars. The signal strategy (every transfer
one byte: communication for free) is thousands of times above the others,
so it is a marker, at the top edge when it is above the axis, its range in
the legend. Cases wrap into
rows of at most 12, so the chart is 1280 px wide whatever their number.
Needs Debian's python3-matplotlib.
"""
import csv
import math
import os
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

SERIES = ["send-recv (naive)", "send-recv", "allgather", "broadcast", "scatter", "auto"]
PER_ROW = 12


def read(path):
    groups = OrderedDict()
    for r in csv.DictReader(open(path)):
        groups.setdefault(r["group"], OrderedDict()).setdefault(r["case"], {})[r["series"]] = float(r["value"])
    return groups


def draw_row(ax, cases, names, top, full_width):
    width = 0.8 / len(SERIES)
    for i, s in enumerate(SERIES):
        xs = [k + (i - len(SERIES) / 2 + 0.5) * width for k in range(len(names))]
        ax.bar(xs, [cases[c].get(s, 0.0) for c in names], width, label=s, color=f"C{i}")
    for k, c in enumerate(names):
        if "bound" in cases[c]:
            ax.hlines(cases[c]["bound"], k - 0.45, k + 0.45, colors="black", linewidth=1.5)
        if "signal" in cases[c]:
            ax.plot([k], [min(top, cases[c]["signal"])], marker="^", color="grey", markersize=6, clip_on=False)
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, max(len(names), PER_ROW if full_width else len(names)) - 0.4)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=8, rotation=30 if max(len(n) for n in names) > 8 else 0, ha="right"
                       if max(len(n) for n in names) > 8 else "center")
    ax.set_ylabel("Gb/s", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_one(group, name, cell, out):
    """A single case: one bar per strategy, labelled with its Gb/s."""
    series = [s for s in SERIES if s in cell]
    fig, ax = plt.subplots(figsize=(12.8, 4.2))
    bars = ax.bar(range(len(series)), [cell[s] for s in series], 0.6,
                  color=[f"C{SERIES.index(s)}" for s in series])
    ax.bar_label(bars, fmt="%.2f", fontsize=8)
    handles, labels = [], []
    if "bound" in cell:
        ax.axhline(cell["bound"], color="black", linewidth=1.5)
        handles.append(Line2D([], [], color="black", linewidth=1.5))
        labels.append(f"lower bound ({cell['bound']:.2f} Gb/s)")
    if "signal" in cell:
        labels.append(f"signal: {cell['signal']:,.0f} Gb/s (communication for free; off the axis)")
        handles.append(Line2D([], [], color="grey", marker="^", linestyle=""))
    ax.set_xticks(range(len(series)), series, fontsize=9)
    ax.set_ylabel("Gb/s (tensor bits / time)", fontsize=9)
    ax.set_ylim(0, 1.15 * max([cell[s] for s in series] + [cell.get("bound", 0.0)]))
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{group}: {name}", fontsize=10)
    if handles:
        ax.legend(handles, labels, fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out}")


def plot_group(group, cases, out):
    names = list(cases)
    rows = math.ceil(len(names) / PER_ROW)
    values = [v for c in cases.values() for k, v in c.items() if k in SERIES or k == "bound"]
    top = 1.1 * max(values) if values else 1.0
    fig, axes = plt.subplots(rows, 1, figsize=(12.8, 1.4 + 2.9 * rows), squeeze=False)
    for r in range(rows):
        draw_row(axes[r][0], cases, names[r * PER_ROW:(r + 1) * PER_ROW], top, rows > 1)
    signal = [c["signal"] for c in cases.values() if "signal" in c]
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(Line2D([], [], color="black", linewidth=1.5))
    labels.append("lower bound")
    if signal:
        handles.append(Line2D([], [], color="grey", marker="^", linestyle=""))
        labels.append(f"signal ({min(signal):,.0f}-{max(signal):,.0f} Gb/s; at the top edge when above it)")
    height = 1.4 + 2.9 * rows
    fig.suptitle(f"{group}: effective bandwidth (tensor bits / resharding time)", fontsize=10,
                 y=1 - 0.1 / height, va="top")
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.4 / height), ncol=8, fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.8 / height))
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out}")


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    for group, cases in read(sys.argv[1]).items():
        out = sys.argv[3] if len(sys.argv) == 4 else os.path.join(sys.argv[2], f"{group}.png")
        if len(cases) == 1:
            name, cell = next(iter(cases.items()))
            plot_one(group, name, cell, out)
        else:
            plot_group(group, cases, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
