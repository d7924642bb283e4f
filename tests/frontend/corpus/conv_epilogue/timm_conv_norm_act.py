"""timm's ``ConvNormAct`` as inference runs it: a bias-free ``nn.Conv2d`` with ``padding="same"``,
``nn.BatchNorm2d`` on its running statistics (the module is put in eval mode), then SiLU."""

import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 32
OUT_CHANNELS = 64
SIZE = 56
SHAPES = {"small": {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 8, "SIZE": 7}}


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding="same", bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.act = nn.SiLU(inplace=True)
        with torch.no_grad():
            self.bn.running_mean.copy_(0.1 * torch.randn(out_channels))
            self.bn.running_var.copy_(1.0 + 0.1 * torch.rand(out_channels))
            self.bn.weight.copy_(1.0 + 0.1 * torch.randn(out_channels))
            self.bn.bias.copy_(0.1 * torch.randn(out_channels))
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
