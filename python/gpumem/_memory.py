"""fastai.utils.mem's queries, on the native core. All sizes are MB (2**20 bytes)."""

from __future__ import annotations

import ctypes
import sys
from collections import namedtuple
from typing import List, Optional, Tuple

from . import _framework, _native

_GPUMemoryFields = namedtuple("_GPUMemoryFields", ["total", "free", "used"])


class GPUMemory(_GPUMemoryFields):
    """Memory of one GPU in MB: the namedtuple ``(total, free, used)`` of fastai.utils.mem, in
    its field order. ``used`` is ``total - free``, the driver's own reservation included (so an
    idle GPU reads used > 0, as NVML's v1 memory info that fastai.utils.mem read says); that
    reservation alone is the attribute ``reserved`` (MB; 0 where the driver does not report it
    apart), which is not a field: unpacking and comparisons see three values.

    Example (CUDA ordinal 0 an idle H200)::

        >>> total, free, used = gpumem.gpu_mem_get(0)
        >>> used == total - free
        True
        >>> gpumem.gpu_mem_get(0).reserved
        542
    """

    reserved: int = 0  # what _make and _replace (which bypass __new__) give

    def __new__(cls, total: int, free: int, used: int, reserved: int = 0) -> "GPUMemory":
        memory = super().__new__(cls, total, free, used)
        memory.reserved = reserved
        return memory


GpuHandle = _native.GpuHandle

_ZEROS = GPUMemory(0, 0, 0)


def b2mb(num) -> int:
    """Bytes to MB (2**20 bytes), truncated toward zero: fastai.utils.mem's ``int(num/2**20)``,
    exact for integers of any size.

    Example::

        >>> gpumem.b2mb(3 * 2**20 + 5)
        3
        >>> gpumem.b2mb(-1.5 * 2**20)
        -1
    """
    if isinstance(num, int):
        return num // 2**20 if num >= 0 else -((-num) // 2**20)
    return int(num / 2**20)


def gpu_mem_get(id=None) -> GPUMemory:
    """Total, free and used MB of GPU ``id``; ``reserved`` MB as an attribute.

    ``id`` is a CUDA ordinal as torch numbers devices (an int or a numpy integer), a
    ``torch.device`` or a string ``"cuda"`` / ``"cuda:N"``; ``None`` is the current device.
    ``GPUMemory(0, 0, 0)`` without a GPU, and for any id that names no visible GPU (negative,
    out of range, ``"cpu"``, …; ``gpumem.diagnostics()`` says why): it never raises.

    Example (CUDA ordinal 0 an idle H200, 1 an A100 40GB)::

        >>> gpumem.gpu_mem_get(0)
        GPUMemory(total=143771, free=143229, used=542)
        >>> gpumem.gpu_mem_get("cuda:1").total
        40960
        >>> gpumem.gpu_mem_get(99)
        GPUMemory(total=0, free=0, used=0)
        >>> gpumem.last_diagnostic()
        'GPU id 99: no such device (2 visible); zeros returned'
    """
    ordinal = _framework.resolve_device(id)
    if ordinal is None:
        return _ZEROS
    reading = _native.gpu_mem_get(ordinal)
    if reading is None:
        _framework.note_not_visible(ordinal)
        return _ZEROS
    return GPUMemory(*reading)


def gpu_mem_get_all() -> List[GPUMemory]:
    """One GPUMemory per visible GPU, in CUDA ordinal order; ``[]`` without GPUs.

    Example::

        >>> [memory.total for memory in gpumem.gpu_mem_get_all()]
        [143771, 40960]
    """
    return [GPUMemory(*memory) for memory in _native.gpu_mem_get_all()]


def gpu_mem_get_free() -> int:
    """Free MB of the current GPU, caches included (0 without a GPU).

    Example (the current device an idle H200)::

        >>> gpumem.gpu_mem_get_free()
        143229
    """
    return gpu_mem_get().free


def gpu_mem_get_used() -> int:
    """Used MB of the current GPU, caches included (0 without a GPU).

    Example (the current device an idle H200)::

        >>> gpumem.gpu_mem_get_used()
        542
    """
    return gpu_mem_get().used


