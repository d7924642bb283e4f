"""transformers' eager attention softmax: ``nn.functional.softmax(attn_weights, dim=-1,
dtype=torch.float32).to(query.dtype)`` (``eager_attention_forward`` in modeling_llama and every
model copied from it): upcast inside the softmax, cast back. fp16 in the ``small`` set."""

import torch
import torch.nn as nn

BATCH = 2
HEADS = 32
QLEN = 1024
KLEN = 1024
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 1, "HEADS": 3, "QLEN": 4, "KLEN": 24, "DTYPE": "float16"}}


class Model(nn.Module):
    def forward(self, attn_weights: torch.Tensor) -> torch.Tensor:
        return nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(attn_weights.dtype)


def get_inputs():
    return [(torch.randn(BATCH, HEADS, QLEN, KLEN) * 4.0).to(getattr(torch, DTYPE))]


def get_init_inputs():
    return []
