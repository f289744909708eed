#!/usr/bin/env bash
# Times the plan loader's race check through `meshsim simulate` (load,
# race check and a short simulation; best of N): 2,000 and 5,000 ordered
# overwrites of one flat region, and 40,000 disjoint tiles of one tile
# buffer (bench/race_plans.py writes the plans).
# Target: each well under a second on 2 cores (the check is about n log n).
#   bench/time_race_check.sh [build/release/tools/meshsim] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tools/meshsim}
runs=${2:-1}

source bench/best_of.sh

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for c in "overwrites $(tiny 20 2000)" "overwrites $(tiny 50 5000)" "tiles $(tiny 400 40000)"; do
  set -- $c
  python3 bench/race_plans.py "$1" "$2" > "$dir/$1-$2.json"
  echo "$1 $2: $(best_of "$bin" simulate "$dir/$1-$2.json" -t dgx-a100) s"
done
