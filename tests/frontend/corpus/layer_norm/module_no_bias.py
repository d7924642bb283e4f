"""``nn.LayerNorm(hidden, bias=False)`` (torch >= 2.1), the bias-free LayerNorm nanoGPT's
``bias=False`` configuration and OLMo use; fp16 in the ``small`` set."""

import torch
import torch.nn as nn

TOKENS = 8192
HIDDEN = 2048
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 7, "HIDDEN": 128, "DTYPE": "float16"}}


class Model(nn.Module):
    def __init__(self, hidden: int, dtype: str) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden, bias=False)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.1 * torch.randn(hidden))
        self.ln.to(getattr(torch, dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, DTYPE]
