#!/usr/bin/env bash
# Sets up and runs every test: the C++ and Python suites on the simulated GPU, then the C++ suites
# again under AddressSanitizer+UBSan and under ThreadSanitizer; the library is also built with
# clang, warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
# Warnings are errors here (GPUMEM_WERROR), never in users' builds.
scripts/setup.sh -DGPUMEM_WERROR=ON
JOBS=$(nproc)

echo "== clang-format"
git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format --dry-run --Werror
echo "every C++ file is clang-formatted"

echo "== tests (build/)"
ctest --test-dir build --output-on-failure -j "$JOBS"

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

echo "== the library and examples with clang++, Release (build-clang/)"
cmake -S . -B build-clang -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=Release -DGPUMEM_WERROR=ON \
  -DGPUMEM_BUILD_TESTS=OFF -DGPUMEM_BUILD_BENCH=OFF -DGPUMEM_BUILD_PYTHON=OFF >build-clang.log 2>&1 &&
  cmake --build build-clang -j "$JOBS" --target gpumem seed_examples >>build-clang.log 2>&1 ||
  { tail -n 40 build-clang.log; exit 1; }
echo "clang++: gpumem and seed_examples build warning-free"
