#!/usr/bin/env bash
# determinism.sh MESHSIM SOURCE_DIR OUT: every simulating command gives the
# same bytes twice -- tables, JSON, CSV and Perfetto traces -- and the
# commands with --threads give the same bytes at 1, 2 and 3 threads. Only
# what must differ is blanked first: meshsim's own wall-clock figures (the
# keys that tests/golden/normalise.py blanks, and the "built in ... s"
# lines of the tables), the run's directory and the thread count itself. `run` measures real time, so of its output the verification is
# compared: what was checked and what was wrong.
set -euo pipefail
m=$1 src=$2 out=$3/determinism
cfg=$src/configs
rm -rf "$out"
mkdir -p "$out"
failures=0

# blank DIR: in every file under DIR, the run's own directory becomes
# <dir>; then wall-clock values leave JSON files and timing lines text.
blank() {
  find "$1" -type f | while read -r f; do
    sed -i -E "s#$1#<dir>#g; s/\"threads\": [0-9]+/\"threads\": \"<threads>\"/" "$f"
    if head -c 1 "$f" | grep -q '[{[]'; then
      python3 "$src/tests/golden/normalise.py" "$f" "$src"
    else
      sed -i -E '/(built in|simulated in|seconds|took) [0-9.]+ ?(s|ms)/d' "$f"
    fi
  done
}

# same NAME RUN_A_DIR RUN_B_DIR: every file of the two runs byte for byte.
same() {
  if diff -r "$2" "$3" > "$out/$1.diff"; then
    echo "same: $1"
  else
    echo "DIFFERS: $1"
    head -20 "$out/$1.diff"
    failures=$((failures + 1))
  fi
}

# case NAME THREADS_OPTION COMMAND...: runs COMMAND in two directories ({}
# in an argument is the run's directory), the second time with
# THREADS_OPTION replaced by the next count (or as is, for "-").
case_() {
  local name=$1 threads=$2
  shift 2
  for t in 1 2 3; do
    [ "$threads" = - ] && [ $t = 3 ] && break
    local dir=$out/$name.$t
    mkdir -p "$dir"
    local args=()
    for a in "$@"; do args+=("${a//\{\}/$dir}"); done
    [ "$threads" != - ] && args+=("$threads" "$t")
    "$m" "${args[@]}" > "$dir/stdout" 2> /dev/null
    blank "$dir"
  done
  same "$name (run 1 vs 2)" "$out/$name.1" "$out/$name.2"
  [ "$threads" != - ] && same "$name (1 vs 3 threads)" "$out/$name.1" "$out/$name.3"
  return 0
}

case_ topo-show - topo show dgx-h100 --hosts 4 --fabric rail
case_ collective-sweep - collective allreduce -t dgx-h100 --hosts 4 --fabric rail --sweep 8B:1GiB --json
case_ collective-table - collective allgather -t dgx-a100 --hosts 8 --fabric fat-tree --size 256MiB
case_ simulate-trace - simulate "$cfg/plans/two-stage-step.json" -t "$cfg/topologies/p3.8xlarge-x5.json" \
  --trace "{}/trace.json" --csv "{}/tasks.csv"
case_ reshard - reshard -t "$cfg/topologies/p3.8xlarge-x5.json" --tensor 1024x1024x512:int32 \
  --src-mesh hosts=0-1 --src-spec "R S0 R" --dst-mesh hosts=2-3 --dst-spec "S0 R R" --plan-out "{}/plan.json"
case_ redistribute - redistribute -t dgx-a100 --hosts 4 --tensor 8192x8192:bfloat16 --mesh hosts=0-3 \
  --src-spec "S1 R" --dst-spec "R S01" --memory-limit 64MiB --json
case_ pipeline - pipeline --model gpt3-39b -t dgx-a100 --hosts 4 --dp 2 --tp 8 --pp 2 -m 8 \
  --schedule interleaved-1f1b -v 2 --trace "{}/iter.json" --trace-detail streams
case_ terapipe - terapipe --model gpt3-13b -t dgx-h100 --hosts 4 --pp 8 --op 4 --batch 8 --json
case_ study - study "$cfg/studies/alpa-microbench.json" --out "{}/study" --no-plots
case_ search --threads search --model gpt3-1.3b -t p3.8xlarge --hosts 2 --global-batch 16 \
  --schedules 1f1b,gpipe,interleaved-1f1b --reshards broadcast scatter --recompute both \
  --out "{}/search" --no-plots --json

# run: the verification at 1, 2 and 3 host threads.
for t in 1 2 3; do
  "$m" run "$cfg/plans/strided-tiles.json" --backend host --threads $t --json |
    python3 -c 'import json, sys
d = json.load(sys.stdin)
keys = ("plan", "verified", "ok", "buffers_checked", "elements_checked", "bad_elements", "mismatches")
print(json.dumps({k: d[k] for k in keys}, indent=1))' > "$out/run.$t.json"
done
same "run verification (1 vs 2 threads)" "$out/run.1.json" "$out/run.2.json"
same "run verification (1 vs 3 threads)" "$out/run.1.json" "$out/run.3.json"
grep -q '"elements_checked": [1-9]' "$out/run.1.json" || { echo "run checked nothing"; failures=$((failures + 1)); }

echo "$failures difference(s)"
[ "$failures" = 0 ]
