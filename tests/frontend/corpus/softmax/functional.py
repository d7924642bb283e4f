"""``F.softmax(x, dim=-1)`` over the rows of attention-score-shaped logits [batch, heads, q, k]."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
HEADS = 32
QLEN = 512
KLEN = 512
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "QLEN": 3, "KLEN": 40, "DTYPE": "float32"}}


class Model(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return F.softmax(scores, dim=-1)


def get_inputs():
    return [(torch.randn(BATCH, HEADS, QLEN, KLEN) * 4.0).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return []
