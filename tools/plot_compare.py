#!/usr/bin/env python3
"""Chart of a `meshsim compare` run: compare.png beside its results.csv.

usage: plot_compare.py RESULTS_CSV OUT_DIR [PNG]   (PNG: another file than OUT_DIR/compare.png)

The columns that are not figures name the variant (topology, hosts, fabric,
each --vary option). With a `size` column (collective sweeps) it draws bus bandwidth
against size, one line per variant, on a log size axis; otherwise one
panel per numeric figure (iteration, MFU, cost per step, ...), one
horizontal bar per variant, each labelled with its value. Needs Debian's python3-matplotlib.
"""
import csv
import os
import re
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

# The figure columns `meshsim compare` writes; every other column names the variant.
FIGURE_COLUMNS = ["size", "time", "busbw GB/s", "algorithm", "iteration", "band", "samples/s", "TFLOP/s/GPU",
                  "MFU", "idle", "cost/step", "fits", "best", "lower bound", "makespan", "alone", "together",
                  "slowdown"]
UNITS = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
SIZES = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def number(text, table):
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]+)\s*", text)
    if not m or m.group(2) not in table:
        return None
    return float(m.group(1)) * table[m.group(2)]


def size_label(value, _pos):
    for unit, scale in reversed(SIZES.items()):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def variant(row):
    parts = [f"{c} {v}" for c, v in row.items() if c not in FIGURE_COLUMNS]
    return ", ".join(parts) if parts else "run"


def metric(text):
    """A cell as a number and its axis unit: times in seconds, "12.3 %", "$0.41"; None otherwise."""
    text = text.strip()
    if text.startswith("$"):
        try:
            return float(text[1:]), "$"
        except ValueError:
            return None
    if text.endswith("%"):
        try:
            return float(text[:-1]), "%"
        except ValueError:
            return None
    t = number(text, UNITS)
    if t is not None:
        return t, "s"
    try:
        return float(text), ""
    except ValueError:
        return None


def sweep_chart(rows, out):
    lines = OrderedDict()
    for r in rows:
        lines.setdefault(variant(r), []).append((number(r["size"], SIZES), float(r["busbw GB/s"])))
    fig, ax = plt.subplots(figsize=(9, 5))
    for name, points in lines.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=name)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(size_label))
    ax.set_xlabel("size")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def bar_chart(rows, out):
    """One panel per numeric figure, one bar per variant, each labelled with its cell."""
    columns = [c for c in rows[0] if c in FIGURE_COLUMNS and all(metric(r[c]) for r in rows)]
    names = [variant(r) for r in rows]
    ncols = min(3, len(columns))
    nrows = (len(columns) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols + 2.5, nrows * (1.0 + 0.4 * len(rows))),
                             squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(columns):
            ax.set_visible(False)
            continue
        column = columns[k]
        values = [metric(r[column])[0] for r in rows]
        unit = metric(rows[0][column])[1]
        bars = ax.barh(range(len(rows)), values, color="#4878a8")
        ax.set_yticks(range(len(rows)), names if k % ncols == 0 else [""] * len(rows), fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{column} ({unit})" if unit else column, fontsize=9)
        for bar, r in zip(bars, rows):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, " " + r[column], va="center",
                    fontsize=7)
        ax.margins(x=0.35)
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(sys.argv[1])))
    if not rows:
        return 0
    out = sys.argv[3] if len(sys.argv) == 4 else os.path.join(sys.argv[2], "compare.png")
    if "size" in rows[0] and "busbw GB/s" in rows[0]:
        sweep_chart(rows, out)
    else:
        bar_chart(rows, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
