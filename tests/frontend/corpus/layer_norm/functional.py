"""LayerNorm through ``F.layer_norm`` with weight and bias, as nanoGPT's ``LayerNorm`` module (and
GPT-2's ``ln_1``/``ln_2``) calls it: ``F.layer_norm(input, self.weight.shape, self.weight,
self.bias, 1e-5)``."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
HIDDEN = 768
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 8, "HIDDEN": 96, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, ndim: int, dtype: str) -> None:
        super().__init__()
        dt = getattr(torch, dtype)
        self.weight = nn.Parameter((1.0 + 0.1 * torch.randn(ndim)).to(dt))
        self.bias = nn.Parameter((0.1 * torch.randn(ndim)).to(dt))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, DTYPE]
