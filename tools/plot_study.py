#!/usr/bin/env python3
"""Bar charts of a meshsim study: one PNG per case group.

usage: plot_study.py RESULTS_CSV OUT_DIR

For every case, the effective bandwidth (Gb/s) of naive send-recv, the best
send-recv, all-gather and broadcast over balancing modes, auto, and the
signal bound, on a log scale. Needs Debian's python3-matplotlib.
"""
import csv
import os
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SERIES = ["send-recv (naive)", "send-recv", "allgather", "broadcast", "auto", "signal"]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(sys.argv[1])))
    groups = OrderedDict()
    for r in rows:
        cases = groups.setdefault(r["group"], OrderedDict())
        cell = cases.setdefault(r["case"], {})
        key = "send-recv (naive)" if (r["strategy"], r["balance"]) == ("send-recv", "none") else r["strategy"]
        gbps = float(r["effective_gbps"])
        cell[key] = max(cell.get(key, 0.0), gbps)
        if r["strategy"] == "send-recv":
            cell["send-recv"] = max(cell.get("send-recv", 0.0), gbps)
    for group, cases in groups.items():
        names = list(cases)
        width = 0.8 / len(SERIES)
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(names) + 2), 4.5))
        for i, s in enumerate(SERIES):
            xs = [k + (i - len(SERIES) / 2 + 0.5) * width for k in range(len(names))]
            ys = [cases[c].get(s, 0.0) for c in names]
            ax.bar(xs, ys, width, label=s)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=45 if len(names) > 10 else 0, ha="right" if len(names) > 10 else "center",
                           fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("effective bandwidth (Gb/s)")
        ax.set_title(f"{group}: tensor bits / resharding time")
        ax.legend(fontsize=7, ncol=3)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        out = os.path.join(sys.argv[2], f"{group}.png")
        fig.savefig(out, dpi=120)
        plt.close(fig)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
