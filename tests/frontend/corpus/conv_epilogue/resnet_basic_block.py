"""torchvision's ``BasicBlock`` at inference: conv-BN-ReLU, conv-BN, the identity added back, ReLU
(both convolutions bias-free, 3x3, ``padding=1``; batch norms on running statistics)."""

import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
SIZE = 56
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 4, "SIZE": 6}}


class Model(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.running_mean.copy_(0.1 * torch.randn(channels))
                bn.running_var.copy_(1.0 + 0.1 * torch.rand(channels))
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS]
