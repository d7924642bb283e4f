"""Weight-only int8 linear written ``x @ (w.to(dt) * scale[:, None]).t()`` (GLM-130B's
``W8A16Linear``, bitsandbytes-style references): int8 weight [out, in] with a per-output-channel
scale, dequantised then transposed. The issue's held-out case: the ``.t()`` must not cut the fusion.
Decode-sized M (16 tokens)."""

import torch
import torch.nn as nn

TOKENS = 16
IN_FEATURES = 4096
OUT_FEATURES = 4096
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 4, "IN_FEATURES": 64, "OUT_FEATURES": 48, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, dtype: str) -> None:
        super().__init__()
        self.register_buffer("weight", torch.randint(-127, 128, (out_features, in_features), dtype=torch.int8))
        self.register_buffer("scale", (torch.rand(out_features) * 0.02 + 0.005).to(getattr(torch, dtype)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ (self.weight.to(x.dtype) * self.scale[:, None]).t()


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, DTYPE]
