"""Device memory for tests and demos, allocated through whatever ``libcuda.so.1`` gpumem loaded
(the real driver, or the simulated GPU named by ``GPUMEM_CUDA_LIBRARY``)."""

from __future__ import annotations

import math
import numbers
from typing import Optional, Union

from . import _diagnosis, _framework, _native

MB = 2**20


class DeviceMemory:
    """Device memory held until ``free()``, the end of a ``with`` block, or garbage collection."""

    def __init__(self, allocation):
        self._allocation = allocation
        self.address: int = allocation.address
        self.size: int = allocation.size
        self.device: int = allocation.device

    @property
    def held(self) -> bool:
        return self._allocation.valid

    def free(self) -> None:
        """Frees the memory now; later calls do nothing."""
        self._allocation.reset()

    def __enter__(self) -> "DeviceMemory":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __repr__(self) -> str:
        state = "held" if self.held else "freed"
        return f"DeviceMemory({self.size} bytes on device {self.device}, {state})"


def _size(mb: object, nbytes: object) -> int:
    """The bytes ``allocate`` was asked for; ValueError or TypeError saying, in one short line,
    what is wrong (never a message as long as what it was given)."""
    if nbytes is not None:
        if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral):
            raise TypeError(f"allocate: nbytes must be a whole number of bytes, not "
                            f"{_framework.shown(nbytes)}")
        return int(nbytes)
    if isinstance(mb, str):
        try:
            return int(_native.parse_byte_size(str.__str__(mb)))
        except ValueError as error:
            raise ValueError(f"allocate: bad size {_framework.shown(mb)}: {error}") from None
    if isinstance(mb, bool) or not isinstance(mb, numbers.Real):
        raise TypeError(f"allocate: mb must be a number of MB or a size as text (\"1 GiB\"), "
                        f"not {_framework.shown(mb)}")
    scaled = float(mb) * MB
    if not math.isfinite(scaled):
        raise ValueError(f"allocate needs a positive size, not {_framework.shown(mb)} MB")
    return int(scaled)


def allocate(mb: Union[float, str] = 0, device: Optional[int] = None, *,
             nbytes: Optional[int] = None):
    """Allocates ``mb`` MB (2**20 bytes), a size written as text (``"1 GiB"``, ``"512 MB"``: the
    units of ``gpumem run --max-peak``), or exactly ``nbytes`` bytes, on GPU ``device`` (any id
    ``gpu_mem_get`` takes; ``None``: the current device) with ``cuMemAlloc``, making the
    device's primary context current (a failed allocation leaves the current device as it was).
    Raises MemoryError when the driver refuses (out of memory, no GPU), ValueError for an id that
    names no GPU or a size that is not positive, TypeError for a size that is not one.

    Example::

        >>> from gpumem.testing import allocate
        >>> with allocate(64, device=1) as block:
        ...     gpumem.gpu_mem_get(1).used
        320
        >>> block
        DeviceMemory(67108864 bytes on device 1, freed)
    """
    size = _size(mb, nbytes)
    if size <= 0:
        raise ValueError("allocate needs a positive size")
    ordinal = _framework.resolve_device(device)
    if ordinal is None:
        raise ValueError(f"allocate: GPU id {device!r} names no GPU")
    allocation = _native.device_allocate(size, ordinal)
    if not allocation.valid:
        # Without a driver, the first cause (as GPUMemTrace's warning); else the refusal itself.
        if _native.cuda_available():
            reason = _native.last_diagnostic() or "the CUDA driver refused"
        else:
            reason = _diagnosis.no_gpu_reason()
        raise MemoryError(f"cannot allocate {size} bytes on the GPU: {reason}")
    return DeviceMemory(allocation)