def _release_caches() -> None:
    _framework.ensure_cache_hook()
    _native.release_caches()


def gpu_mem_get_free_no_cache() -> int:
    """Free MB of the current GPU after the loaded frameworks' caches are emptied
    (``gc.collect()`` and ``torch.cuda.empty_cache()`` / CuPy's pool ``free_all_blocks()``);
    0 without a GPU.

    Example (the current device an idle H200)::

        >>> gpumem.gpu_mem_get_free_no_cache()
        143229
    """
    _release_caches()
    return gpu_mem_get().free


def gpu_mem_get_used_no_cache() -> int:
    """Used MB of the current GPU after the loaded frameworks' caches are emptied (as
    ``gpu_mem_get_free_no_cache``); 0 without a GPU.

    Example (the current device an idle H200)::

        >>> gpumem.gpu_mem_get_used_no_cache()
        542
    """
    _release_caches()
    return gpu_mem_get().used


def gpu_handle(id=None) -> GpuHandle:
    """Resolves GPU ``id`` (as for ``gpu_mem_get``; ``None``: the current device) once, for
    ``gpu_mem_get_used_fast``. An id that names no GPU gives an invalid handle, which reads 0.

    Example (CUDA ordinal 1 an idle A100 40GB)::

        >>> handle = gpumem.gpu_handle(1)
        >>> handle
        GpuHandle(device=1)
        >>> gpumem.gpu_mem_get_used_fast(handle)
        256
        >>> gpumem.gpu_handle("cpu")
        GpuHandle(invalid)
    """
    ordinal = _framework.resolve_device(id)
    if ordinal is None:
        return GpuHandle()  # invalid: reads 0
    return _native.gpu_handle(ordinal)


_handle_for = gpu_handle  # gpu_mem_get_used_fast's argument has fastai.utils.mem's name


def gpu_mem_get_used_fast(gpu_handle) -> int:
    """Used MB (``total - free``, as ``gpu_mem_get``) through a handle: one NVML call. Takes a
    ``gpumem.gpu_handle()``, any id ``gpu_mem_get`` takes, or, for code written for
    fastai.utils.mem, a pynvml device handle (read through pynvml itself). 0 when it cannot be
    read.

    Example (CUDA ordinal 0 an idle H200)::

        >>> handle = gpumem.gpu_handle(0)
        >>> for step in range(3):
        ...     used = gpumem.gpu_mem_get_used_fast(handle)
        >>> used
        542
    """
    # type(), not isinstance(): an object's __class__ may raise, and this never does.
    if type(gpu_handle) is GpuHandle:
        return _native.gpu_mem_get_used_fast(gpu_handle)
    pynvml = sys.modules.get("pynvml")
    if pynvml is not None and issubclass(type(gpu_handle), (ctypes._Pointer, ctypes.c_void_p)):
        try:
            return b2mb(pynvml.nvmlDeviceGetMemoryInfo(gpu_handle).used)
        except Exception:
            return 0
    return _native.gpu_mem_get_used_fast(_handle_for(gpu_handle))


def gpu_with_max_free_mem() -> Tuple[Optional[int], int]:
    """``(id, free MB)`` of the visible GPU with the most free memory (the first on ties; id is
    a CUDA ordinal), or ``(None, 0)`` without GPUs.

    Example (an idle H200 as ordinal 0, an A100 40GB as 1)::

        >>> gpumem.gpu_with_max_free_mem()
        (0, 143229)
    """
    id, free = _native.gpu_with_max_free_mem()
    return (id, free) if id is not None else (None, 0)


def preload_pytorch() -> bool:
    """Creates the CUDA context on the current device now, so its cost (hundreds of MB) is not
    charged to the first measurement. With torch loaded and CUDA available this is
    fastai.utils.mem's ``torch.ones((1, 1)).cuda()``; otherwise gpumem creates the primary
    context that torch, CuPy and the CUDA runtime all share. False (and nothing done) without a
    GPU.

    Example::

        >>> gpumem.preload_pytorch()
        True
    """
    torch = _framework._torch_with_cuda()
    if torch is not None:
        torch.ones((1, 1)).cuda()
        return True
    return bool(_native.preload())
