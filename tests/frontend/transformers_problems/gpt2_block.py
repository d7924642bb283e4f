"""transformers' ``GPT2Block``: pre-LN (``ln_1``), ``GPT2Attention`` with its fused ``c_attn``
``Conv1D`` (addmm, then ``split`` into q/k/v), SDPA with the causal flag, ``c_proj``, residual,
``ln_2``, ``GPT2MLP`` (``c_fc``, ``gelu_new``, ``c_proj``), residual. Built from a config with random
weights; nothing is downloaded. Default sizes: GPT-2 small (768 wide, 12 heads), 8 x 1024 tokens."""

import torch
import torch.nn as nn
from transformers import GPT2Config
from transformers.models.gpt2.modeling_gpt2 import GPT2Block

BATCH = 8
SEQ = 1024
HIDDEN = 768
HEADS = 12
DTYPE = "float16"
SHAPES = {
    "small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "DTYPE": "float32"},
    "small_fp16": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "DTYPE": "float16"},
}


class Model(nn.Module):
    def __init__(self, hidden: int, heads: int, dtype: str):
        super().__init__()
        config = GPT2Config(n_embd=hidden, n_head=heads, n_layer=1, n_positions=2048, attn_implementation="sdpa")
        self.block = GPT2Block(config, layer_idx=0).to(getattr(torch, dtype))
        with torch.no_grad():  # fresh LayerNorm gains are exactly 1 and biases 0; trained ones are not
            for p in self.block.parameters():
                if p.dim() == 1:
                    p.add_(0.1 * torch.randn_like(p))
        self.eval()  # dropout is random in training mode: no candidate could reproduce it

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.block(hidden_states)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, HEADS, DTYPE]
