#!/usr/bin/env python3
"""Names the slowest tests and build targets of the trees scripts/test.sh built: a line each, at
the end of its stage times, so that the test or the target that adds minutes shows the day it
appears.

usage: scripts/slowest.py [--count N] BUILD_DIR…

A target's time is its compile and link steps' times summed (as if on one core, which a loaded
machine stretches), from the tree's .ninja_log (its latest build of each output); a test's is its
last run's, from ctest's Testing/Temporary/CTestCostData.txt.
"""

import argparse
import sys
from pathlib import Path


def target_times(build: Path) -> dict[str, float]:
    """Seconds per target of the tree's latest build of each output."""
    latest: dict[str, float] = {}  # output -> seconds
    try:
        lines = (build / ".ninja_log").read_text(errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        fields = line.split("\t")
        if line.startswith("#") or len(fields) != 5:
            continue
        try:
            seconds = (int(fields[1]) - int(fields[0])) / 1000
        except ValueError:
            continue
        latest[fields[3]] = seconds  # a later line is a later build of the same output
    per_target: dict[str, float] = {}
    for output, seconds in latest.items():
        # tests/cli/CMakeFiles/gpumem_cli_tests.dir/Unity/unity_0_cxx.cxx.o -> gpumem_cli_tests
        if "/CMakeFiles/" in output and ".dir/" in output:
            name = output.split("/CMakeFiles/", 1)[1].split(".dir/", 1)[0]
        else:
            name = Path(output).name  # a link: the library or executable itself
            name = name.removeprefix("lib")
            name = name.split(".so")[0].removesuffix(".a")
        per_target[name] = per_target.get(name, 0.0) + seconds
    return per_target


def test_times(build: Path) -> dict[str, float]:
    """Seconds per test of the tree's last ctest run."""
    times: dict[str, float] = {}
    try:
        lines = (build / "Testing/Temporary/CTestCostData.txt").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        if line.startswith("---"):
            break
        fields = line.rsplit(" ", 2)
        if len(fields) == 3:
            try:
                times[fields[0]] = float(fields[2])
            except ValueError:
                pass
    return times


def line(title: str, rows: list[tuple[float, str, str]], count: int) -> str:
    rows = sorted(rows, reverse=True)[:count]
    return f"{title}: " + (", ".join(f"{name} {seconds:.0f} s ({tree})"
                                     for seconds, name, tree in rows) or "none recorded")


def main() -> int:
    parser = argparse.ArgumentParser(description="The slowest tests and targets of build trees.")
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("trees", nargs="+", type=Path)
    options = parser.parse_args()
    tests: list[tuple[float, str, str]] = []
    targets: list[tuple[float, str, str]] = []
    for tree in options.trees:
        tests += [(s, n, tree.name) for n, s in test_times(tree).items()]
        targets += [(s, n, tree.name) for n, s in target_times(tree).items()]
    print(line(f"slowest {options.count} tests", tests, options.count))
    print(line(f"slowest {options.count} targets (compile and link time, summed)", targets, options.count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
