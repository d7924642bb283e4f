"""Top-k sampling as nanoGPT's ``generate`` writes it: ``v, _ = torch.topk(logits, min(top_k,
logits.size(-1)))``, then an in-place boolean-mask assignment ``logits[logits < v[:, [-1]]] =
-float('Inf')`` (an index by a list), then ``F.softmax``."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
VOCAB = 50304
TOP_K = 200
SHAPES = {"small": {"BATCH": 4, "VOCAB": 300, "TOP_K": 9}}


class Model(nn.Module):
    def __init__(self, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits / 0.9
        v, _ = torch.topk(logits, min(self.top_k, logits.size(-1)))
        logits[logits < v[:, [-1]]] = -float("Inf")
        return F.softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, VOCAB) * 3.0]


def get_init_inputs():
    return [TOP_K]
