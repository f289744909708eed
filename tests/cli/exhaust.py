#!/usr/bin/env python3
"""Resource-exhaustion run: every command with extreme numeric options.

Each command line below is valid and quick. Each of its numeric options is
given, one at a time, each of the values 0, 1, 2^31-1, 2^62, 10^9, 1e400,
-1 and NaN, and the command runs under an address-space limit
(RLIMIT_AS, --memory MB) and a timeout (--timeout s), as on a shared
machine. Every run must end on its own with exit 0 or 2 (1 for `run`, a
failed verification): never exit 3 (an internal error, an unforeseen
std::bad_alloc among them), never a signal (an abort, a kill for memory),
never the timeout (work that was neither bounded nor refused). Work that
would need more memory or time than the limits is to be refused up front
with its estimate (docs/limits.md).

  exhaust.py --meshsim BIN --root REPO [--jobs J] [--timeout S] [--memory MB]
"""
import argparse
import concurrent.futures
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutate import spawn  # noqa: E402  (one way to run a child under limits)

VALUES = ["0", "1", "2147483647", "4611686018427387904", "1000000000", "1e400", "-1", "nan"]

# (command line, its numeric options). The options' values in the line are
# the ones replaced; an option not in the line is appended.
COMMANDS = [
    (["topo", "show", "dgx-h100", "--hosts", "2"], ["--hosts"]),
    (["collective", "allreduce", "-t", "dgx-h100", "--hosts", "2", "--size", "1MiB"], ["--hosts", "--channels"]),
    (["collective", "alltoall", "-t", "dgx-a100", "--hosts", "2", "--size", "1MiB"], ["--hosts"]),
    (["pipeline", "--model", "gpt3-1.3b", "-t", "dgx-a100", "--hosts", "2", "--tp", "4", "--pp", "2", "-m", "4"],
     ["--hosts", "--dp", "--tp", "--pp", "-m", "-b", "-v", "--bucket-size", "--gpu-hour-price", "--zero"]),
    (["terapipe", "--model", "gpt3-1.3b", "-t", "p3.16xlarge", "--hosts", "2", "--pp", "2", "--op", "8",
      "--batch", "2"], ["--hosts", "--pp", "--op", "--batch", "--uniform-slices", "--granularity"]),
    (["search", "--model", "gpt3-1.3b", "-t", "dgx-a100", "--hosts", "1", "--global-batch", "16", "--no-plots"],
     ["--hosts", "--global-batch", "--threads", "--microbatch-sizes", "--compute-efficiency"]),
    (["calibrate", "--max", "1MiB", "--repeats", "1"], ["--repeats", "--threads"]),
    (["run", "configs/plans/two-stage-step.json", "--iterations", "1"],
     ["--iterations", "--warmup", "--threads", "--scale"]),
    (["reshard", "-t", "dgx-a100", "--hosts", "2", "--src-mesh", "hosts=0", "--dst-mesh", "hosts=1",
      "--src-spec", "S0 R", "--dst-spec", "R S0", "--tensor", "1024x1024:f16"], ["--hosts"]),
]


def jobs():
    out = []
    for base, options in COMMANDS:
        out.append(list(base))
        for opt in options:
            for v in VALUES:
                cmd = list(base)
                if opt in cmd:
                    cmd[cmd.index(opt) + 1] = v
                else:
                    cmd += [opt, v]
                out.append(cmd)
    return out


def verdict(cmd, code):
    allowed = {0, 2} | ({1} if cmd[0] == "run" else set())
    if code is None:
        return "ran past the timeout"
    if code < 0:
        return f"died by signal {-code}"
    if code not in allowed:
        return f"exit {code}" + (" (internal error)" if code == 3 else "")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meshsim", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--memory", type=float, default=4096.0, help="the children's address-space limit, MB")
    args = ap.parse_args()
    args.meshsim = os.path.abspath(args.meshsim)
    root = os.path.abspath(args.root)
    runs = jobs()

    def one(cmd):
        code, _, err, _, took = spawn(cmd, root, args, args.timeout, address_space_mb=args.memory)
        return cmd, code, err, took

    failures = []
    counts = {}
    slowest = (0.0, "")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for cmd, code, err, took in pool.map(one, runs):
            counts[str(code)] = counts.get(str(code), 0) + 1
            slowest = max(slowest, (took, " ".join(cmd)))
            why = verdict(cmd, code)
            if why:
                failures.append((why, " ".join(cmd), err.decode("utf-8", "replace")[-400:]))
    for why, cmd, err in failures:
        print(f"FAIL {why}: meshsim {cmd}\n  {err.strip()}")
    print(f"exhaust.py: {len(runs)} runs under {args.memory:.0f} MB of address space and {args.timeout:.0f} s; "
          f"exits {dict(sorted(counts.items()))}; slowest {slowest[0]:.1f} s ({slowest[1]})")
    print(f"{len(runs) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
