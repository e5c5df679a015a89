"""GPUMemTrace and gpu_mem_trace: fastai.utils.mem's tracer, fed by exact peaks."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections import namedtuple
from typing import Optional, Tuple

from . import _diagnosis, _framework, _native
from ._attribution import AttributionSnapshot, _wrap

TraceBytes = namedtuple(
    "TraceBytes",
    ["source", "device", "start", "end", "peak", "delta_used", "delta_peaked", "quantity",
     "covers", "description", "device_used_start", "device_used_end", "device_used_peak"],
    defaults=["none", (), "", 0, 0, 0],
)
TraceBytes.__doc__ = (
    "A trace's readings in bytes: where the peak came from (exact, sampled, reported or none), "
    "the CUDA ordinal, the traced level at start, at the end (now, or at stop) and at the peak, "
    "and fastai.utils.mem's two deltas. `quantity` says what the levels are: 'process footprint' "
    "(what the driver holds for this process, context included: the exact source) or 'device "
    "used' (NVML's total - free, every process: the sampled source); `covers` names the parts "
    "of a footprint they account for, `description` says it in words with what it may miss, and "
    "the device_used_* fields give the device's used memory beside them.\n"
    "\n"
    "Example::\n"
    "\n"
    "    >>> from gpumem.testing import allocate\n"
    "    >>> mtrace = gpumem.GPUMemTrace(on_exit_report=False)\n"
    "    >>> allocate(1).free()\n"
    "    >>> readings = mtrace.data_bytes()\n"
    "    >>> readings.source, readings.quantity, readings.peak - readings.start\n"
    "    ('exact', 'process footprint', 1048576)\n"
)

_warned_no_gpu = False


def _utf8(note: Optional[str]) -> Optional[str]:
    """``note`` as text the native report can take: a lone surrogate (``"\\udc80"``, as
    ``os.fsdecode`` makes of a file name that is not UTF-8) becomes ``?`` rather than failing."""
    if note is None:
        return None
    return note.encode("utf-8", "replace").decode("utf-8")


def _warn_without_gpu(source: str, device: object, ordinal: Optional[int]) -> None:
    """Why a trace measures nothing: an id that names none of the visible GPUs (said for each
    such trace), or nothing that can measure at all (said once)."""
    global _warned_no_gpu
    if source != "none":
        return
    count = _native.device_count()
    if count > 0 and (ordinal is None or ordinal >= count):
        if ordinal is not None:
            _framework.note_not_visible(ordinal)
        warnings.warn(
            f"gpumem.GPUMemTrace: GPU id {_framework.shown(device)} names none of the {count} "
            "visible GPUs; the trace reports zeros",
            RuntimeWarning,
            stacklevel=3,
        )
        return
    if not _warned_no_gpu:
        _warned_no_gpu = True
        reason = _diagnosis.no_gpu_reason()
        warnings.warn(
            f"gpumem.GPUMemTrace: nothing can measure GPU memory here ({reason}); "
            "traces report zeros",
            RuntimeWarning,
            stacklevel=3,
        )


# An ordinal no device has: a trace asked for an id that names no GPU measures zeros.
_NO_DEVICE = 2**31 - 1


class SilentSwitch:
    """What ``mtrace.silent`` reads as: true while the trace is silent, and callable as
    fastai.utils.mem documents its method, ``mtrace.silent(silent=True)``."""

    __slots__ = ("_trace",)

    def __init__(self, trace) -> None:
        self._trace = trace

    def __call__(self, silent: object = True) -> None:
        """Silences (or, with False, resumes) ``report`` and ``report_n_reset``."""
        self._trace.set_silent(bool(silent))

    def __bool__(self) -> bool:
        return bool(self._trace.is_silent)

    def __eq__(self, other: object) -> bool:
        return bool(self) == other

    def __hash__(self) -> int:
        return hash(bool(self))

    def __repr__(self) -> str:
        return repr(bool(self))


class _SilentAttribute:
    """``silent``: assign a bool (``mtrace.silent = True``, what fastai.utils.mem's attribute
    did) or call it (``mtrace.silent(False)``, its documented method); either silences or
    resumes ``report`` and ``report_n_reset``. Reads as true while silent."""

    def __get__(self, trace, owner=None):
        if trace is None:
            return self
        return SilentSwitch(trace._trace)

    def __set__(self, trace, value: object) -> None:
        trace._trace.set_silent(bool(value))


def _mb(level: int) -> int:
    return level // 2**20 if level >= 0 else -((-level) // 2**20)


class GPUMemTrace:
    """Traces used and peak GPU memory from construction: fastai.utils.mem's GPUMemTrace.

    What it measures, by default, is the **process footprint** on the device: the device memory
    the driver holds for this process (its allocations as the driver backs them, and the CUDA
    context and modules), with exact peaks from the driver's allocation events where CUPTI works
    and a native sampler otherwise. For one process on an otherwise idle GPU this is the device's
    used memory (``total - free``) that fastai.utils.mem traced; unlike that, other processes'
    memory does not show in it. ``source="sampled"`` traces the device's used memory instead,
    other processes included. ``data_bytes().source`` says which source produced the readings.

    fastai.utils.mem's API, all of it: ``start``, ``stop``, ``reset``, ``data``, ``data_set``,
    ``report``, ``report_n_reset``, ``silent`` (assign a bool or call it), ``ctx`` and
    ``on_exit_report`` (assignable), ``used_start``, ``used_peak``, ``delta_used``,
    ``delta_peaked``, ``_get_ctx``, the context manager (reports ``(ctx: exit)`` on leaving
    unless ``on_exit_report`` is false) and ``repr``. Reports go to ``sys.stdout`` as it is when
    they are made. Without a GPU it warns once and measures zeros (fastai.utils.mem asserted).

    Extra keyword arguments: ``device`` (any id ``gpu_mem_get`` takes; default the framework's
    current device), ``source`` ("automatic", "exact", "sampled", "reported") and ``no_cache``
    (empty the frameworks' caches before measuring the endpoints, as fastai.utils.mem does;
    default True) and ``attribute`` (keep the blocks live at the peak with the stacks that
    allocated them, Python frames included: ``peak_snapshot()``; default False).

    Example: 100 MB held inside the block and freed before it ends, then fastai.utils.mem's
    loop with ``report_n_reset``::

        >>> from gpumem.testing import allocate
        >>> with gpumem.GPUMemTrace(ctx="load") as mtrace:
        ...     allocate(100).free()
        △Used Peaked MB:      0    100 (load: exit)
        >>> mtrace.data()
        (0, 100)
        >>> mtrace = gpumem.GPUMemTrace()
        >>> for i in (1, 2):
        ...     allocate(10 * i).free()
        ...     mtrace.report_n_reset(f"i={i}")
        △Used Peaked MB:      0     10 (i=1)
        △Used Peaked MB:      0     20 (i=2)
        >>> mtrace.stop()
    """

    silent = _SilentAttribute()

    def __init__(
        self,
        silent: object = False,
        ctx: object = None,
        on_exit_report: object = True,
        *,
        device: object = None,
        source: str = "automatic",
        no_cache: bool = True,
        attribute: bool = False,
    ):
        _framework.ensure_cache_hook()
        ordinal = _framework.resolve_device(device)
        self.ctx = ctx
        self.on_exit_report = on_exit_report
        self._deltas: Optional[Tuple[int, int]] = None
        # ctx and on_exit_report stay here, assignable; the native trace reports the whole
        # context note as its subctx.
        self._trace = _native.Trace(
            silent=bool(silent),
            ctx=None,
            on_exit_report=False,
            device=_NO_DEVICE if ordinal is None else ordinal,
            source=source,
            no_cache=no_cache,
            attribute=bool(attribute),
        )
        _warn_without_gpu(self._trace.source, device, ordinal)

    def start(self) -> None:
        """(Re)starts tracing: start and peak become the current level."""
        self._trace.start()

    def stop(self) -> None:
        """Freezes the data, for reading later."""
        self._trace.stop()
        self.data_set()

    def reset(self) -> None:
        """Re-baselines start and peak at the current level; keeps running."""
        self._trace.reset()

    def peak_snapshot(self) -> Optional[AttributionSnapshot]:
        """What was live at the peak so far (at the last start/reset's peak, frozen at stop),
        each block with the call stack that allocated it, Python frames included; None unless
        the trace was made with ``attribute=True`` and measures with the exact source."""
        try:
            return _wrap(self._trace.peak_snapshot())
        except (RuntimeError, MemoryError):
            return None

    def data_set(self) -> None:
        """Computes ``delta_used`` and ``delta_peaked`` now (frozen after ``stop``)."""
        used, peaked = self._trace.data()
        self._deltas = (used, peaked)

    def data(self) -> Tuple[int, int]:
        """``(delta_used, delta_peaked)`` in MB: live while running, frozen after ``stop``."""
        self.data_set()
        assert self._deltas is not None
        return self._deltas

    def data_bytes(self) -> TraceBytes:
        """The readings behind ``data`` in bytes, with the peak's source and the device."""
        return TraceBytes(**self._trace.data_bytes())

    @property
    def delta_used(self) -> int:
        """MB used since the start, as of the last ``data``/``data_set``/``stop``."""
        if self._deltas is None:
            self.data_set()
        assert self._deltas is not None
        return self._deltas[0]

    @property
    def delta_peaked(self) -> int:
        """MB peaked above the start and above ``delta_used``, as of the last
        ``data``/``data_set``/``stop``."""
        if self._deltas is None:
            self.data_set()
        assert self._deltas is not None
        return self._deltas[1]

    @property
    def used_start(self) -> int:
        """The traced level at the start (``start``/``reset``), MB."""
        return _mb(self._trace.data_bytes()["start"])

    @property
    def used_peak(self) -> int:
        """The highest traced level since the start, MB."""
        return _mb(self._trace.data_bytes()["peak"])

    def _get_ctx(self, subctx: object = None) -> str:
        """``' (ctx: subctx)'``, ``' (ctx)'``, ``' (subctx)'`` or ``''``, as in reports."""
        note = self._note(subctx)
        return "" if note is None else f" ({note})"

    def _note(self, subctx: object) -> Optional[str]:
        parts = [str(part) for part in (self.ctx, subctx) if part is not None]
        return ": ".join(parts) if parts else None

    def report(self, subctx: object = None) -> None:
        """Prints ``△Used Peaked MB: … (ctx: subctx)`` unless silent."""
        self._trace.report(_utf8(self._note(subctx)))

    def report_n_reset(self, subctx: object = None) -> None:
        """``report(subctx)``, then ``reset()``."""
        self._trace.report_n_reset(_utf8(self._note(subctx)))

    @property
    def is_silent(self) -> bool:
        """Whether ``report`` and ``report_n_reset`` print nothing."""
        return self._trace.is_silent

    @property
    def is_running(self) -> bool:
        """Whether the trace runs (from construction or ``start`` until ``stop``)."""
        return self._trace.is_running

    @property
    def source(self) -> str:
        """Where peaks come from: "exact", "sampled", "reported", or "none" without a GPU."""
        return self._trace.source

    def __enter__(self) -> "GPUMemTrace":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        if not self.on_exit_report:
            return
        if exc[0] is None:
            self.report("exit")
            return
        # The block's own exception is the one that propagates: a report that fails now (a ctx
        # whose str() raises, a closed stdout) is a warning, never a replacement for it.
        try:
            self.report("exit")
        except Exception as failure:  # noqa: BLE001 - any failure of the report alike
            warnings.warn(
                f"gpumem.GPUMemTrace: the exit report failed ({failure!r}) while "
                f"{exc[0].__name__} propagated",
                RuntimeWarning,
                stacklevel=2,
            )

    def __repr__(self) -> str:
        return self._trace.repr()


def gpu_mem_trace(func):
    """Decorator: traces each call of ``func`` and reports ``(qualname: exit)`` when it returns
    or raises, e.g. ``(my_function: exit)``, ``(Class.method: exit)``. Works on functions,
    methods, static and class methods (either decorator order) and coroutine functions.

    Example::

        >>> from gpumem.testing import allocate
        >>> @gpumem.gpu_mem_trace
        ... def load():
        ...     allocate(50).free()
        >>> load()
        △Used Peaked MB:      0     50 (load: exit)
    """
    if isinstance(func, (staticmethod, classmethod)):
        return type(func)(gpu_mem_trace(func.__func__))
    ctx = func.__qualname__
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def traced_coroutine(*args, **kwargs):
            with GPUMemTrace(ctx=ctx, on_exit_report=True):
                return await func(*args, **kwargs)

        return traced_coroutine

    @functools.wraps(func)
    def traced(*args, **kwargs):
        with GPUMemTrace(ctx=ctx, on_exit_report=True):
            return func(*args, **kwargs)

    return traced
