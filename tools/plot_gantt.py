#!/usr/bin/env python3
"""Gantt chart of simulated pipeline iterations (`meshsim pipeline --plot`).

usage: plot_gantt.py GANTT_CSV OUT_DIR PNG TITLE

GANTT_CSV has panel, device, kind, microbatch, start_s, end_s: one row per
task on a pipeline device's first GPU. Each panel (an iteration: one
schedule of `--schedule all`, say) gets its own chart, one above the
other on one time axis, so their lengths compare. Forward (F), backward (B) and
weight-gradient (W) passes are coloured by kind and labelled with their
microbatch where the bar is wide enough; all-reduces and the optimizer
step are drawn in their own colours. Bars of one kind on one device
narrower than three pixels and less than a pixel apart are drawn as one
(the title says how many tasks became how many bars), so a chart of many
microbatches draws in about a second. Needs Debian's python3-matplotlib.
"""
import csv
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy  # noqa: E402
from matplotlib.patches import Patch, PathPatch  # noqa: E402
from matplotlib.path import Path  # noqa: E402

COLOURS = OrderedDict([("F", "#4878a8"), ("B", "#59a14f"), ("W", "#f28e2b"), ("tp all-reduce", "#e15759"),
                       ("dp all-reduce", "#b07aa1"), ("optimizer", "#9c9c9c")])
FIGURE_WIDTH = 12.8  # inches
DPI = 100


def merge(bars, pixel):
    """Sorted (start, stop) bars with those narrower than three pixels
    joined to their neighbour when less than a pixel apart: a chart cannot
    show them apart, and drawing each would take its time. Wider bars stay
    apart."""
    out = []
    for start, stop in bars:
        narrow = stop - start < 3 * pixel or (out and out[-1][1] - out[-1][0] < 3 * pixel)
        if out and narrow and start - out[-1][1] < pixel:
            out[-1][1] = max(out[-1][1], stop)
        else:
            out.append([start, stop])
    return out


def rectangles(bars, y, height):
    """The bars as one compound path (one artist, drawn at once)."""
    bars = numpy.asarray(bars, dtype=float)
    n = len(bars)
    vertices = numpy.empty((n, 5, 2))
    vertices[:, :, 1] = [y, y, y + height, y + height, y]
    vertices[:, 0, 0] = vertices[:, 3, 0] = vertices[:, 4, 0] = bars[:, 0]
    vertices[:, 1, 0] = vertices[:, 2, 0] = bars[:, 1]
    codes = numpy.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], n)
    return Path(vertices.reshape(-1, 2), codes)


def draw(ax, rows, end, scale, pixel):
    """One panel; returns the kinds drawn and the bars before and after merging."""
    devices = list(OrderedDict((r["device"], None) for r in rows))
    row_of = {d: i for i, d in enumerate(devices)}
    groups = OrderedDict()  # (device, kind) -> [(start, stop)]
    labels = []
    for r in rows:
        start, stop = float(r["start_s"]) * scale, float(r["end_s"]) * scale
        groups.setdefault((r["device"], r["kind"]), []).append((start, stop))
        if r["kind"] in ("F", "B", "W") and r["microbatch"] and (stop - start) > end * scale / 120:
            labels.append(((start + stop) / 2, row_of[r["device"]], r["microbatch"]))
    drawn = 0
    for (device, kind), bars in groups.items():
        thin = kind not in ("F", "B", "W")
        height = 0.35 if thin else 0.8
        bars = merge(sorted(bars), pixel)
        drawn += len(bars)
        # White edges part wide bars; on bars a pixel or two wide they would hide the colour.
        edge = 0.3 if sorted(b - a for a, b in bars)[len(bars) // 2] >= 3 * pixel else 0.0
        patch = PathPatch(rectangles(bars, row_of[device] - height / 2, height), transform=ax.transData,
                          facecolor=COLOURS.get(kind, "#cccccc"), edgecolor="white", linewidth=edge)
        ax.add_artist(patch)  # (add_patch would walk every rectangle for the limits, set below)
        patch.set_clip_path(ax.patch)
    for x, y, text in labels:
        ax.text(x, y, text, ha="center", va="center", fontsize=6, color="white")
    ax.set_yticks(range(len(devices)), devices, fontsize=8)
    ax.set_xlim(-0.02 * end * scale, 1.02 * end * scale)
    ax.set_ylim(len(devices) - 0.5, -0.5)
    return {kind for _, kind in groups}, len(rows), drawn


def main() -> int:
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(sys.argv[1])))
    panels = OrderedDict()
    for r in rows:
        panels.setdefault(r["panel"], []).append(r)
    end = max((float(r["end_s"]) for r in rows), default=1.0)
    scale, unit = (1e3, "ms") if end < 10 else (1.0, "s")
    heights = [0.6 + 0.45 * len({r["device"] for r in p}) for p in panels.values()]
    fig, axes = plt.subplots(len(panels), 1, figsize=(FIGURE_WIDTH, 0.8 + sum(heights)), sharex=True,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    seen = set()
    tasks = bars = 0
    pixel = end * scale / (FIGURE_WIDTH * DPI)  # the time one pixel spans
    for ax, (name, panel_rows) in zip(axes[:, 0], panels.items()):
        kinds, n, drawn = draw(ax, panel_rows, end, scale, pixel)
        seen |= kinds
        tasks, bars = tasks + n, bars + drawn
        if name:
            ax.set_title(name, fontsize=9, loc="left")
    axes[-1, 0].set_xlabel(f"time ({unit})")
    title = sys.argv[4]
    if bars < tasks:
        title += f"\n({tasks:,} tasks drawn as {bars:,} bars: narrow ones less than a pixel apart are joined)"
    fig.suptitle(title, fontsize=10)
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items() if k in seen], fontsize=8,
               loc="center right")
    fig.tight_layout(rect=(0, 0, 0.9, 1 - 0.45 / fig.get_figheight()))  # room for the title
    fig.savefig(sys.argv[3], dpi=DPI)
    return 0


if __name__ == "__main__":
    sys.exit(main())
