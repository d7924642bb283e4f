"""A functional convolution over a sequence, as audio and state-space models write it (Whisper's
encoder stem, Mamba's short causal conv without the slice): ``F.conv1d`` on a weight and bias the
module holds as parameters, then ``F.gelu``."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
CHANNELS = 80
HIDDEN = 384
LENGTH = 3000
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 6, "HIDDEN": 10, "LENGTH": 17}}


class Model(nn.Module):
    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden, channels, 3) / (3 * channels) ** 0.5)
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return F.gelu(F.conv1d(features, self.weight, self.bias, padding=1))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, HIDDEN]
