#!/usr/bin/env bash
# `reshard --strategy auto` timed through the CLI (process start-up
# included; best of N runs). auto simulates up to 150 candidate plans, so
# its time is the cost of scoring a candidate:
#   1. 8 dgx-h100 hosts (64 GPUs), a 16384 x 16384 bf16 tensor from
#      "S0 R" on hosts 0-3 to "R S01" on hosts 4-7 (every receiver needs a
#      piece from every source row);
#   2. 4 p3.8xlarge hosts (Alpa's microbenchmark machines), 1024 x 1024 x 64
#      f32 from "S0 R R" to "R S01 R".
#   bench/time_reshard.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-3}

source bench/best_of.sh

a=$(best_of "$bin" reshard -t dgx-h100 --hosts 8 --tensor "$(tiny 1024x1024 16384x16384):bfloat16" --src-mesh hosts=0-3 \
  --src-spec "S0 R" --dst-mesh hosts=4-7 --dst-spec "R S01" --strategy auto)
echo "reshard auto, 8 x dgx-h100, $(tiny 1024x1024 16384x16384) bf16, S0 R -> R S01: ${a} s"
b=$(best_of "$bin" reshard -t p3.8xlarge --hosts 4 --tensor 1024x1024x64:float32 --src-mesh hosts=0-1 \
  --src-spec "S0 R R" --dst-mesh hosts=2-3 --dst-spec "R S01 R" --strategy auto)
echo "reshard auto, 4 x p3.8xlarge, 1024x1024x64 f32, S0 R R -> R S01 R: ${b} s"
