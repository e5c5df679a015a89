from typing import Any

from ._attribution import (
    AttributionSnapshot as AttributionSnapshot,
    last_oom as last_oom,
)
from ._memory import (
    GPUMemory as GPUMemory,
    GpuHandle as GpuHandle,
    _GPUMemoryFields as _GPUMemoryFields,
    b2mb as b2mb,
    gpu_handle as gpu_handle,
    gpu_mem_get as gpu_mem_get,
    gpu_mem_get_all as gpu_mem_get_all,
    gpu_mem_get_free as gpu_mem_get_free,
    gpu_mem_get_free_no_cache as gpu_mem_get_free_no_cache,
    gpu_mem_get_used as gpu_mem_get_used,
    gpu_mem_get_used_fast as gpu_mem_get_used_fast,
    gpu_mem_get_used_no_cache as gpu_mem_get_used_no_cache,
    gpu_with_max_free_mem as gpu_with_max_free_mem,
    preload_pytorch as preload_pytorch,
)
from ._native import (
    device_count as device_count,
    devices as devices,
    diagnostics as diagnostics,
    driver_version as driver_version,
    last_diagnostic as last_diagnostic,
)
from ._run import read_run as read_run
from ._steps import (
    StepPeak as StepPeak,
    StepPeaks as StepPeaks,
)
from ._trace import (
    GPUMemTrace as GPUMemTrace,
    SilentSwitch as SilentSwitch,
    TraceBytes as TraceBytes,
    _SilentAttribute as _SilentAttribute,
    gpu_mem_trace as gpu_mem_trace,
)

__version__: str
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

def load_ipython_extension(ipython: Any) -> None: ...
def unload_ipython_extension(ipython: Any) -> None: ...
