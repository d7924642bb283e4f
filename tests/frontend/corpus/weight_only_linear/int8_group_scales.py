"""Weight-only int8 with per-group scales along the input dimension: the weight viewed
``[out, in // group, group]``, multiplied by ``scales.view(out, in // group, 1)``, reshaped back and
used in ``F.linear`` (the dequantisation reference of group-wise schemes in torchao / HQQ)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 16
IN_FEATURES = 4096
OUT_FEATURES = 4096
GROUP = 128
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 3, "IN_FEATURES": 64, "OUT_FEATURES": 32, "GROUP": 16, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, group: int, dtype: str) -> None:
        super().__init__()
        self.group = group
        self.register_buffer("weight", torch.randint(-127, 128, (out_features, in_features), dtype=torch.int8))
        scales = torch.rand(out_features, in_features // group) * 0.02 + 0.005
        self.register_buffer("scales", scales.to(getattr(torch, dtype)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out_features, in_features = self.weight.shape
        w = self.weight.to(x.dtype).view(out_features, in_features // self.group, self.group)
        w = (w * self.scales.view(out_features, in_features // self.group, 1)).view(out_features, in_features)
        return F.linear(x, w)


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, GROUP, DTYPE]
