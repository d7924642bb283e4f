"""RMSNorm through PyTorch's own ``F.rms_norm`` (torch >= 2.4; what torchtitan and recent vLLM
native paths call), gain passed as ``weight``."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
HIDDEN = 4096
EPS = 1e-6
SHAPES = {"small": {"TOKENS": 8, "HIDDEN": 192}}


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, EPS]
