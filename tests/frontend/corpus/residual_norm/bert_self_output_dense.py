"""transformers ``BertSelfOutput`` whole: the dense layer, then (dropout is the identity in eval, and
the problem is judged as constructed, in training mode, so it is left out) the post-LN residual ``self.LayerNorm(hidden_states + input_tensor)`` with ``eps=1e-12``. The Linear's
bias, the residual and the LayerNorm are the GEMM's epilogue (until 2026-12-06 the Triton GEMM's
LayerNorm epilogue divided the row's mean by 1)."""

import torch
import torch.nn as nn

BATCH = 32
SEQ = 512
HIDDEN = 768
SHAPES = {"small": {"BATCH": 2, "SEQ": 4, "HIDDEN": 48}}


class Model(nn.Module):
    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        with torch.no_grad():
            self.LayerNorm.weight.copy_(1.0 + 0.1 * torch.randn(hidden_size))
            self.LayerNorm.bias.copy_(0.1 * torch.randn(hidden_size))

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN), torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
