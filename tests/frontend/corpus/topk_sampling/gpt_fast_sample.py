"""Top-k sampling probabilities as gpt-fast's ``logits_to_probs`` writes them: divide by the
temperature, ``v, _ = torch.topk(logits, k)``, ``pivot = v.select(-1, -1).unsqueeze(-1)``,
``torch.where(logits < pivot, -inf, logits)``, then softmax."""

import torch
import torch.nn as nn

BATCH = 64
VOCAB = 128256
TOP_K = 200
SHAPES = {"small": {"BATCH": 4, "VOCAB": 300, "TOP_K": 9}}


class Model(nn.Module):
    def __init__(self, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits / max(0.8, 1e-5)
        v, _ = torch.topk(logits, min(self.top_k, logits.size(-1)))
        pivot = v.select(-1, -1).unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)
        return torch.nn.functional.softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, VOCAB) * 3.0]


def get_init_inputs():
    return [TOP_K]
