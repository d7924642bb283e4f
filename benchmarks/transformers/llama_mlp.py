"""transformers' own ``LlamaMLP`` (SwiGLU: down(silu(gate(x)) * up(x))) at LLaMA-3-8B size, bf16.

x [2, 2048, 4096], gate/up 4096 -> 14336, down 14336 -> 4096: 3 x 2 x 4096 x 4096 x 14336 =
1.44 TFLOP per call (matmul bound).
"""

import sys
from pathlib import Path

import torch
import torch.nn as nn
from transformers.models.llama.modeling_llama import LlamaMLP

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _llama import llama_config  # noqa: E402

BATCH = 2
SEQ = 2048
HIDDEN = 4096
INTERMEDIATE = 14336
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "INTERMEDIATE": 128, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, hidden: int, intermediate: int, dtype: str) -> None:
        super().__init__()
        self.mlp = LlamaMLP(llama_config(hidden, intermediate, 32 if hidden >= 4096 else 4, 8 if hidden >= 4096 else 2, dtype))
        self.mlp.to(getattr(torch, dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, DTYPE]
