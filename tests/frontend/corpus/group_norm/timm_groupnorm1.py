"""timm's ``GroupNorm1`` (PoolFormer, ConvNeXt-v2 variants): GroupNorm with a single group, i.e. a
LayerNorm over (C, H, W) of each sample with per-channel affine: ``F.group_norm(x, 1, weight,
bias, eps)``."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 64
HEIGHT = 56
WIDTH = 56
SHAPES = {"small": {"BATCH": 3, "CHANNELS": 8, "HEIGHT": 4, "WIDTH": 4}}


class Model(nn.GroupNorm):
    def __init__(self, num_channels: int) -> None:
        super().__init__(1, num_channels)
        with torch.no_grad():
            self.weight.copy_(1.0 + 0.1 * torch.randn(num_channels))
            self.bias.copy_(0.1 * torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
