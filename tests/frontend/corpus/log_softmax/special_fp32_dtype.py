"""``torch.special.log_softmax(x, dim=-1, dtype=torch.float32)`` on 16-bit logits: the upcast is
part of the call (fp32 log-probabilities out of fp16 logits, as loss code wants them)."""

import torch
import torch.nn as nn

TOKENS = 4096
VOCAB = 32000
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 6, "VOCAB": 160, "DTYPE": "float16"}}


class Model(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.special.log_softmax(logits, dim=-1, dtype=torch.float32)


def get_inputs():
    return [(torch.randn(TOKENS, VOCAB) * 3.0).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return []
