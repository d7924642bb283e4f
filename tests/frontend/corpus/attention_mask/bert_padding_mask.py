"""BERT's padding mask on scaled scores (transformers ``BertSelfAttention`` eager path and
``get_extended_attention_mask``): the [batch, seq] 0/1 ``attention_mask`` becomes ``(1.0 -
mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min``, added to ``scores / math.sqrt(
head_dim)``, then ``nn.functional.softmax(dim=-1)``."""

import math

import torch
import torch.nn as nn

BATCH = 32
HEADS = 12
SEQ = 512
HEAD_DIM = 64
SHAPES = {"small": {"BATCH": 2, "HEADS": 3, "SEQ": 7, "HEAD_DIM": 16}}


class Model(nn.Module):
    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.attention_head_size = head_dim

    def forward(self, attention_scores: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        dtype = attention_scores.dtype
        extended = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + extended
        return nn.functional.softmax(attention_scores, dim=-1)


def get_inputs():
    scores = torch.randn(BATCH, HEADS, SEQ, SEQ) * 8.0
    lengths = torch.randint(1, SEQ + 1, (BATCH, 1))
    attention_mask = (torch.arange(SEQ)[None, :] < lengths).long()
    return [scores, attention_mask]


def get_init_inputs():
    return [HEAD_DIM]
