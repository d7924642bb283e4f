"""Top-k filtering as transformers' ``TopKLogitsWarper`` writes it: ``scores < torch.topk(scores,
top_k)[0][..., -1, None]`` marks the tokens below the k-th largest, ``masked_fill`` sets them to
``-inf``; ``generate`` then takes the softmax of the temperature-scaled scores."""

import torch
import torch.nn as nn

BATCH = 64
VOCAB = 128256
TOP_K = 50
SHAPES = {"small": {"BATCH": 4, "VOCAB": 300, "TOP_K": 7}}


class Model(nn.Module):
    def __init__(self, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        scores = scores / 0.7
        indices_to_remove = scores < torch.topk(scores, self.top_k)[0][..., -1, None]
        scores = scores.masked_fill(indices_to_remove, -float("inf"))
        return torch.softmax(scores, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, VOCAB) * 3.0]


def get_init_inputs():
    return [TOP_K]
