"""minGPT / nanoGPT's ``NewGELU`` written out (transformers ``NewGELUActivation``): ``0.5 * x * (1.0
+ torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))``."""

import math

import torch
import torch.nn as nn

BATCH = 8
SEQ = 1024
WIDTH = 3072
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "WIDTH": 64}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, WIDTH) * 2.0]


def get_init_inputs():
    return []
