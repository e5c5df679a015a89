#!/usr/bin/env python3
"""What an allocation or free adds to a whole process under `gpumem run` (issue 32, item 5).

The same simulated CUDA process (`gpumem-sim workload 'pairs N 4KiB'`: N cuMemAlloc_v2 +
cuMemFree_v2 pairs) run three ways, its own CPU time measured by `perf stat -e task-clock` (the process only:
not `gpumem run`'s monitor):
  none     bare
  minimal  with a minimal exact tracker injected (CUDA_INJECTION64_PATH: a CUPTI subscriber with a
           mutex and an unordered_map, bench/minimal_tracker_inject.cpp)
  run      under `gpumem run --mode exact` (its injection library, libgpumem.so, the counters file
           and the monitor reading it while the process runs)
Each at a small and a large N, so that the start (loading, subscribing, joining the run) cancels:
per event = (CPU(large) - CPU(small)) / (2 (large - small)), less the same for `none`. Each round
runs every variant, in a rotating order, `--repeat` times at each size and keeps the median; the
figures are the medians over rounds, the ratio the median of the rounds' own ratios.

usage: bench/run_event_cost_process.py [--build build] [--gpumem PATH] [--rounds 9] [--repeat 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--gpumem", help="another gpumem (default: the build's), its libraries beside it")
    parser.add_argument("--before", help="a second gpumem to compare (variant `before`)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=210_000)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    sim = os.path.join(build, "sim")
    gpumem = os.path.abspath(args.gpumem or os.path.join(build, "bin", "gpumem"))
    tracker = os.path.join(build, "bench", "libgpumem_bench_minimal_inject.so")
    folder = tempfile.mkdtemp(prefix="gpumem-event-cost-")
    env = dict(os.environ)
    env.update({
        "GPUMEM_SIM_STATE": os.path.join(folder, "sim.state"),
        "GPUMEM_SIM_CONFIG": '{"devices": [{"name": "NVIDIA H200", "context_mib": 0}]}',
        "GPUMEM_NVML_LIBRARY": os.path.join(sim, "libnvidia-ml.so.1"),
        "GPUMEM_CUDA_LIBRARY": os.path.join(sim, "libcuda.so.1"),
        "GPUMEM_CUPTI_LIBRARY": os.path.join(sim, "libcupti.so.13"),
    })
    env.pop("CUDA_INJECTION64_PATH", None)
    perf_out = os.path.join(folder, "perf.csv")
    run_json = os.path.join(folder, "run.json")

    def cpu_ms(variant, pairs):
        workload = [os.path.join(sim, "gpumem-sim"), "workload", f"pairs {pairs} 4KiB"]
        command = ["perf", "stat", "-x,", "-e", "task-clock", "-o", perf_out, "--"] + workload
        variant_env = dict(env)
        if variant == "minimal":
            variant_env["CUDA_INJECTION64_PATH"] = tracker
        elif variant in ("run", "before"):
            tool = gpumem if variant == "run" else os.path.abspath(args.before)
            command = [tool, "run", "--mode", "exact", "--json", run_json, "--"] + command
        subprocess.run(command, env=variant_env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if variant in ("run", "before"):
            with open(run_json) as file:
                document = json.load(file)
            if document.get("mode") != "exact":
                raise SystemExit("the run was not exact: " + json.dumps(document)[:400])
        with open(perf_out) as file:
            for line in file:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2] == "task-clock":
                    return float(fields[0])
        raise SystemExit("perf stat gave no task-clock")

    variants = ["none", "minimal", "run"] + (["before"] if args.before else [])
    per_event = {name: [] for name in variants}
    ratios = []
    events = 2 * (args.large - args.small)
    cpu_ms("none", 1)  # the simulator's state file, outside the measurement
    for round_index in range(args.rounds):
        spans = {}
        for turn in range(len(variants)):
            name = variants[(round_index + turn) % len(variants)]
            large = statistics.median(cpu_ms(name, args.large) for _ in range(args.repeat))
            small = statistics.median(cpu_ms(name, args.small) for _ in range(args.repeat))
            spans[name] = (large - small) * 1e6 / events  # ns per event
        for name in variants:
            per_event[name].append(spans[name] - (spans["none"] if name != "none" else 0))
        ratios.append({name: per_event[name][-1] / per_event["minimal"][-1]
                       for name in variants[2:]})
    print(f"events per process: {2 * args.small} and {2 * args.large}; "
          f"{args.rounds} rounds of {args.repeat}")
    print(f"none: {statistics.median(per_event['none']):.1f} ns per event (the simulated driver)")
    for name in variants[1:]:
        print(f"{name}: +{statistics.median(per_event[name]):.1f} ns per event "
              f"(rounds: {min(per_event[name]):.1f} to {max(per_event[name]):.1f})")
    for name in variants[2:]:
        each = [ratio[name] for ratio in ratios]
        print(f"{name} / minimal: {statistics.median(each):.2f} "
              f"(rounds: {min(each):.2f} to {max(each):.2f})")


if __name__ == "__main__":
    main()
