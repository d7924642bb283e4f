"""Log-softmax as ``logits - logits.logsumexp(dim=-1, keepdim=True)``, as RLHF code (TRL-style
per-token log-probabilities) and sampling code often write it."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 512
VOCAB = 32000
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "VOCAB": 200}}


class Model(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits - logits.logsumexp(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, SEQ, VOCAB) * 2.0]


def get_init_inputs():
    return []
