"""ALiBi (BLOOM / MPT): per-head linear position biases ``slopes[h] * (j - i)`` computed in the
forward from ``torch.arange``, added to the scores, causal ``masked_fill(..., float("-inf"))`` with
``torch.triu(.., diagonal=1)``, softmax. Slopes ``2 ** (-8 (h + 1) / H)`` as in the paper."""

import torch
import torch.nn as nn

BATCH = 4
HEADS = 32
SEQ = 1024
SHAPES = {"small": {"BATCH": 2, "HEADS": 4, "SEQ": 6}}


class Model(nn.Module):
    def __init__(self, heads: int) -> None:
        super().__init__()
        slopes = torch.tensor([2 ** (-8.0 * (h + 1) / heads) for h in range(heads)])
        self.register_buffer("slopes", slopes, persistent=False)

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        seq = scores.shape[-1]
        pos = torch.arange(seq, device=scores.device)
        distance = (pos[None, :] - pos[:, None]).to(scores.dtype)
        scores = scores + self.slopes[:, None, None] * distance
        causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=scores.device), diagonal=1)
        scores = scores.masked_fill(causal, float("-inf"))
        return torch.softmax(scores, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, SEQ) * 3.0]


def get_init_inputs():
    return [HEADS]
