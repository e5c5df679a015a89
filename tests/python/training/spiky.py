# docs/python.md's training-loop examples: the model they train (run by scripts/docs_examples.py).
#
# A linear model on the CPU stands in for a network on a GPU: its weights hold 64 MB of device
# memory all along, and each forward holds 300 MB of activations that it frees before it
# returns, a spike that no reading between steps sees. gpumem.testing.allocate stands in for
# PyTorch's allocator (the docs' GPU is simulated; torch is Debian's CPU build).
import sys

import torch

from gpumem.testing import allocate

if "pytorch_lightning" in sys.modules:
    # Debian's torch 1.13 cannot import torch.distributed._shard under Python 3.11, which a
    # LightningModule imports to register ShardedTensor hooks (torch 2.1 and later: never).
    import pytorch_lightning

    pytorch_lightning.LightningModule._register_sharded_tensor_state_dict_hooks_if_available = (
        lambda self: None)


class Spiky(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)
        self.weights = allocate(64)

    def forward(self, x):
        with allocate(300):  # the activations
            return self.linear(x)


torch.manual_seed(0)
x = torch.randn(64, 4)
y = x.sum(1, keepdim=True)
