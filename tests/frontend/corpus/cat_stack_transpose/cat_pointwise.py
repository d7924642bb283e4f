"""A ``torch.cat`` of two pointwise results, ``torch.cat([a * 2, b + 1], dim=-1)``: the
concatenation is where each output element is read from, not a copy."""

import torch
import torch.nn as nn

ROWS = 8192
COLS_A = 1024
COLS_B = 3072
SHAPES = {"small": {"ROWS": 5, "COLS_A": 24, "COLS_B": 40}}


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cat([a * 2, b + 1], dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS_A), torch.randn(ROWS, COLS_B)]


def get_init_inputs():
    return []
