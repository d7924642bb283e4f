"""timm's ``LayerNorm2d`` (``timm.layers.norm``): LayerNorm over the channels of an NCHW tensor by
permuting to NHWC, ``F.layer_norm``, and permuting back. Both permutes are views: a kernel can read
and write NCHW directly."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 256
HEIGHT = 32
WIDTH = 32
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 16, "HEIGHT": 4, "WIDTH": 5}}


class Model(nn.LayerNorm):
    def __init__(self, num_channels: int) -> None:
        super().__init__(num_channels, eps=1e-6)
        with torch.no_grad():
            self.weight.copy_(1.0 + 0.1 * torch.randn(num_channels))
            self.bias.copy_(0.1 * torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
