"""fastai.utils.mem's queries, on the native core. All sizes are MB (2**20 bytes)."""

from __future__ import annotations

import sys
from collections import namedtuple
from typing import List, Optional, Tuple

from . import _framework, _native

GPUMemory = namedtuple("GPUMemory", ["total", "free", "used"])
GPUMemory.__doc__ = "Memory of one GPU in MB: total, free, used (the seed's field order)."

GpuHandle = _native.GpuHandle


def b2mb(num) -> int:
    """Bytes to MB (2**20 bytes), truncated toward zero: the seed's ``int(num/2**20)``, exact
    for integers of any size."""
    if isinstance(num, int):
        return num // 2**20 if num >= 0 else -((-num) // 2**20)
    return int(num / 2**20)


def gpu_mem_get(id: Optional[int] = None) -> GPUMemory:
    """Total, free and used MB of GPU ``id`` (a CUDA ordinal, as torch numbers devices; ``None``:
    the current device). ``GPUMemory(0, 0, 0)`` without a GPU or for an invalid id."""
    return GPUMemory(*_native.gpu_mem_get(_framework.resolve_device(id)))


def gpu_mem_get_all() -> List[GPUMemory]:
    """One GPUMemory per visible GPU, in CUDA ordinal order; ``[]`` without GPUs."""
    return [GPUMemory(*memory) for memory in _native.gpu_mem_get_all()]


def gpu_mem_get_free() -> int:
    """Free MB of the current GPU, caches included (0 without a GPU)."""
    return gpu_mem_get().free


def gpu_mem_get_used() -> int:
    """Used MB of the current GPU, caches included (0 without a GPU)."""
    return gpu_mem_get().used


def _release_caches() -> None:
    _framework.ensure_cache_hook()
    _native.release_caches()


def gpu_mem_get_free_no_cache() -> int:
    """Free MB of the current GPU after the loaded frameworks' caches are emptied
    (``gc.collect()`` and ``torch.cuda.empty_cache()`` / CuPy's pool ``free_all_blocks()``)."""
    _release_caches()
    return gpu_mem_get().free


def gpu_mem_get_used_no_cache() -> int:
    """Used MB of the current GPU after the loaded frameworks' caches are emptied."""
    _release_caches()
    return gpu_mem_get().used


def gpu_handle(id: Optional[int] = None) -> GpuHandle:
    """Resolves GPU ``id`` (``None``: the current device) once, for ``gpu_mem_get_used_fast``."""
    return _native.gpu_handle(_framework.resolve_device(id))


def gpu_mem_get_used_fast(gpu_handle) -> int:
    """Used MB through a handle: one NVML call. Takes a ``gpumem.gpu_handle()``, a CUDA ordinal,
    or, for code written for the seed, a pynvml device handle (read through pynvml itself).
    0 when the handle cannot be read."""
    if isinstance(gpu_handle, GpuHandle):
        return _native.gpu_mem_get_used_fast(gpu_handle)
    if isinstance(gpu_handle, int):
        return _native.gpu_mem_get_used_fast(_native.gpu_handle(gpu_handle))
    pynvml = sys.modules.get("pynvml")
    if pynvml is not None:
        try:
            return b2mb(pynvml.nvmlDeviceGetMemoryInfo(gpu_handle).used)
        except Exception:
            return 0
    raise TypeError(
        f"gpu_mem_get_used_fast expects gpumem.gpu_handle(id), not {type(gpu_handle).__name__}"
    )


def gpu_with_max_free_mem() -> Tuple[Optional[int], int]:
    """``(id, free MB)`` of the visible GPU with the most free memory (the first on ties; id is
    a CUDA ordinal), or ``(None, 0)`` without GPUs."""
    id, free = _native.gpu_with_max_free_mem()
    return (id, free) if id is not None else (None, 0)


def preload_pytorch() -> bool:
    """Creates the CUDA context on the current device now, so its cost (hundreds of MB) is not
    charged to the first measurement. With torch loaded and CUDA available this is the seed's
    ``torch.ones((1, 1)).cuda()``; otherwise gpumem creates the primary context that torch,
    CuPy and the CUDA runtime all share. False (and nothing done) without a GPU."""
    torch = _framework._torch_with_cuda()
    if torch is not None:
        torch.ones((1, 1)).cuda()
        return True
    return bool(_native.preload())
