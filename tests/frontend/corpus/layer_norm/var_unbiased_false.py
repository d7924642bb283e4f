"""LayerNorm by hand with ``x.var(-1, keepdim=True, unbiased=False)`` (population variance) and a
division by ``sqrt(var + eps)``, as tutorials and many from-scratch transformers write it."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 512
HIDDEN = 1024
EPS = 1e-5
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "HIDDEN": 80}}


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.beta = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.gamma * (x - mean) / torch.sqrt(var + self.eps) + self.beta


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN) * 3.0 + 1.0]


def get_init_inputs():
    return [HIDDEN, EPS]
