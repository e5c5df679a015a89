from torch.nn import MSELoss
from torch.utils.data import TensorDataset
from fastai.data.core import DataLoaders
from fastai.learner import Learner

from gpumem.fastai import PeakMemMetric
from spiky import Spiky, x, y

data = DataLoaders.from_dsets(TensorDataset(x, y), TensorDataset(x[:32], y[:32]), bs=16,
                              num_workers=0)
learn = Learner(data, Spiky(), loss_func=MSELoss(), cbs=PeakMemMetric())
with learn.no_bar():  # the rows as plain lists here: a notebook or a terminal shows the table
    learn.fit(2, 0.01)
print(learn.recorder.metric_names)
for highest in learn.peak_mem_metric.highest_steps:
    print(highest)
