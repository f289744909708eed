#!/usr/bin/env python3
"""Writes a meshsim.plan/1 of N random flows between the GPUs of a topology.

  bench/random_flows_plan.py TOPOLOGY N SEED > plan.json

Each flow goes between two distinct GPUs drawn at random (h<i>/gpu<k>; the
hosts and GPUs per host come from `meshsim topo show --json`), moves a
whole number of bytes drawn uniformly from 1-256 MiB and starts at a time
drawn uniformly from [0, 10 ms): a compute task of that duration on the
sender, then the send. Every task takes a stream of its own on each device
it touches, so that no two wait for each other: the flows start at their
times and share the network as bench_sim's random flows do.
"""
import json
import random
import subprocess
import sys

MIB = 1 << 20


def gpus(topology, meshsim):
    show = json.loads(subprocess.run([meshsim, "topo", "show", topology, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    per_host = show["gpus"] // show["hosts"]
    return [f"h{h}/gpu{g}" for h in range(show["hosts"]) for g in range(per_host)]


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: random_flows_plan.py TOPOLOGY N SEED [MESHSIM]")
    topology, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    meshsim = sys.argv[4] if len(sys.argv) > 4 else "build/release/tools/meshsim"
    names = gpus(topology, meshsim)
    rng = random.Random(seed)
    used = {d: bytearray(1024) for d in names}  # per device, the streams its tasks have taken

    def stream_for(*devices):
        s = 0
        while s < 1024 and any(used[d][s] for d in devices):
            s += 1
        if s == 1024:
            sys.exit(f"a GPU would need more than 1024 streams: use fewer flows than {n}")
        for d in devices:
            used[d][s] = 1
        return s

    tasks = []
    for i in range(n):
        a, b = rng.sample(names, 2)
        size = rng.randint(MIB, 256 * MIB)
        start_ps = rng.randrange(10_000_000_000)
        tasks.append({"id": f"w{i}", "kind": "compute", "device": a, "duration": f"{start_ps}ps",
                      "stream": stream_for(a)})
        tasks.append({"id": f"f{i}", "kind": "send", "src": a, "dst": b, "size": f"{size}B",
                      "deps": [f"w{i}"], "stream": stream_for(a, b)})
    json.dump({"format": "meshsim.plan/1", "name": f"{n} random flows", "tasks": tasks}, sys.stdout,
              separators=(",", ":"))


if __name__ == "__main__":
    main()
