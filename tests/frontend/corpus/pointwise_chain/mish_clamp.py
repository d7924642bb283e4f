"""timm's ``mish`` (``x.mul(F.softplus(x).tanh())``) on activations clamped first with
``x.clamp(min=-c, max=c)`` (the fp16 overflow guard T5 and several vision nets apply): a clamp /
softplus / tanh chain."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
WIDTH = 2048
SHAPES = {"small": {"TOKENS": 5, "WIDTH": 48}}


class Model(nn.Module):
    def __init__(self, clamp_value: float) -> None:
        super().__init__()
        self.clamp_value = clamp_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.clamp(min=-self.clamp_value, max=self.clamp_value)
        return x.mul(F.softplus(x).tanh())


def get_inputs():
    return [torch.randn(TOKENS, WIDTH) * 6.0]


def get_init_inputs():
    return [8.0]
