#!/usr/bin/env bash
# run_fuzz.sh FUZZER SECONDS: seeds a corpus with every bundled input (a
# first byte naming its reader, as fuzz_inputs.cpp reads it), then fuzzes
# for SECONDS. Fails with the offending input if a reader crashes, trips a
# sanitizer or throws anything but a user-facing error.
set -euo pipefail
fuzzer=$1
seconds=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
n=0
seed() {  # seed BYTE FILE...
  local byte=$1
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    { printf "\\x$byte"; cat "$f"; } > "$work/corpus/seed$n"
    n=$((n + 1))
  done
}
seed 00 "$root"/tests/data/bad_topologies/*.json
seed 01 "$root"/configs/topologies/*.json "$root"/tests/data/bad_topologies/*.json
seed 02 "$root"/configs/plans/*.json "$root"/tests/data/plans/*.json
seed 03 "$root"/configs/calibrations/*.json "$root"/tests/data/calibrations/*.json
seed 04 "$root"/configs/models/*.json "$root"/tests/data/models/*.json
seed 05 "$root"/configs/nccl/*.xml "$root"/tests/data/bad_nccl/*.xml
seed 06 "$root"/configs/studies/alpa-microbench.json
seed 07 "$root"/configs/studies/alpa-e2e.json "$root"/tests/data/*pipeline*.json
seed 08 "$root"/configs/studies/nccl-tests.json "$root"/tests/data/bad_collective_study.json
seed 09 "$root"/configs/studies/redistribution.json
seed 0a "$root"/configs/studies/search-*.json "$root"/tests/data/search-small.json
echo "fuzzing $seconds s from $n seeds"
cd "$work"
TMPDIR=$work "$fuzzer" corpus -max_total_time="$seconds" -max_len=262144 -timeout=60 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$work/" 2>&1 | tail -20 || {
  for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -f "$a" ] && { echo "offending input ($a):"; head -c 2000 "$a" | od -c | head -40; }
  done
  exit 1
}
