"""KernelBench level 2 #1's spelling: ``nn.Conv2d``, ``torch.relu``, then a learned per-channel bias
added as an ``(C, 1, 1)`` parameter."""

import torch
import torch.nn as nn

BATCH = 128
IN_CHANNELS = 64
OUT_CHANNELS = 128
SIZE = 128
SHAPES = {"small": {"BATCH": 2, "IN_CHANNELS": 5, "OUT_CHANNELS": 6, "SIZE": 9}}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.relu(x)
        return x + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
