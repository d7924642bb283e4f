"""Weight-only int4, two values packed per uint8 along the input dimension, unpacked with shifts
and masks: ``low = (packed & 0x0F)``, ``high = (packed >> 4)``, re-centred by -8,
``torch.stack([low, high], -1).view(out, in)``, per-channel scale, ``x @ w.t()`` (the reference
dequantisation of symmetric int4 packing schemes; low nibble = even column)."""

import torch
import torch.nn as nn

TOKENS = 16
IN_FEATURES = 4096
OUT_FEATURES = 11008
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 4, "IN_FEATURES": 64, "OUT_FEATURES": 24, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, dtype: str) -> None:
        super().__init__()
        self.register_buffer("packed", torch.randint(0, 256, (out_features, in_features // 2), dtype=torch.uint8))
        self.register_buffer("scale", (torch.rand(out_features) * 0.1 + 0.02).to(getattr(torch, dtype)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = (self.packed & 0x0F).to(torch.int8) - 8
        high = (self.packed >> 4).to(torch.int8) - 8
        w = torch.stack([low, high], dim=-1).view(self.packed.shape[0], -1)
        w = w.to(x.dtype) * self.scale[:, None]
        return x @ w.t()


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, DTYPE]
