"""Without a driver or GPU, importing never fails and every query gives the seed's zeros."""

import pytest

from reports import line

NO_GPU_SCRIPT = """
import warnings
warnings.simplefilter("always")
import gpumem
with warnings.catch_warnings(record=True) as caught:
    t = gpumem.GPUMemTrace()
    t2 = gpumem.GPUMemTrace(ctx="again")
    with t:
        pass
t2.report("sub")
try:
    from gpumem.testing import allocate
    allocate(1)
    refused = None
except MemoryError as error:
    refused = str(error)
emit(memory=gpumem.gpu_mem_get(), all=gpumem.gpu_mem_get_all(),
     free=gpumem.gpu_mem_get_free(), used=gpumem.gpu_mem_get_used(),
     free_nc=gpumem.gpu_mem_get_free_no_cache(), used_nc=gpumem.gpu_mem_get_used_no_cache(),
     fast=gpumem.gpu_mem_get_used_fast(gpumem.gpu_handle()), best=gpumem.gpu_with_max_free_mem(),
     preloaded=gpumem.preload_pytorch(), data=t.data(), source=t.source,
     warnings=[str(w.message) for w in caught], categories=[w.category.__name__ for w in caught],
     diagnostics=gpumem.diagnostics(), refused=refused, count=gpumem.device_count())
"""


@pytest.mark.parametrize(
    "environment, source",
    [
        ({"GPUMEM_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
          "GPUMEM_CUDA_LIBRARY": "/nonexistent/libcuda.so.1",
          "GPUMEM_CUPTI_LIBRARY": "/nonexistent/libcupti.so.13"}, "none"),
        # A driver/library version mismatch: without NVML nothing tells whether CUDA will find a
        # GPU, so traces count CUDA's events exactly from its first call on (here: none).
        ({"GPUMEM_SIM_FAULTS": "nvml_init=18,cuda_init=100"}, "exact"),
    ],
    ids=["no-libraries", "driver-mismatch"],
)
def test_no_gpu_gives_zeros_and_never_raises(sim, environment, source):
    result = sim.run(NO_GPU_SCRIPT, **environment)
    assert result["memory"] == [0, 0, 0]
    assert result["all"] == []
    assert (result["free"], result["used"], result["free_nc"], result["used_nc"]) == (0, 0, 0, 0)
    assert result["fast"] == 0
    assert result["best"] == [None, 0]
    assert result["preloaded"] is False
    assert result["count"] == 0
    assert result["data"] == [0, 0]
    assert result["source"] == source
    if source == "none":
        assert result["categories"] == ["RuntimeWarning"]  # once per process
        assert "traces report zeros" in result["warnings"][0]
    assert result["diagnostics"]
    assert result["refused"].startswith("cannot allocate 1048576 bytes on the GPU: ")
    assert result.lines == [line(0, 0, " (exit)"), line(0, 0, " (again: sub)")]


NO_LIBRARIES = {"GPUMEM_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
                "GPUMEM_CUDA_LIBRARY": "/nonexistent/libcuda.so.1",
                "GPUMEM_CUPTI_LIBRARY": "/nonexistent/libcupti.so.13"}

FIRST_CAUSE_SCRIPT = """
import sys, warnings
warnings.simplefilter("always")
import gpumem
from gpumem.testing import allocate
for id in sys.argv[1:]:
    gpumem.gpu_mem_get(id)  # an id that names no GPU: a note about the call, not a cause
with warnings.catch_warnings(record=True) as caught:
    gpumem.GPUMemTrace(on_exit_report=False)
try:
    allocate(1)
except MemoryError as error:
    refused = str(error)
emit(warnings=[str(w.message) for w in caught], diagnostics=gpumem.diagnostics(),
     refused=refused)
"""


@pytest.mark.parametrize("ids", [[], ["cpu"]], ids=["alone", "after-an-id-that-names-no-GPU"])
def test_without_a_driver_the_warning_names_the_first_cause(sim, ids):
    # The driver's libraries fail first; CUPTI, loaded last, is not the reason nothing measures.
    result = sim.run(FIRST_CAUSE_SCRIPT.replace("sys.argv[1:]", repr(ids)), **NO_LIBRARIES)
    causes = [d for d in result["diagnostics"] if not d.startswith("GPU id ")]
    assert causes[0].startswith(("CUDA driver not found (/nonexistent/libcuda.so.1",
                                 "NVML not found (/nonexistent/libnvidia-ml.so.1"))
    assert any(d.startswith("CUPTI not found") for d in causes)
    if ids:
        assert result["diagnostics"][0] == "GPU id 'cpu': not a CUDA device; zeros returned"
    assert result["warnings"] == [
        f"gpumem.GPUMemTrace: nothing can measure GPU memory here ({causes[0]}); "
        "traces report zeros"]
    assert result["refused"] == f"cannot allocate 1048576 bytes on the GPU: {causes[0]}"
