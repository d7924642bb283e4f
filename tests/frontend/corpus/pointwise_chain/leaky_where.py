"""A leaky ReLU written with ``torch.where(x > 0, x, x * negative_slope)`` (the hand-written form in
GAN / flow codebases), followed by a bias add."""

import torch
import torch.nn as nn

TOKENS = 8192
WIDTH = 1024
SHAPES = {"small": {"TOKENS": 6, "WIDTH": 40}}


class Model(nn.Module):
    def __init__(self, width: int, negative_slope: float = 0.2) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.bias = nn.Parameter(0.1 * torch.randn(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x > 0, x, x * self.negative_slope) + self.bias


def get_inputs():
    return [torch.randn(TOKENS, WIDTH)]


def get_init_inputs():
    return [WIDTH, 0.2]
