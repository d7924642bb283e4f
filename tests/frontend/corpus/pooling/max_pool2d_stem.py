"""The ResNet stem's ``nn.MaxPool2d(kernel_size=3, stride=2, padding=1)`` (torchvision / timm
``ResNet.maxpool``): padded, strided windows."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 64
HEIGHT = 112
WIDTH = 112
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 3, "HEIGHT": 9, "WIDTH": 8}}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
