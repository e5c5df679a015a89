"""Hugging Face Transformers: ``PeakMemCallback``, a ``TrainerCallback`` that adds each logging
interval's exact GPU memory peak to the logs of ``on_log``.

Importing this module imports ``transformers`` (its ``TrainerCallback``), and nothing of fastai
or Lightning::

    from gpumem.transformers import PeakMemCallback, add_first
    trainer = Trainer(model=model, args=args, train_dataset=data)
    add_first(trainer, PeakMemCallback())   # ahead of the Trainer's printer and reporters
    trainer.train()
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from transformers import TrainerCallback  # type: ignore[import-not-found,unused-ignore]

from ._steps import MIB, StepPeak, StepPeaks

__all__ = ["PeakMemCallback", "add_first"]


class PeakMemCallback(TrainerCallback):  # type: ignore[misc,unused-ignore]
    """Adds exact GPU memory figures, in MiB, to the logs of every ``on_log`` that follows a
    training step: the highest step since the last log, ``gpu_step_peak_mib`` (its peak
    footprint, the CUDA context included), ``gpu_step_rise_mib`` (how far it rose over the
    step's start) and ``gpu_footprint_mib`` (held when it ended), with ``gpu_exact`` (1 where the
    peak is exact, 0 where it was sampled without CUPTI and may have missed a spike); and, on
    the first log after an epoch ended, ``gpu_epoch_peak_mib`` and ``gpu_epoch_rise_mib``.

    A step is the Trainer's: one optimizer step, all its gradient-accumulation micro-batches
    included. Each process (rank) measures its own; the Trainer's reporters write the main
    process's. The figures go into ``logs`` (for the callbacks that run after this one) and into
    the entry of ``state.log_history`` made from them. The Trainer runs the callbacks given to
    it after its printer and its ``report_to`` integrations: ``add_first`` puts this one ahead,
    so that they show the figures too. PyTorch's peak statistics are never read nor reset.

    ``devices``: as ``gpumem.StepPeaks`` takes them; default ``args.device`` (the current device
    when training on the CPU). After training, ``steps`` (the ``gpumem.StepPeaks``) holds the
    last step's and epoch's records, and ``epochs`` every epoch's.
    """

    def __init__(self, devices: Any = None, *, source: str = "automatic") -> None:
        self.requested_devices = devices
        self.source = source
        self.steps: Optional[StepPeaks] = None
        self.epochs: List[List[StepPeak]] = []
        self._epoch_unlogged: List[StepPeak] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        devices = self.requested_devices
        if devices is None:
            device = getattr(args, "device", None)
            devices = device if getattr(device, "type", None) == "cuda" else None
        self.steps = StepPeaks(devices, source=self.source)
        self.epochs, self._epoch_unlogged = [], []

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.steps is not None:
            self.steps.start_epoch(len(self.epochs))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.steps is not None:
            self.steps.start_step()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.steps is not None:
            self.steps.end_step()

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.steps is not None:
            self._epoch_unlogged = self.steps.end_epoch()
            self.epochs.append(self._epoch_unlogged)

    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
        if self.steps is None or logs is None:
            return
        history = state.log_history[-1] if state.log_history else None
        made_from_logs = history is not None and all(
            history.get(key) is value for key, value in logs.items())
        figures: Dict[str, float] = {}
        for record in self.steps.take_highest():
            name = self._name(record)
            figures[f"{name}_step_peak_mib"] = record.peak / MIB
            figures[f"{name}_step_rise_mib"] = record.rise / MIB
            figures[f"{name}_footprint_mib"] = record.end / MIB
            figures[f"{name}_exact"] = 1 if record.mode == "exact" else 0
        for record in self._epoch_unlogged:
            name = self._name(record)
            figures[f"{name}_epoch_peak_mib"] = record.peak / MIB
            figures[f"{name}_epoch_rise_mib"] = record.rise / MIB
        self._epoch_unlogged = []
        logs.update(figures)
        if made_from_logs and history is not None:
            history.update(figures)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.steps is not None:
            self.steps.close()

    def _name(self, record: StepPeak) -> str:
        assert self.steps is not None
        return "gpu" if len(self.steps.devices) == 1 else f"gpu{record.device}"


def add_first(trainer: Any, callback: Optional[PeakMemCallback] = None) -> PeakMemCallback:
    """Puts ``callback`` (a new ``PeakMemCallback`` by default) first among the trainer's
    callbacks, so that its printer and its ``report_to`` integrations log the figures it adds;
    returns it."""
    callback = PeakMemCallback() if callback is None else callback
    handler = trainer.callback_handler
    handler.callbacks = [cb for cb in handler.callbacks if cb is not callback]
    handler.callbacks.insert(0, callback)
    return callback
