"""gpt-fast's ``WeightOnlyInt8Linear`` (``quantize.py``; torchao's ``linear_int8`` fallback):
``F.linear(input, self.weight.to(dtype=input.dtype)) * self.scales``: the matmul on the cast int8
weight, the per-channel scale applied to the output. [batch, seq, in] input."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1
SEQ = 16
IN_FEATURES = 4096
OUT_FEATURES = 14336
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 2, "IN_FEATURES": 48, "OUT_FEATURES": 40, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, dtype: str) -> None:
        super().__init__()
        self.register_buffer("weight", torch.randint(-127, 128, (out_features, in_features), dtype=torch.int8))
        self.register_buffer("scales", (torch.rand(out_features) * 0.02 + 0.005).to(getattr(torch, dtype)))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.linear(input, self.weight.to(dtype=input.dtype)) * self.scales


def get_inputs():
    return [torch.randn(BATCH, SEQ, IN_FEATURES).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, DTYPE]
