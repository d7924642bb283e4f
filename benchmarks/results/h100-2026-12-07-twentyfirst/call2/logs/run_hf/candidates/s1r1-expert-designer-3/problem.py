"""transformers' ``eager_attention_forward`` (modeling_llama, one KV head per query head): ``torch
.matmul(query, key.transpose(2, 3)) * scaling``, ``+ attention_mask`` (an additive 4-D causal mask
of 0 / ``finfo.min``), ``softmax(dim=-1, dtype=torch.float32).to(query.dtype)``, ``matmul(attn,
value)`` (the layer's ``transpose(1, 2).contiguous()`` after it is left out: a layout copy, not
masking)."""

import torch
import torch.nn as nn

BATCH = 2
HEADS = 32
SEQ = 1024
HEAD_DIM = 128
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "SEQ": 5, "HEAD_DIM": 8, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.scaling = head_dim**-0.5

    def forward(self, query, key, value, attention_mask):
        attn_weights = torch.matmul(query, key.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        return torch.matmul(attn_weights, value)


def get_inputs():
    dtype = getattr(torch, DTYPE)
    q, k, v = (torch.randn(BATCH, HEADS, SEQ, HEAD_DIM).to(dtype) for _ in range(3))
    causal = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
    mask = torch.zeros(SEQ, SEQ, dtype=dtype).masked_fill(~causal, torch.finfo(dtype).min)
    return [q, k, v, mask[None, None].expand(BATCH, 1, SEQ, SEQ).contiguous()]


def get_init_inputs():
    return [HEAD_DIM]
