"""PyTorch, for real: Debian's python3-torch (a CPU build) drives the paths gpumem takes through
torch's own API. gpumem never imports torch; these scenarios import it first, as a program would.

A CPU build cannot reach a GPU, so where a CUDA build would allocate (``Tensor.cuda``) or release
its cache (``empty_cache``), the scenario wraps torch's real function: the wrapper checks the
call against the real signature, records it, and does the device side through the simulated GPU.
"""

import pytest

from conftest import A100_RESERVED, H200_IDLE, H200_RESERVED

pytest.importorskip("torch")  # python3-torch, installed by scripts/setup.sh --tests

REAL_TORCH = """
import gc, inspect, sys
import torch
import gpumem
from gpumem.testing import allocate
"""


def test_real_torch_without_cuda_is_left_alone(sim):
    config = dict(sim.config)
    config["devices"] = [dict(d, context_mib=300) for d in config["devices"]]
    sim.config = config
    result = sim.run(REAL_TORCH + """
before = gpumem.gpu_mem_get()
no_cache = gpumem.gpu_mem_get_used_no_cache()       # the cache hook runs torch's real checks
with gpumem.GPUMemTrace(ctx="cpu torch"):
    x = torch.ones((1000, 1000))                    # host memory: nothing on the GPU
preloaded = gpumem.preload_pytorch()                # no CUDA in torch: gpumem makes the context
emit(available=torch.cuda.is_available(), before=before, no_cache=no_cache,
     preloaded=preloaded, after=gpumem.gpu_mem_get_used(),
     torch_initialized=torch.cuda.is_initialized(), hook=gpumem._framework._hook_id is not None)
""")
    assert result["available"] is False
    assert result["before"] == list(H200_IDLE)
    assert result["no_cache"] == H200_RESERVED
    assert result.lines == ["△Used Peaked MB:      0      0 (cpu torch: exit)"]
    assert result["preloaded"] is True
    assert result["after"] == H200_RESERVED + 300
    assert result["torch_initialized"] is False  # gpumem never started torch's CUDA
    assert result["hook"] is True


CUDA_TORCH = REAL_TORCH + """
calls = []
real = {"current_device": torch.cuda.current_device, "empty_cache": torch.cuda.empty_cache,
        "cuda": torch.Tensor.cuda}
cached = []        # what torch's caching allocator holds on device 1

def checked(name, *args, **kwargs):
    inspect.signature(real[name]).bind(*args, **kwargs)   # the call fits torch's real API
    calls.append(name)

def current_device():
    checked("current_device")
    return 1

def empty_cache():
    checked("empty_cache")
    while cached: cached.pop().free()

def tensor_cuda(self, device=None, non_blocking=False):
    assert isinstance(self, torch.Tensor) and tuple(self.shape) == (1, 1), self
    calls.append("Tensor.cuda")
    cached.append(allocate(2, device=1))   # a CUDA build's first .cuda(): context and a block
    return self

torch.cuda.is_available = lambda: True     # as a CUDA build on a GPU answers
torch.cuda.is_initialized = lambda: True
torch.cuda.current_device = current_device
torch.cuda.empty_cache = empty_cache
torch.Tensor.cuda = tensor_cuda
"""


def test_cuda_paths_call_torchs_real_api(sim):
    result = sim.run(CUDA_TORCH + """
preloaded = gpumem.preload_pytorch()               # fastai.utils.mem's torch.ones((1, 1)).cuda()
cached_used = gpumem.gpu_mem_get_used()            # torch's current device, cache included
no_cache = gpumem.gpu_mem_get_used_no_cache()      # gc.collect() and torch.cuda.empty_cache()
mtrace = gpumem.GPUMemTrace(silent=True)
cached.append(allocate(30, device=1))              # a tensor freed into torch's cache
mtrace.stop()                                      # the end is measured with the cache emptied
emit(preloaded=preloaded, cached_used=cached_used, no_cache=no_cache, data=mtrace.data(),
     device=mtrace.data_bytes().device, calls=calls)
""")
    assert result["preloaded"] is True
    assert result["cached_used"] == A100_RESERVED + 2
    assert result["no_cache"] == A100_RESERVED
    assert result["data"] == [0, 30]
    assert result["device"] == 1
    calls = result["calls"]
    assert calls[:2] == ["Tensor.cuda", "current_device"]
    assert calls.count("empty_cache") == 3  # the _no_cache read, the trace's start and its end


def test_a_torch_that_cannot_start_cuda_falls_back_to_the_driver(sim):
    # torch says CUDA is there but its current_device() raises (a broken install): the queries
    # read the driver's current device instead of raising.
    result = sim.run(REAL_TORCH + """
torch.cuda.is_available = lambda: True
held = allocate(8, device=1)
emit(used=gpumem.gpu_mem_get_used(), memory=gpumem.gpu_mem_get(None))
""")
    assert result["used"] == A100_RESERVED + 8
    assert result["memory"][2] == A100_RESERVED + 8
