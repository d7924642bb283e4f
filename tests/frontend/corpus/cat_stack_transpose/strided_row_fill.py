"""An in-place strided fill of a copy, then a scale: ``y = x.clone(); y[::64] = v; y * 2`` (every
64th row replaced by a broadcast vector, as padding or special-token rows are often written).
Functionalised it is a ``slice_scatter``: which source an element reads is index arithmetic, one kernel."""

import torch
import torch.nn as nn

ROWS = 4096
COLS = 1024
SHAPES = {"small": {"ROWS": 130, "COLS": 24}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[::64] = v
        return y * 2


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(COLS)]


def get_init_inputs():
    return []
