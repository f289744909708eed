# Shared set-up for tools/quickstart and tools/test (source it, do not run it).
# Installs the Debian packages meshsim needs that are missing, then
# configures and builds one CMake preset.

MESHSIM_PACKAGES=(
  g++ clang cmake ninja-build
  libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  catch2 libbenchmark-dev python3-matplotlib
  graphviz  # `topo dot ... | dot -Tsvg`
  libjemalloc-dev  # the allocator of meshsim and meshsim-mpi (tools/CMakeLists.txt)
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

# meshsim_build PRESET: configure (once) and build with every core.
meshsim_build() {
  local preset=$1
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)"
}
