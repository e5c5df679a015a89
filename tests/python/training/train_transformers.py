import torch
from transformers import Trainer, TrainingArguments

from gpumem.transformers import PeakMemCallback, add_first
from spiky import Spiky, x, y


class Regression(Spiky):
    def forward(self, x, labels):
        return {"loss": torch.nn.functional.mse_loss(super().forward(x), labels)}


arguments = TrainingArguments("out", per_device_train_batch_size=16, num_train_epochs=2,
                              logging_steps=2, report_to=[], save_strategy="no",
                              disable_tqdm=True, use_cpu=True)
trainer = Trainer(model=Regression(), args=arguments,
                  train_dataset=[{"x": a, "labels": b} for a, b in zip(x, y)])
add_first(trainer, PeakMemCallback())
trainer.train()
