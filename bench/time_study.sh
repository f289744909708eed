#!/usr/bin/env bash
# Times planning and simulating every strategy and balancing mode (and auto)
# for every case of the Alpa microbenchmark study, through the CLI (process
# start-up included). Target: under 2 seconds in total.
#   bench/time_study.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-5}
source bench/best_of.sh

study=$(tiny tests/data/reshard-tiny.json configs/studies/alpa-microbench.json)
t=$(best_of "$bin" study "$study" --json)
echo "$(basename "$study" .json) study, every strategy and balancing mode: best of $runs: ${t} s (target < 2 s)"
