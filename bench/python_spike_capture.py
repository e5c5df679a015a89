#!/usr/bin/env python3
"""Spike capture with the Python main thread idle vs busy (holding the GIL).

Compares gpumem's sampled source (a native thread: never needs the GIL) with the seed's
peak thread (fastai.utils.mem: a Python thread polling NVML through ctypes every 1 ms). Each trial
starts `gpumem-sim workload` in another process, which makes one 2 ms spike; the main thread
either waits for it (idle) or runs pure-Python code meanwhile (busy). A spike counts as caught
when the tracer's peak rose by the spike's size.

    PYTHONPATH=<build>/python python3 bench/python_spike_capture.py --sim-dir <build>/sim

Runs on the simulated GPU with a private state file; the numbers are for comparison within one run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MiB = 2**20
CONFIG = {"devices": [{"name": "NVIDIA H200", "total_mib": 143771, "reserved_mib": 542,
                       "context_mib": 0}]}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim-dir", required=True, type=Path)
    parser.add_argument("--trials", type=int, default=40, help="spikes per condition")
    parser.add_argument("--spike-mib", type=int, default=64)
    parser.add_argument("--spike-ms", type=float, default=2.0)
    parser.add_argument("--busy-ms", type=float, default=150.0,
                        help="how long the busy main thread computes per trial")
    parser.add_argument("--seed", type=int, default=4, help="for the spikes' random lead-in")
    parser.add_argument("--json", type=Path, help="also write the results here")
    return parser.parse_args()


def put_on_simulated_gpu(sim_dir: Path) -> None:
    state = Path(tempfile.mkdtemp(prefix="gpumem-bench-")) / "sim.state"
    os.environ.update(
        GPUMEM_NVML_LIBRARY=str(sim_dir / "libnvidia-ml.so.1"),
        GPUMEM_CUDA_LIBRARY=str(sim_dir / "libcuda.so.1"),
        GPUMEM_CUPTI_LIBRARY=str(sim_dir / "libcupti.so.13"),
        GPUMEM_SIM_STATE=str(state),
        GPUMEM_SIM_CONFIG=json.dumps(CONFIG),
    )
    for name in ("CUDA_VISIBLE_DEVICES", "GPUMEM_SIM_FAULTS"):
        os.environ.pop(name, None)


def busy_python(milliseconds: float) -> None:
    """Pure-Python work that keeps the GIL except at the interpreter's switch interval."""
    deadline = time.perf_counter() + milliseconds / 1000
    x = 1
    while time.perf_counter() < deadline:
        for _ in range(200):
            x = (x * 3 + 1) % 1000003


class SeedPeakThread:
    """fastai.utils.mem's peak_monitor_func: NVML via ctypes (as pynvml), 1 ms sleeps."""

    class Memory(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                    ("used", ctypes.c_ulonglong)]

    def __init__(self, nvml_path: Path):
        self.nvml = ctypes.CDLL(str(nvml_path))
        if self.nvml.nvmlInit_v2() != 0:
            raise RuntimeError("nvmlInit_v2 failed on the simulated NVML")
        self.handle = ctypes.c_void_p()
        if self.nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)) != 0:
            raise RuntimeError("nvmlDeviceGetHandleByIndex_v2 failed")
        self.memory = self.Memory()
        self.peak = 0
        self.samples = 0
        self.monitoring = False
        self.thread = None

    def used(self) -> int:
        self.nvml.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(self.memory))
        return self.memory.used

    def _run(self):
        while True:
            self.peak = max(self.used(), self.peak)
            self.samples += 1
            if not self.monitoring:
                break
            time.sleep(0.001)

    def start(self):
        self.peak = self.used()
        self.samples = 0
        self.monitoring = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self):
        self.monitoring = False
        self.thread.join()


def run_workload(args, busy: bool) -> float:
    """One spike in another process; returns the seconds the main thread spent on it."""
    # A random lead-in, so that spikes do not phase-lock with the interpreter's switch interval.
    lead_in_us = random.randrange(20_000, 40_000)
    script = (f"device 0; sleep {lead_in_us}us; spike {args.spike_mib}MiB {args.spike_ms}ms; "
              "sleep 5ms")
    began = time.perf_counter()
    process = subprocess.Popen([str(args.sim_dir / "gpumem-sim"), "workload", script],
                               stdout=subprocess.DEVNULL)
    if busy:
        busy_python(args.busy_ms)
        if process.poll() is None:
            raise RuntimeError("the workload outlived the busy window: raise --busy-ms")
    process.wait()
    if process.returncode != 0:
        raise RuntimeError(f"gpumem-sim workload failed ({process.returncode})")
    return time.perf_counter() - began


def measure_native(args, busy: bool) -> dict:
    import gpumem

    trace = gpumem.GPUMemTrace(source="sampled", silent=True, no_cache=False, device=0)
    if trace.source != "sampled":
        raise RuntimeError(f"no sampled source: {gpumem.last_diagnostic()}")
    caught = 0
    for _ in range(args.trials):
        trace.reset()
        run_workload(args, busy)
        reading = trace.data_bytes()
        caught += reading.peak - reading.start >= args.spike_mib * MiB
    trace.stop()
    return {"caught": caught, "samples_per_s": None}


def measure_seed(args, busy: bool) -> dict:
    seed = SeedPeakThread(args.sim_dir / "libnvidia-ml.so.1")
    caught = samples = 0
    seconds = 0.0
    for _ in range(args.trials):
        seed.start()
        baseline = seed.peak
        seconds += run_workload(args, busy)
        seed.stop()
        samples += seed.samples
        caught += seed.peak - baseline >= args.spike_mib * MiB
    return {"caught": caught, "samples_per_s": samples / seconds}


def main() -> int:
    args = parse_args()
    random.seed(args.seed)
    put_on_simulated_gpu(args.sim_dir)
    import gpumem

    print(f"gpumem {gpumem.__version__}: {args.trials} spikes of {args.spike_mib} MiB for "
          f"{args.spike_ms} ms per condition; sampling interval "
          f"{gpumem._native.sampling_interval_ns() / 1e6:g} ms; "
          f"switch interval {sys.getswitchinterval() * 1000:g} ms")
    results = {}
    for name, measure in (("gpumem native sampler", measure_native),
                          ("seed Python thread", measure_seed)):
        for busy in (False, True):
            condition = f"{name}, main thread {'busy' if busy else 'idle'}"
            results[condition] = measure(args, busy)
    print(f"{'condition':44} {'samples/s':>10} {'spikes caught':>15}")
    for condition, result in results.items():
        rate = "-" if result["samples_per_s"] is None else f"{result['samples_per_s']:.0f}"
        share = 100 * result["caught"] / args.trials
        print(f"{condition:44} {rate:>10} {result['caught']:>7}/{args.trials} {share:4.0f}%")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
