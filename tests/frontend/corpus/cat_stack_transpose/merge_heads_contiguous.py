"""nanoGPT's head merge (``CausalSelfAttention.forward``): ``y.transpose(1, 2).contiguous().view(B,
T, C)``, a permuted copy of the attention output [batch, heads, seq, head_dim], scaled here by a
per-channel gain (LayerScale, as in CaiT / timm's ``LayerScale``)."""

import torch
import torch.nn as nn

BATCH = 8
HEADS = 12
SEQ = 1024
HEAD_DIM = 64
SHAPES = {"small": {"BATCH": 2, "HEADS": 3, "SEQ": 5, "HEAD_DIM": 8}}


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(1e-1 * torch.randn(dim))

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        B, nh, T, hs = y.size()
        y = y.transpose(1, 2).contiguous().view(B, T, nh * hs)
        return y * self.gamma


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, HEAD_DIM)]


def get_init_inputs():
    return [HEADS * HEAD_DIM]
