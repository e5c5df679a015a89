"""Type-checked (mypy --strict, scripts/python_package.sh) against gpumem's stubs: fastai.utils.mem
code as its users wrote it, and gpumem's additions. Never run; collected by no test."""

from typing import List, Optional, Tuple

from gpumem import *
from gpumem import GpuHandle, TraceBytes, device_count, diagnostics
from gpumem.pytest_plugin import LIMIT_MARK, parse_size
from gpumem.testing import DeviceMemory, allocate


def queries() -> None:
    total, free, used = gpu_mem_get()
    memory: GPUMemory = gpu_mem_get(0)
    reserved: int = memory.reserved
    by_name: GPUMemory = gpu_mem_get("cuda:1")
    everything: List[GPUMemory] = gpu_mem_get_all()
    best: Tuple[Optional[int], int] = gpu_with_max_free_mem()
    handle: GpuHandle = gpu_handle(0)
    fast: int = gpu_mem_get_used_fast(handle)
    numbers: List[int] = [gpu_mem_get_free(), gpu_mem_get_used(), gpu_mem_get_free_no_cache(),
                          gpu_mem_get_used_no_cache(), b2mb(2**20), device_count()]
    preloaded: bool = preload_pytorch()
    reasons: List[str] = diagnostics()
    print(total, free, used, reserved, by_name, everything, best, fast, numbers, preloaded, reasons)


@gpu_mem_trace
def decorated(n: int) -> int:
    return n * 2


def traces() -> None:
    mtrace = GPUMemTrace()
    mtrace.report()
    delta_used, delta_peaked = mtrace.data()
    mtrace.silent = True          # fastai.utils.mem's attribute
    mtrace.silent(silent=False)   # and its documented method
    if mtrace.silent:
        pass
    mtrace.ctx = "renamed"
    mtrace.on_exit_report = False
    mtrace.data_set()
    attributes: List[int] = [mtrace.used_start, mtrace.used_peak, mtrace.delta_used,
                             mtrace.delta_peaked]
    note: str = mtrace._get_ctx("sub")
    with GPUMemTrace(ctx="block", device="cuda:0") as block:
        held: DeviceMemory = allocate(1)
        held.free()
    reading: TraceBytes = block.data_bytes()
    doubled: int = decorated(2)
    print(delta_used, delta_peaked, attributes, note, reading.peak, doubled)


def attribution() -> None:
    mtrace = GPUMemTrace(attribute=True)
    snap: Optional[AttributionSnapshot] = mtrace.peak_snapshot()
    if snap is not None:
        top: Optional[str] = snap.top_function()
        by_stack: List[Tuple[int, int]] = snap.bytes_by_stack()
        sizes: List[int] = [int(block["bytes"]) for block in snap.blocks]
        report: List[str] = snap.describe(3)
        document: str = snap.to_json()
        print(top, by_stack, sizes, report, document, snap.attributed, snap.time_s)
    oom = last_oom()
    if oom is not None and oom.failure is not None:
        print(oom.failure["bytes"], oom.top_stacks(3))


def pytest_budgets() -> None:
    budget: int = parse_size("2 GiB")
    print(LIMIT_MARK, budget)


def training_steps() -> None:
    with StepPeaks("all", source="automatic") as steps:
        steps.start_epoch()
        for _ in range(3):
            steps.start_step()
            records: List[StepPeak] = steps.end_step()
            rises: List[int] = [record.rise for record in records]
            print(rises, steps.last_step[0].mode if steps.last_step else None)
        epoch: List[StepPeak] = steps.end_epoch()
        highest: List[StepPeak] = steps.take_highest()
        modes: List[str] = steps.modes
        print(epoch, highest, modes, steps.devices, steps.steps_done)


def run_files(path: str) -> None:
    run = read_run(path)
    peaks: List[int] = [device.peak_bytes for device in run.devices]
    exact: Optional[int] = run.devices[0].exact_peak_bytes
    ranks: List[Optional[int]] = [rank.rank for rank in run.ranks]
    text: str = run.to_json()
    print(peaks, exact, ranks, text, run.mode, run.budget_exceeded)
