#!/usr/bin/env bash
# Times the redistribution study through the CLI (process start-up
# included; best of N runs): every pair of sharding types of a rank-2 and a
# rank-3 tensor on 2x4 and 4x8 meshes of p3.8xlarge and dgx-a100 clusters
# (1,928 pairs), each planned with synth, rink and XLA-style, simulated at 128 MiB
# and verified on the host backend at 64 KiB. Target: under 60 s.
#   bench/time_redistribution.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-3}

source bench/best_of.sh

t=$(best_of "$bin" study "$(tiny tests/data/redistribution-tiny.json configs/studies/redistribution.json)" --json)
echo "redistribution study, 1,928 pairs x 3 strategies (plan, simulate, verify): ${t} s (target < 60 s)"
