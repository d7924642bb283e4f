"""GroupNorm by hand: ``x.view(N, G, -1)``, ``mean`` and ``var(unbiased=False)`` over the group,
normalise, ``view`` back to NCHW and apply the per-channel affine, as from-scratch implementations
(and the GroupNorm paper's own TensorFlow listing, ported) write it."""

import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 256
HEIGHT = 28
WIDTH = 28
GROUPS = 32
EPS = 1e-5
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 12, "HEIGHT": 4, "WIDTH": 3, "GROUPS": 3}}


class Model(nn.Module):
    def __init__(self, channels: int, groups: int, eps: float) -> None:
        super().__init__()
        self.groups, self.eps = groups, eps
        self.gamma = nn.Parameter(1.0 + 0.1 * torch.randn(1, channels, 1, 1))
        self.beta = nn.Parameter(0.1 * torch.randn(1, channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        x = x.view(n, self.groups, -1)
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        x = (x - mean) / (var + self.eps).sqrt()
        x = x.view(n, c, h, w)
        return x * self.gamma + self.beta


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, GROUPS, EPS]
