"""Exact GELU through ``F.gelu(x)`` (erf form): BERT / ViT / timm MLPs' activation."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
WIDTH = 3072
SHAPES = {"small": {"TOKENS": 5, "WIDTH": 96}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    return [torch.randn(TOKENS, WIDTH) * 2.0]


def get_init_inputs():
    return []
