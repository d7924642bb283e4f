"""``torch.bmm(a, b.transpose(1, 2)) + bias``: pairwise similarities between two sets with a learned
per-column offset (bilinear / biaffine scorers, e.g. dependency parsers' arc scores)."""

import torch
import torch.nn as nn

BATCH = 32
N_A = 256
N_B = 256
DIM = 512
SHAPES = {"small": {"BATCH": 2, "N_A": 4, "N_B": 6, "DIM": 8}}


class Model(nn.Module):
    def __init__(self, n_b: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(n_b))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b.transpose(1, 2)) + self.bias


def get_inputs():
    return [torch.randn(BATCH, N_A, DIM), torch.randn(BATCH, N_B, DIM)]


def get_init_inputs():
    return [N_B]
