#!/usr/bin/env python3
"""gpumem.StepPeaks' cost per training step, against baselines measured in the same run.

Each condition runs a loop of N "steps" several times; the figure is the fastest run's time per
step, in µs:

- bare step: the loop with an empty step (the floor);
- one NVML read: the step reads the device's used memory once (``gpu_mem_get_used_fast``), what a
  callback that logs memory between steps pays at least;
- StepPeaks, 1 and 2 devices: ``start_step()`` and ``end_step()`` around the empty step (every
  device's counter re-baselined and read: the exact source's footprint refresh, the device's used
  memory, one record per device);
- StepPeaks + epoch: the same, with ``start_epoch()``/``end_epoch()`` every 100 steps;
- a tiny torch step, bare and with StepPeaks: forward, backward and SGD of a 64x64 linear layer
  on the CPU (where torch is installed), a step far shorter than any GPU training step, to put
  the cost in proportion.

    PYTHONPATH=<build>/python python3 bench/python_step_cost.py --sim-dir <build>/sim

Runs on the simulated GPU (the exact source, as with CUPTI) with a private state file; what a
driver call costs on a real GPU differs, so the ratios are for comparison within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

DEVICE = {"name": "NVIDIA H200", "total_mib": 143771, "reserved_mib": 542, "context_mib": 300}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim-dir", required=True, type=Path)
    parser.add_argument("--steps", type=int, default=2000, help="steps per run")
    parser.add_argument("--repeats", type=int, default=20, help="runs per condition (fastest kept)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    return parser.parse_args()


def put_on_simulated_gpu(sim_dir: Path) -> None:
    state = Path(tempfile.mkdtemp(prefix="gpumem-bench-")) / "sim.state"
    os.environ.update(
        GPUMEM_NVML_LIBRARY=str(sim_dir / "libnvidia-ml.so.1"),
        GPUMEM_CUDA_LIBRARY=str(sim_dir / "libcuda.so.1"),
        GPUMEM_CUPTI_LIBRARY=str(sim_dir / "libcupti.so.13"),
        GPUMEM_SIM_STATE=str(state),
        GPUMEM_SIM_CONFIG=json.dumps({"devices": [DEVICE, DEVICE]}),
    )
    for name in ("CUDA_VISIBLE_DEVICES", "GPUMEM_SIM_FAULTS"):
        os.environ.pop(name, None)


def fastest_us_per_step(run, steps: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run(steps)
        best = min(best, time.perf_counter() - start)
    return best / steps * 1e6


def tiny_torch_step():
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: the step's time is not the scheduler's
    layer = torch.nn.Linear(64, 64)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.01)
    x = torch.randn(16, 64)

    def step() -> None:
        optimizer.zero_grad()
        layer(x).square().mean().backward()
        optimizer.step()

    return step


def main() -> int:
    args = parse_args()
    put_on_simulated_gpu(args.sim_dir)
    import gpumem
    from gpumem.testing import allocate

    weights = [allocate(64, device=0), allocate(64, device=1)]  # contexts made, memory at rest

    def step() -> None:
        pass

    def bare(n: int) -> None:
        for _ in range(n):
            step()

    handle = gpumem.gpu_handle(0)

    def nvml_read(n: int) -> None:
        read = gpumem.gpu_mem_get_used_fast
        for _ in range(n):
            step()
            read(handle)

    def step_peaks(devices, epochs: bool = False):
        peaks = gpumem.StepPeaks(devices)
        peaks.start_epoch()

        def run(n: int) -> None:
            start, end = peaks.start_step, peaks.end_step
            for i in range(n):
                if epochs and i % 100 == 0:
                    peaks.end_epoch()
                    peaks.start_epoch()
                start()
                step()
                end()

        return peaks, run

    one, one_run = step_peaks(0)
    two, two_run = step_peaks([0, 1])
    _, epoch_run = step_peaks(0, epochs=True)
    assert one.modes == ["exact"] and two.modes == ["exact", "exact"], (one.modes, two.modes)

    conditions = [
        ("bare step", bare),
        ("one NVML read", nvml_read),
        ("StepPeaks, 1 device", one_run),
        ("StepPeaks, 2 devices", two_run),
        ("StepPeaks + epoch, 1 device", epoch_run),
    ]
    torch_step = tiny_torch_step()
    if torch_step is not None:
        def torch_bare(n: int) -> None:
            for _ in range(n):
                torch_step()

        def torch_peaks(n: int) -> None:
            start, end = one.start_step, one.end_step
            for _ in range(n):
                start()
                torch_step()
                end()

        conditions += [("tiny torch step", torch_bare),
                       ("tiny torch step + StepPeaks", torch_peaks)]
    for _, run in conditions:
        run(200)  # warm
    # Round-robin: each repeat runs every condition once, so that a burst of load on the shared
    # machine hits them alike; the fastest run of each is kept.
    best = {name: float("inf") for name, _ in conditions}
    for _ in range(args.repeats):
        for name, run in conditions:
            best[name] = min(best[name], fastest_us_per_step(run, args.steps, 1))
    results = best
    nvml = results["one NVML read"] - results["bare step"]
    print(f"{'condition':<30} {'µs/step':>9} {'added':>8} {'x NVML read':>12}")
    for name, us in results.items():
        floor = results["tiny torch step"] if name == "tiny torch step + StepPeaks" \
            else results["bare step"]
        added = us - floor
        ratio = f"{added / nvml:.1f}" if "StepPeaks" in name and nvml > 0 else ""
        print(f"{name:<30} {us:9.2f} {added:8.2f} {ratio:>12}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    del weights
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
