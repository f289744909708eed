#!/usr/bin/env bash
# Times `meshsim search` through the CLI (start-up included; best of N) on
# dgx-a100-80gb clusters: GPT-3 13B on 64 GPUs (global batch 512, the GPT-3
# paper's for 13B) and the bundled GPT-3 39B space on 128 GPUs (batch 1024),
# microbatch sizes 1-8, five schedules, recomputation off and on; then the
# 13B space widened to microbatch sizes up to 16, 2, 4 and 8 virtual stages
# and four stage-transfer strategies (send-recv, all-gather and scatter move
# up to tp times the tasks of a broadcast): the target's case, about 2,500
# configurations simulated in full. Prints the configurations enumerated,
# simulated, filtered (out of memory) and invalid, and the rate of fully
# simulated configurations.
# Target: >= 2,500 fully simulated configurations in <= 30 s on 2 cores;
# and the bundled Llama 3 70B space on 128 dgx-h100 hosts (sequence parallelism,
# ZeRO, selective recomputation and fused attention as dimensions): >= 2,000
# fully simulated in <= 60 s.
#   bench/time_search.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-1}

source bench/best_of.sh

report() {
  local what=$1
  shift
  local t counts
  t=$(best_of "$bin" "$@" --json)
  counts=$("$bin" "$@" --json | python3 -c \
    'import json,sys; d=json.load(sys.stdin); print(d["configs"], "configurations:", d["simulated"], "simulated,", d["filtered"], "out of memory,", d["invalid"], "invalid; simulated per s:", round(d["simulated"] / d["seconds"], 1))')
  echo "$what: $counts; ${t} s"
}

if [ "${MESHSIM_BENCH_TINY:-0}" = 1 ]; then
  report "tiny: tests/data/search-small.json" search tests/data/search-small.json
  exit 0
fi
report "gpt3-13b on 64 GPUs, batch 512" search --model gpt3-13b -t dgx-a100-80gb --hosts 8 --fabric rail \
  --global-batch 512 --schedules 1f1b,interleaved-1f1b,gpipe,eager-1f1b,zb-h1 --microbatch-sizes 1,2,4,8 \
  --recompute both
report "gpt3-39b on 128 GPUs, batch 1024 (configs/studies/search-gpt3-39b.json)" search \
  configs/studies/search-gpt3-39b.json
report "llama3-70b on 128 dgx-h100 hosts (1,024 GPUs), batch 256, sp, ZeRO 0-3, recomputation, fused attention (configs/studies/search-llama3-70b.json)" \
  search configs/studies/search-llama3-70b.json
report "gpt3-13b on 64 GPUs, batch 512, microbatch sizes 1-16, v 2, 4 and 8, four strategies" search \
  --model gpt3-13b -t dgx-a100-80gb --hosts 8 --fabric rail --global-batch 512 \
  --schedules 1f1b,interleaved-1f1b,gpipe,eager-1f1b,zb-h1 --microbatch-sizes 1,2,4,8,16 --virtual-stages 2 4 8 \
  --recompute both --reshards broadcast send-recv allgather scatter
