"""Gemma's RMSNorm (transformers ``GemmaRMSNorm``): ``_norm(x.float())`` then ``* (1.0 +
weight.float())`` (the gain is stored as an offset from 1, zero-initialised in the real model),
``type_as(x)`` at the end. fp16 in the ``small`` set, so the upcast and the final cast are real."""

import torch
import torch.nn as nn

TOKENS = 4096
HIDDEN = 3072
EPS = 1e-6
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 8, "HIDDEN": 192, "DTYPE": "float16"}}


class Model(nn.Module):
    def __init__(self, dim: int, eps: float, dtype: str) -> None:
        super().__init__()
        self.eps = eps
        # trained offsets are not zero: draw them so a kernel that drops the gain fails
        self.weight = nn.Parameter((0.1 * torch.randn(dim)).to(getattr(torch, dtype)))

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, EPS, DTYPE]
