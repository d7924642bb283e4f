"""Asymmetric int4 with per-group scales and zero points (the GPTQ / AWQ dequantisation reference,
written out): nibbles unpacked ``(packed >> 4) & 0xF`` / ``packed & 0xF`` (high nibble first),
``(q - zeros) * scales`` per group of the input dimension, ``torch.matmul(x, w.T)``."""

import torch
import torch.nn as nn

TOKENS = 8
IN_FEATURES = 4096
OUT_FEATURES = 4096
GROUP = 128
DTYPE = "float16"
SHAPES = {"small": {"TOKENS": 3, "IN_FEATURES": 64, "OUT_FEATURES": 16, "GROUP": 32, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, group: int, dtype: str) -> None:
        super().__init__()
        self.group = group
        dt = getattr(torch, dtype)
        self.register_buffer("qweight", torch.randint(0, 256, (out_features, in_features // 2), dtype=torch.uint8))
        self.register_buffer("scales", (torch.rand(out_features, in_features // group) * 0.1 + 0.02).to(dt))
        self.register_buffer("zeros", torch.randint(6, 10, (out_features, in_features // group)).to(dt))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.qweight.shape[0]
        q = torch.stack([(self.qweight >> 4) & 0xF, self.qweight & 0xF], dim=-1).view(n, -1, self.group)
        w = (q.to(x.dtype) - self.zeros[..., None]) * self.scales[..., None]
        return torch.matmul(x, w.view(n, -1).T)


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, GROUP, DTYPE]
