"""The training-loop callbacks (gpumem.fastai, gpumem.lightning, gpumem.transformers), each with
its real framework training a small model on the CPU (Debian's python3-torch) while the model's
forward holds simulated GPU memory. Every figure a callback logs is asserted to the MiB against
what the simulated device held while the spike was live, and the spikes are ones a
between-steps ``torch.cuda.memory_allocated()`` reading cannot see.

Each framework is installed by ``scripts/setup.sh --tests`` into ``<build>/frameworks/<name>``
(pinned releases that take torch 1.13) and each scenario puts only its own on the path: a
callback module imports without the other frameworks.
"""

import os

import pytest

from conftest import H200_RESERVED, PYTHONPATH, SIM_DIR

pytest.importorskip("torch")  # python3-torch, installed by scripts/setup.sh --tests

MIB = 2**20
FRAMEWORKS = SIM_DIR.parent / "frameworks"
CONTEXT = 300  # MiB the simulated driver holds for the process's context
WEIGHTS = 64  # MiB held through training, as a model's weights are
TRAIN_SPIKES = [100, 300, 200, 50]  # MiB held inside each training step's forward, then freed
VALID_SPIKE = 500  # MiB held inside each validation forward


def run_with(sim, framework, code, timeout=300):
    folder = FRAMEWORKS / framework
    if not (folder / ".pinned").exists():
        pytest.skip(f"{framework} is not installed in {folder} (scripts/setup.sh --tests)")
    config = dict(sim.config)
    config["devices"] = [dict(d, context_mib=CONTEXT) for d in config["devices"]]
    sim.config = config
    return sim.run(PRELUDE + code, timeout=timeout,
                   PYTHONPATH=os.pathsep.join([PYTHONPATH, str(folder)]))


PRELUDE = f"""
import sys, torch
import gpumem
from gpumem.testing import allocate
torch.manual_seed(0)

# PyTorch's peak statistics: nothing may read or reset them.
touched = []
for name in ("max_memory_allocated", "max_memory_reserved", "reset_peak_memory_stats",
             "reset_max_memory_allocated", "reset_max_memory_cached",
             "reset_accumulated_memory_stats", "memory_stats"):
    def recorded(*args, _name=name, **kwargs):
        touched.append(_name)
        return {{}} if _name == "memory_stats" else 0
    setattr(torch.cuda, name, recorded)

# What a CUDA build's allocator reports as held by tensors: the blocks the model holds now.
live = {{}}
def hold(mib):
    block = allocate(mib)
    live[id(block)] = block.size
    return block
def release(block):
    live.pop(id(block), None)
    block.free()
torch.cuda.memory_allocated = lambda device=None: sum(live.values())

weights = hold({WEIGHTS})   # the weights, on the device through training (they make the context)
TRAIN_SPIKES, VALID_SPIKE = {TRAIN_SPIKES}, {VALID_SPIKE}
truth = []     # per training step: the device's used MiB while its spike was held
between = []   # torch.cuda.memory_allocated() after each step, as a between-steps logger reads it

class Spiky(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)
        self.calls = 0
    def forward(self, x):
        size = TRAIN_SPIKES[self.calls % len(TRAIN_SPIKES)] if self.training else VALID_SPIKE
        spike = hold(size)                      # activations, freed before the step ends
        if self.training:
            self.calls += 1
            truth.append(gpumem.gpu_mem_get(0).used)
        release(spike)
        return self.linear(x)

x = torch.randn(64, 4)
y = x.sum(1, keepdim=True)
"""


def at_rest():
    return (CONTEXT + WEIGHTS) * MIB


def check_truth(result, steps):
    """The device held what the figures say: each step's spike on top of the context and the
    weights, the driver's reservation beside them; between steps only the weights."""
    spikes = (TRAIN_SPIKES * 4)[:steps]
    assert result["truth"] == [H200_RESERVED + CONTEXT + WEIGHTS + s for s in spikes]
    assert result["between"] == [WEIGHTS * MIB] * steps  # the spikes are invisible between steps
    assert result["touched"] == []
    return spikes


