"""vLLM's ``SiluAndMul.forward_native`` (``vllm/model_executor/layers/activation.py``): the
activation half of a fused SwiGLU on the gate_up output, ``d = x.shape[-1] // 2; F.silu(x[..., :d])
* x[..., d:]`` (Liger's ``LigerSiLUMulFunction`` computes the same on two tensors)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
INTERMEDIATE = 14336
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 5, "INTERMEDIATE": 96, "DTYPE": "float16"}}


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


def get_inputs():
    return [torch.randn(TOKENS, 2 * INTERMEDIATE).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return []
