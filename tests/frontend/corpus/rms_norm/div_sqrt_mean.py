"""RMSNorm written from the paper's formula, ``x / sqrt(mean(x * x) + eps) * g`` (a division by a
square root instead of a multiplication by ``rsqrt``, ``x * x`` instead of ``pow``), as many
research codebases write it; batch-first [batch, seq, hidden] input."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 1024
HIDDEN = 2048
EPS = 1e-5
SHAPES = {"small": {"BATCH": 2, "SEQ": 4, "HIDDEN": 128}}


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.g


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, EPS]
