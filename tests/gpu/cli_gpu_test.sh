#!/usr/bin/env bash
# cli_gpu_test.sh MESHSIM SOURCE_DIR OUT: on a GPU machine, `meshsim calibrate
# --backend cuda` writes a calibration that loads, and `meshsim validate`
# runs the strided plan on virtual devices with every byte verified and a
# finite error; a task that outlasts --timeout is a device fault (exit 4,
# "device fault: timed out ..."). Without a GPU: exit 77 (skipped).
set -euo pipefail
m=$1 src=$2 out=$3
if ! "$m" info --json | grep -q '"index"'; then echo "skipped: no GPU"; exit 77; fi
"$m" calibrate --backend cuda --max 256MiB --repeats 3 --layers gpt3-1b --tp 8 --microbatch-sizes 1 \
  --out "$out/calib-cuda.json"
# GPT-3 1B at tp 8, one sequence of 2048 tokens: 18 GEMMs, at least 10
# distinct non-square shapes, among them the QKV projection 2048 x 768 x
# 2048, each with a time.
python3 - "$out/calib-cuda.json" <<'EOF'
import json, sys
pts = json.load(open(sys.argv[1]))["compute"][0]["points"]
layer = [p for p in pts if not (p["m"] == p["n"] == p["k"])]
assert any((p["m"], p["n"], p["k"], p["batch"]) == (2048, 768, 2048, 1) for p in layer), layer
assert len(layer) >= 10, len(layer)
EOF
"$m" validate "$src/configs/plans/strided-tiles.json" -t dgx-h100 --hosts 2 --backend cuda \
  --calibration "$out/calib-cuda.json" --tolerance 1000 --json > "$out/validate-cuda.json"
grep -q '"ok": true' "$out/validate-cuda.json"
grep -q '"error": [-0-9]' "$out/validate-cuda.json"
cat > "$out/spin-5s.json" <<'EOF'
{"format": "meshsim.plan/1", "name": "spin-5s",
 "tasks": [{"id": "spin", "kind": "compute", "device": "h0/gpu0", "duration": "5s"}]}
EOF
rc=0
"$m" run "$out/spin-5s.json" -t dgx-h100 --backend cuda --warmup 0 --timeout 300ms 2> "$out/spin.err" || rc=$?
cat "$out/spin.err"
[ "$rc" = 4 ] || { echo "a run past --timeout exited $rc, not 4"; exit 1; }
grep -q 'device fault: timed out after 300 ms: task "spin"' "$out/spin.err"
echo "ok"
