#!/usr/bin/env bash
# Times `meshsim search` through the CLI (start-up included; best of N):
# GPT-3 13B on 64 DGX-A100 GPUs and GPT-3 39B on 128, global batch 512 and
# 1024, microbatch sizes 1-8, five schedules, three stage transfers.
# Prints the configurations enumerated, simulated, filtered (out of memory)
# and invalid. Target: >= 2,500 fully simulated configurations in <= 30 s.
#   bench/time_search.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-1}

source bench/best_of.sh

space=(--schedules 1f1b,interleaved-1f1b,gpipe,eager-1f1b,zb-h1 --reshards broadcast,scatter,send-recv
       --microbatch-sizes 1,2,4,8)
for job in "gpt3-13b 8 512" "gpt3-39b 16 1024"; do
  read -r model hosts batch <<< "$job"
  args=(search --model "$model" -t dgx-a100 --hosts "$hosts" --global-batch "$batch" "${space[@]}")
  t=$(best_of "$bin" "${args[@]}" --json)
  counts=$("$bin" "${args[@]}" --json | python3 -c \
    'import json,sys; d=json.load(sys.stdin); print(d["configs"], "configurations:", d["simulated"], "simulated,", d["filtered"], "out of memory,", d["invalid"], "invalid")')
  echo "$model on $((hosts * 8)) GPUs, batch $batch: $counts; ${t} s"
done
