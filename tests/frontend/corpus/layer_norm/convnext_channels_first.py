"""ConvNeXt's ``LayerNorm(data_format="channels_first")`` (facebookresearch/ConvNeXt, also in timm
and transformers' ConvNext): normalise over the channel dimension of an NCHW tensor by hand,
``u = x.mean(1, keepdim=True); s = (x - u).pow(2).mean(1, keepdim=True)``, per-channel affine via
``weight[:, None, None]``. The reduction runs over a strided dimension."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 192
HEIGHT = 28
WIDTH = 28
EPS = 1e-6
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 24, "HEIGHT": 5, "WIDTH": 6}}


class Model(nn.Module):
    def __init__(self, normalized_shape: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(normalized_shape))
        self.bias = nn.Parameter(0.1 * torch.randn(normalized_shape))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, EPS]
