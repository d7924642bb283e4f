"""Gemma's MLP (transformers ``GemmaMLP``): separate bias-free gate/up/down linears with the tanh
GELU (``gelu_pytorch_tanh``): ``down_proj(F.gelu(gate_proj(x), approximate="tanh") * up_proj(x))``."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
HIDDEN = 3072
INTERMEDIATE = 24576
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 5, "HIDDEN": 24, "INTERMEDIATE": 64, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, dtype: str) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.to(getattr(torch, dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, DTYPE]
