"""Attribution from Python: which code held the memory at a trace's peak, or when an allocation
ran out of memory (docs/attribution.md)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import _native


class AttributionSnapshot:
    """One recorded moment: the blocks live at a trace's peak (``what == "peak"``) or when an
    allocation failed (``what == "oom"``), with the call stack that allocated each, Python
    frames included.

    ``blocks``, ``frames``, ``stacks``, ``failure`` and the other fields are the
    gpumem.attribution/1 document that ``to_json()`` writes (docs/attribution.md), handed over
    by the library's binding from its one model (no JSON read again here): ``blocks``
    is a list of dicts (``address``, ``bytes``, ``kind``, ``age_s``, ``stack``, ``pid``),
    largest first; ``stacks`` lists each stack as frame dicts (``function``, ``file``,
    ``line``, ``module``, ``address``, ``language``), innermost first.

    Example: who held the memory at a trace's peak::

        >>> from gpumem.testing import allocate
        >>> def load_weights():
        ...     return allocate(30)
        >>> mtrace = gpumem.GPUMemTrace(attribute=True, on_exit_report=False)
        >>> weights = load_weights()
        >>> snapshot = mtrace.peak_snapshot()
        >>> snapshot.what, snapshot.live_bytes // 2**20, snapshot.top_function()
        ('peak', 30, 'load_weights')
        >>> weights.free()
        >>> mtrace.stop()
    """

    def __init__(self, native: Any) -> None:
        self._native = native
        # The library's model of the document, every field there (null ones as None): the
        # writer checks its indices, so each stack's frames are there too.
        document: Dict[str, Any] = native.document()
        self._document = document
        self._snapshot: Dict[str, Any] = document["snapshots"][0]
        frames: List[Dict[str, Any]] = document["frames"]
        self.frames: List[Dict[str, Any]] = frames
        self.stacks: List[List[Dict[str, Any]]] = [[frames[i] for i in stack]
                                                   for stack in document["stacks"]]

    @property
    def what(self) -> str:
        return str(self._snapshot["what"])

    @property
    def attributed(self) -> bool:
        """Whether blocks were recorded (an out-of-memory failure without attribution on holds
        only the request and the device's memory)."""
        return bool(self._snapshot["attributed"])

    @property
    def time_s(self) -> float:
        """When it was recorded: seconds since the recording process started."""
        return float(self._snapshot["time_s"])

    @property
    def device(self) -> int:
        return int(self._snapshot["device"])

    @property
    def level_bytes(self) -> int:
        return int(self._snapshot["level_bytes"])

    @property
    def live_bytes(self) -> int:
        return int(self._snapshot["live_bytes"])

    @property
    def context_bytes(self) -> Optional[int]:
        """The part of ``level_bytes`` that is the process's context, modules and the driver's
        rounding (NVML's figure for it beyond its blocks), or None where the document does not
        tell it apart (then it is in what the level holds without a block)."""
        value = self._snapshot["context_bytes"]
        return None if value is None else int(value)

    @property
    def blocks(self) -> List[Dict[str, Any]]:
        return list(self._snapshot["blocks"])

    @property
    def failure(self) -> Optional[Dict[str, Any]]:
        """The failed request of an out-of-memory snapshot (``bytes``, ``kind``, ``stack``,
        ``error``, ``free_bytes``, ``total_bytes``), or None."""
        failure = self._snapshot["failure"]
        return None if failure is None else dict(failure)

    @property
    def other_processes(self) -> List[Dict[str, Any]]:
        """Of an out-of-memory snapshot: every other process NVML listed on the device
        (``pid``, ``name``, ``used_bytes``; under ``gpumem run`` also ``in_run`` and ``rank``)."""
        return list(self._snapshot["other_processes"])

    @property
    def other_processes_age_s(self) -> Optional[float]:
        """How long before the failure NVML's list of other processes was read (0: at it); None
        where NVML was not read, so who else held the device is unknown."""
        age = self._snapshot["other_processes_age_s"]
        return None if age is None else float(age)

    def bytes_by_stack(self) -> List[Tuple[int, int]]:
        """(stack index, bytes held) per stack, largest first; blocks without a stack left out."""
        return [(int(stack), int(held)) for stack, held in self._native.bytes_by_stack()]

    def top_function(self) -> Optional[str]:
        """The function that allocated what held the most: the allocating frame of the stack
        that held the most, as every view of gpumem decides it (the innermost frame that is the
        user's, Python frames first; docs/attribution.md); None without blocks."""
        native = self._native.top_function()
        return None if native is None else str(native)

    def allocated_by(self, stack: int) -> Optional[str]:
        """The allocating frame of ``stack`` (an index into ``stacks``) as every view names it:
        ``"load_weights (train.py:12)"``; None for an unknown or empty stack."""
        label = self._native.allocated_by(stack)
        return None if label is None else str(label)

    def top_stacks(self, n: int = 3) -> List[Tuple[int, List[Dict[str, Any]]]]:
        """The ``n`` stacks that held the most: (bytes, frames innermost first)."""
        return [(held, self.stacks[stack]) for stack, held in self.bytes_by_stack()[:n]
                if stack < len(self.stacks)]

    def describe(self, n: int = 3) -> List[str]:
        """A short report: the failed request (an out-of-memory snapshot) or the level, then
        the ``n`` stacks that held the most, each as its bytes and the function that allocated
        (the allocating frame, as ``allocated_by`` names it)."""
        mb = 2**20
        failure = self.failure
        if failure is not None:
            lines = [f"gpumem: out of memory: {int(failure['bytes']) / mb:.1f} MB "
                     f"requested on GPU {self.device} ({failure['error']}), "
                     f"{int(failure['free_bytes']) / mb:.1f} MB free of "
                     f"{int(failure['total_bytes']) / mb:.1f} MB"]
        else:
            lines = [f"gpumem: {self.what} on GPU {self.device}: "
                     f"{self.live_bytes / mb:.1f} MB live"]
        if not self.attributed:
            lines.append("  (no blocks recorded: attribution was off)")
        for stack, held in self.bytes_by_stack()[:n]:
            lines.append(f"  {held / mb:10.1f} MB  {self.allocated_by(stack) or '(unknown)'}")
        others = self.other_processes
        if others:
            # used_bytes is None where NVML did not give a process's figure.
            held = sum(p["used_bytes"] or 0 for p in others)
            named = ", ".join(f"pid {p['pid']} {p['name'] or '?'} "
                              f"{(p['used_bytes'] or 0) / mb:.1f} MB" for p in others)
            lines.append(f"  other processes on the device held {held / mb:.1f} MB: {named}")
        return lines

    def to_json(self) -> str:
        """The gpumem.attribution/1 document holding this snapshot."""
        return str(self._native.to_json())

    def __repr__(self) -> str:
        return (f"AttributionSnapshot({self.what}, {len(self.blocks)} blocks, "
                f"{self.live_bytes} bytes live, top {self.top_function()!r})")


def _wrap(native: Any) -> Optional[AttributionSnapshot]:
    if native is None:
        return None
    return AttributionSnapshot(native)


def last_oom() -> Optional[AttributionSnapshot]:
    """The last allocation of this process that failed with out-of-memory while gpumem's exact
    source was subscribed (a trace running, or attribution on), or None. Its blocks and stacks
    are there where attribution was on (``GPUMemTrace(attribute=True)``, GPUMEM_ATTRIBUTE=1);
    otherwise it holds the failed request and the device's memory.

    Example: a request larger than the GPU::

        >>> from gpumem.testing import allocate
        >>> with gpumem.GPUMemTrace(on_exit_report=False):
        ...     try:
        ...         allocate(2**30)
        ...     except MemoryError:
        ...         oom = gpumem.last_oom()
        >>> oom.what, oom.failure["bytes"] == 2**30 * 2**20
        ('oom', True)
        >>> print(oom.describe()[0])  # doctest: +ELLIPSIS
        gpumem: out of memory: 1073741824.0 MB requested on GPU 0 (CUDA_ERROR_OUT_OF_MEMORY), ...
    """
    try:
        return _wrap(_native.last_oom())
    except (RuntimeError, MemoryError):
        return None


def _python_frames() -> None:
    """Puts the allocating Python frames into allocation stacks (done on import)."""
    _native.register_frame_provider()
