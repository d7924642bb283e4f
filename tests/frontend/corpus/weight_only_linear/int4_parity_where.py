"""Weight-only int4, two values per uint8, unpacked by position instead of by stacking: the byte of
input feature ``k`` gathered at ``k // 2`` (an ``arange`` index), the low nibble where ``k`` is even
and the high one where it is odd (``torch.where(k % 2 == 0, ...)``), re-centred by -8, one scale per
output channel, ``F.linear`` (the loop-free transcription of a per-element unpack)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

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
        k = torch.arange(self.packed.shape[1] * 2, device=x.device)
        byte = self.packed[:, k // 2]
        w = torch.where(k % 2 == 0, byte & 15, byte >> 4).to(torch.int8) - 8
        return F.linear(x, w.to(x.dtype) * self.scale[:, None])


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, DTYPE]
