"""A PyTorch workload measured by `gpumem run` on a real GPU (tests/device/run.sh).

Run under each of PyTorch's allocator backends (PYTORCH_CUDA_ALLOC_CONF unset: the native caching
allocator, one cudaMalloc per segment; `expandable_segments:True`: VMM, segments grown by
cuMemCreate + cuMemMap; `backend:cudaMallocAsync`: a stream-ordered pool that keeps what it
reserved). Prints PyTorch's own view of its allocator as JSON on the last line: gpumem's process
footprint must be at least max_memory_reserved(), the context and modules on top.
"""
import json
import os
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
free, total = torch.cuda.mem_get_info()
print(json.dumps({
    "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
    "backend": torch.cuda.get_allocator_backend(),
    "max_memory_reserved": torch.cuda.max_memory_reserved(),
    "memory_reserved": torch.cuda.memory_reserved(),
    "max_memory_allocated": torch.cuda.max_memory_allocated(),
    "device_used_at_end": total - free,
    "profiler_events": events,
}))
