"""GeGLU as diffusers writes it (``diffusers.models.activations.GEGLU``): one biased projection to
twice the width, ``hidden_states, gate = self.proj(hidden_states).chunk(2, dim=-1); hidden_states *
F.gelu(gate)`` (exact erf GELU); the Stable Diffusion transformer blocks' feed-forward input."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
SEQ = 4096
DIM_IN = 320
DIM_OUT = 1280
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "DIM_IN": 24, "DIM_OUT": 40}}


class Model(nn.Module):
    def __init__(self, dim_in: int, dim_out: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2, bias=True)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states, gate = self.proj(hidden_states).chunk(2, dim=-1)
        return hidden_states * F.gelu(gate)


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM_IN)]


def get_init_inputs():
    return [DIM_IN, DIM_OUT]
