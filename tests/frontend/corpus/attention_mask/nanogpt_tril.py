"""nanoGPT's slow-path ``CausalSelfAttention`` core (``model.py``, the branch without flash): ``att
= (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))``, ``att.masked_fill(self.bias[:, :, :T,
:T] == 0, float('-inf'))`` with a registered ``tril`` buffer, ``F.softmax``, ``att @ v`` (dropout
off: eval). q/k/v [batch, heads, seq, head_dim]."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 12
SEQ = 1024
HEAD_DIM = 64
BLOCK_SIZE = 1024
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "SEQ": 6, "HEAD_DIM": 8, "BLOCK_SIZE": 8}}


class Model(nn.Module):
    def __init__(self, block_size: int) -> None:
        super().__init__()
        self.register_buffer(
            "bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        )

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, HEAD_DIM) for _ in range(3)]


def get_init_inputs():
    return [BLOCK_SIZE]
