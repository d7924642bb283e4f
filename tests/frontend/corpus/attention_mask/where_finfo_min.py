"""Masking precomputed scores with ``torch.where(mask, scores, torch.finfo(scores.dtype).min)``
(a boolean keep-mask, the form of transformers' sdpa-mask utilities and T5/Bart ports) then
``scores.softmax(-1)``; fp16 in the ``small`` set."""

import torch
import torch.nn as nn

BATCH = 4
HEADS = 16
QLEN = 512
KLEN = 512
DTYPE = "float16"
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "QLEN": 4, "KLEN": 12}}


class Model(nn.Module):
    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        return scores.softmax(dim=-1)


def get_inputs():
    scores = (torch.randn(BATCH, HEADS, QLEN, KLEN) * 3.0).to(getattr(torch, DTYPE))
    mask = torch.rand(BATCH, 1, QLEN, KLEN) < 0.7
    mask[..., 0] = True  # every row keeps one key
    return [scores, mask]


def get_init_inputs():
    return []
