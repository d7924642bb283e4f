"""timm's ``hard_swish`` (``timm.layers.activations``; MobileNetV3): ``x * F.relu6(x + 3.) / 6.``:
a clamp inside a pointwise chain."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 96
HEIGHT = 56
WIDTH = 56
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 4, "HEIGHT": 3, "WIDTH": 5}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * F.relu6(x + 3.0) / 6.0


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 4.0]


def get_init_inputs():
    return []
