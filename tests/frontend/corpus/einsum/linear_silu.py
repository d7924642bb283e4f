"""A projection written as ``torch.einsum("btd,od->bto", x, self.weight)`` (a linear layer in einsum
form, as in Flax ports and lucidrains' code) followed by SiLU."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ = 512
D_IN = 1024
D_OUT = 4096
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "D_IN": 16, "D_OUT": 24}}


class Model(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_out, d_in) * d_in**-0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(torch.einsum("btd,od->bto", x, self.weight))


def get_inputs():
    return [torch.randn(BATCH, SEQ, D_IN)]


def get_init_inputs():
    return [D_IN, D_OUT]
