#!/usr/bin/env bash
# Sets up and runs every test: the C++ and Python suites on the simulated GPU (with the consumer
# projects and the one-engine test of tests/package), the .deb unpacked and run, then the C++
# suites again under AddressSanitizer+UBSan and under ThreadSanitizer; Release builds with g++ and
# clang, warnings as errors; the links of README.md and docs/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Warnings are errors here (GPUMEM_WERROR), never in users' builds.
scripts/setup.sh -DGPUMEM_WERROR=ON
JOBS=$(nproc)

echo "== clang-format"
git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format --dry-run --Werror
echo "every C++ file is clang-formatted"

echo "== links (README.md, docs/*.md)"
/usr/bin/python3 scripts/check_links.py

echo "== tests (build/)"
ctest --test-dir build --output-on-failure -j "$JOBS"

echo "== the .deb (cpack, dpkg -x, gpumem list and run from it)"
tests/package/package_deb.sh build

echo "== the Python package (isolated build, twine, a fresh virtual environment, mypy)"
scripts/python_package.sh

# The Prometheus, Python and reliability tests run in build/ only: the last measures latencies.
sanitized() {  # build-dir, sanitizers, ctest filter
  local dir=$1 sanitize=$2 filter=$3
  echo "== tests under -fsanitize=$sanitize ($dir/)"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUMEM_SANITIZE="$sanitize" -DGPUMEM_WERROR=ON \
    -DGPUMEM_BUILD_BENCH=OFF -DGPUMEM_BUILD_PYTHON=OFF >"$dir.log" 2>&1 &&
    cmake --build "$dir" -j "$JOBS" >>"$dir.log" 2>&1 || { tail -n 40 "$dir.log"; exit 1; }
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" -R "$filter" -E "prometheus|python|reliability"
}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
sanitized build-asan address,undefined "."
sanitized build-tsan thread "."

# Release with default options (only warnings as errors added): g++ builds the library, the
# command and the CLI tests (where g++ 12's -O3 warnings once broke the build), clang++ the library
# and the examples; the other targets are built in RelWithDebInfo above.
release() {  # build-dir, C compiler, C++ compiler, targets…
  local dir=$1 cc=$2 cxx=$3
  shift 3
  echo "== Release with $cxx ($dir/): $*"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=Release -DGPUMEM_WERROR=ON -DPython_EXECUTABLE=/usr/bin/python3 \
    >"$dir.log" 2>&1 &&
    cmake --build "$dir" -j "$JOBS" --target "$@" >>"$dir.log" 2>&1 || { tail -n 40 "$dir.log"; exit 1; }
  echo "$cxx: $* build warning-free in Release"
}
release build-release gcc g++ gpumem gpumem_cli gpumem_cli_tests
release build-clang clang clang++ gpumem gpumem_static seed_examples
