"""CLIP's ``QuickGELU`` (OpenAI CLIP, transformers ``QuickGELUActivation``): ``x * torch.sigmoid(1.702
* x)``."""

import torch
import torch.nn as nn

TOKENS = 8192
WIDTH = 3072
SHAPES = {"small": {"TOKENS": 6, "WIDTH": 80}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


def get_inputs():
    return [torch.randn(TOKENS, WIDTH) * 2.0]


def get_init_inputs():
    return []
