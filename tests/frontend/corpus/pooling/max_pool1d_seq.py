"""``F.max_pool1d(x, kernel_size=3, stride=2, padding=1)`` over the time axis of [batch, channels,
time] (wav2vec-style / TCN downsampling), transposed in from [batch, time, channels] first."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ = 4096
CHANNELS = 512
SHAPES = {"small": {"BATCH": 2, "SEQ": 11, "CHANNELS": 6}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool1d(x.transpose(1, 2), kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ, CHANNELS)]


def get_init_inputs():
    return []
