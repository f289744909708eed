# Sourced by the bench/time_*.sh scripts: best_of CMD... prints the shortest
# wall time (s) of $runs runs of CMD, its output discarded.
best_of() {
  local best=""
  for i in $(seq "$runs"); do
    local start end t
    start=$(date +%s.%N)
    "$@" > /dev/null
    end=$(date +%s.%N)
    t=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
    if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
  done
  echo "$best"
}
