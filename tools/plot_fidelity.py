#!/usr/bin/env python3
"""How far each prediction of a meshsim fidelity report is from its published figure.

usage: plot_fidelity.py RESULTS_CSV OUT_DIR

Reads the results.csv written by `meshsim study FIDELITY.json --out DIR` and
writes OUT_DIR/fidelity.png: one row per figure with an error (ours /
published - 1, in %), grouped as in the report; a light band is the row's
bound, a darker band inside it its target, and the dot is green within the
target, orange in a known gap (outside the target, within the bound) and red
outside the bound. Rows that only check an order are left out. Errors beyond
+-300 % are drawn at the edge with their value written beside them.

Needs Debian's python3-matplotlib.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_cells import number  # noqa: E402  (beside this script)

LIMIT = 300.0  # % drawn on the axis
COLOURS = {"within target": "tab:green", "known gap": "tab:orange", "OUTSIDE BOUND": "tab:red"}


def band(row, low, high):
    """A band of the value as % error against the published figure."""
    published = number(row["published"])
    lo, hi = number(row[low]), number(row[high])
    if not published or lo is None or hi is None:
        return None
    return 100 * (lo / published - 1), 100 * (hi / published - 1)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], newline="") as f:
        rows = [r for r in csv.DictReader(f) if number(r.get("error")) is not None]
    if not rows:
        print("no row with an error to draw", file=sys.stderr)
        return 1
    height = 0.32 * len(rows) + 1.5
    fig, ax = plt.subplots(figsize=(12.8, height), dpi=100)
    labels = []
    for y, r in enumerate(rows):
        for (low, high), shade in ((("bound_low", "bound_high"), 0.15), (("target_low", "target_high"), 0.35)):
            b = band(r, low, high)
            if b:
                lo, hi = max(b[0], -LIMIT), min(b[1], LIMIT)
                ax.barh(y, hi - lo, left=lo, height=0.7, color="tab:blue", alpha=shade, linewidth=0)
        err = 100 * number(r["error"])
        shown = max(-LIMIT, min(LIMIT, err))
        ax.plot(shown, y, "o", color=COLOURS.get(r["verdict"], "black"), markersize=6)
        if shown != err:
            ax.annotate(f"{err:+.0f} %", (shown, y), xytext=(-6 if err > 0 else 6, 0), textcoords="offset points",
                        ha="right" if err > 0 else "left", va="center", fontsize=7)
        labels.append(f"{r['group']}: {r['name']}")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(-LIMIT * 1.05, LIMIT * 1.05)
    ax.set_xlabel("error of the prediction (ours / published - 1), %")
    ax.set_title("meshsim against published figures: dot = error; dark band = target, light band = bound")
    fig.tight_layout()
    fig.savefig(os.path.join(argv[2], "fidelity.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
