#!/usr/bin/env python3
"""`gpumem report` over 10 … 10k run files and `gpumem diff` of two run files of 10 … 100k
devices and ranks, each against a plain JSON parse of the same files (the floor,
gpumem_json_parse_floor) measured in the same run: CPU seconds of each process (user + system,
the median of --rounds), their ratio, and the cost per file or per device, which stays flat when
the commands are linear in their inputs (issue 32 item 3: the report's 10k files within 2x the
floor).

    python3 bench/report_scaling.py --gpumem <build>/bin/gpumem \\
        --floor <build>/bench/gpumem_json_parse_floor [--check 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GIB = 1 << 30


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpumem", required=True, type=Path)
    parser.add_argument("--floor", required=True, type=Path)
    parser.add_argument("--files", default="10,100,1000,3000,10000", help="report sizes, in files")
    parser.add_argument("--devices", default="10,1000,10000,100000",
                        help="diff sizes, in devices (and as many ranks) per file")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check", type=float, default=None,
                        help="fail when the largest report's ratio to the floor is above this")
    return parser.parse_args()


def device(index: int, uuid: str, peak: int) -> dict:
    return {"device": index % 8, "nvml_index": index % 8, "name": "NVIDIA H200", "uuid": uuid,
            "total_bytes": 150754820096, "peak_bytes": peak, "peak_time_s": 0.002,
            "exact_peak_bytes": peak, "sampled_peak_bytes": peak, "context_bytes": 524288000,
            "device_used_start_bytes": 0, "device_used_peak_bytes": peak,
            "device_used_end_bytes": 0, "unmapped_peak_bytes": 0, "bounded_by_device_used": False}


def run_file(host: str, devices: list, ranks: list, start: float) -> dict:
    """A run file as `gpumem run --json` writes one (docs/cli.md), every field present."""
    return {"schema": "gpumem.run/1", "command": ["python", "train.py", "--steps", "100"],
            "exit_code": 0, "signal": None, "elapsed_s": 60.0, "start_unix_s": start,
            "end_unix_s": start + 60.0, "mode": "exact", "requested_mode": "auto",
            "fallback_reason": None, "exact_processes": len(ranks), "escaped_processes": 0,
            "descendants_running": [], "descendants_waited": True, "interval_s": 0.01,
            "samples": 6000, "devices": devices,
            "processes": [{"pid": 1000 + n, "nvml_pid": 1000 + n, "name": "python", "device": 0,
                           "mode": "exact", "reason": None, "sampled_peak_bytes": r["peak_bytes"],
                           "rank": r["rank"], "local_rank": r["local_rank"]}
                          for n, r in enumerate(ranks[:8])],
            "pid_namespace": {"nvml_pids": "own", "reason": None, "matched": 0, "unmatched": 0,
                              "nested": False},
            "host": host, "gpumem_rank": None, "ranks": ranks, "budgets": [],
            "budget_exceeded": False}


def rank(number: int, uuid: str, peak: int) -> dict:
    return {"rank": number, "local_rank": number % 8, "device": number % 8, "uuid": uuid,
            "peak_bytes": peak, "measured": "exact", "pids": [1000 + number]}


def job_files(folder: Path, count: int) -> list:
    """One file per rank of a job of `count` ranks, eight to a node."""
    paths = []
    for n in range(count):
        uuid = f"GPU-{n:08x}-0000-0000-0000-000000000000"
        peak = GIB + n * 4096
        path = folder / f"rank-{n}.json"
        path.write_text(json.dumps(run_file(f"node-{n // 8}", [device(n, uuid, peak)],
                                            [rank(n, uuid, peak)], 1764655200.0 + n % 3)))
        paths.append(str(path))
    return paths


def diff_files(folder: Path, count: int) -> list:
    """Two run files of `count` devices and ranks, the second's listed in another order."""
    paths = []
    for side, seed in (("before", 1), ("after", 2)):
        order = list(range(count))
        random.Random(seed).shuffle(order)
        uuids = [f"GPU-{n:08x}-0000-0000-0000-000000000000" for n in order]
        peaks = [GIB + n * 4096 * seed for n in order]
        devices = [device(n, uuids[at], peaks[at]) for at, n in enumerate(order)]
        ranks = [rank(n, uuids[at], peaks[at]) for at, n in enumerate(order)]
        path = folder / f"{side}.json"
        path.write_text(json.dumps(run_file("node-0", devices, ranks, 1764655200.0)))
        paths.append(str(path))
    return paths


def cpu_seconds(command: list) -> float:
    """The CPU time (user + system) of one run of `command`, its output discarded."""
    with open(os.devnull, "wb") as null:
        process = subprocess.Popen(command, stdout=null, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        error = process.stderr.read().decode(errors="replace")
        process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):  # diff's 3: grew past a threshold (none is set here)
        sys.exit(f"{command[0]} failed ({code}): {error.strip()[:400]}")
    return usage.ru_utime + usage.ru_stime


def measure(command: list, floor: list, rounds: int) -> tuple:
    """Medians of `rounds` runs of each, alternated so that a load on the machine hits both."""
    spent, floors = [], []
    for _ in range(rounds):
        floors.append(cpu_seconds(floor))
        spent.append(cpu_seconds(command))
    return statistics.median(spent), statistics.median(floors)


def main() -> int:
    args = parse_args()
    floor = [str(args.floor)]
    worst = None
    print("gpumem report FILES...: CPU seconds against a plain JSON parse of the same files")
    print(f"{'files':>7} {'report s':>10} {'floor s':>10} {'ratio':>6} {'us/file':>9}")
    with tempfile.TemporaryDirectory(prefix="gpumem-report-bench-") as tmp:
        for count in [int(n) for n in args.files.split(",")]:
            folder = Path(tmp) / f"job-{count}"
            folder.mkdir()
            paths = job_files(folder, count)
            spent, base = measure([str(args.gpumem), "report", *paths], floor + paths, args.rounds)
            ratio = spent / base if base > 0 else float("inf")
            worst = ratio
            print(f"{count:>7} {spent:>10.3f} {base:>10.3f} {ratio:>6.2f} "
                  f"{spent / count * 1e6:>9.1f}")
        print()
        print("gpumem diff BEFORE AFTER (run files of N devices and N ranks, in other orders)")
        print(f"{'devices':>7} {'diff s':>10} {'floor s':>10} {'ratio':>6} {'us/device':>9}")
        for count in [int(n) for n in args.devices.split(",")]:
            folder = Path(tmp) / f"diff-{count}"
            folder.mkdir()
            paths = diff_files(folder, count)
            spent, base = measure([str(args.gpumem), "diff", *paths], floor + paths, args.rounds)
            ratio = spent / base if base > 0 else float("inf")
            print(f"{count:>7} {spent:>10.3f} {base:>10.3f} {ratio:>6.2f} "
                  f"{spent / count * 1e6:>9.1f}")
    if args.check is not None and worst is not None and worst > args.check:
        print(f"the largest report took {worst:.2f}x the floor: over {args.check}x")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
