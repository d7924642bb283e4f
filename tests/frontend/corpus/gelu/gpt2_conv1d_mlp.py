"""GPT-2's MLP as transformers writes it (``GPT2MLP``): ``Conv1D`` layers, i.e. ``torch.addmm(bias,
x.view(-1, x.size(-1)), weight)`` with a [in, out] weight, ``gelu_new`` (the tanh GELU written
out) between ``c_fc`` and ``c_proj``."""

import math

import torch
import torch.nn as nn

BATCH = 8
SEQ = 1024
EMBED = 768
INNER = 3072
SHAPES = {"small": {"BATCH": 2, "SEQ": 3, "EMBED": 32, "INNER": 64}}


class Conv1D(nn.Module):
    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02 * 5)
        self.bias = nn.Parameter(torch.randn(nf) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Model(nn.Module):
    def __init__(self, embed_dim: int, intermediate_size: int) -> None:
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.c_fc(hidden_states)
        hidden_states = gelu_new(hidden_states)
        return self.c_proj(hidden_states)


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, INNER]
