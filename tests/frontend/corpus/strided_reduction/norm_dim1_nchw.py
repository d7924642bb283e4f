"""L2 norm over the channel dimension of an NCHW tensor, ``x.norm(p=2, dim=1, keepdim=True)``
(SSD's ``L2Norm`` and feature-matching losses): a reduction over a strided dimension."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 512
HEIGHT = 38
WIDTH = 38
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 16, "HEIGHT": 3, "WIDTH": 5}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.norm(p=2, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
