"""transformers' ``OPTDecoderLayer``: pre-LN (``do_layer_norm_before``) self-attention with biased
q/k/v/out projections (the query scaled by ``head_dim ** -0.5`` before SDPA, which applies the
causal mask itself when none is passed), residual, pre-LN MLP (``fc1``, ReLU, ``fc2``) on the tokens
flattened to rows, residual. Built from a config with random weights; nothing is downloaded. Default
sizes: OPT-125m (768 wide, 12 heads, 3072 inner), 8 x 1024 tokens."""

import torch
import torch.nn as nn
from transformers import OPTConfig
from transformers.models.opt.modeling_opt import OPTDecoderLayer

BATCH = 8
SEQ = 1024
HIDDEN = 768
HEADS = 12
INNER = 3072
DTYPE = "float16"
SHAPES = {
    "small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "INNER": 128, "DTYPE": "float32"},
    "small_fp16": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "INNER": 128, "DTYPE": "float16"},
}


class Model(nn.Module):
    def __init__(self, hidden: int, heads: int, inner: int, dtype: str):
        super().__init__()
        config = OPTConfig(hidden_size=hidden, num_attention_heads=heads, ffn_dim=inner, num_hidden_layers=1,
                           word_embed_proj_dim=hidden, attn_implementation="sdpa")
        self.layer = OPTDecoderLayer(config, layer_idx=0).to(getattr(torch, dtype))
        with torch.no_grad():  # fresh LayerNorm gains are exactly 1 and biases 0; trained ones are not
            for p in self.layer.parameters():
                if p.dim() == 1:
                    p.add_(0.1 * torch.randn_like(p))
        self.eval()  # dropout is random in training mode: no candidate could reproduce it

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.layer(hidden_states)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return [HIDDEN, HEADS, INNER, DTYPE]
