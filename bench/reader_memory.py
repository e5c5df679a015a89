#!/usr/bin/env python3
"""Memory against input size for two readers of issue 30, each as a sweep against its floor
measured in the same run:

- the exporter's spool reader: ``gpumem serve`` reading a spool of N record files (a real
  record's size each, named by N publishers) and a 1 GiB sparse file named as a record, after
  three collections: the process's peak resident memory (VmHWM) against an empty spool;
- the pytest plugin's reader of its workers' reports (``_worker_records``): the peak of Python's
  allocations (tracemalloc) while it reads a report of N tests, beyond the report itself (which
  pytest-xdist hands over in one string), against the figures it keeps; and a report of one line
  of N bytes of garbage, against the floor.

    PYTHONPATH=<build>/python python3 bench/reader_memory.py --gpumem <build>/bin/gpumem \\
        --sim-dir <build>/sim
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.request
from pathlib import Path

DEVICE = {"name": "NVIDIA H200", "total_mib": 143771, "reserved_mib": 542, "context_mib": 0}
RECORD = ("gpumem-trace 1\nscope step-{n}\npid {pid}\nunix_ms {now}\nsource exact\ndevice 0\n"
          "start 0\nend 1048576\npeak 2097152\ndelta_used 1\ndelta_peaked 2\npid_start 1\nend\n")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpumem", required=True, type=Path)
    parser.add_argument("--sim-dir", required=True, type=Path)
    parser.add_argument("--files", default="0,1000,10000,60000,120000",
                        help="spool sizes, in record files")
    parser.add_argument("--tests", default="0,10000,100000", help="worker report sizes, in tests")
    return parser.parse_args()


def fill_spool(spool: Path, count: int) -> None:
    spool.mkdir(mode=0o700)
    now = int(time.time() * 1000)
    for n in range(count):
        pid = 100000 + n  # one publisher each, none running: each its own share of the reads
        (spool / f"{pid}-s{n}.trace").write_text(RECORD.format(n=n, pid=pid, now=now))
    if count:
        with open(spool / "1-huge.trace", "wb") as huge:  # over the 4 KiB cap: never read
            huge.truncate(1 << 30)


def exporter_peak_kib(gpumem: Path, sim_dir: Path, spool: Path, work: Path) -> int:
    env = dict(os.environ, GPUMEM_NVML_LIBRARY=str(sim_dir / "libnvidia-ml.so.1"),
               GPUMEM_CUDA_LIBRARY=str(sim_dir / "libcuda.so.1"),
               GPUMEM_CUPTI_LIBRARY=str(sim_dir / "libcupti.so.13"),
               GPUMEM_SIM_STATE=str(work / "sim.state"),
               GPUMEM_SIM_CONFIG=json.dumps({"devices": [DEVICE]}))
    process = subprocess.Popen(
        [str(gpumem), "serve", "--listen", "127.0.0.1:0", "--collect-interval", "200ms",
         "--retention", "24h", "--spool", str(spool)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline()
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        time.sleep(1.0)  # collections every 200 ms: several full reads of the spool
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            answer.read()
        status = Path(f"/proc/{process.pid}/status").read_text()
        return int(next(l for l in status.splitlines() if l.startswith("VmHWM")).split()[1])
    finally:
        process.terminate()
        process.wait(timeout=30)


def spool_sweep(args, work: Path) -> None:
    print("spool reader (gpumem serve): peak resident memory after three collections")
    print(f"{'record files':>14} {'bytes named':>12} {'VmHWM':>10} {'vs empty':>9}")
    floor = None
    for count in (int(c) for c in args.files.split(",")):
        spool = work / f"spool-{count}"
        fill_spool(spool, count)
        kib = exporter_peak_kib(args.gpumem, args.sim_dir, spool, work)
        floor = floor or kib
        disk = count * len(RECORD) + (1 << 30 if count else 0)
        print(f"{count:>14,} {disk / 2**20:>10.0f} MiB {kib / 1024:>6.1f} MiB {kib / floor:>8.2f}x")


def worker_sweep(args) -> None:
    from gpumem import pytest_plugin

    record = {"nodeid": "tests/test_model.py::test_step[{n}]", "worker": "gw0",
              "over_limit": False,
              "devices": [{"device": 0, "source": "exact", "quantity": "process footprint",
                           "start": 0, "peak": 2**20, "end": 0, "top": None}]}
    print("\nworker reports (pytest plugin): Python's peak allocations while reading, beyond "
          "the report")
    print(f"{'report':>22} {'size':>10} {'peak':>10} {'kept':>10} {'tests kept':>10}")

    def measure(text: str) -> tuple:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        kept = [r for _, r in pytest_plugin._worker_records(text)
                if isinstance(r, pytest_plugin._TestFigures)]
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return peak - base, held - base, len(kept)

    for count in (int(c) for c in args.tests.split(",")):
        text = "".join(json.dumps(dict(record, nodeid=record["nodeid"].format(n=n))) + "\n"
                       for n in range(count))
        peak, held, good = measure(text)
        print(f"{count:>16,} tests {len(text) / 2**20:>6.1f} MiB {peak / 2**20:>6.1f} MiB "
              f"{held / 2**20:>6.1f} MiB {good:>10,}")
    for size in (2**20, 2**27):
        text = "x" * size  # one line of garbage, over the line cap
        peak, held, good = measure(text)
        print(f"{'garbage line':>22} {size / 2**20:>6.0f} MiB {peak / 2**20:>6.3f} MiB "
              f"{held / 2**20:>6.3f} MiB {good:>10}")


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="gpumem-reader-memory-") as folder:
        spool_sweep(args, Path(folder))
    worker_sweep(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
