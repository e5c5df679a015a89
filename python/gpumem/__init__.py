"""gpumem: how much GPU memory code uses, and how high it peaks.

A drop-in for ``fastai.utils.mem``: change ``from fastai.utils.mem import …`` to
``from gpumem import …``. Device ids are CUDA ordinals as the program sees them
(``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER`` respected), peaks are exact where CUPTI works,
and importing never fails for lack of a GPU or driver: queries then return fastai.utils.mem's
zeros. gpumem never imports torch or CuPy; it uses them when the program has.

In IPython/Jupyter, ``%load_ext gpumem`` reports every cell's used and peak memory. In training
loops, ``StepPeaks`` gives each step's exact peak, and gpumem.fastai, gpumem.lightning and
gpumem.transformers log it from each framework's callbacks.
"""

from ._memory import (
    GpuHandle,
    GPUMemory,
    b2mb,
    gpu_handle,
    gpu_mem_get,
    gpu_mem_get_all,
    gpu_mem_get_free,
    gpu_mem_get_free_no_cache,
    gpu_mem_get_used,
    gpu_mem_get_used_fast,
    gpu_mem_get_used_no_cache,
    gpu_with_max_free_mem,
    preload_pytorch,
)
from ._native import (
    device_count,
    devices,
    diagnostics,
    driver_version,
    last_diagnostic,
)
from ._attribution import AttributionSnapshot, _python_frames, last_oom
from ._memory import _GPUMemoryFields  # noqa: F401  (GPUMemory's base, named in the stubs)
from ._trace import GPUMemTrace, SilentSwitch, TraceBytes, _SilentAttribute, gpu_mem_trace  # noqa: F401
from ._steps import StepPeak, StepPeaks
from ._run import read_run

from ._native import version as __version__  # noqa: E402

_python_frames()  # allocation stacks name the Python code that allocated

__all__ = [
    "AttributionSnapshot",
    "GPUMemory",
    "GPUMemTrace",
    "GpuHandle",
    "StepPeak",
    "StepPeaks",
    "TraceBytes",
    "b2mb",
    "device_count",
    "devices",
    "diagnostics",
    "driver_version",
    "gpu_handle",
    "gpu_mem_get",
    "gpu_mem_get_all",
    "gpu_mem_get_free",
    "gpu_mem_get_free_no_cache",
    "gpu_mem_get_used",
    "gpu_mem_get_used_fast",
    "gpu_mem_get_used_no_cache",
    "gpu_mem_trace",
    "gpu_with_max_free_mem",
    "last_diagnostic",
    "last_oom",
    "preload_pytorch",
    "read_run",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext gpumem``: trace every cell (see gpumem.ipython)."""
    from . import ipython as _ipython

    _ipython.load_ipython_extension(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext gpumem``."""
    from . import ipython as _ipython

    _ipython.unload_ipython_extension(ipython)
