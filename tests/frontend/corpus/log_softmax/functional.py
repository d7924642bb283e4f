"""``F.log_softmax(logits, dim=-1)`` over vocabulary-sized rows (the first half of a language-model
loss, or log-probabilities for sampling / RLHF)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 2048
VOCAB = 32000
SHAPES = {"small": {"TOKENS": 5, "VOCAB": 300}}


class Model(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(TOKENS, VOCAB) * 3.0]


def get_init_inputs():
    return []
