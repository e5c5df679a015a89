"""``%load_ext gpumem``: every cell traced with exact peaks, one line per cell in
fastai.utils.mem's format::

    △Used Peaked MB:    512    256 (cell 3)

``%gpumem_trace off`` / ``on`` pause and resume it, ``%gpumem_trace history`` prints the lines
again, ``%gpumem_trace clear`` forgets them.

From the first cell on, a silent ``GPUMemTrace(attribute=True)`` records the blocks that the
cells allocate, with their stacks (Python frames included): when an allocation runs
out of memory in a cell, a short report follows the cell's output: the failed request and the
three stacks that held the most, each with the function that allocated it::

    gpumem: out of memory: 204800.0 MB requested on GPU 0 (CUDA_ERROR_OUT_OF_MEMORY), ...
           300.0 MB  load_weights (<ipython-input-2-...>:2)

``gpumem.last_oom()`` then holds the whole record. ``%gpumem_trace attribute off`` traces
without attribution (the report then names only the request); ``attribute on`` turns it back. Each cell's numbers stay available afterwards in
``gpumem.ipython.history`` (also ``_gpumem`` in the user namespace): a list of ``CellMemory``.
"""

from __future__ import annotations

from collections import namedtuple
from typing import List, Optional

from . import _native
from ._attribution import AttributionSnapshot, last_oom
from ._trace import GPUMemTrace, TraceBytes

CellMemory = namedtuple("CellMemory", ["cell", "delta_used", "delta_peaked", "bytes"])
CellMemory.__doc__ = (
    "One cell's trace: its execution count, fastai.utils.mem's two deltas in MB, and the "
    "TraceBytes."
)

history: List[CellMemory] = []

_USAGE = "usage: %gpumem_trace on|off|history|clear|attribute on|attribute off"


def _oom_key(snapshot: Optional[AttributionSnapshot]) -> Optional[float]:
    return None if snapshot is None else snapshot.time_s


class CellTracer:
    """The IPython event handlers: a trace restarted before each cell and read after it."""

    def __init__(self, shell, records: List[CellMemory]):
        self.shell = shell
        self.enabled = True
        self.records = records
        self.attribute = True
        self._trace: Optional[GPUMemTrace] = None
        # A trace that runs from the first cell on, for attribution only: blocks are recorded
        # with their stacks while an attributing trace runs, and the per-cell trace stops
        # between cells, so this one keeps what earlier cells allocated known.
        self._attribution: Optional[GPUMemTrace] = None
        self._cells_seen = 0
        self._oom_before: Optional[float] = None

    def pre_run_cell(self, info=None) -> None:
        if not self.enabled:
            return
        self._oom_before = _oom_key(last_oom())
        if self.attribute and self._attribution is None:
            self._attribution = GPUMemTrace(silent=True, on_exit_report=False, attribute=True)
        elif not self.attribute and self._attribution is not None:
            self._attribution.stop()
            self._attribution = None
        if self._trace is None:
            self._trace = GPUMemTrace(on_exit_report=False)  # tracing starts here
        else:
            self._trace.start()

    def post_run_cell(self, result=None) -> None:
        trace = self._trace
        if trace is None or not trace.is_running:
            return
        trace.stop()
        if not self.enabled:  # the cell that said "%gpumem_trace off"
            return
        self._cells_seen += 1
        cell = getattr(result, "execution_count", None) or self._cells_seen
        delta_used, delta_peaked = trace.data()
        self.records.append(CellMemory(cell, delta_used, delta_peaked, trace.data_bytes()))
        trace.report(f"cell {cell}")
        oom = last_oom()
        if oom is not None and _oom_key(oom) != self._oom_before:
            self._oom_before = _oom_key(oom)
            lines = oom.describe(3)
            lines[0] = lines[0].replace("out of memory:", f"out of memory in cell {cell}:", 1)
            print("\n".join(lines))

    def magic(self, line: str) -> None:
        command = line.strip().lower()
        if command in ("on", ""):
            self.enabled = True
        elif command == "off":
            self.enabled = False
        elif command == "history":
            for record in self.records:
                print(_native.format_report(record.delta_used, record.delta_peaked, None,
                                            f"cell {record.cell}"))
        elif command in ("attribute on", "attribute"):
            self.attribute = True
        elif command == "attribute off":
            self.attribute = False
        elif command == "clear":
            self.records.clear()
        else:
            print(_USAGE)


_tracer: Optional[CellTracer] = None


def load_ipython_extension(shell) -> None:
    """Registers the per-cell trace on ``shell`` (an InteractiveShell); loading twice is harmless."""
    global _tracer
    if _tracer is not None:
        return
    _tracer = CellTracer(shell, history)
    shell.events.register("pre_run_cell", _tracer.pre_run_cell)
    shell.events.register("post_run_cell", _tracer.post_run_cell)
    shell.register_magic_function(_tracer.magic, "line", "gpumem_trace")
    shell.user_ns["_gpumem"] = history


def unload_ipython_extension(shell) -> None:
    global _tracer
    if _tracer is None:
        return
    shell.events.unregister("pre_run_cell", _tracer.pre_run_cell)
    shell.events.unregister("post_run_cell", _tracer.post_run_cell)
    if _tracer._trace is not None and _tracer._trace.is_running:
        _tracer._trace.stop()
    if _tracer._attribution is not None:
        _tracer._attribution.stop()
    _tracer = None


__all__ = ["CellMemory", "CellTracer", "TraceBytes", "history", "load_ipython_extension",
           "unload_ipython_extension"]
