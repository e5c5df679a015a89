#!/usr/bin/env bash
# Installs what gpumem needs (Debian packages) and builds it into build/. Safe to re-run: it
# installs only what is missing and rebuilds only what changed. Quiet on success; the full log is
# in build/setup.log.
#
# usage: scripts/setup.sh [--tests] [CMAKE_ARGS…]
#   (default)  what the main job runs: the library, the gpumem command, the simulated GPU, the
#              examples and the Python package, with the Debian packages they need
#   --tests    also every test and benchmark, with the tools the tests use (GoogleTest, Chromium,
#              Prometheus, PyTorch, …), NVIDIA's Python packages in <build>/venv and the
#              training frameworks the callback tests use in <build>/frameworks
# Both build the same tree with the same flags: --tests after the default only adds targets.
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=0
if [ "${1:-}" = --tests ]; then
  TESTS=1
  shift
fi
BUILD=${GPUMEM_BUILD_DIR:-build}
mkdir -p "$BUILD"
LOG="$BUILD/setup.log"
: >"$LOG"

# What the library, the command, the simulated GPU and the Python extension are built with.
PACKAGES=(
  cmake ninja-build g++ ccache
  libcli11-dev nlohmann-json3-dev libboost-dev libssl-dev libcrypt-dev libyaml-cpp-dev
  pybind11-dev python3-dev libunistring-dev libdw-dev libunwind8
  protobuf-compiler libprotobuf-dev zlib1g-dev pkgconf
)
# What the tests and benchmarks are built with.
if ((TESTS)); then
  PACKAGES+=(libgtest-dev libgmock-dev libbenchmark-dev python3-pybind11 python3-venv)
fi
# What only running the tests needs (no step of the build uses them): installed while it builds.
TOOLS=()
if ((TESTS)); then
  TOOLS=(
    clang clang-format openssl python3-pytest python3-pytest-xdist ipython3 python3-torch
    python3-markdown-it prometheus tmux dpkg-dev file golang-go chromium
    # What fastai imports with its Learner (tests of gpumem.fastai), built for Debian's numpy
    # and torch; the frameworks themselves come from the package index (below).
    python3-pandas python3-matplotlib python3-scipy python3-sklearn
  )
fi
missing_of() {  # the packages named that are not installed
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      echo "$package"
  done
}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
UPDATED=0
install_packages() {  # packages…: installs them (the package lists read once)
  if ((!UPDATED)); then
    $SUDO apt-get update -q || return 1
    UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "$@"
}
mapfile -t missing < <(missing_of "${PACKAGES[@]}")
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >>"$LOG"
  if ! install_packages "${missing[@]}" >>"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    echo "setup: could not install ${missing[*]} (log: $LOG)" >&2
    exit 1
  fi
