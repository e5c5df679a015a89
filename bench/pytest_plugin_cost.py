#!/usr/bin/env python3
"""The pytest plugin's cost per test: sessions of trivial tests with and without --gpumem.

Each test is ``def test_N(): pass``. A session of N1 and one of N2 tests run with and without
the plugin measuring (``-p gpumem.pytest_plugin`` both times, so only --gpumem differs), each
several times; the cost per test is the difference of the slopes,

    ((with(N2) - with(N1)) - (without(N2) - without(N1))) / (N2 - N1)

from the fastest run of each, so the session's fixed costs (start-up, the traces' creation, the
report) cancel out. No attribution (no limit markers, no --gpumem-attribute).

    PYTHONPATH=<build>/python python3 bench/pytest_plugin_cost.py --sim-dir <build>/sim

Runs on the simulated GPU (exact source, as with CUPTI) with a private state file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEVICE = {"name": "NVIDIA H200", "total_mib": 143771, "reserved_mib": 542, "context_mib": 0}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim-dir", required=True, type=Path)
    parser.add_argument("--small", type=int, default=500, help="N1 tests")
    parser.add_argument("--large", type=int, default=3000, help="N2 tests")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--devices", type=int, default=1, help="simulated GPUs (one trace each)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    return parser.parse_args()


def environment(sim_dir: Path, folder: Path, devices: int) -> dict:
    env = dict(os.environ)
    for name in ("CUDA_VISIBLE_DEVICES", "GPUMEM_SIM_FAULTS", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    env.update(
        GPUMEM_NVML_LIBRARY=str(sim_dir / "libnvidia-ml.so.1"),
        GPUMEM_CUDA_LIBRARY=str(sim_dir / "libcuda.so.1"),
        GPUMEM_CUPTI_LIBRARY=str(sim_dir / "libcupti.so.13"),
        GPUMEM_SIM_STATE=str(folder / "sim.state"),
        GPUMEM_SIM_CONFIG=json.dumps({"devices": [DEVICE] * devices}),
        PYTHONDONTWRITEBYTECODE="1",
        # The sessions run in their suite's folder: a relative PYTHONPATH would name nothing.
        PYTHONPATH=os.pathsep.join(os.path.abspath(p) for p in
                                   env.get("PYTHONPATH", "").split(os.pathsep) if p),
    )
    return env


def write_suite(folder: Path, count: int) -> Path:
    suite = folder / f"suite_{count}"
    suite.mkdir()
    (suite / "test_trivial.py").write_text(
        "".join(f"def test_{i}():\n    pass\n\n" for i in range(count)))
    return suite


def session_seconds(suite: Path, env: dict, measure: bool) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "gpumem.pytest_plugin", "--gpumem-top=0"]
    if measure:
        command.append("--gpumem")
    start = time.perf_counter()
    subprocess.run(command, cwd=suite, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    args = parse_args()
    folder = Path(tempfile.mkdtemp(prefix="gpumem-bench-pytest-"))
    env = environment(args.sim_dir, folder, args.devices)
    suites = {n: write_suite(folder, n) for n in (args.small, args.large)}
    best = {}
    for measure in (False, True):
        for count, suite in suites.items():
            best[measure, count] = min(session_seconds(suite, env, measure)
                                       for _ in range(args.repeats))
    slope = {measure: (best[measure, args.large] - best[measure, args.small])
             / (args.large - args.small) for measure in (False, True)}
    cost_us = (slope[True] - slope[False]) * 1e6
    print(f"pytest, {args.devices} simulated GPU(s), fastest of {args.repeats} sessions each:")
    for count in suites:
        print(f"  {count:5d} trivial tests: {best[False, count] * 1e3:8.1f} ms without --gpumem, "
              f"{best[True, count] * 1e3:8.1f} ms with it")
    print(f"  per test: {slope[False] * 1e6:6.1f} us without, {slope[True] * 1e6:6.1f} us with: "
          f"--gpumem costs {cost_us:.1f} us per test")
    if args.json:
        args.json.write_text(json.dumps({
            "devices": args.devices, "repeats": args.repeats,
            "sessions_s": {f"{'with' if m else 'without'}_{n}": s for (m, n), s in best.items()},
            "us_per_test_without": slope[False] * 1e6, "us_per_test_with": slope[True] * 1e6,
            "gpumem_us_per_test": cost_us,
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
