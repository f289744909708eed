#!/usr/bin/env bash
# Times planning and simulating every strategy and balancing mode (and auto)
# for every case of the Alpa microbenchmark study, through the CLI (process
# start-up included). Target: under 2 seconds in total.
#   bench/time_study.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-5}
best=""
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  "$bin" study configs/studies/alpa-microbench.json --json > /dev/null
  end=$(date +%s.%N)
  t=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
  echo "run $i: ${t} s"
  if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
done
echo "best of $runs: ${best} s (target < 2 s)"
