"""Rewrites a JSON file in place with its wall-clock timings blanked, so that
two runs of the same scenario give the same bytes: the values of the keys
below (how long meshsim itself took, not what it predicts) become
"<wall clock>". Everything else, order and formatting included, is kept.
"""
import json
import sys

WALL_CLOCK = {"build_s", "simulate_s", "dp_seconds", "seconds", "wall_s"}


def blank(j):
    if isinstance(j, dict):
        return {k: "<wall clock>" if k in WALL_CLOCK else blank(v) for k, v in j.items()}
    if isinstance(j, list):
        return [blank(v) for v in j]
    return j


path = sys.argv[1]
with open(path) as f:
    data = json.load(f)
with open(path, "w") as f:
    json.dump(blank(data), f, indent=1)
    f.write("\n")
