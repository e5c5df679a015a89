#!/usr/bin/env bash
# The multi-process `gpumem run` scenarios under CPU load, again and again: every one asserts the
# simulated device's peak to the byte, so a reading that the monitor reconciles at the wrong
# moment (a block counted twice, or not at all) fails it (docs/peaks.md, "Why the reconciliation
# cannot double count"). One busy loop more than there are cores keeps every process of the test
# waiting for a CPU, as on a loaded CI machine; each test runs in a process of its own, as ctest
# runs it.
#
#   stress_run.sh TEST_BINARY BUDGET_SECONDS GTEST_FILTER [ROUNDS]
#
# Runs the tests FILTER selects in turn until BUDGET_SECONDS have passed (every test at least
# once; the last one started finishes), or, with ROUNDS, until every test has run ROUNDS times
# (BUDGET_SECONDS ignored), then prints how many runs each had. Exits 1 on the first
# failure, with its output. Bounded: the busy loops end with the script, whatever ends it.
set -uo pipefail
binary=$1
budget=$2
filter=$3
rounds=${4:-0}

mapfile -t tests < <("$binary" --gtest_filter="$filter" --gtest_list_tests |
  awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}')
if ((${#tests[@]} == 0)); then
  echo "stress_run: no test matches $filter" >&2
  exit 1
fi

busy=()
stop_busy() {
  local pid
  for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${busy[@]}"; do wait "$pid" 2>/dev/null; done
  busy=()
}
trap stop_busy EXIT
trap 'exit 130' INT TERM
loops=$(($(nproc) + 1))
for ((i = 0; i < loops; ++i)); do
  # Spins while the script lives: killed with it, or orphaned by a SIGKILL, it stops.
  (while kill -0 $$ 2>/dev/null; do for ((spin = 0; spin < 100000; ++spin)); do :; done; done) &
  busy+=($!)
done

declare -A runs=()
output=$(mktemp)
trap 'stop_busy; rm -f "$output"' EXIT
start=$SECONDS
round=0
while :; do
  for test in "${tests[@]}"; do
    if ((rounds > 0 ? round >= rounds : round > 0 && SECONDS - start >= budget)); then break 2; fi
    if ! "$binary" --gtest_filter="$test" >"$output" 2>&1; then
      echo "stress_run: $test failed (run $((${runs[$test]:-0} + 1)), round $((round + 1)), $loops busy loops):"
      cat "$output"
      exit 1
    fi
    runs[$test]=$((${runs[$test]:-0} + 1))
  done
  round=$((round + 1))
done
total=0
for test in "${tests[@]}"; do
  echo "stress_run: ${runs[$test]:-0} passes: $test"
  total=$((total + ${runs[$test]:-0}))
done
echo "stress_run: $total runs of ${#tests[@]} tests in $((SECONDS - start)) s under $loops busy loops, all passed"
