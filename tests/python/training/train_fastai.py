from torch.nn import MSELoss
from torch.utils.data import TensorDataset
from fastai.data.core import DataLoaders
from fastai.learner import Learner

from gpumem.fastai import PeakMemMetric
from spiky import Spiky, x, y

data = DataLoaders.from_dsets(TensorDataset(x, y), TensorDataset(x[:32], y[:32]), bs=16,
                              num_workers=0)
learn = Learner(data, Spiky(), loss_func=MSELoss(), cbs=PeakMemMetric())
learn.fit(2, 0.01)  # each epoch's row (a table, with fastai.callback.progress imported)
print(learn.recorder.metric_names)
for [step] in learn.peak_mem_metric.highest_steps:  # each epoch's highest step (one device)
    print(f"epoch {step.epoch}: step {step.number} peaked at {step.peak // 2**20} MiB, "
          f"{step.rise // 2**20} MiB over its start ({step.mode})")
