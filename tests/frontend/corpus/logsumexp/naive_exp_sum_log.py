"""Logsumexp written naively as ``x.exp().sum(dim=-1, keepdim=True).log()`` (no max shift; fine for
the logits' range here): the shape of the computation without the stabilisation."""

import torch
import torch.nn as nn

ROWS = 4096
COLS = 2048
SHAPES = {"small": {"ROWS": 4, "COLS": 72}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.exp().sum(dim=-1, keepdim=True).log()


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
