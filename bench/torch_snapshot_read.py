#!/usr/bin/env python3
"""Reading a PyTorch memory snapshot: `gpumem attribution FILE` (gpumem's restricted pickle
reader, the conversion into its attribution model and the table) against Python's own
`pickle.load` of the same file (the C unpickler, what PyTorch's viewers start with), in the same
run, for snapshots of N live blocks; and the peak resident memory of each (a process of its own
each: `python3` loading the pickle, `gpumem` showing it) against the file's size.

The snapshots are built as PyTorch writes them (torch/cuda/memory.py's documented schema): each
block its own list of frames, the frames themselves shared dicts (PyTorch symbolizes each frame
once), 8 frames a stack from 500 distinct stacks, pickled by `pickle.dump` (protocol 4, as
`torch.cuda.memory._dump_snapshot()`).

    python3 bench/torch_snapshot_read.py --gpumem <build>/bin/gpumem [--blocks 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import resource
import subprocess
import tempfile
import time
from pathlib import Path


def snapshot(blocks: int) -> dict:
    rng = random.Random(31)
    frames = [{"filename": f"/home/me/model/layer{i % 40}.py", "line": 10 + i, "name": f"fn{i}"}
              for i in range(1000)]
    stacks = [[frames[rng.randrange(1000)] for _ in range(8)] for _ in range(500)]
    per_segment = 64
    segments = []
    address = 0x7F0000000000
    for first in range(0, blocks, per_segment):
        items = []
        start = address
        for i in range(first, min(blocks, first + per_segment)):
            size = 512 << (i % 8)
            items.append({"address": address, "size": size, "requested_size": size,
                          "state": "active_allocated", "frames": list(stacks[i % 500])})
            address += size
        total = address - start
        segments.append({"device": 0, "address": start, "total_size": total,
                         "allocated_size": total, "active_size": total, "requested_size": total,
                         "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                         "is_expandable": False, "frames": [], "blocks": items})
    return {"segments": segments, "device_traces": [[]], "allocator_settings": {}}


def best_of(runs: int, action) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def gpumem_peak_rss_kib(gpumem: Path, path: Path) -> int:
    # The child's own peak (ru_maxrss of the one child waited for, through a fresh process).
    script = ("import resource,subprocess,sys;"
              "subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,check=True);"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run(["python3", "-c", script, str(gpumem), "attribution", str(path),
                          "--top", "1"], capture_output=True, text=True, check=True)
    return int(out.stdout)


def python_peak_rss_kib(path: Path) -> int:
    script = ("import pickle,resource,sys;pickle.load(open(sys.argv[1],'rb'));"
              "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run(["python3", "-c", script, str(path)], capture_output=True, text=True,
                         check=True)
    return int(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpumem", required=True, type=Path)
    parser.add_argument("--blocks", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'blocks':>9} {'file MB':>8} {'pickle.load s':>14} {'gpumem s':>9} "
              f"{'ratio':>6} {'Python RSS MB':>14} {'gpumem RSS MB':>14}")
        for blocks in [int(n) for n in args.blocks.split(",")]:
            path = Path(folder) / f"s{blocks}.pickle"
            with open(path, "wb") as f:
                pickle.dump(snapshot(blocks), f, protocol=4)

            def python_load():
                with open(path, "rb") as f:
                    pickle.load(f)

            def gpumem_read():
                subprocess.run([str(args.gpumem), "attribution", str(path), "--top", "1"],
                               stdout=subprocess.DEVNULL, check=True)

            python_s = best_of(args.runs, python_load)
            gpumem_s = best_of(args.runs, gpumem_read)
            rss = gpumem_peak_rss_kib(args.gpumem, path)
            python_rss = python_peak_rss_kib(path)
            print(f"{blocks:>9} {os.path.getsize(path) / 1e6:>8.1f} {python_s:>14.3f} "
                  f"{gpumem_s:>9.3f} {gpumem_s / python_s:>6.2f} {python_rss / 1024:>14.1f} "
                  f"{rss / 1024:>14.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
