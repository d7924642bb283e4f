"""``nn.MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=3)`` on a [batch, channels, D, H, W]
volume, the module written the way KernelBench level 1 #43 writes it: the window re-reads the input,
so outputs x window passes 2**31 at the default size while no address does (int32 index math)."""

import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 32
DIM = 128
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 3, "DIM": 9}}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.maxpool = nn.MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, DIM, DIM, DIM)]


def get_init_inputs():
    return []
