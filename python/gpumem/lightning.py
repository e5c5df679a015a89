"""PyTorch Lightning: ``PeakMemCallback`` logs each step's and each epoch's exact GPU memory peak
through ``self.log``, so every logger of the trainer gets it, per rank.

Importing this module imports Lightning (``lightning.pytorch``, or the standalone
``pytorch_lightning``; the one already imported first), and nothing of fastai or Transformers::

    from gpumem.lightning import PeakMemCallback
    trainer = Trainer(callbacks=[PeakMemCallback()])
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

from ._steps import MIB, StepPeak, StepPeaks


def _lightning() -> Any:
    """The Lightning the program uses: the one imported already, else ``lightning.pytorch``,
    else ``pytorch_lightning``. A Trainer takes only its own package's callbacks."""
    if "pytorch_lightning" in sys.modules and "lightning.pytorch" not in sys.modules:
        import pytorch_lightning  # type: ignore[import-not-found,unused-ignore]

        return pytorch_lightning
    try:
        import lightning.pytorch  # type: ignore[import-not-found,unused-ignore]

        return lightning.pytorch
    except ImportError:
        import pytorch_lightning  # type: ignore[import-not-found,unused-ignore]

        return pytorch_lightning


_pl = _lightning()

__all__ = ["PeakMemCallback"]


def _training_device(pl_module: Any) -> Optional[Any]:
    device = getattr(pl_module, "device", None)
    return device if getattr(device, "type", None) == "cuda" else None


class PeakMemCallback(_pl.Callback):  # type: ignore[misc,name-defined,unused-ignore]
    """Logs exact GPU memory peaks, per step and per epoch, with ``pl_module.log``.

    Each step the trainer writes its logs (every ``log_every_n_steps``), it logs, in MiB, the
    highest step since the last write: ``gpumem/step_peak_mib`` (its peak footprint, the CUDA
    context included), ``gpumem/step_rise_mib`` (how far it rose over the step's start),
    ``gpumem/footprint_mib`` (held when that step ended) and ``gpumem/exact`` (1 where the peak
    is exact, 0 where it was sampled without CUPTI and may have missed a spike). Each epoch (its
    validation included) it logs ``gpumem/epoch_peak_mib`` and ``gpumem/epoch_rise_mib``.

    Each rank measures its own process on its own device. With more than one rank the figures
    are gathered (``all_gather``) and logged as ``gpumem/rank{N}/…`` for every rank, so the
    trainer's logger, which writes from rank 0, has them all. With several ``devices`` each
    device's names carry ``cuda{N}/``. PyTorch's peak statistics are never read nor reset.

    ``devices``: as ``gpumem.StepPeaks`` takes them; default the module's device (the current
    device when the module is on the CPU). ``prog_bar``: also show the step figures in the
    progress bar. After fitting, ``steps`` (the ``gpumem.StepPeaks``) holds the last step's and
    epoch's records, and ``epochs`` every epoch's.
    """

    def __init__(self, devices: Any = None, *, source: str = "automatic",
                 prog_bar: bool = False) -> None:
        super().__init__()
        self.requested_devices = devices
        self.source = source
        self.prog_bar = prog_bar
        self.steps: Optional[StepPeaks] = None
        self.epochs: List[List[StepPeak]] = []

    # Lightning's hooks --------------------------------------------------------------------------

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        devices = self.requested_devices
        if devices is None:
            devices = _training_device(pl_module)
        self.steps = StepPeaks(devices, source=self.source)
        self.epochs = []

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        if self.steps is not None:
            self.steps.start_epoch(trainer.current_epoch)

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any,
                             batch_idx: int) -> None:
        if self.steps is not None:
            self.steps.start_step()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self.steps is None or not self.steps.end_step():
            return
        if not _writes_logs_now(trainer):
            return
        figures: Dict[str, float] = {}
        for record in self.steps.take_highest():
            name = self._name(record)
            figures[f"{name}step_peak_mib"] = record.peak / MIB
            figures[f"{name}step_rise_mib"] = record.rise / MIB
            figures[f"{name}footprint_mib"] = record.end / MIB
            figures[f"{name}exact"] = 1.0 if record.mode == "exact" else 0.0
        self._log(trainer, pl_module, figures, on_step=True)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self.steps is None:
            return
        records = self.steps.end_epoch()
        self.epochs.append(records)
        figures: Dict[str, float] = {}
        for record in records:
            name = self._name(record)
            figures[f"{name}epoch_peak_mib"] = record.peak / MIB
            figures[f"{name}epoch_rise_mib"] = record.rise / MIB
        self._log(trainer, pl_module, figures, on_step=False)

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        if self.steps is not None:
            self.steps.close()

    # ---------------------------------------------------------------------------------------------

    def _name(self, record: StepPeak) -> str:
        assert self.steps is not None
        return "gpumem/" if len(self.steps.devices) == 1 else f"gpumem/cuda{record.device}/"

    def _log(self, trainer: Any, pl_module: Any, figures: Dict[str, float], on_step: bool) -> None:
        world = int(getattr(trainer, "world_size", 1) or 1)
        if world > 1:
            figures = _gathered(pl_module, figures, world)
        for name, value in figures.items():
            pl_module.log(name, value, on_step=on_step, on_epoch=not on_step, logger=True,
                          prog_bar=self.prog_bar and on_step, batch_size=1, sync_dist=False)


def _writes_logs_now(trainer: Any) -> bool:
    """Whether the trainer writes its step logs after this step (every ``log_every_n_steps``),
    as its logger connector decides; every step where that cannot be told."""
    try:
        return bool(trainer._logger_connector.should_update_logs)
    except Exception:  # noqa: BLE001 - another Lightning's internals: log every step
        return True


def _gathered(pl_module: Any, figures: Dict[str, float], world: int) -> Dict[str, float]:
    """Every rank's figures, named per rank (``gpumem/rank{N}/…``): gathered from all ranks, so
    that each rank logs the same names and rank 0's logger writes every rank's."""
    # Lightning's own dependency, imported already.
    import torch  # type: ignore[import-not-found,unused-ignore]

    names = list(figures)
    mine = torch.tensor([figures[name] for name in names], dtype=torch.float64,
                        device=pl_module.device)
    every = pl_module.all_gather(mine).reshape(world, len(names)).tolist()
    gathered: Dict[str, float] = {}
    for rank, values in enumerate(every):
        for name, value in zip(names, values):
            gathered[name.replace("gpumem/", f"gpumem/rank{rank}/", 1)] = float(value)
    return gathered
