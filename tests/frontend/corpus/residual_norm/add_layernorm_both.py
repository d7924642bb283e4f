"""Pre-LN residual add followed by the next block's LayerNorm, both results kept (the pattern
Liger's ``fused_add_layer_norm`` and Apex's ``FusedLayerNorm`` with residual target): ``h = x +
residual; return self.norm(h), h`` with ``nn.LayerNorm``."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 1024
HIDDEN = 1024
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "HIDDEN": 64}}


class Model(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(hidden))
            self.norm.bias.copy_(0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        h = x + residual
        return self.norm(h), h


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN), torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
