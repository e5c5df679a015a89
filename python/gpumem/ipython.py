"""``%load_ext gpumem``: every cell traced with exact peaks, one line per cell in
fastai.utils.mem's format::

    △Used Peaked MB:    512    256 (cell 3)

``%gpumem_trace off`` / ``on`` pause and resume it, ``%gpumem_trace history`` prints the lines
again, ``%gpumem_trace clear`` forgets them. Each cell's numbers stay available afterwards in
``gpumem.ipython.history`` (also ``_gpumem`` in the user namespace): a list of ``CellMemory``.
"""

from __future__ import annotations

from collections import namedtuple
from typing import List, Optional

from . import _native
from ._trace import GPUMemTrace, TraceBytes

CellMemory = namedtuple("CellMemory", ["cell", "delta_used", "delta_peaked", "bytes"])
CellMemory.__doc__ = (
    "One cell's trace: its execution count, fastai.utils.mem's two deltas in MB, and the "
    "TraceBytes."
)

history: List[CellMemory] = []

_USAGE = "usage: %gpumem_trace on|off|history|clear"


class CellTracer:
    """The IPython event handlers: a trace restarted before each cell and read after it."""

    def __init__(self, shell, records: List[CellMemory]):
        self.shell = shell
        self.enabled = True
        self.records = records
        self._trace: Optional[GPUMemTrace] = None
        self._cells_seen = 0

    def pre_run_cell(self, info=None) -> None:
        if not self.enabled:
            return
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
    _tracer = None


__all__ = ["CellMemory", "CellTracer", "TraceBytes", "history", "load_ipython_extension",
           "unload_ipython_extension"]
