#!/usr/bin/env bash
# cli_gpu_test.sh MESHSIM SOURCE_DIR OUT: on a GPU machine, `meshsim calibrate
# --backend cuda` writes a calibration that loads, and `meshsim validate`
# runs the strided plan on virtual devices with every byte verified and a
# finite error. Without a GPU: exit 77 (skipped).
set -euo pipefail
m=$1 src=$2 out=$3
if ! "$m" info --json | grep -q '"index"'; then echo "skipped: no GPU"; exit 77; fi
"$m" calibrate --backend cuda --max 256MiB --repeats 3 --out "$out/calib-cuda.json"
"$m" validate "$src/configs/plans/strided-tiles.json" -t dgx-h100 --hosts 2 --backend cuda \
  --calibration "$out/calib-cuda.json" --json > "$out/validate-cuda.json"
grep -q '"ok": true' "$out/validate-cuda.json"
grep -q '"error": [-0-9]' "$out/validate-cuda.json"
echo "ok"
