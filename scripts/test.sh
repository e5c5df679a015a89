#!/usr/bin/env bash
# Sets up and runs every test: the C++ and Python suites on the simulated GPU (with the consumer
# projects and the one-engine test of tests/package), the .deb unpacked and run, the Python package
# as users get it, then the C++ suites again under AddressSanitizer+UBSan and under
# ThreadSanitizer (with the stress harness); warnings as errors with g++ and clang, and every
# source compiled on its own; the links of README.md and docs/.
# At the end it prints what each stage took.
#
# usage: scripts/test.sh                 everything (what CI runs: .ci/run)
#        scripts/test.sh --only AREA…    build and run one area's tests in build/ (the folders
#                                        of tests/: cli, peak, serve, python, …; see CONTRIBUTING.md)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
JOBS=$(nproc)
AREAS=()
if [ "${1:-}" = --only ]; then
  shift
  AREAS=("$@")
  ((${#AREAS[@]})) || { echo "usage: scripts/test.sh --only AREA…" >&2; exit 2; }
  for area in "${AREAS[@]}"; do
    [ -d "tests/$area" ] || { echo "test.sh: no area '$area' (one of: $(ls tests | tr '\n' ' '))" >&2; exit 2; }
  done
fi

# Each stage's time, printed at the end (also when a stage fails), so a slow one shows the day it
# appears.
STAGES=()
START=$SECONDS
RUNNING="" RUNNING_SINCE=0  # the stage under way, if any
report_times() {
  local status=$?
  # A stage running in the background does not outlive a failure.
  if [ -n "${PYTHON_PID:-}" ]; then
    pkill -P "$PYTHON_PID" 2>/dev/null || true
    kill "$PYTHON_PID" 2>/dev/null || true
  fi
  [ -z "$RUNNING" ] || STAGES+=("$(printf '%-60s %5d s  %5d s CPU  FAILED' "$RUNNING" \
    $((SECONDS - RUNNING_SINCE)) $(($(cpu_seconds) - RUNNING_CPU)))")
  ((${#STAGES[@]})) || return 0
  echo
  echo "== stage times (wall, and the CPU time of the stage's processes: a loaded machine"
  echo "   stretches the first, not the second)"
  printf '%s\n' "${STAGES[@]}"
  printf '%-60s %5d s  %5d s CPU\n' "total" $((SECONDS - START)) "$(cpu_seconds)"
  local trees=()
  for tree in "$BUILD" build-asan build-tsan build-alone; do [ -d "$tree" ] && trees+=("$tree"); done
  /usr/bin/python3 scripts/slowest.py "${trees[@]}" || true
  return $status
}
trap report_times EXIT
# The CPU seconds (user and system) of every process this script has waited for so far.
cpu_seconds() {
  /usr/bin/python3 -c '
import os, sys
fields = open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split()
print(round((int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")))
' "$$"
}
RUNNING_CPU=0
stage() {  # name, command…
  RUNNING=$1 RUNNING_SINCE=$SECONDS RUNNING_CPU=$(cpu_seconds)
  shift
  echo "== $RUNNING"
  "$@"
  STAGES+=("$(printf '%-60s %5d s  %5d s CPU' "$RUNNING" $((SECONDS - RUNNING_SINCE)) \
    $(($(cpu_seconds) - RUNNING_CPU)))")
  RUNNING=""
}

if ((${#AREAS[@]})); then
  targets=() labels=()
  for area in "${AREAS[@]}"; do
    targets+=("gpumem_tests_$area")
    labels+=("^$area\$")
  done
  GPUMEM_SETUP_TARGETS="${targets[*]}" \
    stage "set-up and build ${AREAS[*]} ($BUILD/, RelWithDebInfo)" scripts/setup.sh --tests
  label=$(IFS='|'; echo "${labels[*]}")
  stage "tests: ${AREAS[*]}" ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" -L "$label" -LE stress
  exit 0
fi

# The benchmarks are compiled once, in AddressSanitizer's tree (for their warnings); none runs here.
stage "set-up and build ($BUILD/, RelWithDebInfo)" scripts/setup.sh --tests -DGPUMEM_BUILD_BENCH=OFF
source scripts/build_flags.sh

format() {
  git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format --dry-run --Werror
  echo "every C++ file is clang-formatted"
}
stage "clang-format" format
stage "links (README.md, docs/*.md)" /usr/bin/python3 scripts/check_links.py
# The stress harness (label stress: the multi-process runs, again and again under CPU load) runs
# once, in ThreadSanitizer's tree, where the slowest timing makes the widest windows.
stage "tests ($BUILD/)" ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" -LE stress
stage "the .deb (cpack, dpkg -x, gpumem list and run from it)" tests/package/package_deb.sh "$BUILD"

# Another tree: its build log in <dir>.log, shown when the build fails.
tree() {  # build-dir, cmake arguments…; then the targets after --
  local dir=$1
  shift
  local args=() targets=()
  while (($#)) && [ "$1" != -- ]; do args+=("$1"); shift; done
  (($# > 1)) && shift && targets=(--target "$@")
  cmake -S . -B "$dir" -G Ninja -DGPUMEM_WERROR=ON -DPython_EXECUTABLE=/usr/bin/python3 \
    "${args[@]}" >"$dir.log" 2>&1 &&
    cmake --build "$dir" -j "$JOBS" "${targets[@]}" >>"$dir.log" 2>&1 || { tail -n 40 "$dir.log"; exit 1; }
}

# The Python package as users get it, alongside the AddressSanitizer stage: much of it waits on
# the package index, a single-threaded pytest and mypy, which leave the build's cores free.
PYTHON_OUT=$BUILD/python-package.out
(
  began=$SECONDS
  scripts/python_package.sh
  echo "$((SECONDS - began))" >"$PYTHON_OUT.seconds"
) >"$PYTHON_OUT" 2>&1 &
PYTHON_PID=$!

# Sanitizers, then Release trees; warnings are errors in all of them (never in users' builds).
# The Prometheus, Python, reliability and docs tests run in build/ only: the reliability suite
# measures latencies, and the docs show what the main build's gpumem prints (its stack frames and
# timings, not a Debug or sanitized tree's); so do RunPython's, whose uninstrumented python3
# cannot load an instrumented injection library (a sanitizer's runtime must come first).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
sanitized() {  # build-dir, build type, sanitizers, cmake arguments…, then -- and ctest arguments
  local dir=$1 type=$2 sanitize=$3
  shift 3
  local args=()
  while (($#)) && [ "$1" != -- ]; do args+=("$1"); shift; done
  (($#)) && shift
  tree "$dir" -DCMAKE_BUILD_TYPE="$type" -DGPUMEM_SANITIZE="$sanitize" "${GPUMEM_BUILD_FLAGS[@]}" \
    "${args[@]}"
  # One job more than the cores: a sanitized test spends much of its time waiting on the processes
  # it runs (the timing-sensitive suites run in build/ only, above).
  ctest --test-dir "$dir" --output-on-failure -j "$((JOBS + 1))" -E "prometheus|python|RunPython|reliability|docs" "$@"
}
# clang++ in Debug: clang's warnings on every source, the tests included, and it compiles this
# tree in less than half of g++'s time (16 s against 37 s for the exporter's largest unity
# source). The benchmarks are built here (not run), for their warnings.
stage "tests under -fsanitize=address,undefined, clang++ Debug (build-asan/)" \
  sanitized build-asan Debug address,undefined -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DGPUMEM_BUILD_PYTHON=OFF -DGPUMEM_BUILD_BENCH=ON -- -LE stress

python_package() {
  local status=0
  wait "$PYTHON_PID" || status=$?
  cat "$PYTHON_OUT"
  [ -s "$PYTHON_OUT.seconds" ] && echo "(it took $(cat "$PYTHON_OUT.seconds") s, alongside the stage before)"
  return $status
}
stage "the Python package (isolated build, twine, fresh venv, mypy)" python_package

# g++ in Release: at -O3 its warnings differ (what users build). The stress harness (label stress: the multi-process runs, again and again
# under CPU load) runs once, here, where the slowest timing makes the widest windows.
stage "tests under -fsanitize=thread, g++ Release, and the stress harness (build-tsan/)" \
  sanitized build-tsan Release thread -DGPUMEM_BUILD_BENCH=OFF -DGPUMEM_BUILD_PYTHON=OFF

# Every source of what users build compiled on its own (no unity build), as a user's plain
# configure does, so that a source that leans on another's includes fails here: clang++ for its
# syntax and warnings only, code generation being what the full trees above already check (a
# fifth of the time of a Release build of the same sources).
each_source_alone() {
  tree build-alone -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_UNITY_BUILD=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DGPUMEM_BUILD_TESTS=OFF \
    -DGPUMEM_BUILD_BENCH=OFF -- gpumem_pprof_proto
  /usr/bin/python3 scripts/each_source_alone.py build-alone
}
stage "clang++, each source alone (build-alone/)" each_source_alone
