"""Cross-entropy as ``F.nll_loss(F.log_softmax(logits, dim=-1), target)``, the two-step form of
older training loops (the PyTorch MNIST example: ``log_softmax`` in the model, ``nll_loss`` in the
loop)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
CLASSES = 1000
SHAPES = {"small": {"BATCH": 8, "CLASSES": 50}}


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.nll_loss(F.log_softmax(logits, dim=-1), target)


def get_inputs():
    return [torch.randn(BATCH, CLASSES) * 2.0, torch.randint(0, CLASSES, (BATCH,))]


def get_init_inputs():
    return []
