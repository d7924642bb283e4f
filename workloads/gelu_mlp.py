"""GELU MLP block: fc2(GELU_tanh(fc1(x))) with biases, bf16.

Where it occurs: the feed-forward layer of GPT-2, GPT-J, GPT-NeoX/Pythia, Phi-1/2, StarCoder,
Falcon and the ViT/CLIP encoders, in training and in inference; with the tanh-approximate GELU
("gelu_new"), as in GPT-2 and Phi-2. The reference is Hugging Face's ``PhiMLP``: two
``nn.Linear`` layers and an unfused activation, so the [tokens, 4 * hidden] intermediate
round-trips through memory twice.

Sizes that matter: Phi-2 (hidden 2560, intermediate 10240) over a 4096-token prefill or training
micro-batch (production). The ``decode`` set (16 tokens) is weight-bandwidth bound; the ``odd``
set uses hidden 257 / intermediate 1031.

Character: compute bound: 4 * 4096 * 2560 * 10240 = 429 GFLOP; the win is a GEMM with bias + GELU
in its epilogue (and no separate activation pass over 84 MB).

Bytes moved at production: x, weights, biases and output (compulsory traffic),
21.0 + 104.9 + 0.03 + 21.0 = 146.8 MB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
HIDDEN = 2560
INTERMEDIATE = 10240
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 5, "HIDDEN": 32, "INTERMEDIATE": 128, "DTYPE": "float32"},
    "odd": {"TOKENS": 37, "HIDDEN": 257, "INTERMEDIATE": 1031},
    "decode": {"TOKENS": 16},
}


class Model(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int, dtype: str) -> None:
        super().__init__()
        dt = getattr(torch, dtype)
        self.fc1 = nn.Linear(hidden_size, intermediate_size, dtype=dt)
        self.fc2 = nn.Linear(intermediate_size, hidden_size, dtype=dt)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.fc1(x), approximate="tanh")
        return self.fc2(h)


def get_inputs():
    x = torch.randn(TOKENS, HIDDEN) * 2.0
    return [x.to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, DTYPE]
