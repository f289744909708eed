#!/usr/bin/env python3
"""Gantt chart of simulated pipeline iterations (`meshsim pipeline --plot`).

usage: plot_gantt.py GANTT_CSV OUT_DIR PNG TITLE

GANTT_CSV has panel, device, kind, microbatch, start_s, end_s: one row per
task on a pipeline device's first GPU. Each panel (an iteration: one
schedule of `--schedule all`, say) gets its own chart, one above the
other on one time axis, so their lengths compare. Forward (F), backward (B) and
weight-gradient (W) passes are coloured by kind and labelled with their
microbatch where the bar is wide enough; all-reduces and the optimizer
step are drawn in their own colours. Needs Debian's python3-matplotlib.
"""
import csv
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLOURS = OrderedDict([("F", "#4878a8"), ("B", "#59a14f"), ("W", "#f28e2b"), ("tp all-reduce", "#e15759"),
                       ("dp all-reduce", "#b07aa1"), ("optimizer", "#9c9c9c")])


def draw(ax, rows, end, scale):
    devices = list(OrderedDict((r["device"], None) for r in rows))
    seen = set()
    for r in rows:
        y = devices.index(r["device"])
        start, stop = float(r["start_s"]) * scale, float(r["end_s"]) * scale
        colour = COLOURS.get(r["kind"], "#cccccc")
        seen.add(r["kind"])
        thin = r["kind"] not in ("F", "B", "W")
        height = 0.35 if thin else 0.8
        ax.barh(y, stop - start, left=start, height=height, color=colour, edgecolor="white", linewidth=0.3)
        if not thin and r["microbatch"] and (stop - start) > end * scale / 120:
            ax.text((start + stop) / 2, y, r["microbatch"], ha="center", va="center", fontsize=6, color="white")
    ax.set_yticks(range(len(devices)), devices, fontsize=8)
    ax.invert_yaxis()
    return seen


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
    fig, axes = plt.subplots(len(panels), 1, figsize=(12.8, 0.8 + sum(heights)), sharex=True,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    seen = set()
    for ax, (name, panel_rows) in zip(axes[:, 0], panels.items()):
        seen |= draw(ax, panel_rows, end, scale)
        if name:
            ax.set_title(name, fontsize=9, loc="left")
    axes[-1, 0].set_xlabel(f"time ({unit})")
    fig.suptitle(sys.argv[4], fontsize=10)
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items() if k in seen], fontsize=8,
               loc="center right")
    fig.tight_layout(rect=(0, 0, 0.9, 1))
    fig.savefig(sys.argv[3], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
