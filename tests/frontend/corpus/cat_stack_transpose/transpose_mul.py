"""A transposed operand in a pointwise product, ``x.transpose(1, 2) * y`` (channels-first conv
features gated by a channels-last signal, as in Conformer / Mamba blocks): the transpose is an index
map on ``x``'s loads."""

import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 1024
SEQ = 1024
SHAPES = {"small": {"BATCH": 2, "CHANNELS": 12, "SEQ": 10}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2) * y


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SEQ), torch.randn(BATCH, SEQ, CHANNELS)]


def get_init_inputs():
    return []
