"""Per-channel absolute maximum over the token dimension, ``x.abs().amax(dim=0)`` (the calibration
statistic of SmoothQuant / LLM.int8() outlier detection): a column reduction over dim 0."""

import torch
import torch.nn as nn

TOKENS = 8192
HIDDEN = 4096
SHAPES = {"small": {"TOKENS": 9, "HIDDEN": 40}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.abs().amax(dim=0)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN)]


def get_init_inputs():
    return []
