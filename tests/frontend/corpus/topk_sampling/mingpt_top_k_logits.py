"""Top-k filtering as minGPT's ``top_k_logits`` writes it: ``v, ix = torch.topk(logits, k)``,
``out = logits.clone()``, ``out[out < v[:, [-1]]] = -float('Inf')``; ``sample`` then takes
``F.softmax`` of the filtered logits divided by the temperature earlier."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
VOCAB = 50257
TOP_K = 40
SHAPES = {"small": {"BATCH": 4, "VOCAB": 300, "TOP_K": 5}}


class Model(nn.Module):
    def __init__(self, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits / 1.3
        v, ix = torch.topk(logits, self.top_k)
        out = logits.clone()
        out[out < v[:, [-1]]] = -float("Inf")
        return F.softmax(out, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, VOCAB) * 3.0]


def get_init_inputs():
    return [TOP_K]
