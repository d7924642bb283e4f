"""``F.cross_entropy(logits, target)`` with the default mean reduction over tokens, the loss of
every classification / LM training step (Liger's ``LigerCrossEntropyLoss`` reference)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
VOCAB = 32000
SHAPES = {"small": {"TOKENS": 6, "VOCAB": 200}}


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, target)


def get_inputs():
    return [torch.randn(TOKENS, VOCAB) * 3.0, torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return []
