"""Global average pooling written ``x.mean((2, 3))`` (timm's ``SelectAdaptivePool2d`` fast path,
``flatten=True``): a reduction over the two innermost dims of NCHW."""

import torch
import torch.nn as nn

BATCH = 128
CHANNELS = 2048
HEIGHT = 7
WIDTH = 7
SHAPES = {"small": {"BATCH": 3, "CHANNELS": 10, "HEIGHT": 4, "WIDTH": 5}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean((2, 3), keepdim=False)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
