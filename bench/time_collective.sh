#!/usr/bin/env bash
# Collectives at scale, timed through the CLI (process start-up included;
# best of N runs), with peak resident memory from /usr/bin/time when present:
#   1. 1 GiB all-reduce over 1,024 dgx-h100 hosts (8,192 GPUs), rail fabric,
#      400 Gb/s NICs, NCCL-style selection of algorithm and protocol:
#      target <= 2 s and <= 1 GB resident
#   2. the same forced to rings (8 channels, 65,536 ring edges)
#   3. 1 GiB all-reduce over 16 and 128 hosts, the same fabric
#   4. a sweep 8 B .. 1 GiB over 16 hosts (28 sizes, selection at each)
#   bench/time_collective.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-3}

source bench/best_of.sh

hosts=$(tiny 2 1024)
big=(collective allreduce -t dgx-h100 --hosts "$hosts" --fabric rail --nic-bandwidth 400Gbps --size 1GiB)
echo "all-reduce 1 GiB, $hosts x dgx-h100 rail: $(best_of "$bin" "${big[@]}") s, peak $(peak_mb "$bin" "${big[@]}") (target <= 2 s, <= 1 GB)"
"$bin" "${big[@]}" | grep -E "^ +1 GiB"
ring=("${big[@]}" --algorithm ring --protocol simple)
echo "same, rings forced: $(best_of "$bin" "${ring[@]}") s, peak $(peak_mb "$bin" "${ring[@]}")"
for hosts in $(tiny 2 "16 128"); do
  mid=(collective allreduce -t dgx-h100 --hosts "$hosts" --fabric rail --nic-bandwidth 400Gbps --size 1GiB)
  echo "all-reduce 1 GiB, $hosts x dgx-h100 rail: $(best_of "$bin" "${mid[@]}") s, peak $(peak_mb "$bin" "${mid[@]}")"
done
top=$(tiny 1MiB 1GiB)
sweep=(collective allreduce -t dgx-h100 --hosts "$(tiny 2 16)" --fabric rail --sweep "8B:$top")
echo "sweep 8 B .. $top, $(tiny 2 16) x dgx-h100 rail: $(best_of "$bin" "${sweep[@]}") s"
