"""transformers' ``BertLayer`` (encoder, post-LN): ``BertSelfAttention`` (q/k/v linears with bias,
SDPA without a causal flag), ``BertSelfOutput`` (dense, residual, LayerNorm), ``BertIntermediate``
(dense, exact GELU), ``BertOutput`` (dense, residual, LayerNorm). Built from a config with random
weights, eval mode (dropout off); nothing is downloaded. Default sizes: BERT-base, 32 x 512 tokens."""

import torch
import torch.nn as nn
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertLayer

BATCH = 32
SEQ = 512
HIDDEN = 768
HEADS = 12
INTERMEDIATE = 3072
DTYPE = "float16"
SHAPES = {
    "small": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "INTERMEDIATE": 128, "DTYPE": "float32"},
    "small_fp16": {"BATCH": 2, "SEQ": 8, "HIDDEN": 64, "HEADS": 4, "INTERMEDIATE": 128, "DTYPE": "float16"},
}


class Model(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, dtype: str):
        super().__init__()
        config = BertConfig(hidden_size=hidden, num_attention_heads=heads, intermediate_size=intermediate,
                            num_hidden_layers=1, attn_implementation="sdpa")
        self.layer = BertLayer(config).to(getattr(torch, dtype))
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
    return [HIDDEN, HEADS, INTERMEDIATE, DTYPE]
