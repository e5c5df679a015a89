"""Python frameworks, detected and never required.

gpumem never imports torch or CuPy: it looks in ``sys.modules`` for frameworks the program has
already imported, so importing gpumem stays cheap and cannot fail because of them.
"""

from __future__ import annotations

import gc
import sys
from typing import Optional

from . import _native

_hook_id: Optional[int] = None


def _torch_with_cuda():
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # a broken CUDA build answers with errors, not False
        return None


def _cupy_with_cuda():
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    try:
        return cupy if cupy.cuda.is_available() else None
    except Exception:
        return None


def current_device() -> int:
    """The CUDA ordinal the program works on: torch's current device, else CuPy's, else the
    calling thread's current CUDA device as the driver knows it (``_native.current_device``)."""
    torch = _torch_with_cuda()
    if torch is not None:
        return int(torch.cuda.current_device())
    cupy = _cupy_with_cuda()
    if cupy is not None:
        return int(cupy.cuda.runtime.getDevice())
    return _native.current_device


def resolve_device(id: Optional[int]) -> int:
    return current_device() if id is None else int(id)


def frameworks_loaded() -> bool:
    return "torch" in sys.modules or "cupy" in sys.modules


def release_caches() -> None:
    """Gives the frameworks' cached device blocks back to the driver (the native hook calls this
    before every ``_no_cache`` read and trace endpoint)."""
    torch = _torch_with_cuda()
    cupy = _cupy_with_cuda()
    if torch is None and cupy is None:
        return
    gc.collect()  # tensors kept alive only by reference cycles hold cached blocks
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


def ensure_cache_hook() -> None:
    """Registers the native cache-release hook the first time a framework is seen loaded."""
    global _hook_id
    if _hook_id is None and frameworks_loaded():
        _hook_id = _native.add_framework_cache_hook()
