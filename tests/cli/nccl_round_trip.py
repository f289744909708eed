"""Checks a network fit against the figures the nccl-tests output was made from.

  nccl_round_trip.py FIT.json KNOWN.json TOL   the fitted links' efficiency and
      latency each within TOL (relative) of the known calibration's
  nccl_round_trip.py --rows A.txt B.txt TOL    every row's time in B within TOL of A's
"""
import json
import re
import sys


def seconds(text):
    value, unit = re.fullmatch(r"([0-9.e+-]+)(ns|us|ms|s)", text).groups()
    return float(value) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def rows(path):
    out = []
    for line in open(path):
        w = line.split()
        if w and not line.startswith("#") and w[0].isdigit():
            out.append((int(w[0]), float(w[5])))
    return out


def main(argv):
    bad = []
    if argv[1] == "--rows":
        a, b, tol = rows(argv[2]), rows(argv[3]), float(argv[4])
        if [s for s, _ in a] != [s for s, _ in b]:
            bad.append("the two files have different sizes")
        for (size, ta), (_, tb) in zip(a, b):
            if abs(tb / ta - 1) > tol:
                bad.append(f"{size} B: {tb} us against {ta} us")
    else:
        fit, known, tol = json.load(open(argv[1]))["links"], json.load(open(argv[2]))["links"], float(argv[3])
        for kind, k in known.items():
            f = fit[kind]
            if abs(f["efficiency"] / k["efficiency"] - 1) > tol:
                bad.append(f"{kind} efficiency {f['efficiency']} against {k['efficiency']}")
            if abs(seconds(f["latency"]) / seconds(k["latency"]) - 1) > tol:
                bad.append(f"{kind} latency {f['latency']} against {k['latency']}")
    for b in bad:
        print(b)
    return 1 if bad else 0


sys.exit(main(sys.argv))
