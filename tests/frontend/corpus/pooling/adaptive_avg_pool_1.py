"""Classifier-head pooling as torchvision writes it: ``nn.AdaptiveAvgPool2d((1, 1))`` then
``torch.flatten(x, 1)`` (ResNet.forward)."""

import torch
import torch.nn as nn

BATCH = 128
CHANNELS = 2048
HEIGHT = 7
WIDTH = 7
SHAPES = {"small": {"BATCH": 3, "CHANNELS": 8, "HEIGHT": 5, "WIDTH": 3}}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.avgpool(x), 1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
