#!/usr/bin/env bash
# Random flows through `meshsim simulate` (plan loading, scheduling and the
# flow solver; process start-up included; best of N runs), with peak
# resident memory from /usr/bin/time when present: N flows between random
# GPUs, sizes 1-256 MiB, starts over 10 ms (bench/random_flows_plan.py), on
# 1,024 one-GPU hosts, where every flow crosses the fabric:
#   1. a two-level fat tree, 8 hosts per leaf, 4:1 leaf uplinks
#      (configs/topologies/one-gpu-x1024-4to1.json): 100,000 flows, target
#      <= 8 s and <= 500 MB; 10,000 flows, target <= 0.5 s
#   2. a three-level fat tree, 16 pods of 8 leaves, 4:1 at the leaves, 2:1 at
#      the pod spines (configs/topologies/one-gpu-x1024-3level.json)
#   bench/time_random_flows.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-1}

source bench/best_of.sh

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for tree in one-gpu-x1024-4to1 one-gpu-x1024-3level; do
  topo=configs/topologies/$tree.json
  for n in $(tiny 100 "10000 100000"); do
    plan=$scratch/$tree-$n.json
    python3 bench/random_flows_plan.py "$topo" "$n" 7 "$bin" > "$plan"
    cmd=(simulate "$plan" -t "$topo")
    echo "$tree, $n random flows: $(best_of "$bin" "${cmd[@]}") s, peak $(peak_mb "$bin" "${cmd[@]}")"
  done
done
