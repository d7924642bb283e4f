"""Attention scores with ``torch.einsum("bhqd,bhkd->bhqk", q, k) * scale`` (the einsum spelling of
``q @ k.transpose(-2, -1)``, as in lucidrains' and x-transformers code)."""

import torch
import torch.nn as nn

BATCH = 4
HEADS = 16
SEQ = 512
HEAD_DIM = 64
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "SEQ": 5, "HEAD_DIM": 8}}


class Model(nn.Module):
    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bhqd,bhkd->bhqk", q, k) * self.scale


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, HEAD_DIM), torch.randn(BATCH, HEADS, SEQ, HEAD_DIM)]


def get_init_inputs():
    return [HEAD_DIM]
