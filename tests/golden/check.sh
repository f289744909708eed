#!/usr/bin/env bash
# tests/golden/check.sh BIN SCENARIO: runs the scenario and compares every
# file with tests/golden/SCENARIO/; prints a unified diff and fails on any
# difference. After an intended change, tools/update-golden rewrites them.
set -uo pipefail
source "$(dirname "$0")/scenarios.sh"
bin=$1 name=$2
got=$(mktemp -d)
trap 'rm -rf "$got"' EXIT
golden_scenario "$name" "$bin" "$got" || { echo "scenario $name failed to run" >&2; exit 1; }
golden_normalise "$got"
if ! diff -ru "$GOLDEN_ROOT/tests/golden/$name" "$got"; then
  echo "golden scenario $name differs (above: expected -> got); if the change is intended, run tools/update-golden" >&2
  exit 1
fi