def test_fastai_peak_mem_metric_columns_and_steps(sim):
    result = run_with(sim, "fastai", """
from torch.utils.data import TensorDataset
from fastai.data.core import DataLoaders
from fastai.learner import Learner
import fastai.callback.progress, fastprogress.fastprogress
fastprogress.fastprogress.NO_BAR = True   # the table, without the bars' animation
from gpumem.fastai import PeakMemMetric
others = [m for m in ("pytorch_lightning", "lightning", "transformers") if m in sys.modules]

dls = DataLoaders.from_dsets(TensorDataset(x, y), TensorDataset(x[:32], y[:32]), bs=16,
                             device=torch.device("cpu"), num_workers=0)
steps = []
def on_step(records):
    steps.append([r._asdict() for r in records])
    between.append(torch.cuda.memory_allocated())
learn = Learner(dls, Spiky(), loss_func=torch.nn.MSELoss(), cbs=PeakMemMetric(on_step=on_step))
learn.fit(2, 0.01)
callback = learn.peak_mem_metric
emit(others=others, steps=steps, truth=truth, between=between, touched=touched,
     names=list(learn.recorder.metric_names), values=[list(v) for v in learn.recorder.values],
     epochs=[[r._asdict() for r in e] for e in callback.epochs],
     highest=[[r.number for r in h] for h in callback.highest_steps])
""")
    assert result["others"] == []
    spikes = check_truth(result, 8)
    assert len(result["steps"]) == 8
    for index, ([record], spike, held) in enumerate(zip(result["steps"], spikes, result["truth"])):
        assert (record["number"], record["epoch"], record["mode"]) == (index, index // 4, "exact")
        assert record["peak"] == (held - H200_RESERVED) * MIB
        assert record["rise"] == spike * MIB
        assert record["start"] == record["end"] == at_rest()
    # The epochs include validation, whose forward held more than any training step.
    for number, [epoch] in enumerate(result["epochs"]):
        assert (epoch["window"], epoch["number"]) == ("epoch", number)
        assert epoch["peak"] == at_rest() + VALID_SPIKE * MIB
        assert epoch["rise"] == VALID_SPIKE * MIB
    assert result["highest"] == [[1], [5]]
    # fastai v1's columns (used, peaked above it: MB) and the highest footprint, before the time.
    assert result["names"] == ["epoch", "train_loss", "valid_loss", "gpu used", "gpu peak",
                               "gpu max", "time"]
    max_mb = CONTEXT + WEIGHTS + VALID_SPIKE
    assert [row[2:] for row in result["values"]] == [[0, VALID_SPIKE, max_mb]] * 2
    table = [line for line in result.lines if line.strip("█ ")]  # the bars leave a block each
    assert table[0].split() == ["epoch", "train_loss", "valid_loss", "gpu", "used", "gpu", "peak",
                                "gpu", "max", "time"]
    for number, line in enumerate(table[1:3]):
        assert line.split()[0] == str(number) and line.split()[3:6] == ["0", "500", "864"]


def test_lightning_logs_each_logged_steps_peak_and_each_epochs(sim):
    result = run_with(sim, "lightning", """
import pytorch_lightning as pl
from pytorch_lightning.loggers import Logger
from torch.utils.data import DataLoader, TensorDataset
from gpumem.lightning import PeakMemCallback
others = [m for m in ("fastai", "transformers") if m in sys.modules]
# Debian's torch 1.13 cannot import torch.distributed._shard under Python 3.11 (a dataclass
# field with a mutable default), which a LightningModule imports to register ShardedTensor hooks.
pl.LightningModule._register_sharded_tensor_state_dict_hooks_if_available = lambda self: None

class Recording(Logger):
    name, version = "recording", 0
    def __init__(self):
        super().__init__()
        self.rows = []
    def log_hyperparams(self, *args, **kwargs):
        pass
    def log_metrics(self, metrics, step=None):
        self.rows.append([step, {k: v for k, v in metrics.items() if k.startswith("gpumem/")}])

class Module(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = Spiky()
    def training_step(self, batch, index):
        return torch.nn.functional.mse_loss(self.model(batch[0]), batch[1])
    def validation_step(self, batch, index):
        self.log("valid_loss", torch.nn.functional.mse_loss(self.model(batch[0]), batch[1]))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

class Between(pl.Callback):
    def on_train_batch_end(self, *args):
        between.append(torch.cuda.memory_allocated())

logger, callback = Recording(), PeakMemCallback()
trainer = pl.Trainer(accelerator="cpu", devices=1, max_epochs=2, log_every_n_steps=2,
                     logger=logger, callbacks=[callback, Between()], enable_progress_bar=False,
                     enable_model_summary=False, enable_checkpointing=False,
                     num_sanity_val_steps=0)
trainer.fit(Module(), DataLoader(TensorDataset(x, y), batch_size=16),
            DataLoader(TensorDataset(x[:32], y[:32]), batch_size=16))
emit(others=others, rows=[row for row in logger.rows if row[1]], truth=truth, between=between,
     touched=touched, epochs=[[r.rise for r in e] for e in callback.epochs])
""")
    assert result["others"] == []
    check_truth(result, 8)
    mib = lambda n: float(n)  # noqa: E731 - the figures are logged in MiB
    rest = CONTEXT + WEIGHTS
    rows = result["rows"]
    # Every second step (log_every_n_steps=2): the higher of the two steps since the last write.
    step_rows = [row for row in rows if "gpumem/step_peak_mib" in row[1]]
    assert [row[0] for row in step_rows] == [1, 3, 5, 7]
    for [_, figures], spike in zip(step_rows, [300, 200, 300, 200]):
        assert figures == {"gpumem/step_peak_mib": mib(rest + spike),
                           "gpumem/step_rise_mib": mib(spike),
                           "gpumem/footprint_mib": mib(rest), "gpumem/exact": 1.0}
    epoch_rows = [row[1] for row in rows if "gpumem/epoch_peak_mib" in row[1]]
    assert epoch_rows == [{"gpumem/epoch_peak_mib": mib(rest + VALID_SPIKE),
                           "gpumem/epoch_rise_mib": mib(VALID_SPIKE)}] * 2
    assert result["epochs"] == [[VALID_SPIKE * MIB]] * 2


def test_transformers_adds_the_figures_to_on_logs_logs(sim):
    result = run_with(sim, "transformers", """
import tempfile
from transformers import Trainer, TrainerCallback, TrainingArguments
from gpumem.transformers import PeakMemCallback, add_first
others = [m for m in ("fastai", "pytorch_lightning", "lightning") if m in sys.modules]

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Spiky()
    def forward(self, x, labels=None):
        out = self.model(x)
        return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}

class Between(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        between.append(torch.cuda.memory_allocated())

arguments = TrainingArguments(
    output_dir=tempfile.mkdtemp(), per_device_train_batch_size=16, num_train_epochs=2,
    logging_steps=2, report_to=[], save_strategy="no", disable_tqdm=True, use_cpu=True, seed=0)
trainer = Trainer(model=Model(), args=arguments,
                  train_dataset=[{"x": x[i], "labels": y[i]} for i in range(64)],
                  callbacks=[Between()])
callback = add_first(trainer, PeakMemCallback())
trainer.train()
emit(others=others, history=trainer.state.log_history, truth=truth, between=between,
     touched=touched, first=type(trainer.callback_handler.callbacks[0]).__name__)
""")
    assert result["others"] == []
    assert result["first"] == "PeakMemCallback"
    check_truth(result, 8)
    rest = CONTEXT + WEIGHTS
    history = result["history"]
    steps = [entry for entry in history if "gpu_step_peak_mib" in entry]
    assert [entry["step"] for entry in steps] == [2, 4, 6, 8]
    for entry, spike in zip(steps, [300, 200, 300, 200]):
        assert entry["gpu_step_peak_mib"] == rest + spike
        assert entry["gpu_step_rise_mib"] == spike
        assert entry["gpu_footprint_mib"] == rest
        assert entry["gpu_exact"] == 1
    # An epoch's figures ride on the first log after it ended: epoch 1's on the Trainer's last.
    epochs = [entry for entry in history if "gpu_epoch_peak_mib" in entry]
    assert [entry["step"] for entry in epochs] == [6, 8]
    assert "train_runtime" in epochs[1]
    for entry in epochs:
        assert entry["gpu_epoch_peak_mib"] == rest + 300
        assert entry["gpu_epoch_rise_mib"] == 300
    # The Trainer's printer ran after the callback: what it printed has the figures.
    printed = [line for line in result.lines if "'gpu_step_peak_mib'" in line]
    assert len(printed) == 4


def test_lightning_logs_every_ranks_figures_from_rank_zero(sim):
    # Two ranks (DDP over gloo, processes forked by Lightning), each measuring its own process:
    # rank 1's spikes are 1000 MiB larger. The trainer's logger writes from rank 0; it gets both.
    result = run_with(sim, "lightning", """
import pytorch_lightning as pl
from pytorch_lightning.loggers import Logger
from pytorch_lightning.utilities import rank_zero_only
from torch.utils.data import DataLoader, TensorDataset
from gpumem.lightning import PeakMemCallback
pl.LightningModule._register_sharded_tensor_state_dict_hooks_if_available = lambda self: None

class Recording(Logger):
    name, version = "recording", 0
    def log_hyperparams(self, *args, **kwargs):
        pass
    def log_metrics(self, metrics, step=None):
        if rank_zero_only.rank == 0:
            emit(**{f"row{step}_{len(metrics)}": {k: v for k, v in metrics.items()
                                                 if k.startswith("gpumem/")}})

class Module(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = Spiky()
    def setup(self, stage):
        TRAIN_SPIKES[:] = [s + 1000 * self.global_rank for s in TRAIN_SPIKES]
    def training_step(self, batch, index):
        return torch.nn.functional.mse_loss(self.model(batch[0]), batch[1])
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp_fork", max_epochs=1,
                     log_every_n_steps=1, logger=Recording(), callbacks=[PeakMemCallback()],
                     enable_progress_bar=False, enable_model_summary=False,
                     enable_checkpointing=False)
trainer.fit(Module(), DataLoader(TensorDataset(x, y), batch_size=16))
""")
    rows = [figures for key, figures in sorted(result.values.items()) if figures]
    steps = [row for row in rows if "gpumem/rank0/step_peak_mib" in row]
    assert len(steps) == 2  # 32 samples per rank, 16 a batch
    for row, spike in zip(steps, TRAIN_SPIKES):
        for rank in (0, 1):
            mine = {k.split("/", 2)[2]: v for k, v in row.items()
                    if k.startswith(f"gpumem/rank{rank}/")}
            assert mine["step_rise_mib"] == spike + 1000 * rank
            # Each forked rank holds its own context and its spikes, not its parent's weights.
            assert mine["footprint_mib"] == CONTEXT
            assert mine["step_peak_mib"] == CONTEXT + spike + 1000 * rank
            assert mine["exact"] == 1.0
    [epoch] = [row for row in rows if "gpumem/rank0/epoch_peak_mib" in row]
    assert epoch["gpumem/rank0/epoch_rise_mib"] == 300
    assert epoch["gpumem/rank1/epoch_rise_mib"] == 1300
