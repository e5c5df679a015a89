"""fastai (v2): ``PeakMemMetric``, the successor of fastai v1's ``PeakMemMetric`` (fastai.callbacks.mem).

It adds each epoch's GPU memory to the training table as v1's did (``gpu used``: what the epoch
left held, ``gpu peak``: how far it peaked above that, MB, fastai.utils.mem's arithmetic), plus
``gpu max``: the epoch's highest footprint, the CUDA context included, the figure a GPU must
have. The peaks are exact (gpumem's own counters, never PyTorch's statistics, which it neither
reads nor resets) where v1's came from a polling thread. Every step's records are kept per epoch
as the highest step (``highest_steps``) and passed to ``on_step`` if given.

Importing this module imports fastai, and nothing of Lightning or Transformers::

    from gpumem.fastai import PeakMemMetric
    learn = Learner(dls, model, loss_func=..., cbs=PeakMemMetric())
    learn.fit(3)
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from fastai.callback.core import Callback  # type: ignore[import-not-found,unused-ignore]
from fastai.learner import Recorder  # type: ignore[import-not-found,unused-ignore]

from . import _native
from ._memory import b2mb
from ._steps import StepPeak, StepPeaks

__all__ = ["PeakMemMetric"]


def _training_device(learn: Any) -> Optional[Any]:
    """The CUDA device the learner trains on, or None (its model is on the CPU, or has no
    parameters): then StepPeaks measures the current device."""
    try:
        device = learn.dls.device
    except AttributeError:
        device = None
    if device is None:
        try:
            device = next(learn.model.parameters()).device
        except (AttributeError, StopIteration, TypeError):
            return None
    return device if getattr(device, "type", None) == "cuda" else None


class PeakMemMetric(Callback):  # type: ignore[misc,unused-ignore]
    """Each epoch's GPU memory as columns of fastai's training table, from exact per-step
    peaks: ``gpu used`` (MB the epoch left held above its start), ``gpu peak`` (MB it peaked
    above that) and ``gpu max`` (MB of its highest footprint, context included).

    ``devices``: as ``gpumem.StepPeaks`` takes them; default the device the learner trains on
    (its current device when the model is on the CPU). With several devices each has its three
    columns (``gpu0 used``, …). Where the peaks are not exact (no CUPTI: sampled), the peak
    columns say so (``gpu peak (sampled)``). ``on_step``: called after every training step with
    its records (a list of ``gpumem.StepPeak``, one per device).

    After ``fit``: ``epochs`` (per epoch, the epoch's records), ``highest_steps`` (per epoch, each
    device's highest step), ``steps`` (the ``gpumem.StepPeaks``, whose ``last_step`` is the last
    step's records).
    """

    order = Recorder.order + 1  # after the Recorder names its columns, before the table shows them
    run_valid = False  # steps are training batches; the epoch covers validation too

    def __init__(self, devices: Any = None, *, source: str = "automatic",
                 on_step: Optional[Callable[[List[StepPeak]], Any]] = None) -> None:
        super().__init__()
        self.requested_devices = devices
        self.source = source
        self.on_step = on_step
        self.steps: Optional[StepPeaks] = None
        self.fitting = False
        self.epochs: List[List[StepPeak]] = []
        self.highest_steps: List[List[StepPeak]] = []

    def before_fit(self) -> None:
        devices = self.requested_devices
        if devices is None:
            devices = _training_device(self.learn)
        self.steps = StepPeaks(devices, source=self.source)
        self.fitting = True
        self.epochs, self.highest_steps = [], []
        names = []
        for device, mode in zip(self.steps.devices, self.steps.modes):
            gpu = "gpu" if len(self.steps.devices) == 1 else f"gpu{device}"
            sampled = "" if mode == "exact" else f" ({mode})"
            names += [f"{gpu} used", f"{gpu} peak{sampled}", f"{gpu} max{sampled}"]
        recorder = getattr(self.learn, "recorder", None)
        if recorder is not None:
            columns = list(recorder.metric_names)
            at = columns.index("time") if "time" in columns else len(columns)
            recorder.metric_names = type(recorder.metric_names)(columns[:at] + names + columns[at:])

    def before_epoch(self) -> None:
        if self.fitting and self.steps is not None:
            self.steps.start_epoch(self.learn.epoch)

    def before_batch(self) -> None:
        if self.fitting and self.steps is not None:
            self.steps.start_step()

    def after_batch(self) -> None:
        if not self.fitting or self.steps is None:
            return
        records = self.steps.end_step()
        if records and self.on_step is not None:
            self.on_step(records)

    def after_validate(self) -> None:
        # The Recorder (order 50) has added the validation metrics; the time follows at
        # after_epoch. The epoch is measured up to here: training and validation. (learn.validate()
        # outside fit() is no epoch of the table.)
        if not self.fitting or self.steps is None:
            return
        records = self.steps.end_epoch()
        self.epochs.append(records)
        self.highest_steps.append(self.steps.take_highest())
        recorder = getattr(self.learn, "recorder", None)
        if recorder is None:
            return
        for record in records:
            start, end, peak = b2mb(record.start), b2mb(record.end), b2mb(record.peak)
            used, peaked = _native.trace_deltas(start, end, peak)
            recorder.log += [used, peaked, peak]

    def after_fit(self) -> None:
        self.fitting = False
        if self.steps is not None:
            self.steps.close()
