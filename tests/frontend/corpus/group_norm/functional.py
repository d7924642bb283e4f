"""GroupNorm through ``F.group_norm`` with per-channel affine, as timm's ``GroupNorm`` wrapper
(``timm.layers.norm``) and diffusers' UNet resnet blocks call it (32 groups)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
CHANNELS = 320
HEIGHT = 64
WIDTH = 64
GROUPS = 32
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 16, "HEIGHT": 4, "WIDTH": 4, "GROUPS": 4}}


class Model(nn.Module):
    def __init__(self, num_channels: int, num_groups: int) -> None:
        super().__init__()
        self.num_groups = num_groups
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(num_channels))
        self.bias = nn.Parameter(0.1 * torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.group_norm(x, self.num_groups, self.weight, self.bias, 1e-5)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, GROUPS]
