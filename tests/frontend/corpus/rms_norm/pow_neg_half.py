"""RMSNorm with the inverse square root written as a power, ``x * (x.pow(2).mean(-1, keepdim=True)
+ eps) ** -0.5``, as several Mamba / RWKV-style codebases write it; gain named ``scale``."""

import torch
import torch.nn as nn

TOKENS = 8192
HIDDEN = 2560
EPS = 1e-5
SHAPES = {"small": {"TOKENS": 6, "HIDDEN": 160}}


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * (x.pow(2).mean(-1, keepdim=True) + self.eps) ** -0.5 * self.scale


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, EPS]
