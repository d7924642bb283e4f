"""PoolFormer's token mixer (timm ``poolformer.Pooling``): ``self.pool(x) - x`` with ``nn.AvgPool2d(
pool_size, stride=1, padding=pool_size // 2, count_include_pad=False)``: padded windows whose
divisor excludes the padding, and a pointwise op after."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 64
HEIGHT = 56
WIDTH = 56
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 3, "HEIGHT": 5, "WIDTH": 6}}


class Model(nn.Module):
    def __init__(self, pool_size: int = 3) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(pool_size, stride=1, padding=pool_size // 2, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x) - x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [3]
