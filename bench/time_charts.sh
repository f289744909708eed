#!/usr/bin/env bash
# Times every chart the README draws: each command with its chart and
# without, through the CLI; the difference is the chart's own time
# (interpreter start, imports, reading, drawing). Target: at most 2 s per
# chart beyond its simulation (docs/performance.md).
# MESHSIM_BENCH_TINY=1: the first three charts, once.
#   bench/time_charts.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/release/tools/meshsim}")
runs=${2:-3}
source bench/best_of.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# chart NAME "WITH CHART" "WITHOUT" : one row of the table.
chart() {
  local name=$1 with=$2 without=$3 a b
  a=$(best_of bash -c "cd $scratch && rm -rf out && $with 2>/dev/null")
  b=$(best_of bash -c "cd $scratch && rm -rf out && $without 2>/dev/null")
  printf '%-28s %8s %8s %8s\n' "$name" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a - b }')"
}

printf '%-28s %8s %8s %8s\n' "chart (best of $runs, s)" "with" "without" "chart"
m=$bin
chart "collective --plot" \
  "$m collective allreduce --topology dgx-h100 --hosts 4 --fabric rail --sweep 8B:8GiB --plot out.png" \
  "$m collective allreduce --topology dgx-h100 --hosts 4 --fabric rail --sweep 8B:8GiB"
chart "compare fabrics" \
  "$m compare --out out collective allreduce -t dgx-h100 --hosts 16,64 --fabric rail,fat-tree --sweep 1MiB:1GiB" \
  "$m compare --out out --no-plots collective allreduce -t dgx-h100 --hosts 16,64 --fabric rail,fat-tree --sweep 1MiB:1GiB"
chart "pipeline --schedule all" \
  "$m pipeline --model gpt3-13b -t dgx-a100-80gb --hosts 4 --tp 8 --pp 4 -m 16 --schedule all --plot out.png" \
  "$m pipeline --model gpt3-13b -t dgx-a100-80gb --hosts 4 --tp 8 --pp 4 -m 16 --schedule all"
if [ "${MESHSIM_BENCH_TINY:-0}" = 1 ]; then exit 0; fi
grid="pipeline --model gpt3-13b -t dgx-h100 --hosts 16 --fabric fat-tree --nics-per-leaf 16 --dp 16 --tp 8 -m 4 --zero 1"
chart "compare grid" \
  "$m compare --out out --vary oversubscription=1,2 --vary placement=contiguous,random:1 $grid" \
  "$m compare --out out --no-plots --vary oversubscription=1,2 --vary placement=contiguous,random:1 $grid"
chart "workload" \
  "$m workload $PWD/configs/workloads/two-jobs-2to1.json --out out" \
  "$m workload $PWD/configs/workloads/two-jobs-2to1.json --out out --no-plots"
reshard="reshard -t $PWD/configs/topologies/p3.8xlarge-x5.json --tensor 1024x1024x512:int32 --src-mesh hosts=0-1"
reshard+=" --src-spec 'R S0 R' --dst-mesh hosts=2-3 --dst-spec 'S0 R R'"
chart "reshard --plot" "$m $reshard --plot out.png" "$m $reshard"
chart "study alpa-microbench" \
  "$m study $PWD/configs/studies/alpa-microbench.json --out out" \
  "$m study $PWD/configs/studies/alpa-microbench.json --out out --no-plots"
chart "study redistribution" \
  "$m study $PWD/configs/studies/redistribution.json --out out" \
  "$m study $PWD/configs/studies/redistribution.json --out out --no-plots"
search="search --model gpt3-13b -t dgx-a100-80gb --hosts 8 --global-batch 512 --recompute both"
chart "search" "$m $search --out out" "$m $search --out out --no-plots"
chart "search gpt3-175b" \
  "$m search $PWD/configs/studies/search-gpt3-175b.json --out out" \
  "$m search $PWD/configs/studies/search-gpt3-175b.json --out out --no-plots"
