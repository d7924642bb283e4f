"""The Annotated Transformer's ``Embeddings.forward``: ``self.lut(x) * math.sqrt(self.d_model)``,
written here with ``F.embedding(x, self.weight)`` on a raw weight parameter."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ = 256
VOCAB = 37000
D_MODEL = 512
SHAPES = {"small": {"BATCH": 3, "SEQ": 4, "VOCAB": 30, "D_MODEL": 16}}


class Model(nn.Module):
    def __init__(self, vocab: int, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.weight = nn.Parameter(torch.randn(vocab, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.embedding(x, self.weight) * math.sqrt(self.d_model)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, D_MODEL]
