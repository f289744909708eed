#!/usr/bin/env bash
# Whether two builds of bench_sim give the flow benchmarks the same
# completion times: each flow case (RandomFlows, RandomSizesAndStarts,
# OneGpuPerHost, ThreeLevelFatTree, RailAllToAll; those matching FILTER,
# an extended regex, default all) runs in both, and every flow's
# completion is compared. Per case: the flows, how many differ, and the
# largest difference. Two correct solvers may differ by their rate
# tolerance (sim/kernel/numeric.h: rates within 1e-12, under a picosecond
# per second of transfer, and each completion rounded up to the
# picosecond), so a flow ending at t seconds may differ by up to 2 t + 1
# ps; the script exits 1 if any differs by more, or if a case's flows do
# not all end.
#   bench/compare_completions.sh OLD_BENCH_SIM NEW_BENCH_SIM [FILTER]
set -euo pipefail
if [[ $# -lt 2 || ! -x $1 || ! -x $2 ]]; then
  echo "usage: bench/compare_completions.sh OLD_BENCH_SIM NEW_BENCH_SIM [FILTER]" >&2
  echo "(both bench_sim executables)" >&2
  exit 2
fi
old=$1
new=$2
filter=${3:-.}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
cases=$("$new" --benchmark_list_tests | grep -E 'RandomFlows|RandomSizes|OneGpuPerHost|ThreeLevel|RailAllToAll' |
  grep -E -- "$filter" || true)
if [[ -z $cases ]]; then
  echo "compare_completions: no flow case matches $filter" >&2
  exit 2
fi
for c in $cases; do
  rm -f "$scratch/old" "$scratch/new"
  pattern="^$c\$"
  for side in old new; do
    if ! MESHSIM_COMPLETIONS=$scratch/$side "${!side}" --benchmark_filter="$pattern" > /dev/null 2> "$scratch/err"; then
      cat "$scratch/err" >&2
      exit 2
    fi
  done
  for side in old new; do
    if [[ ! -s $scratch/$side ]]; then
      echo "compare_completions: the $side bench_sim wrote no completions for $c (built before MESHSIM_COMPLETIONS?)" >&2
      exit 2
    fi
  done
  python3 - "$c" "$scratch/old" "$scratch/new" <<'PY' || status=1
import sys
name, a, b = sys.argv[1], sys.argv[2], sys.argv[3]
old = [int(x) for x in open(a)]
new = [int(x) for x in open(b)]
if len(old) != len(new) or min(old + new) < 0:
    print(f"{name}: not every flow ended in both ({len(old)} and {len(new)} flows)")
    sys.exit(1)
diff = [abs(y - x) for x, y in zip(old, new)]
over = sum(1 for d, x in zip(diff, old) if d > 2 * x / 1e12 + 1)
print(f"{name}: {len(old)} flows, {sum(1 for d in diff if d)} differ, largest {max(diff)} ps"
      + (f", {over} beyond the tolerance" if over else ""))
sys.exit(1 if over else 0)
PY
done
exit $status
