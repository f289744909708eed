#!/usr/bin/env bash
# Pipeline speed targets, timed through the CLI (process start-up included;
# best of N runs):
#   1. one GPT-3 175B iteration on 1,024 GPUs (128 x dgx-h100, rail fabric),
#      dp 8, tp 8, pp 16, 64 microbatches, 1F1B, flow-level network: < 2 s
#   2. the TeraPipe DP for L = 2048 in units of 8 (setting (10): 175B,
#      48 stages x op 8, batch 2, on p3.16xlarge-x48): < 1 s; the DP's own
#      time is printed too
#   bench/time_pipeline.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-3}

source bench/best_of.sh

big=(pipeline --model gpt3-175b --topology dgx-h100 --hosts "$(tiny 2 128)" --fabric rail --dp "$(tiny 1 8)" \
  --tp 8 --pp "$(tiny 2 16)" --microbatches "$(tiny 2 64)" --schedule 1f1b)
p=$(best_of "$bin" "${big[@]}")
echo "pipeline gpt3-175b, $(tiny "16 GPUs, dp1 tp8 pp2, 2" "1024 GPUs, dp8 tp8 pp16, 64") microbatches, 1f1b: ${p} s (target < 2 s)"
"$bin" "${big[@]}" | grep -E "^plan:"

tp=(terapipe --model gpt3-175b --topology configs/topologies/p3.16xlarge-x48.json --pp 48 --op 8
  --batch "$(tiny 1 2)")
t=$(best_of "$bin" "${tp[@]}")
echo "terapipe DP, L = 2048 in units of 8 (175B, K = 48, batch $(tiny 1 2)): ${t} s for the whole command (target < 1 s)"
"$bin" "${tp[@]}" | grep -E "^DP:"
