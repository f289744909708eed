# Shared set-up for tools/quickstart and tools/test (source it, do not run it).
# Installs the Debian packages meshsim needs that are missing, then
# configures and builds one CMake preset.

MESHSIM_PACKAGES=(
  g++ clang cmake ninja-build
  libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  catch2 libbenchmark-dev python3-matplotlib
  graphviz  # `topo dot ... | dot -Tsvg`
  libjemalloc-dev  # the allocator of meshsim, meshsim-mpi and bench_sim (cmake/Allocator.cmake)
  libopenmpi-dev openmpi-bin  # optional: meshsim-mpi, the NCCL backend across processes
)

meshsim_install_packages() {
  local missing=()
  for p in "${MESHSIM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "meshsim: all build dependencies are installed"
    return 0
  fi
  echo "meshsim: installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "meshsim: run as root or install: ${missing[*]}" >&2; return 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}" >/dev/null
  echo "meshsim: installed ${missing[*]}"
}

# meshsim_build PRESET [TARGET...]: configure (once) and build the preset's
# targets (default: all of them) with every core.
meshsim_build() {
  local preset=$1
  shift
  local targets=()
  [ $# -eq 0 ] || targets=(--target "$@")
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)" "${targets[@]}"
}

# meshsim_phase NAME: starts timing a phase (ended by the next call or by
# meshsim_phase_report), printing its name.
MESHSIM_PHASES=()
meshsim_phase() {
  meshsim_phase_end
  echo "== $1"
  MESHSIM_PHASE_NAME=$1
  MESHSIM_PHASE_START=$(date +%s)
}
meshsim_phase_end() {
  [ -n "${MESHSIM_PHASE_NAME:-}" ] || return 0
  MESHSIM_PHASES+=("$(($(date +%s) - MESHSIM_PHASE_START))|$MESHSIM_PHASE_NAME")
  MESHSIM_PHASE_NAME=
}
# Prints each phase's wall time and the total.
meshsim_phase_report() {
  meshsim_phase_end
  local total=0 p
  echo
  echo "== time per phase"
  for p in "${MESHSIM_PHASES[@]}"; do
    printf '%6s s  %s\n' "${p%%|*}" "${p#*|}"
    total=$((total + ${p%%|*}))
  done
  printf '%6s s  total\n' "$total"
}
