"""A batched matmul written ``torch.einsum("bij,bjk->bik", a, b)`` followed by ``torch.relu``
(KernelBench level-2 style matmul + activation)."""

import torch
import torch.nn as nn

BATCH = 64
M = 256
K = 512
N = 256
SHAPES = {"small": {"BATCH": 2, "M": 5, "K": 12, "N": 7}}


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.einsum("bij,bjk->bik", a, b))


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