fi
# The test tools download and unpack while the build compiles (network and disk against CPU).
TOOLS_LOG="$BUILD/setup-tools.log"
TOOLS_PID=""
mapfile -t missing_tools < <(((${#TOOLS[@]})) && missing_of "${TOOLS[@]}")
if ((${#missing_tools[@]})); then
  echo "setup: installing ${missing_tools[*]} (log: $TOOLS_LOG), alongside the build" >>"$LOG"
  install_packages "${missing_tools[@]}" >"$TOOLS_LOG" 2>&1 &
  TOOLS_PID=$!
fi
tools_installed() {
  [ -n "$TOOLS_PID" ] || return 0
  if ! wait "$TOOLS_PID"; then
    tail -n 30 "$TOOLS_LOG" >&2
    echo "setup: could not install ${missing_tools[*]} (log: $TOOLS_LOG)" >&2
    return 1
  fi
}

# NVIDIA's own packages from the Python package index, in a venv under the build folder (never the
# system): nvml.h (nvidia-nvml-dev) for the ABI conformance test, and NVIDIA's Python bindings
# (pynvml, cuda.bindings) that tests/clients runs against the simulated GPU. Pinned, so that a new
# release cannot change what CI checks without a commit.
NVIDIA_PACKAGES=(nvidia-nvml-dev==13.5.37 nvidia-ml-py==13.615.71 cuda-bindings==13.5.0)
VENV="$BUILD/venv"
venv_ready() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "${NVIDIA_PACKAGES[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(any(version(p.split("==")[0]) != p.split("==")[1] for p in sys.argv[1:]))
PY
}
if ((TESTS)) && ! venv_ready; then
  echo "setup: installing ${NVIDIA_PACKAGES[*]} into $VENV" >>"$LOG"
  if ! { /usr/bin/python3 -m venv --system-site-packages "$VENV" &&
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${NVIDIA_PACKAGES[@]}"; } \
    >>"$LOG" 2>&1; then
    tail -n 20 "$LOG" >&2
    # Without them the build still works; the tests that need them report themselves skipped.
    echo "setup: could not install ${NVIDIA_PACKAGES[*]} (log: $LOG)" >&2
    [ "${CI:-}" != true ] || exit 1
  fi
fi

# The training frameworks that tests/python's callback tests train with (gpumem.fastai,
# gpumem.lightning, gpumem.transformers), pinned to the last releases that take Debian's torch
# 1.13 (python3-torch, a CPU build). Each goes into a folder of its own under <build>/frameworks
# (pip --target, never the system), so each test imports its framework without the others; no
# package is resolved (--no-deps: every dependency is named here or comes from Debian), so PyPI's
# torch is never pulled. Installed alongside the build; a folder whose list has not changed is
# kept. The packages are pure Python but for regex, safetensors and tokenizers (wheels).
FRAMEWORKS_DIR="$BUILD/frameworks"
FRAMEWORK_fastai=(fastai==2.7.15 fastcore==1.5.29 fastprogress==1.0.3 fastdownload==0.0.7)
FRAMEWORK_lightning=(pytorch-lightning==2.2.5 torchmetrics==1.4.3 lightning-utilities==0.11.9
  fsspec==2024.9.0 tqdm==4.66.5)
FRAMEWORK_transformers=(transformers==4.46.3 tokenizers==0.20.3 accelerate==0.34.2
  huggingface-hub==0.26.2 safetensors==0.4.5 regex==2024.9.11 filelock==3.16.1
  fsspec==2024.9.0 tqdm==4.66.5)
install_frameworks() {  # each framework whose folder lacks its pinned list
  local name folder
  for name in fastai lightning transformers; do
    local -n pinned="FRAMEWORK_$name"
    folder="$FRAMEWORKS_DIR/$name"
    [ "$(cat "$folder/.pinned" 2>/dev/null)" != "${pinned[*]}" ] || continue
    rm -rf "$folder"
    /usr/bin/python3 -m pip install -q --disable-pip-version-check --no-deps \
      --target "$folder" "${pinned[@]}" || return 1
    echo "${pinned[*]}" >"$folder/.pinned"
  done
}
FRAMEWORKS_LOG="$BUILD/setup-frameworks.log"
FRAMEWORKS_PID=""
if ((TESTS)); then
  install_frameworks >"$FRAMEWORKS_LOG" 2>&1 &
  FRAMEWORKS_PID=$!
fi
frameworks_installed() {
  [ -n "$FRAMEWORKS_PID" ] || return 0
  if ! wait "$FRAMEWORKS_PID"; then
    tail -n 20 "$FRAMEWORKS_LOG" >&2
    # Without them the build still works; the callback tests report themselves skipped.
    echo "setup: could not install the training frameworks (log: $FRAMEWORKS_LOG)" >&2
    [ "${CI:-}" != true ] || return 1
  fi
}

# scripts/build_flags.sh: the flags every tree of the scripts shares (unity build, ccache).
source scripts/build_flags.sh
OPTIONS=(-DGPUMEM_BUILD_TESTS=OFF -DGPUMEM_BUILD_BENCH=OFF)
# A tree set up for the tests stays so: the default set-up then builds only what the main job runs.
if ((TESTS)) || grep -q '^GPUMEM_BUILD_TESTS:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  OPTIONS=(-DGPUMEM_BUILD_TESTS=ON -DGPUMEM_BUILD_BENCH=ON)
fi
TARGETS=(all)
((TESTS)) || TARGETS=(gpumem_cli gpumem_sim seed_examples gpumem_python)
# scripts/test.sh --only builds one area's targets alone.
[ -z "${GPUMEM_SETUP_TARGETS:-}" ] || read -r -a TARGETS <<<"$GPUMEM_SETUP_TARGETS"
build() {
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPython_EXECUTABLE=/usr/bin/python3 "${GPUMEM_BUILD_FLAGS[@]}" "${OPTIONS[@]}" "$@" &&
    cmake --build "$BUILD" -j "$(nproc)" --target "${TARGETS[@]}"
}
if ! build "$@" >>"$LOG" 2>&1; then
  grep -E "error|Error" "$LOG" | head -n 40 >&2 || tail -n 40 "$LOG" >&2
  echo "setup: the build failed (log: $LOG)" >&2
  tools_installed || true
  frameworks_installed || true
  exit 1
fi
tools_installed
frameworks_installed
