"""SwiGLU with one fused ``gate_up_proj`` weight and ``chunk`` (transformers' ``Phi3MLP``; vLLM's
``MergedColumnParallelLinear`` + ``SiluAndMul``): ``gate, up = gate_up_proj(x).chunk(2, dim=-1);
down_proj(F.silu(gate) * up)``. The two halves of one matmul output feed one elementwise kernel."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
HIDDEN = 3072
INTERMEDIATE = 8192
DTYPE = "bfloat16"
SHAPES = {"small": {"TOKENS": 6, "HIDDEN": 32, "INTERMEDIATE": 40, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, dtype: str) -> None:
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden_size, 2 * intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.to(getattr(torch, dtype))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * F.silu(gate)
        return self.down_proj(up_states)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, DTYPE]
