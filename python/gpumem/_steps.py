"""StepPeaks: each training step's and each epoch's exact GPU memory peak, per device, from
counters of its own; the piece the framework callbacks (gpumem.fastai, gpumem.lightning,
gpumem.transformers) share.

Its counters are gpumem's overlapping ones (gpumem/peak.hpp): each re-baselines only itself, so
PyTorch's peak statistics (``torch.cuda.max_memory_allocated``), a GPUMemTrace, the pytest plugin
or another StepPeaks read on, untouched. It never imports or calls torch.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import _diagnosis, _framework, _native

MIB = 2**20

_COVERS: Dict[int, Tuple[str, ...]] = {}


def _covers(bits: int) -> Tuple[str, ...]:
    names = _COVERS.get(bits)
    if names is None:
        names = _COVERS[bits] = tuple(_native.coverage_names(bits))
    return names


class StepPeak(NamedTuple):
    """One window's figures on one device, in bytes: a training step (``window == "step"``) or
    an epoch (``"epoch"``).

    ``peak`` is the highest level the window reached, ``rise`` how far that was above its
    ``start``, ``end`` the level when it closed (what stays held between steps: weights,
    optimizer state, the framework's cache). The levels are ``quantity``: with ``mode ==
    "exact"`` the **process footprint**, what the driver held for this process on the device,
    the CUDA context included (``covers`` names the parts); with ``"sampled"`` (no CUPTI) the
    device's used memory read by a sampler, every process's, whose peak a short spike may have
    passed between two samples; ``"none"`` where nothing can measure (zeros).
    ``device_used_peak`` is the device's used memory (NVML's total - free, every process and the
    driver's reservation) at the window's highest, whatever the mode.

    Example::

        >>> from gpumem.testing import allocate
        >>> steps = gpumem.StepPeaks()
        >>> steps.start_step()
        >>> allocate(100).free()
        >>> [record] = steps.end_step()
        >>> record.window, record.mode, record.rise // 2**20
        ('step', 'exact', 100)
    """

    window: str
    number: int
    epoch: int
    device: int
    mode: str
    quantity: str
    start: int
    peak: int
    rise: int
    end: int
    device_used_peak: int
    covers: Tuple[str, ...]


_warned_no_gpu = False


def _warn_once_without_gpu(modes: List[str]) -> None:
    global _warned_no_gpu
    if "none" in modes and not _warned_no_gpu:
        _warned_no_gpu = True
        warnings.warn(
            f"gpumem.StepPeaks: nothing can measure GPU memory here "
            f"({_diagnosis.no_gpu_reason()}); its records read zeros with mode 'none'",
            RuntimeWarning,
            stacklevel=4,
        )


def _ordinals(devices: Any) -> List[int]:
    if devices is None:
        return [_framework.current_device()]
    if isinstance(devices, str) and devices == "all":
        return list(range(_native.device_count()))
    many = isinstance(devices, (list, tuple, set, frozenset, range))
    ordinals = []
    for device in (sorted(devices, key=str) if isinstance(devices, (set, frozenset))
                   else devices if many else [devices]):
        ordinal = _framework.resolve_device(device)
        if ordinal is None:
            raise ValueError(f"StepPeaks: GPU id {device!r} names no GPU")
        if ordinal not in ordinals:
            ordinals.append(ordinal)
    return ordinals


class StepPeaks:
    """Each training step's and each epoch's exact GPU memory peak, per device.

    Call ``start_step()`` and ``end_step()`` around each step (``start_epoch()`` and
    ``end_epoch()`` around each epoch, optionally): ``end_step()`` returns one ``StepPeak`` per
    device with the step's peak, its rise over the step's start and the footprint at its end,
    each saying how it was measured (``mode``). The epoch's counters run beside the steps' and
    see what happens between steps too (data loading, evaluation, logging).

    ``devices``: ``None`` (the framework's current device, resolved at the first start), any id
    ``gpu_mem_get`` takes, a list of them, or ``"all"`` (every visible GPU). ``source``:
    ``"automatic"`` (exact where CUPTI works, sampled otherwise), ``"exact"`` or ``"sampled"``.

    Every device has a step counter and an epoch counter of its own, gpumem's overlapping ones:
    starting a step or an epoch re-baselines only them, never PyTorch's peak statistics nor any
    other reader's. Nothing is kept per step but the last step's records and the highest step
    since ``take_highest()``, so its memory does not grow with the run. One StepPeaks is used
    from one thread at a time. ``close()`` (or the end of a ``with`` block) releases the counters.

    Example: a 300 MB spike inside the second step, gone before the step ends::

        >>> from gpumem.testing import allocate
        >>> weights = allocate(64)
        >>> with gpumem.StepPeaks() as steps:
        ...     steps.start_epoch()
        ...     for size in (100, 300, 200):
        ...         steps.start_step()
        ...         allocate(size).free()
        ...         [step] = steps.end_step()
        ...         print(step.number, step.mode, step.rise // 2**20, step.end // 2**20)
        ...     [epoch] = steps.end_epoch()
        0 exact 100 64
        1 exact 300 64
        2 exact 200 64
        >>> epoch.rise // 2**20, steps.take_highest()[0].number
        (300, 1)
    """

    def __init__(self, devices: Any = None, *, source: str = "automatic") -> None:
        if source not in ("automatic", "exact", "sampled"):
            raise ValueError(f"StepPeaks: source must be automatic, exact or sampled, "
                             f"not {source!r}")
        self._requested = devices
        self._source = source
        self._devices: List[int] = []
        self._step_counters: List[Any] = []
        self._epoch_counters: List[Any] = []
        self._open = False
        self._in_step = False
        self.steps_done = 0
        self.epoch = 0
        self._epochs_started = 0
        self.last_step: List[StepPeak] = []
        self.last_epoch: List[StepPeak] = []
        self._highest: List[Optional[StepPeak]] = []

    def _ensure_open(self) -> None:
        if self._open:
            return
        devices = _ordinals(self._requested)
        self._step_counters = [_native.PeakCounter(device=d, source=self._source)
                               for d in devices]
        self._epoch_counters = [_native.PeakCounter(device=d, source=self._source)
                                for d in devices]
        # The current device (None) is resolved by the counter: its ordinal, not the sentinel.
        self._devices = [counter.device for counter in self._step_counters]
        self._highest = [None] * len(devices)
        self._open = True
        _warn_once_without_gpu(self.modes)

    @property
    def devices(self) -> List[int]:
        """The CUDA ordinals measured (resolved at the first start)."""
        self._ensure_open()
        return list(self._devices)

    @property
    def modes(self) -> List[str]:
        """Each device's mode, in ``devices`` order: "exact", "sampled" or "none"."""
        self._ensure_open()
        return [counter.source for counter in self._step_counters]

    def start_epoch(self, epoch: Optional[int] = None) -> None:
        """Starts an epoch: its counters re-baseline now. ``epoch`` numbers it (default: the
        previous one plus one, the first 0)."""
        self._ensure_open()
        self.epoch = self._epochs_started if epoch is None else int(epoch)
        self._epochs_started = self.epoch + 1
        for counter in self._epoch_counters:
            counter.reset()

    def end_epoch(self) -> List[StepPeak]:
        """The epoch's records, one per device, from its start (or the first start) to now;
        also kept as ``last_epoch``."""
        self._ensure_open()
        self.last_epoch = [self._record("epoch", self.epoch, device, counter)
                           for device, counter in zip(self._devices, self._epoch_counters)]
        return self.last_epoch

    def start_step(self) -> None:
        """Starts a step: the steps' counters re-baseline now."""
        self._ensure_open()
        for counter in self._step_counters:
            counter.reset()
        self._in_step = True

    def end_step(self) -> List[StepPeak]:
        """The step's records, one per device (``[]`` without a ``start_step`` before it); also
        kept as ``last_step``."""
        if not self._in_step:
            return []
        self._in_step = False
        number = self.steps_done
        self.steps_done += 1
        records = [self._record("step", number, device, counter)
                   for device, counter in zip(self._devices, self._step_counters)]
        highest = self._highest
        for slot, record in enumerate(records):
            best = highest[slot]
            if best is None or record.peak > best.peak:
                highest[slot] = record
        self.last_step = records
        return records

    def take_highest(self) -> List[StepPeak]:
        """Per device, the step that peaked highest since the last call (or the start), and
        starts over: what a logger that writes every N steps shows for those N. ``[]`` when no
        step ended since."""
        taken = [record for record in self._highest if record is not None]
        self._highest = [None] * len(self._devices)
        return taken

    def _record(self, window: str, number: int, device: int, counter: Any) -> StepPeak:
        mode, quantity, covers, start, end, peak, _, _, device_used_peak = counter.read()
        return StepPeak(window, number, self.epoch, device, mode, quantity, start, peak,
                        peak - start, end, device_used_peak, _covers(covers))

    def close(self) -> None:
        """Releases the counters (and with the last of the process's, its CUPTI subscription);
        the records stay readable."""
        self._step_counters = []
        self._epoch_counters = []
        self._open = False
        self._in_step = False

    def __enter__(self) -> "StepPeaks":
        self._ensure_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self._open:
            return "StepPeaks(not started)"
        shown = ", ".join(f"GPU {d}: {m}" for d, m in zip(self._devices, self.modes))
        return f"StepPeaks({shown}; {self.steps_done} steps)"
