"""Rewrites a JSON file in place with what differs between runs and
checkouts blanked, so that two runs of the same scenario give the same
bytes: the values of the keys below (how long meshsim itself took, not what
it predicts) become "<wall clock>", and the source tree's path (SOURCE_ROOT)
at the start of a string becomes "<source>". Everything else, order and
formatting included, is kept.

normalise.py FILE SOURCE_ROOT
"""
import json
import sys

WALL_CLOCK = {"build_s", "simulate_s", "dp_seconds", "seconds", "wall_s"}


def blank(j):
    if isinstance(j, dict):
        return {k: "<wall clock>" if k in WALL_CLOCK else blank(v) for k, v in j.items()}
    if isinstance(j, list):
        return [blank(v) for v in j]
    if isinstance(j, str) and j.startswith(ROOT + "/"):
        return "<source>" + j[len(ROOT):]
    return j


path, ROOT = sys.argv[1], sys.argv[2].rstrip("/")
with open(path) as f:
    data = json.load(f)
with open(path, "w") as f:
    json.dump(blank(data), f, indent=1)
    f.write("\n")
