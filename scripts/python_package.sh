#!/usr/bin/env bash
# The Python package as its users get it (scripts/test.sh runs this after the CMake build):
# - sdist and wheel built by `python -m build` with build isolation (scikit-build-core and pybind11
#   from the Python package index; the wheel is built from the sdist: one compile);
# - both checked by `twine check --strict` (the README is the wheel's long description);
# - the wheel installed into a fresh virtual environment, where tests/python pass against it on the
#   simulated GPU of the CMake build;
# - the stubs checked by mypy: stubtest against the installed package, and --strict on typed usage;
# - with GPUMEM_TEST_OFFLINE=1, also the offline path (a second compile, so not by default):
#   `pip install --no-build-isolation .` with Debian's pybind11 and CMake, into another fresh
#   environment, and the tests again there.
# Tools (build, twine, mypy) live in virtual environments under the build folder, never in the
# system's Python. Quiet on success; logs in <build>/python-package.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${GPUMEM_BUILD_DIR:-build}
PYTHON=/usr/bin/python3
TOOLS=$BUILD/venv-tools   # kept between runs
VENV=$BUILD/venv-wheel    # made afresh every run
LOG=$BUILD/python-package.log
: >"$LOG"

step() {  # name, command…: runs the command, its output to the log; on failure shows the log's end
  local name=$1
  shift
  echo "-- $name" >>"$LOG"
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 40 "$LOG" >&2
    echo "python package: $name failed (log: $LOG)" >&2
    exit 1
  fi
}

[ -x "$TOOLS/bin/python" ] || step "tools environment" "$PYTHON" -m venv "$TOOLS"
# pytest: stubtest imports gpumem.pytest_plugin, and mypy reads pytest's types in its stub.
step "tools (build, twine, mypy, pytest)" "$TOOLS/bin/pip" install -q build twine mypy pytest

rm -rf "$BUILD/dist"
start=$SECONDS
step "python -m build (isolated)" "$TOOLS/bin/python" -m build --outdir "$BUILD/dist" .
echo "python -m build: sdist and wheel in $((SECONDS - start)) s"
step "twine check" "$TOOLS/bin/twine" check --strict "$BUILD"/dist/*

# Debian's pytest, IPython and torch come from the system's site-packages; gpumem only from the wheel.
rm -rf "$VENV"
step "fresh environment" "$PYTHON" -m venv --system-site-packages "$VENV"
step "install the wheel" "$VENV/bin/pip" install -q --no-index --no-deps "$BUILD"/dist/*.whl
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
step "the wheel's gpumem is the one imported" env -u PYTHONPATH "$VENV/bin/python" -c \
  "import gpumem, sys; sys.exit(not gpumem.__file__.startswith('$SITE'))"

step "mypy stubtest" env PYTHONPATH="$SITE" "$TOOLS/bin/python" -m mypy.stubtest \
  --allowlist tests/python/stubtest-allowlist.txt gpumem
step "mypy --strict on typed usage" env PYTHONPATH="$SITE" "$TOOLS/bin/mypy" --strict \
  tests/python/typecheck/usage.py

run_tests() {  # environment: tests/python against the gpumem installed there
  (cd tests/python && env -u PYTHONPATH GPUMEM_SIM_DIR="$ROOT/$BUILD/sim" PYTHONDONTWRITEBYTECODE=1 \
    "$ROOT/$1/bin/python" -m pytest -q -p no:cacheprovider)
}
step "tests/python against the installed wheel" run_tests "$VENV"
echo "the wheel: $(tail -n 1 "$LOG")"

if [ "${GPUMEM_TEST_OFFLINE:-0}" = 1 ]; then
  OFFLINE=$BUILD/venv-offline
  rm -rf "$OFFLINE"
  # Debian's pybind11 (python3-pybind11) and CMake; scikit-build-core, which Debian 12 does not
  # package, from the index.
  step "offline environment" "$PYTHON" -m venv --system-site-packages "$OFFLINE"
  step "scikit-build-core" "$OFFLINE/bin/pip" install -q scikit-build-core
  start=$SECONDS
  step "pip install --no-build-isolation ." "$OFFLINE/bin/pip" install -q --no-index \
    --no-build-isolation --config-settings=build-dir="$BUILD/wheel-offline" .
  echo "pip install --no-build-isolation: built in $((SECONDS - start)) s"
  step "tests/python against the offline install" run_tests "$OFFLINE"
  echo "the offline install: $(tail -n 1 "$LOG")"
fi
