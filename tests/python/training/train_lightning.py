import logging

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from gpumem.lightning import PeakMemCallback
from spiky import Spiky, x, y

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)  # Lightning's start-up notes


class Regression(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = Spiky()

    def training_step(self, batch, index):
        return torch.nn.functional.mse_loss(self.model(batch[0]), batch[1])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


trainer = pl.Trainer(max_epochs=2, log_every_n_steps=2, callbacks=[PeakMemCallback()],
                     logger=pl.loggers.CSVLogger("logs"), enable_progress_bar=False,
                     enable_model_summary=False, enable_checkpointing=False)
trainer.fit(Regression(), DataLoader(TensorDataset(x, y), batch_size=16))
for name, value in sorted(trainer.logged_metrics.items()):  # the last of each, as logged
    print(f"{name:24} {float(value):7.1f}")
