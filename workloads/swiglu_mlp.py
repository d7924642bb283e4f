"""Llama MLP block: down_proj(silu(gate_proj(x)) * up_proj(x)), no biases, bf16.

Where it occurs: the feed-forward half of every Llama 2/3, Mistral and Qwen2/3 block (and each
Mixtral/Qwen-MoE expert), in training and inference; about two thirds of a dense model's FLOPs.
The reference is Hugging Face's ``LlamaMLP``: three separate ``nn.Linear`` layers and an
unfused activation, so the [tokens, intermediate] gate and up tensors round-trip through memory.

Sizes that matter: Llama-3.2-3B (hidden 3072, intermediate 8192) over a 4096-token prefill or
training micro-batch (production: TOKENS=4096, HIDDEN=3072, INTERMEDIATE=8192, bf16). The
``decode`` set (16 tokens) is weight-bandwidth bound instead.

Character: compute bound at production: 6 * 4096 * 3072 * 8192 = 618 GFLOP over 151 MB of
weights; the win is fusing gate and up into one GEMM with the activation in its epilogue.

Bytes moved at production: x, three weights and output (compulsory traffic),
25.2 + 151.0 + 25.2 = 201.3 MB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
HIDDEN = 3072
INTERMEDIATE = 8192
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 5, "HIDDEN": 32, "INTERMEDIATE": 96, "DTYPE": "float32"},
    "odd": {"TOKENS": 37, "HIDDEN": 201, "INTERMEDIATE": 539},
    "decode": {"TOKENS": 16},
}


class Model(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, dtype: str) -> None:
        super().__init__()
        dt = getattr(torch, dtype)
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False, dtype=dt)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False, dtype=dt)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False, dtype=dt)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def get_inputs():
    x = torch.randn(TOKENS, HIDDEN) * 2.0
    return [x.to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, DTYPE]
