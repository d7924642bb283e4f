"""vLLM's ``RMSNorm.forward_native`` with a residual (``vllm/model_executor/layers/layernorm.py``,
the fused_add_rms_norm reference): ``x = x.to(torch.float32) + residual.to(torch.float32);
residual = x.to(orig_dtype)``, mean of squares, ``rsqrt``, ``x.to(orig_dtype) * weight``; returns
``(x, residual)`` - the normalised output and the new residual stream. fp16 in ``small``."""

import torch
import torch.nn as nn

TOKENS = 8192
HIDDEN = 4096
EPS = 1e-6
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 6, "HIDDEN": 128, "DTYPE": "float16"}}


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float, dtype: str) -> None:
        super().__init__()
        self.weight = nn.Parameter((1.0 + 0.1 * torch.randn(hidden_size)).to(getattr(torch, dtype)))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        orig_dtype = x.dtype
        x = x.to(torch.float32) + residual.to(torch.float32)
        residual = x.to(orig_dtype)
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)
        x = x.to(orig_dtype) * self.weight
        return x, residual


def get_inputs():
    dt = getattr(torch, DTYPE)
    return [torch.randn(TOKENS, HIDDEN).to(dt), torch.randn(TOKENS, HIDDEN).to(dt)]


def get_init_inputs():
    return [HIDDEN, EPS, DTYPE]
