# Sourced by the bench/time_*.sh scripts: best_of CMD... prints the shortest
# wall time (s) of $runs runs of CMD, its output discarded; peak_mb CMD...
# the peak resident memory of one run (from /usr/bin/time, when present).
# MESHSIM_BENCH_TINY=1: the scripts run each case once at a tiny size, so
# that CI runs them (tests/cli/bench.test) and they cannot rot; `tiny A B`
# prints A then, else B.
tiny() {
  if [ "${MESHSIM_BENCH_TINY:-0}" = 1 ]; then echo "$1"; else echo "$2"; fi
}
if [ "${MESHSIM_BENCH_TINY:-0}" = 1 ]; then runs=1; fi

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

peak_mb() {
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.0f MB", $1 / 1024 }'
  else
    echo "n/a"
  fi
}
