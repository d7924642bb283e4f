"""T5's residual then ``T5LayerNorm`` (transformers ``modeling_t5``): ``hidden = hidden + layer_output``,
then the bias-free RMS norm with the variance in fp32, ``hidden * torch.rsqrt(variance + eps)``, cast
to the weight's 16-bit dtype, ``weight * hidden``; returns the residual stream and its norm."""

import torch
import torch.nn as nn

BATCH = 16
SEQ = 512
HIDDEN = 1024
EPS = 1e-6
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 4, "HIDDEN": 64, "DTYPE": "float16"}}


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float, dtype: str) -> None:
        super().__init__()
        self.layer_norm = T5LayerNorm(hidden_size, eps)
        self.to(getattr(torch, dtype))

    def forward(self, hidden_states: torch.Tensor, layer_output: torch.Tensor):
        hidden_states = hidden_states + layer_output
        return hidden_states, self.layer_norm(hidden_states)


def get_inputs():
    dt = getattr(torch, DTYPE)
    return [torch.randn(BATCH, SEQ, HIDDEN).to(dt), torch.randn(BATCH, SEQ, HIDDEN).to(dt)]


def get_init_inputs():
    return [HIDDEN, EPS, DTYPE]
