#!/usr/bin/env bash
# Installs what gpumem needs (Debian packages) and builds it into build/. Safe to re-run: it
# installs only what is missing and rebuilds only what changed. Quiet on success; the full log is
# in build/setup.log.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${GPUMEM_BUILD_DIR:-build}
mkdir -p "$BUILD"
LOG="$BUILD/setup.log"
: >"$LOG"

PACKAGES=(
  cmake ninja-build g++ clang
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libboost-dev libssl-dev libcrypt-dev libyaml-cpp-dev openssl
  pybind11-dev python3-dev python3-pytest ipython3
  prometheus
)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}" >>"$LOG"
  if ! { $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
      --no-install-recommends "${missing[@]}"; } >>"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    echo "setup: could not install ${missing[*]} (log: $LOG)" >&2
    exit 1
  fi
fi

build() {
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPython_EXECUTABLE=/usr/bin/python3 "$@" &&
    cmake --build "$BUILD" -j "$(nproc)"
}
if ! build "$@" >>"$LOG" 2>&1; then
  grep -E "error|Error" "$LOG" | head -n 40 >&2 || tail -n 40 "$LOG" >&2
  echo "setup: the build failed (log: $LOG)" >&2
  exit 1
fi
