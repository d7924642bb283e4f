"""transformers' ``LlamaMLP`` (Mistral, Qwen2 identical): three bias-free linears,
``down_proj(act_fn(gate_proj(x)) * up_proj(x))`` with SiLU; [batch, seq, hidden] input."""

import torch
import torch.nn as nn

BATCH = 2
SEQ = 2048
HIDDEN = 4096
INTERMEDIATE = 14336
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 4, "HIDDEN": 32, "INTERMEDIATE": 48, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, dtype: str) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()
        self.to(getattr(torch, dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, DTYPE]
