"""Cross-entropy by hand: ``torch.logsumexp(logits, -1) - logits.gather(-1, target[:, None])
.squeeze(-1)``, then ``.mean()``, as Liger-Kernel's tests and from-scratch loss code write the
reference."""

import torch
import torch.nn as nn

TOKENS = 4096
VOCAB = 128256
SHAPES = {"small": {"TOKENS": 7, "VOCAB": 150}}


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        lse = torch.logsumexp(logits, dim=-1)
        picked = logits.gather(-1, target[:, None]).squeeze(-1)
        return (lse - picked).mean()


def get_inputs():
    return [torch.randn(TOKENS, VOCAB) * 3.0, torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return []
