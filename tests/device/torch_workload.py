"""A PyTorch workload measured by `gpumem run` on a real GPU (tests/device/run.sh).

Prints PyTorch's own view of the process's allocator as JSON on the last line, to compare with
gpumem's exact peak: with PyTorch's native caching allocator every segment is one cudaMalloc,
so gpumem's exact peak (allocation events) should equal max_memory_reserved() to the byte.
"""
import json
import sys

import torch


def work():
    x = torch.randn(4096, 4096, device="cuda")            # 64 MiB
    y = x @ x                                              # + 64 MiB, cuBLAS workspace
    z = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")  # a 256 MiB blip
    del z
    w = torch.cat([y, y])                                  # 128 MiB kept
    torch.cuda.synchronize()
    return w


profile = "--profiler" in sys.argv
if profile:
    from torch.profiler import ProfilerActivity, profile as torch_profile
    with torch_profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        kept = work()
    events = len(prof.key_averages())
else:
    kept = work()
    events = None
print(json.dumps({
    "max_memory_reserved": torch.cuda.max_memory_reserved(),
    "memory_reserved": torch.cuda.memory_reserved(),
    "max_memory_allocated": torch.cuda.max_memory_allocated(),
    "profiler_events": events,
}))
