"""The tanh GELU through ``F.gelu(x, approximate="tanh")`` (transformers' ``gelu_pytorch_tanh``,
Gemma / GPT-2 ports); fp16 in the ``small`` set."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
WIDTH = 3072
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 4, "WIDTH": 120, "DTYPE": "float16"}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


def get_inputs():
    return [(torch.randn(TOKENS, WIDTH) * 2.0).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return []
