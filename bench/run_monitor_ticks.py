#!/usr/bin/env python3
"""`gpumem run`'s monitor: its CPU per tick while 1 … 128 idle processes of the command hold
memory on a simulated GPU, against the same monitor with no GPU process (the floor) in the same
run (issue 29 item 6, issue 32 item 4: a tick's cost should not grow with processes that did not
change).

Each size starts `gpumem run --interval S` of N `gpumem-sim workload` processes that each
allocate 1 MiB and wait (no driver call) until released. Once the simulated device holds every
block (the simulator says so, not a clock), gpumem's own CPU time (every thread's, from
/proc/PID/task/*/schedstat, in ns; its children's is not in it) is read over --seconds; the
figure is that time divided by the ticks of the interval in it. The floor is the same run with
a command that starts no GPU process. The last column is the cost per process above the floor:
flat when a tick's cost grows linearly with processes, falling when it does not grow.

    python3 bench/run_monitor_ticks.py --gpumem <build>/bin/gpumem \\
        --sim-tool <build>/bin/gpumem-sim --sim-dir <build>/sim
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIB = 1 << 20
CONTEXT_MIB = 100


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpumem", required=True, type=Path)
    parser.add_argument("--sim-tool", required=True, type=Path)
    parser.add_argument("--sim-dir", required=True, type=Path,
                        help="the folder of the simulated libnvidia-ml.so.1, libcuda.so.1, …")
    parser.add_argument("--processes", default="1,32,128")
    parser.add_argument("--interval", type=float, default=0.01)
    parser.add_argument("--seconds", type=float, default=2.0, help="the measured window")
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


def cpu_ns(pid: int) -> int:
    """The CPU time of every thread of `pid` so far, in ns (not its children's)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


def device_used(args, env) -> int:
    show = subprocess.run([str(args.sim_tool), "show"], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(show.stdout)["devices"][0]["used_bytes"]


# The device's used memory as the monitor reads it at every tick (nvmlDeviceGetMemoryInfo), timed
# alone in a process of its own: the simulated driver's part of a tick (it looks for dead
# processes on the device at each call, as a driver releases their memory), not gpumem's.
NVML_CALL = r"""
import ctypes, sys, time
nvml = ctypes.CDLL(sys.argv[1])
assert nvml.nvmlInit_v2() == 0
handle = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0
memory = (ctypes.c_ulonglong * 3)()
# Untimed: what a first call sets up once (the simulator's watch of each process holding memory),
# as the monitor, which reads for the whole run, has.
nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory))
calls, spent = 50, 0
for _ in range(calls):
    time.sleep(float(sys.argv[2]))  # as far apart as the ticks: a call's work may depend on it
    start = time.thread_time_ns()
    nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory))
    spent += time.thread_time_ns() - start
print(spent / calls)
"""


def nvml_call_ns(args, env) -> float:
    out = subprocess.run([sys.executable, "-c", NVML_CALL, str(args.sim_dir / "libnvidia-ml.so.1"), str(args.interval)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return float(out)


def one_run(args, processes: int, folder: Path) -> tuple[float, float, dict]:
    """gpumem's CPU ns per tick over the window, the simulated driver's memory-information call
    alone (ns) meanwhile, and the run's summary."""
    state = folder / f"sim-{processes}.state"
    state.unlink(missing_ok=True)
    env = dict(os.environ)
    env.update({
        "GPUMEM_SIM_STATE": str(state),
        "GPUMEM_SIM_CONFIG": json.dumps({"devices": [
            {"name": "NVIDIA H200", "total_mib": 143771, "context_mib": CONTEXT_MIB}]}),
        "GPUMEM_NVML_LIBRARY": str(args.sim_dir / "libnvidia-ml.so.1"),
        "GPUMEM_CUDA_LIBRARY": str(args.sim_dir / "libcuda.so.1"),
        "GPUMEM_CUPTI_LIBRARY": str(args.sim_dir / "libcupti.so.13"),
    })
    env.pop("GPUMEM_SIM_FAULTS", None)
    go = folder / "go"
    go.unlink(missing_ok=True)
    summary = folder / "summary.json"
    one = f"'{args.sim_tool}' workload 'alloc a 1MiB; wait_for {go}; free a'"
    line = (f"i=0; while [ $i -lt {processes} ]; do {one} & i=$((i+1)); done; "
            f"while [ ! -e '{go}' ]; do sleep 0.05; done; wait")
    run = subprocess.Popen([str(args.gpumem), "run", "--interval", str(args.interval), "--json",
                            str(summary), "--", "sh", "-c", line], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        want = processes * (CONTEXT_MIB + 1) * MIB
        while device_used(args, env) < want:
            time.sleep(0.05)  # polling the simulated device
        time.sleep(4 * args.interval)  # a few ticks after the last one arrived
        start_cpu, start = cpu_ns(run.pid), time.monotonic()
        time.sleep(args.seconds)
        end_cpu, end = cpu_ns(run.pid), time.monotonic()
        driver_ns = nvml_call_ns(args, env)
    finally:
        go.write_text("\n")
    _, err = run.communicate(timeout=120)
    if run.returncode != 0:
        sys.exit(f"gpumem run of {processes} processes exited {run.returncode}: {err}")
    ticks = (end - start) / args.interval
    return (end_cpu - start_cpu) / ticks, driver_ns, json.loads(summary.read_text())


def main() -> int:
    args = parse_args()
    sizes = [int(n) for n in args.processes.split(",")]
    with tempfile.TemporaryDirectory(prefix="gpumem-ticks-") as name:
        folder = Path(name)
        per_tick = {n: [] for n in [0] + sizes}
        driver = {n: [] for n in per_tick}
        for _ in range(args.rounds):  # the sizes interleaved, so drift hits each alike
            for n in per_tick:
                ns, driver_ns, summary = one_run(args, n, folder)
                if n and (summary["mode"] != "exact" or
                          summary["devices"][0]["peak_bytes"] != n * (CONTEXT_MIB + 1) * MIB):
                    sys.exit(f"{n} processes: not measured exactly: {json.dumps(summary)}")
                per_tick[n].append(ns)
                driver[n].append(driver_ns)
    floor = statistics.median(per_tick[0])
    print(f"interval {args.interval * 1e3:g} ms, window {args.seconds:g} s, "
          f"median of {args.rounds} rounds; 'driver': the simulated nvmlDeviceGetMemoryInfo alone")
    print(f"{'processes':>9} {'CPU/tick µs':>12} {'% of a core':>11} {'x floor':>8} "
          f"{'µs/process above floor':>23} {'driver µs':>10}")
    for n, values in per_tick.items():
        ns = statistics.median(values)
        above = f"{(ns - floor) / n / 1e3:23.2f}" if n else f"{'':>23}"
        print(f"{n:>9} {ns / 1e3:12.1f} {ns / (args.interval * 1e9) * 100:11.2f} "
              f"{ns / floor:8.2f} {above} {statistics.median(driver[n]) / 1e3:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
