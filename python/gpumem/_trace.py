"""GPUMemTrace and gpu_mem_trace: fastai.utils.mem's tracer, fed by exact peaks."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections import namedtuple
from typing import Optional, Tuple

from . import _framework, _native

TraceBytes = namedtuple(
    "TraceBytes", ["source", "device", "start", "end", "peak", "delta_used", "delta_peaked"]
)
TraceBytes.__doc__ = (
    "A trace's readings in bytes: where the peak came from (exact, sampled, reported or none), "
    "the CUDA ordinal, used bytes at start, at the end (now, or at stop) and at the peak, and "
    "the seed's two deltas."
)

_warned_no_gpu = False


def _warn_once_without_gpu(source: str) -> None:
    global _warned_no_gpu
    if source == "none" and not _warned_no_gpu:
        _warned_no_gpu = True
        reason = _native.last_diagnostic() or "no GPU"
        warnings.warn(
            f"gpumem.GPUMemTrace: nothing can measure GPU memory here ({reason}); "
            "traces report zeros",
            RuntimeWarning,
            stacklevel=3,
        )


class GPUMemTrace:
    """Traces used and peak GPU memory from construction, exactly (CUPTI) where possible.

    The seed's API: ``start``, ``stop``, ``reset``, ``data``, ``report``, ``report_n_reset``,
    ``silent``, the context manager (reports ``(ctx: exit)`` on leaving unless
    ``on_exit_report=False``) and ``repr``. Reports go to ``sys.stdout`` as it is when they are
    made. Without a GPU it warns once and measures zeros (the seed asserted).

    Extra keyword arguments: ``device`` (CUDA ordinal; default the framework's current device),
    ``source`` ("automatic", "exact", "sampled", "reported") and ``no_cache`` (empty the
    frameworks' caches before measuring the endpoints, as the seed does; default True).
    """

    def __init__(
        self,
        silent: bool = False,
        ctx: Optional[str] = None,
        on_exit_report: bool = True,
        *,
        device: Optional[int] = None,
        source: str = "automatic",
        no_cache: bool = True,
    ):
        _framework.ensure_cache_hook()
        self._trace = _native.Trace(
            silent=bool(silent),
            ctx=ctx,
            on_exit_report=bool(on_exit_report),
            device=_framework.resolve_device(device),
            source=source,
            no_cache=no_cache,
        )
        _warn_once_without_gpu(self._trace.source)

    def start(self) -> None:
        """(Re)starts tracing: start and peak become the current level."""
        self._trace.start()

    def stop(self) -> None:
        """Freezes the data, for reading later."""
        self._trace.stop()

    def reset(self) -> None:
        """Re-baselines start and peak at the current level; keeps running."""
        self._trace.reset()

    def data(self) -> Tuple[int, int]:
        """``(delta_used, delta_peaked)`` in MB: live while running, frozen after ``stop``."""
        used, peaked = self._trace.data()
        return used, peaked

    def data_bytes(self) -> TraceBytes:
        """The readings behind ``data`` in bytes, with the peak's source and the device."""
        return TraceBytes(**self._trace.data_bytes())

    def report(self, subctx: Optional[str] = None) -> None:
        """Prints ``△Used Peaked MB: … (ctx: subctx)`` unless silent."""
        self._trace.report(subctx)

    def report_n_reset(self, subctx: Optional[str] = None) -> None:
        """``report(subctx)``, then ``reset()``."""
        self._trace.report_n_reset(subctx)

    def silent(self, silent: bool = True) -> None:
        """Silences (or, with False, resumes) ``report`` and ``report_n_reset``. A method that
        works, unlike the seed's, which its own attribute shadowed."""
        self._trace.set_silent(bool(silent))

    @property
    def is_silent(self) -> bool:
        return self._trace.is_silent

    @property
    def is_running(self) -> bool:
        return self._trace.is_running

    @property
    def on_exit_report(self) -> bool:
        return self._trace.on_exit_report

    @property
    def ctx(self) -> Optional[str]:
        return self._trace.ctx

    @property
    def source(self) -> str:
        """Where peaks come from: "exact", "sampled", "reported", or "none" without a GPU."""
        return self._trace.source

    def __enter__(self) -> "GPUMemTrace":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        if self.on_exit_report:
            self.report("exit")

    def __repr__(self) -> str:
        return self._trace.repr()


def gpu_mem_trace(func):
    """Decorator: traces each call of ``func`` and reports ``(qualname: exit)`` when it returns
    or raises, e.g. ``(my_function: exit)``, ``(Class.method: exit)``. Works on functions,
    methods, static and class methods (either decorator order) and coroutine functions."""
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
