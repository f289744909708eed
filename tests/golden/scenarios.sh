# Whole-scenario outputs that tests compare byte for byte (after
# normalise.py blanks wall-clock timings). Sourced by tools/update-golden,
# which writes them under tests/golden/<scenario>/, and by check.sh.
#   golden_scenario NAME BIN OUTDIR   writes scenario NAME's files into OUTDIR
GOLDEN_SCENARIOS="quickstart-study pipeline-json simulate-trace"
GOLDEN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

golden_scenario() {
  local name=$1 bin=$2 out=$3 cfg=$GOLDEN_ROOT/configs
  mkdir -p "$out"
  case $name in
    quickstart-study)  # the README's quick start: the microbenchmark study's table and files
      # (--json prints results.json itself: checked here, not kept twice)
      mkdir -p "$out/files" && "$bin" study "$cfg/studies/alpa-microbench.json" --out "$out/files" --no-plots --json \
        > "$out/files/printed.json" &&
        "$bin" study "$cfg/studies/alpa-microbench.json" --out "$out/files" --no-plots 2> /dev/null |
          sed '/^results: /d' > "$out/table.txt" &&
        { cmp -s "$out/files/printed.json" "$out/files/results.json" ||
          { echo "study --json printed other than results.json" >&2; false; }; } &&
        mv "$out/files/results.csv" "$out/files/results.json" "$out/" && rm "$out/files/printed.json" &&
        rmdir "$out/files" ;;
    pipeline-json)  # one GPT-3 39B iteration on 4 DGX A100
      "$bin" pipeline --model gpt3-39b -t dgx-a100 --hosts 4 --dp 2 --tp 8 --pp 2 -m 8 --json \
        > "$out/pipeline.json" ;;
    simulate-trace)  # the bundled two-stage plan: its JSON result and its Perfetto trace
      "$bin" simulate "$cfg/plans/two-stage-step.json" -t "$cfg/topologies/p3.8xlarge-x5.json" \
        --trace "$out/trace.json" --json > "$out/simulate.json" ;;
    *) echo "unknown golden scenario $name" >&2; return 2 ;;
  esac
}

# Blanks what differs between runs and checkouts (wall-clock seconds, the
# source tree's path) in every JSON file of OUTDIR.
golden_normalise() {
  local f
  for f in "$1"/*.json; do /usr/bin/python3 "$GOLDEN_ROOT/tests/golden/normalise.py" "$f" "$GOLDEN_ROOT"; done
}
