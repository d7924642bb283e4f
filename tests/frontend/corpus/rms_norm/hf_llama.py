"""RMSNorm as transformers writes it (``LlamaRMSNorm``; Qwen2, Mistral and Phi-3 copy it): upcast to
fp32, ``pow(2).mean(-1, keepdim=True)``, ``rsqrt``, downcast, then the gain in the input dtype.
The ``small`` set is fp16 so the casts are real (in fp32 they are no-ops)."""

import torch
import torch.nn as nn

TOKENS = 4096
HIDDEN = 4096
EPS = 1e-6
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 8, "HIDDEN": 256, "DTYPE": "float16"}}


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float, dtype: str) -> None:
        super().__init__()
        self.weight = nn.Parameter((1.0 + 0.1 * torch.randn(hidden_size)).to(getattr(torch, dtype)))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, EPS, DTYPE]
